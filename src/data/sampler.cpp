// BatchSampler: windows of the token stream in a seeded per-epoch shuffle, sliced by dp rank.
// Everything is a function of (seed, step, j), which is what makes the order dp-invariant.
#include "trident/data/sampler.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::data {

BatchSampler::BatchSampler(const ShardReader& reader, const SamplerOptions& options)
    : reader_(reader), options_(options) {
  const int64_t T = options.seq_len, G = options.global_batch, b = options.micro_batch;
  TRIDENT_CONFIG_CHECK(T > 0, "model.seq_len must be positive (got ", T, ")");
  TRIDENT_CONFIG_CHECK(G > 0 && b > 0, "train.global_batch and train.micro_batch must be positive (got ",
                       G, " and ", b, ")");
  TRIDENT_CHECK(options.dp_size > 0 && options.dp_rank >= 0 && options.dp_rank < options.dp_size,
                "dp_rank=", options.dp_rank, " dp_size=", options.dp_size);
  TRIDENT_CONFIG_CHECK(G % (b * options.dp_size) == 0, "train.global_batch (", G,
                       ") must be divisible by train.micro_batch * parallel.dp (", b, " * ",
                       options.dp_size, ")");
  micro_batches_ = static_cast<int>(G / (b * options.dp_size));

  const uint64_t n = reader.num_tokens();
  num_windows_ = n > 0 ? static_cast<int64_t>((n - 1) / static_cast<uint64_t>(T)) : 0;
  TRIDENT_CONFIG_CHECK(num_windows_ >= G, reader.prefix(), ": ", n, " tokens make only ",
                       num_windows_, " windows of model.seq_len=", T,
                       " (+1 target), fewer than train.global_batch=", G,
                       "; use more data or a smaller global batch");
  // Window indices are stored as uint32 to keep the permutation at 4 bytes per window.
  TRIDENT_CONFIG_CHECK(num_windows_ <= int64_t(std::numeric_limits<uint32_t>::max()),
                       reader.prefix(), ": ", num_windows_,
                       " windows exceed 2^32; split the data or use longer sequences");
  epoch_key_ = rng_key(options.seed, "data.epoch");
}

// Fisher-Yates from the back: swap i with a uniform j in [0, i]. The draw for position i of
// epoch e is Philox(key, counter i, stream e), so a permutation can be recomputed anywhere.
// The 64-bit modulo's bias is below 2^-32 for any W < 2^32.
void BatchSampler::compute_permutation(int64_t epoch) {
  permutation_.resize(static_cast<size_t>(num_windows_));
  std::iota(permutation_.begin(), permutation_.end(), uint32_t{0});
  for (int64_t i = num_windows_ - 1; i > 0; --i) {
    const PhiloxBlock r = rng_block(epoch_key_, static_cast<uint64_t>(i), static_cast<uint64_t>(epoch));
    const uint64_t bits = (uint64_t(r[1]) << 32) | r[0];
    const uint64_t j = bits % static_cast<uint64_t>(i + 1);
    std::swap(permutation_[i], permutation_[j]);
  }
  cached_epoch_ = epoch;
}

int64_t BatchSampler::window_of(int64_t global_sequence) {
  TRIDENT_CHECK(global_sequence >= 0, "global sequence ", global_sequence);
  const int64_t epoch = global_sequence / num_windows_;
  if (epoch != cached_epoch_) compute_permutation(epoch);
  return permutation_[global_sequence % num_windows_];
}

template <typename Visit>
void BatchSampler::for_each_masked_range(int64_t window, Visit&& visit) const {
  const uint64_t T = static_cast<uint64_t>(options_.seq_len);
  const uint64_t first = static_cast<uint64_t>(window) * T + 1;  // token offset of target 0
  const uint64_t last = first + T;                                // one past the last target
  for (uint64_t d = reader_.document_of(first); d < reader_.num_documents(); ++d) {
    const DocumentSpan doc = reader_.document(d);
    if (doc.begin >= last) break;
    const uint64_t lo = std::max(doc.begin, first);
    const uint64_t hi = std::min(doc.begin + doc.loss_start, last);
    if (lo < hi) visit(static_cast<int64_t>(lo - first), static_cast<int64_t>(hi - first));
  }
}

Batch BatchSampler::make_batch() const {
  const Shape shape{options_.micro_batch, options_.seq_len};
  return Batch{Tensor::zeros(shape, DType::kI32), Tensor::zeros(shape, DType::kI32),
               Tensor::zeros(shape, DType::kI32), 0};
}

void BatchSampler::fill(int64_t step, int micro_index, Batch& out) {
  TRIDENT_CHECK(step >= 0 && micro_index >= 0 && micro_index < micro_batches_, "step=", step,
                " micro_index=", micro_index, " of ", micro_batches_);
  if (!out.tokens.defined()) out = make_batch();
  const int64_t T = options_.seq_len, b = options_.micro_batch;
  const Shape shape{b, T};
  TRIDENT_CHECK(out.tokens.shape() == shape && out.targets.shape() == shape &&
                    out.positions.shape() == shape,
                "batch tensors must be ", shape.str(), ", got ", out.tokens.shape().str());
  int32_t* tokens = out.tokens.data<int32_t>();
  int32_t* targets = out.targets.data<int32_t>();
  int32_t* positions = out.positions.data<int32_t>();

  const int64_t rank_begin = options_.dp_rank * (options_.global_batch / options_.dp_size);
  int64_t masked = 0;
  for (int64_t i = 0; i < b; ++i) {
    const int64_t j = rank_begin + micro_index * b + i;
    const int64_t window = window_of(step * options_.global_batch + j);
    const uint64_t start = static_cast<uint64_t>(window * T);
    reader_.copy_tokens(start, static_cast<uint64_t>(T), tokens + i * T);
    reader_.copy_tokens(start + 1, static_cast<uint64_t>(T), targets + i * T);
    for (int64_t t = 0; t < T; ++t) positions[i * T + t] = static_cast<int32_t>(t);
    if (!reader_.has_loss_starts()) continue;
    int32_t* row = targets + i * T;
    for_each_masked_range(window, [&](int64_t lo, int64_t hi) {
      std::fill(row + lo, row + hi, -1);
      masked += hi - lo;
    });
  }
  out.valid_tokens = b * T - masked;
  out.first_sequence = rank_begin + micro_index * b;
}

int64_t BatchSampler::count_valid_targets(int64_t step) {
  const int64_t G = options_.global_batch, T = options_.seq_len;
  if (!reader_.has_loss_starts()) return G * T;
  int64_t masked = 0;
  for (int64_t j = 0; j < G; ++j)
    for_each_masked_range(window_of(step * G + j), [&](int64_t lo, int64_t hi) { masked += hi - lo; });
  return G * T - masked;
}

}  // namespace trident::data
