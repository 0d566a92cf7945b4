// BatchSampler: rows of the token stream in a seeded per-epoch shuffle, sliced by dp rank.
// Everything is a function of (seed, step, j), which is what makes the order dp-invariant.
#include "trident/data/sampler.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::data {

BatchSampler::BatchSampler(const ShardSet& set, const SamplerOptions& options)
    : stream_(set, static_cast<uint64_t>(std::max<int64_t>(options.seq_len, 0)), options.truncate),
      options_(options) {
  const DocumentStream& docs = stream_;
  const int64_t T = options.seq_len, G = options.global_batch, b = options.micro_batch;
  TRIDENT_CONFIG_CHECK(T > 0, "model.seq_len must be positive (got ", T, ")");
  TRIDENT_CONFIG_CHECK(G > 0 && b > 0, "train.global_batch and train.micro_batch must be positive (got ",
                       G, " and ", b, ")");
  TRIDENT_CHECK(options.dp_size > 0 && options.dp_rank >= 0 && options.dp_rank < options.dp_size,
                "dp_rank=", options.dp_rank, " dp_size=", options.dp_size);
  TRIDENT_CONFIG_CHECK(!options.bucket || !options.packing,
                       "data.bucket groups unpacked rows by length: it needs data.packing = false");
  TRIDENT_CONFIG_CHECK(options.length_multiple >= 1, "length multiple ", options.length_multiple);
  TRIDENT_CONFIG_CHECK(G % (b * options.dp_size) == 0, "train.global_batch (", G,
                       ") must be divisible by train.micro_batch * parallel.dp (", b, " * ",
                       options.dp_size, ")");
  micro_batches_ = static_cast<int>(G / (b * options.dp_size));

  const uint64_t n = docs.num_tokens();
  if (options.packing) {
    num_rows_ = n > 0 ? static_cast<int64_t>((n - 1) / static_cast<uint64_t>(T)) : 0;
  } else {
    // Each document of n >= 2 tokens gives ceil((n - 1) / T) rows of up to T targets.
    for (uint64_t d = 0; d < docs.num_documents(); ++d) {
      const DocumentSpan doc = docs.document(d);
      for (uint64_t begin = doc.begin; begin + 1 < doc.end; begin += static_cast<uint64_t>(T))
        unpacked_rows_.push_back({begin, static_cast<uint32_t>(std::min<uint64_t>(T, doc.end - 1 - begin))});
    }
    num_rows_ = static_cast<int64_t>(unpacked_rows_.size());
  }
  TRIDENT_CONFIG_CHECK(num_rows_ >= (options.whole_batch ? G : 1), set.prefix(), ": ", n, " tokens in ", docs.num_documents(),
                       " documents make only ", num_rows_, " rows of model.seq_len=", T,
                       options.packing ? " (+1 target)" : " (one document per row: data.packing = false)",
                       ", fewer than train.global_batch=", G, "; use more data or a smaller global batch");
  // Row indices are stored as uint32 to keep the permutation at 4 bytes per row.
  TRIDENT_CONFIG_CHECK(num_rows_ <= int64_t(std::numeric_limits<uint32_t>::max()), set.prefix(), ": ",
                       num_rows_, " rows exceed 2^32; split the data or use longer sequences");
  epoch_key_ = rng_key(options.seed, "data.epoch");
}

// Fisher-Yates from the back: swap i with a uniform j in [0, i]. The draw for position i of
// epoch e is Philox(key, counter i, stream e), so a permutation can be recomputed anywhere.
// The 64-bit modulo's bias is below 2^-32 for any W < 2^32.
void BatchSampler::compute_permutation(int64_t epoch) {
  permutation_.resize(static_cast<size_t>(num_rows_));
  std::iota(permutation_.begin(), permutation_.end(), uint32_t{0});
  for (int64_t i = num_rows_ - 1; i > 0; --i) {
    const PhiloxBlock r = rng_block(epoch_key_, static_cast<uint64_t>(i), static_cast<uint64_t>(epoch));
    const uint64_t bits = (uint64_t(r[1]) << 32) | r[0];
    const uint64_t j = bits % static_cast<uint64_t>(i + 1);
    std::swap(permutation_[i], permutation_[j]);
  }
  if (options_.bucket) {  // longest first within each window: neighbours have similar lengths
    const int64_t window = kBucketWindow * options_.global_batch;
    for (int64_t begin = 0; begin < num_rows_; begin += window) {
      const auto first = permutation_.begin() + begin;
      const auto last = permutation_.begin() + std::min(num_rows_, begin + window);
      std::stable_sort(first, last, [&](uint32_t a, uint32_t b) {
        return unpacked_rows_[a].length > unpacked_rows_[b].length;
      });
    }
  }
  cached_epoch_ = epoch;
}

int64_t BatchSampler::row_of(int64_t global_sequence) {
  TRIDENT_CHECK(global_sequence >= 0, "global sequence ", global_sequence);
  const int64_t epoch = global_sequence / num_rows_;
  if (epoch != cached_epoch_) compute_permutation(epoch);
  return permutation_[global_sequence % num_rows_];
}

BatchSampler::RowSpan BatchSampler::row_span(int64_t row) const {
  if (!options_.packing) return unpacked_rows_[static_cast<size_t>(row)];
  return {static_cast<uint64_t>(row * options_.seq_len), static_cast<uint32_t>(options_.seq_len)};
}

