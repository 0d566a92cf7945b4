// Tests of the batch sampler: data order independent of dp, every row once per epoch, document
// masking in packed rows, one document per padded row when unpacked, targets masked before the
// loss start, and the global valid-target and padding counts.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "trident/core/error.hpp"
#include "temp_dir.hpp"
#include "trident/data/sampler.hpp"
#include "trident/data/shard_set.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;

using testing::TempDir;

constexpr int64_t kT = 16;  // seq_len
constexpr int64_t kW = 24;  // windows in the test shard
constexpr int64_t kG = 8;   // global batch: an epoch is 3 steps

// Token id = its offset in the stream, so a row tells which window it came from. Documents of
// assorted lengths; with prompts, each document's loss starts a third of the way in.
void write_stream(const std::string& prefix, bool with_prompts) {
  ShardWriter writer(prefix, 1 << 20);
  const uint64_t total = kW * kT + 1;
  uint64_t offset = 0;
  for (int d = 0; offset < total; ++d) {
    const uint64_t length = std::min<uint64_t>(total - offset, 1 + (d * 13) % 40);
    std::vector<uint32_t> tokens(length);
    for (uint64_t i = 0; i < length; ++i) tokens[i] = static_cast<uint32_t>(offset + i);
    writer.add_document(tokens, with_prompts ? length / 3 : 0);
    offset += length;
  }
  writer.finish();
}

SamplerOptions options(int64_t b, int dp_rank, int dp_size, uint64_t seed = 1234, bool packing = true,
                       bool bucket = false) {
  return SamplerOptions{kT, kG, b, dp_rank, dp_size, seed, packing, bucket, 4};
}

// One sequence as the model sees it: its tokens and targets.
using Row = std::pair<std::vector<int32_t>, std::vector<int32_t>>;

// The rows of step `step` over all dp ranks, in rank order then micro-batch order.
std::vector<Row> rows_of_step(const ShardSet& reader, int64_t step, int64_t b, int dp, bool packing = true,
                              bool bucket = false) {
  std::vector<Row> rows;
  for (int r = 0; r < dp; ++r) {
    BatchSampler sampler(reader, options(b, r, dp, 1234, packing, bucket));
    Batch batch = sampler.make_batch();
    for (int k = 0; k < sampler.micro_batches_per_step(); ++k) {
      sampler.fill(step, k, batch);
      const int32_t* tokens = batch.tokens.data<int32_t>();
      const int32_t* targets = batch.targets.data<int32_t>();
      const int64_t L = batch.tokens.dim(1);  // kT, or less for a bucketed micro-batch
      for (int64_t i = 0; i < b; ++i)
        rows.emplace_back(std::vector<int32_t>(tokens + i * L, tokens + (i + 1) * L),
                          std::vector<int32_t>(targets + i * L, targets + (i + 1) * L));
    }
  }
  return rows;
}

TEST(Sampler, DataOrderIndependentOfDp) {
  TempDir dir;
  write_stream(dir / "s", true);
  const ShardSet reader(dir / "s");
  for (bool packing : {true, false})
    for (int64_t step = 0; step < 7; ++step) {  // crosses two epoch boundaries
      const std::vector<Row> reference = rows_of_step(reader, step, 2, 1, packing);
      ASSERT_EQ(reference.size(), static_cast<size_t>(kG));
      for (int dp : {2, 4}) EXPECT_EQ(rows_of_step(reader, step, 2, dp, packing), reference) << "dp=" << dp;
      EXPECT_EQ(rows_of_step(reader, step, 1, 4, packing), reference) << "micro_batch=1, dp=4";
    }
}

TEST(Sampler, EveryRowOncePerEpoch) {
  TempDir dir;
  write_stream(dir / "s", false);
  const ShardSet reader(dir / "s");
  BatchSampler sampler(reader, options(2, 0, 1));
  ASSERT_EQ(sampler.num_rows(), kW);
  std::vector<std::vector<int64_t>> epochs;
  for (int64_t epoch = 0; epoch < 3; ++epoch) {
    std::multiset<int64_t> seen;  // from the filled batches: windows = first token / T
    std::vector<int64_t> order;
    for (int64_t step = epoch * kW / kG; step < (epoch + 1) * kW / kG; ++step)
      for (const Row& row : rows_of_step(reader, step, 2, 1)) {
        seen.insert(row.first[0] / kT);
        order.push_back(row.first[0] / kT);
      }
    ASSERT_EQ(seen.size(), static_cast<size_t>(kW));
    for (int64_t w = 0; w < kW; ++w) EXPECT_EQ(seen.count(w), 1u) << "window " << w << " epoch " << epoch;
    for (int64_t p = 0; p < kW; ++p) EXPECT_EQ(sampler.row_of(epoch * kW + p), order[p]);
    epochs.push_back(order);
  }
  EXPECT_NE(epochs[0], epochs[1]);  // reshuffled each epoch
  BatchSampler other_seed(reader, options(2, 0, 1, 99));
  std::vector<int64_t> order;
  for (int64_t p = 0; p < kW; ++p) order.push_back(other_seed.row_of(p));
  EXPECT_NE(order, epochs[0]);
}

