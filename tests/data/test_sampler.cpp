// Tests of the batch sampler: data order independent of dp, every window once per epoch,
// targets masked before the loss start, and the global valid-target count.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <filesystem>
#include <set>

#include "trident/core/error.hpp"
#include "temp_dir.hpp"
#include "trident/data/sampler.hpp"

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

SamplerOptions options(int64_t b, int dp_rank, int dp_size, uint64_t seed = 1234) {
  return SamplerOptions{kT, kG, b, dp_rank, dp_size, seed};
}

// One sequence as the model sees it: its tokens and targets.
using Row = std::pair<std::vector<int32_t>, std::vector<int32_t>>;

// The rows of step `step` over all dp ranks, in rank order then micro-batch order.
std::vector<Row> rows_of_step(const ShardReader& reader, int64_t step, int64_t b, int dp) {
  std::vector<Row> rows;
  for (int r = 0; r < dp; ++r) {
    BatchSampler sampler(reader, options(b, r, dp));
    Batch batch = sampler.make_batch();
    for (int k = 0; k < sampler.micro_batches_per_step(); ++k) {
      sampler.fill(step, k, batch);
      const int32_t* tokens = batch.tokens.data<int32_t>();
      const int32_t* targets = batch.targets.data<int32_t>();
      for (int64_t i = 0; i < b; ++i)
        rows.emplace_back(std::vector<int32_t>(tokens + i * kT, tokens + (i + 1) * kT),
                          std::vector<int32_t>(targets + i * kT, targets + (i + 1) * kT));
    }
  }
  return rows;
}

TEST(Sampler, DataOrderIndependentOfDp) {
  TempDir dir;
  write_stream(dir / "s", true);
  const ShardReader reader(dir / "s");
  for (int64_t step = 0; step < 7; ++step) {  // crosses two epoch boundaries
    const std::vector<Row> reference = rows_of_step(reader, step, 2, 1);
    ASSERT_EQ(reference.size(), static_cast<size_t>(kG));
    for (int dp : {2, 4}) EXPECT_EQ(rows_of_step(reader, step, 2, dp), reference) << "dp=" << dp;
    EXPECT_EQ(rows_of_step(reader, step, 1, 4), reference) << "micro_batch=1, dp=4";
  }
}

TEST(Sampler, EveryWindowOncePerEpoch) {
  TempDir dir;
  write_stream(dir / "s", false);
  const ShardReader reader(dir / "s");
  BatchSampler sampler(reader, options(2, 0, 1));
  ASSERT_EQ(sampler.num_windows(), kW);
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
    for (int64_t p = 0; p < kW; ++p) EXPECT_EQ(sampler.window_of(epoch * kW + p), order[p]);
    epochs.push_back(order);
  }
  EXPECT_NE(epochs[0], epochs[1]);  // reshuffled each epoch
  BatchSampler other_seed(reader, options(2, 0, 1, 99));
  std::vector<int64_t> order;
  for (int64_t p = 0; p < kW; ++p) order.push_back(other_seed.window_of(p));
  EXPECT_NE(order, epochs[0]);
}

TEST(Sampler, TokensTargetsPositions) {
  TempDir dir;
  write_stream(dir / "s", false);
  const ShardReader reader(dir / "s");
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
  for (int64_t i = 0; i < 4; ++i) {
    EXPECT_EQ(tokens[i * kT] % kT, 0);  // windows start at multiples of T
    for (int64_t t = 0; t < kT; ++t) {
      EXPECT_EQ(tokens[i * kT + t], tokens[i * kT] + t);
      EXPECT_EQ(targets[i * kT + t], tokens[i * kT + t] + 1);
      EXPECT_EQ(positions[i * kT + t], t);
    }
  }
  EXPECT_EQ(batch.valid_tokens, 4 * kT);
  EXPECT_EQ(sampler.count_valid_targets(6), kG * kT);
}

TEST(Sampler, TargetsMaskedBeforeLossStart) {
  TempDir dir;
  write_stream(dir / "s", true);
  const ShardReader reader(dir / "s");
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
            const bool masked = target_offset < doc.begin + doc.loss_start;
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

TEST(Sampler, RejectsBadConfiguration) {
  TempDir dir;
  write_stream(dir / "s", false);
  const ShardReader reader(dir / "s");
  EXPECT_THROW(BatchSampler(reader, options(3, 0, 1)), ConfigError);  // 8 % 3 != 0
  EXPECT_THROW(BatchSampler(reader, options(2, 0, 8)), ConfigError);  // 8 % 16 != 0
  try {
    BatchSampler(reader, SamplerOptions{kT, 32, 2, 0, 1, 0});  // 24 windows < 32 sequences
    ADD_FAILURE() << "no error for too few windows";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find(dir / "s"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace trident::data