int64_t BatchSampler::fill_row(int64_t row, int64_t T, int32_t* tokens, int32_t* targets, int32_t* positions,
                               int64_t* truncated) const {
  const RowSpan span = row_span(row);
  const int64_t length = span.length;
  stream_.copy_tokens(span.begin, span.length, tokens);
  stream_.copy_tokens(span.begin + 1, span.length, targets);
  std::fill(tokens + length, tokens + T, 0);  // padding (unpacked rows only)
  std::fill(targets + length, targets + T, -1);
  for (int64_t t = length; t < T; ++t) positions[t] = static_cast<int32_t>(t);
  // Walk the documents the row touches: positions restart at each document start, the target
  // that crosses into the next document and targets before the loss start are masked.
  int64_t doc_start_in_row = 0;
  for (uint64_t d = stream_.document_of(span.begin); d < stream_.num_documents(); ++d) {
    const DocumentSpan doc = stream_.document(d);
    if (doc.begin > span.begin + static_cast<uint64_t>(length)) break;
    if (truncated && doc.begin >= span.begin && doc.begin < span.begin + static_cast<uint64_t>(length) && stream_.cut(d))
      ++*truncated;
    if (doc.begin > span.begin) {
      doc_start_in_row = static_cast<int64_t>(doc.begin - span.begin);
      targets[doc_start_in_row - 1] = -1;  // last token of the previous document predicts nothing here
      if (doc_start_in_row == length) break;  // starts right after the row: only that target was its
    }
    const int64_t end_in_row = std::min<int64_t>(length, static_cast<int64_t>(doc.end - span.begin));
    for (int64_t t = doc_start_in_row; t < end_in_row; ++t) positions[t] = static_cast<int32_t>(t - doc_start_in_row);
    // target t is token span.begin + t + 1: masked while that lies before the loss start
    const uint64_t loss_from = doc.begin + doc.loss_start;
    for (int64_t t = doc_start_in_row; t < end_in_row && span.begin + t + 1 < loss_from; ++t) targets[t] = -1;
  }
  int64_t valid = 0;
  for (int64_t t = 0; t < T; ++t) valid += targets[t] >= 0;
  return valid;
}

Batch BatchSampler::make_batch() const {
  const Shape shape{options_.micro_batch, options_.seq_len};
  Batch batch;
  batch.tokens = batch.tokens_buffer = Tensor::zeros(shape, DType::kI32);
  batch.targets = batch.targets_buffer = Tensor::zeros(shape, DType::kI32);
  batch.positions = batch.positions_buffer = Tensor::zeros(shape, DType::kI32);
  return batch;
}

int64_t BatchSampler::micro_batch_length(int64_t first_global_sequence) {
  const int64_t T = options_.seq_len;
  if (!options_.bucket) return T;
  int64_t longest = 1;
  for (int64_t i = 0; i < options_.micro_batch; ++i)
    longest = std::max<int64_t>(longest, row_span(row_of(first_global_sequence + i)).length);
  const int64_t m = options_.length_multiple;
  return std::min(T, (longest + m - 1) / m * m);
}

void BatchSampler::fill(int64_t step, int micro_index, Batch& out) {
  TRIDENT_CHECK(step >= 0 && micro_index >= 0 && micro_index < micro_batches_, "step=", step,
                " micro_index=", micro_index, " of ", micro_batches_);
  if (!out.tokens_buffer.defined()) out = make_batch();
  const int64_t T = options_.seq_len, b = options_.micro_batch;
  const Shape shape{b, T};
  TRIDENT_CHECK(out.tokens_buffer.shape() == shape && out.targets_buffer.shape() == shape &&
                    out.positions_buffer.shape() == shape,
                "batch tensors must be ", shape.str(), ", got ", out.tokens_buffer.shape().str());
  const int64_t rank_begin = options_.dp_rank * (options_.global_batch / options_.dp_size);
  const int64_t first = step * options_.global_batch + rank_begin + micro_index * b;
  const int64_t L = micro_batch_length(first);
  auto cut = [&](const Tensor& buffer) { return L == T ? buffer : buffer.flat().narrow(0, b * L).view(Shape{b, L}); };
  out.tokens = cut(out.tokens_buffer);
  out.targets = cut(out.targets_buffer);
  out.positions = cut(out.positions_buffer);
  out.valid_tokens = 0;
  out.padding_tokens = 0;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t row = row_of(first + i);
    // rows shorter than L lose nothing by the cut: it removes only padding
    out.valid_tokens += fill_row(row, L, out.tokens.data<int32_t>() + i * L, out.targets.data<int32_t>() + i * L,
                                 out.positions.data<int32_t>() + i * L);
    out.padding_tokens += L - row_span(row).length;
  }
  out.first_sequence = rank_begin + micro_index * b;
}

GlobalBatchStats BatchSampler::global_batch_stats(int64_t step) {
  if (step == stats_step_) return stats_;
  const int64_t G = options_.global_batch, T = options_.seq_len;
  scratch_.resize(static_cast<size_t>(3 * T));
  GlobalBatchStats stats;
  int64_t L = T;
  for (int64_t j = 0; j < G; ++j) {
    if (j % options_.micro_batch == 0) {  // micro-batches are consecutive rows whatever dp is
      L = micro_batch_length(step * G + j);
      stats.computed_tokens += options_.micro_batch * L;
    }
    const int64_t row = row_of(step * G + j);
    stats.valid_targets += fill_row(row, L, scratch_.data(), scratch_.data() + T, scratch_.data() + 2 * T,
                                    &stats.truncated_documents);
    stats.padding_tokens += L - row_span(row).length;
  }
  stats_step_ = step;
  stats_ = stats;
  return stats;
}

}  // namespace trident::data