TEST(Sampler, PackedRowsRestartPositionsAtDocuments) {
  TempDir dir;
  write_stream(dir / "s", false);
  const ShardSet reader(dir / "s");
  BatchSampler sampler(reader, options(4, 1, 2));
  Batch batch;
  sampler.fill(5, 0, batch);
  const int32_t* first_buffer = batch.tokens.data<int32_t>();
  sampler.fill(6, 0, batch);
  EXPECT_EQ(batch.tokens.data<int32_t>(), first_buffer);  // reused, not reallocated
  ASSERT_EQ(batch.tokens.shape(), (Shape{4, kT}));
  const int32_t* tokens = batch.tokens.data<int32_t>();
  const int32_t* targets = batch.targets.data<int32_t>();
  const int32_t* positions = batch.positions.data<int32_t>();
  int64_t valid = 0, boundaries = 0;
  for (int64_t i = 0; i < 4; ++i) {
    const uint64_t row_begin = static_cast<uint64_t>(tokens[i * kT]);
    EXPECT_EQ(row_begin % kT, 0u);  // rows start at multiples of T
    for (int64_t t = 0; t < kT; ++t) {
      const uint64_t offset = row_begin + t;  // token id = stream offset
      EXPECT_EQ(tokens[i * kT + t], static_cast<int32_t>(offset));
      const DocumentSpan doc = reader.document(reader.document_of(offset));
      EXPECT_EQ(positions[i * kT + t], static_cast<int32_t>(offset - std::max(doc.begin, row_begin)));
      const bool crosses = offset + 1 == doc.end;  // the next token starts another document
      EXPECT_EQ(targets[i * kT + t], crosses ? -1 : static_cast<int32_t>(offset + 1));
      valid += !crosses;
      boundaries += crosses;
    }
  }
  EXPECT_GT(boundaries, 0);
  EXPECT_EQ(batch.valid_tokens, valid);
  EXPECT_EQ(batch.padding_tokens, 0);
  EXPECT_EQ(sampler.global_batch_stats(6).padding_tokens, 0);
  EXPECT_LT(sampler.count_valid_targets(6), kG * kT);
}

TEST(Sampler, UnpackedRowsHoldOneDocumentEach) {
  TempDir dir;
  write_stream(dir / "s", false);
  const ShardSet reader(dir / "s");
  BatchSampler sampler(reader, options(2, 0, 1, 1234, /*packing=*/false));
  // documents of n tokens give ceil((n - 1) / T) rows; one-token documents none
  int64_t expected_rows = 0;
  for (uint64_t d = 0; d < reader.num_documents(); ++d)
    expected_rows += (static_cast<int64_t>(reader.document(d).size()) - 1 + kT - 1) / kT;
  EXPECT_EQ(sampler.num_rows(), expected_rows);
  std::set<int64_t> row_starts;
  int64_t padding = 0;
  for (int64_t step = 0; step < expected_rows / kG; ++step) {
    int64_t step_valid = 0, step_padding = 0;
    for (int k = 0; k < sampler.micro_batches_per_step(); ++k) {
      Batch batch;
      sampler.fill(step, k, batch);
      for (int64_t i = 0; i < 2; ++i) {
        const int32_t* tokens = batch.tokens.data<int32_t>() + i * kT;
        const int32_t* targets = batch.targets.data<int32_t>() + i * kT;
        const int32_t* positions = batch.positions.data<int32_t>() + i * kT;
        const DocumentSpan doc = reader.document(reader.document_of(static_cast<uint64_t>(tokens[0])));
        const int64_t length = std::min<int64_t>(kT, static_cast<int64_t>(doc.end) - tokens[0] - 1);
        EXPECT_EQ((static_cast<uint64_t>(tokens[0]) - doc.begin) % kT, 0u);  // pieces of T targets
        row_starts.insert(tokens[0]);
        for (int64_t t = 0; t < kT; ++t) {
          EXPECT_EQ(positions[t], t);
          EXPECT_EQ(targets[t], t < length ? tokens[0] + t + 1 : -1);
          if (t < length) {
            EXPECT_EQ(tokens[t], tokens[0] + t);
          }
        }
        step_padding += kT - length;
      }
      step_valid += batch.valid_tokens;
      EXPECT_EQ(batch.padding_tokens + batch.valid_tokens, 2 * kT);
    }
    EXPECT_EQ(sampler.global_batch_stats(step).padding_tokens, step_padding);
    EXPECT_EQ(sampler.count_valid_targets(step), step_valid);
    padding += step_padding;
  }
  EXPECT_EQ(row_starts.size(), static_cast<size_t>(expected_rows / kG * kG));  // no row twice in an epoch
  EXPECT_GT(padding, 0);
}

