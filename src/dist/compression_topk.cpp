// Top-k selection with error feedback; (index, value) pairs exchanged by all-gather.
#include "trident/dist/compression_topk.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <functional>

namespace trident::dist {

void topk_select(const float* acc, int64_t n, int64_t k, TopKPair* pairs, float* residual, std::vector<float>& scratch) {
  TRIDENT_CHECK(n <= INT32_MAX, "topk: bucket of ", n, " elements needs 64-bit indices");
  // The k-th largest magnitude by nth_element on a contiguous copy (a NaN counts as +inf), then
  // one ascending scan: everything above it, and the first elements equal to it until k.
  scratch.resize(static_cast<size_t>(n));
  auto magnitude = [](float x) { return std::isnan(x) ? std::numeric_limits<float>::infinity() : std::fabs(x); };
  for (int64_t i = 0; i < n; ++i) scratch[i] = magnitude(acc[i]);
  std::nth_element(scratch.begin(), scratch.begin() + (k - 1), scratch.end(), std::greater<float>());
  const float threshold = scratch[static_cast<size_t>(k - 1)];
  int64_t above = 0;
  for (int64_t i = 0; i < n; ++i) above += magnitude(acc[i]) > threshold;
  int64_t ties = k - above, j = 0;
  std::copy_n(acc, n, residual);
  for (int64_t i = 0; i < n && j < k; ++i) {
    const float m = magnitude(acc[i]);
    if (m > threshold || (m == threshold && ties-- > 0)) {
      pairs[j++] = {static_cast<int32_t>(i), acc[i]};
      residual[i] = 0;
    }
  }
}

double TopKCompressor::density(double ratio, int warmup, int64_t step) {
  if (step >= warmup) return ratio;
  const int64_t quarter = std::min<int64_t>(3, 4 * step / std::max(warmup, 1));
  return std::max(ratio, std::pow(0.25, double(1 + quarter)));
}

TopKCompressor::TopKCompressor(Communicator& dp, std::vector<GradBucket> buckets, double ratio, int warmup,
                               int dense_steps)
    : GradCompressor(dp, std::move(buckets)), ratio_(ratio), warmup_(warmup), dense_steps_(dense_steps),
      buffers_(buckets_.size()) {
  TRIDENT_CONFIG_CHECK(ratio > 0 && ratio <= 1, "comm.topk_ratio must be in (0, 1] (got ", ratio, ")");
  int64_t total = 0;
  std::vector<int64_t> at(buckets_.size());
  for (size_t i = 0; i < buckets_.size(); ++i)
    if (compresses(i)) {
      at[i] = total;
      total += buckets_[i].end - buckets_[i].begin;
    }
  state_ = Tensor::zeros(Shape{std::max<int64_t>(total, 1)}, DType::kF32);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (!compresses(i)) continue;
    Buffers& B = buffers_[i];
    const int64_t largest = topk_count(buckets_[i].end - buckets_[i].begin, density(ratio, warmup, 0));
    B.k = topk_count(buckets_[i].end - buckets_[i].begin, ratio);
    B.send.resize(static_cast<size_t>(largest));
    B.recv.resize(static_cast<size_t>(largest * p()));
    B.residual = state_.data<float>() + at[i];
  }
}

void TopKCompressor::begin_step(int64_t steps_done) {
  dense_now_ = steps_done < dense_steps_;
  const double share = density(ratio_, warmup_, steps_done);
  for (size_t i = 0; i < buckets_.size(); ++i)
    if (compresses(i)) buffers_[i].k = topk_count(buckets_[i].end - buckets_[i].begin, share);
}

bool TopKCompressor::compresses(size_t i) const {
  return !dense_now_ && buckets_[i].end - buckets_[i].begin >= kMinCompressedElements;
}

void TopKCompressor::start_compressed(size_t i) {
  Buffers& B = buffers_[i];
  const int64_t n = buckets_[i].end - buckets_[i].begin;
  float* g = buckets_[i].grads.data<float>();
  add_residual(g, B.residual, n);
  topk_select(g, n, B.k, B.send.data(), B.residual, scratch_);
  const int64_t bytes = B.k * int64_t(sizeof(TopKPair));
  // Ring all-gather: each rank forwards p-1 of the p contributions.
  count_wire(uint64_t(bytes) * uint64_t(p() - 1));
  requests_[i] = dp_.iall_gather_bytes(B.send.data(), B.recv.data(), bytes);  // the first p * k of recv
}

void TopKCompressor::complete_compressed(size_t i) {
  Buffers& B = buffers_[i];
  GradBucket& b = buckets_[i];
  requests_[i].wait();
  // Without ZeRO the whole bucket is the output; with ZeRO this rank's block only.
  const int64_t n = b.end - b.begin;
  const int64_t lo = b.shard.defined() ? dp_.block(n, dp_.rank()).begin : 0;
  const int64_t hi = b.shard.defined() ? dp_.block(n, dp_.rank()).end : n;
  float* out = b.shard.defined() ? b.shard.data<float>() : b.grads.data<float>();
  std::fill_n(out, hi - lo, 0.0f);
  for (int64_t j = 0; j < B.k * p(); ++j) {
    const TopKPair& pair = B.recv[size_t(j)];
    if (pair.index >= lo && pair.index < hi) out[pair.index - lo] += pair.value;
  }
}

}  // namespace trident::dist