TEST(Sampler, TargetsMaskedBeforeLossStart) {
  TempDir dir;
  write_stream(dir / "s", true);
  const ShardSet reader(dir / "s");
  for (int dp : {1, 2}) {
    std::vector<BatchSampler> samplers;
    for (int r = 0; r < dp; ++r) samplers.emplace_back(reader, options(2, r, dp));
    for (int64_t step = 0; step < 6; ++step) {
      int64_t valid_in_batches = 0;
      for (BatchSampler& sampler : samplers) {
        Batch batch = sampler.make_batch();
        for (int k = 0; k < sampler.micro_batches_per_step(); ++k) {
          sampler.fill(step, k, batch);
          const int32_t* tokens = batch.tokens.data<int32_t>();
          const int32_t* targets = batch.targets.data<int32_t>();
          int64_t valid = 0;
          for (int64_t n = 0; n < 2 * kT; ++n) {
            const uint64_t target_offset = static_cast<uint64_t>(tokens[n]) + 1;
            const DocumentSpan doc = reader.document(reader.document_of(target_offset));
            // before the loss start, or the first token of the next document (document masking)
            const bool masked = target_offset < doc.begin + doc.loss_start || target_offset == doc.begin;
            EXPECT_EQ(targets[n], masked ? -1 : static_cast<int32_t>(target_offset));
            valid += !masked;
          }
          EXPECT_EQ(batch.valid_tokens, valid);
          valid_in_batches += valid;
        }
      }
      EXPECT_EQ(samplers[0].count_valid_targets(step), valid_in_batches) << "dp=" << dp;
      EXPECT_LT(valid_in_batches, kG * kT);  // some prompt tokens were masked
    }
  }
}

TEST(Sampler, BucketingGroupsLengthsAndCutsPadding) {
  TempDir dir;
  write_stream(dir / "s", true);
  const ShardSet reader(dir / "s");
  BatchSampler plain(reader, options(2, 0, 1, 1234, false, false));
  BatchSampler bucketed(reader, options(2, 0, 1, 1234, false, true));
  ASSERT_EQ(plain.num_rows(), bucketed.num_rows());
  const int64_t steps = bucketed.num_rows();  // kG whole epochs: every row kG times
  int64_t plain_padding = 0, bucketed_padding = 0, plain_valid = 0, bucketed_valid = 0;
  std::multiset<std::vector<int32_t>> plain_rows, bucketed_rows;  // rows without their padding
  for (int64_t step = 0; step < steps; ++step) {
    plain_padding += plain.global_batch_stats(step).padding_tokens;
    bucketed_padding += bucketed.global_batch_stats(step).padding_tokens;
    plain_valid += plain.count_valid_targets(step);
    bucketed_valid += bucketed.count_valid_targets(step);
    EXPECT_LE(bucketed.global_batch_stats(step).computed_tokens, kG * kT);
    for (BatchSampler* s : {&plain, &bucketed})
      for (int k = 0; k < s->micro_batches_per_step(); ++k) {
        Batch batch;
        s->fill(step, k, batch);
        const int64_t L = batch.tokens.dim(1);
        EXPECT_TRUE(L == kT || L % 4 == 0) << L;
        EXPECT_LE(batch.padding_tokens + batch.valid_tokens, 2 * L);
        for (int64_t i = 0; i < 2; ++i) {
          std::vector<int32_t> row(batch.tokens.data<int32_t>() + i * L, batch.tokens.data<int32_t>() + (i + 1) * L);
          std::vector<int32_t> target(batch.targets.data<int32_t>() + i * L, batch.targets.data<int32_t>() + (i + 1) * L);
          while (!target.empty() && target.back() < 0 && row.size() > 1 && row.back() == 0) {
            row.pop_back();
            target.pop_back();
          }
          (s == &plain ? plain_rows : bucketed_rows).insert(row);
        }
      }
  }
  EXPECT_EQ(plain_rows, bucketed_rows);  // the same rows over an epoch, only grouped differently
  EXPECT_EQ(plain_valid, bucketed_valid);
  EXPECT_LT(bucketed_padding * 2, plain_padding) << "bucketed " << bucketed_padding << " vs " << plain_padding;
  for (int64_t step = 0; step < 3; ++step)  // and still independent of dp
    for (int dp : {2, 4}) EXPECT_EQ(rows_of_step(reader, step, 2, dp, false, true), rows_of_step(reader, step, 2, 1, false, true));
  EXPECT_THROW(BatchSampler(reader, options(2, 0, 1, 1234, true, true)), ConfigError);  // bucket needs unpacked rows
}

// data.truncate: a fine-tuning document whose prompt is longer than T keeps the last T prompt
// tokens (left) or goes (skip); plain text and short prompts stay as written.
TEST(Sampler, LongPromptsAreCutFromTheLeftOrSkipped) {
  TempDir dir;
  {
    ShardWriter writer(dir / "ft", 1 << 20);
    uint32_t next = 0;
    auto add = [&](uint64_t length, uint64_t loss_start) {
      std::vector<uint32_t> tokens(length);
      for (auto& t : tokens) t = next++;
      writer.add_document(tokens, loss_start);
    };
    add(30, 0);        // plain text longer than a row: never cut
    add(45, 40);       // prompt of 40 > T = 16: cut by 24
    add(10, 5);        // fits
    add(23, 20);       // prompt of 20: cut by 4
    add(12, 12);       // prompt only: nothing to train, left as it is
    for (int i = 0; i < 46; ++i) add(9, 3);  // enough rows for the batches:
    add(7, 3);                               // 513 tokens once cut, 32 rows = 4 global batches
    writer.finish();
  }
  const ShardSet set(dir / "ft");
  const DocumentStream left(set, kT, Truncate::kLeft), skip(set, kT, Truncate::kSkip);
  EXPECT_EQ(left.cut_documents(), 2u);
  EXPECT_EQ(left.cut_tokens(), 28u);
  EXPECT_EQ(left.num_tokens(), set.num_tokens() - 28);
  EXPECT_EQ(skip.skipped_documents(), 2u);
  EXPECT_EQ(skip.num_documents(), set.num_documents() - 2);
  const DocumentSpan b = left.document(1);
  EXPECT_EQ(b.size(), 21u);
  EXPECT_EQ(b.loss_start, uint64_t(kT));  // the first answer token is a row's last target
  EXPECT_TRUE(left.cut(1) && !left.cut(0) && !left.cut(2));
  std::vector<int32_t> tokens(b.size());
  left.copy_tokens(b.begin, b.size(), tokens.data());
  for (size_t i = 0; i < tokens.size(); ++i) EXPECT_EQ(tokens[i], int32_t(30 + 24 + i));  // the document's tail
  EXPECT_EQ(left.document_of(b.begin), 1u);
  EXPECT_EQ(left.document(4).size(), 12u);  // prompt only: unchanged
  EXPECT_EQ(skip.document(1).size(), 10u);  // the prompt-20 and prompt-40 documents are gone
  // The sampler reads the cut stream: every row has its targets, none crosses a document start.
  SamplerOptions o = options(2, 0, 1);
  o.truncate = Truncate::kSkip;
  BatchSampler sampler(set, o);
  EXPECT_EQ(sampler.documents().skipped_documents(), 2u);
  EXPECT_GT(sampler.count_valid_targets(0), 0);
  o.truncate = Truncate::kLeft;
  BatchSampler cut(set, o);
  int64_t truncated = 0;
  ASSERT_EQ(cut.num_rows(), 4 * kG);
  for (int64_t step = 0; step < 4; ++step) truncated += cut.global_batch_stats(step).truncated_documents;
  EXPECT_EQ(truncated, 2);  // each cut document counted once, in the step of the row it starts in
}

TEST(Sampler, RejectsBadConfiguration) {
  TempDir dir;
  write_stream(dir / "s", false);
  const ShardSet reader(dir / "s");
  EXPECT_THROW(BatchSampler(reader, options(3, 0, 1)), ConfigError);  // 8 % 3 != 0
  EXPECT_THROW(BatchSampler(reader, options(2, 0, 8)), ConfigError);  // 8 % 16 != 0
  try {
    BatchSampler(reader, SamplerOptions{kT, 32, 2, 0, 1, 0});  // 24 rows < 32 sequences
    ADD_FAILURE() << "no error for too few windows";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "s"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trident::data
