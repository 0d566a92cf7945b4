// int8 block quantisation with error feedback; reduce by all-to-all + fp32 sums + all-gather.
#include "trident/dist/compression_int8.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

namespace trident::dist {

void int8_quantize(const float* x, int64_t n, int8_t* q, float* scales) {
  for (int64_t b = 0; b * kInt8Block < n; ++b) {
    const int64_t lo = b * kInt8Block, hi = std::min(n, lo + kInt8Block);
    float amax = 0;
    bool finite = true;
    for (int64_t i = lo; i < hi; ++i) {
      finite &= std::isfinite(x[i]);
      amax = std::max(amax, std::fabs(x[i]));
    }
    if (!finite) {
      scales[b] = std::numeric_limits<float>::quiet_NaN();
      std::fill(q + lo, q + hi, int8_t(0));
      continue;
    }
    const float scale = amax / 127.0f;
    scales[b] = scale;
    const float inv = scale > 0 ? 1.0f / scale : 0.0f;
    for (int64_t i = lo; i < hi; ++i)
      q[i] = static_cast<int8_t>(std::clamp(std::nearbyint(x[i] * inv), -127.0f, 127.0f));
  }
}

void int8_dequantize(const int8_t* q, const float* scales, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] = static_cast<float>(q[i]) * scales[i / kInt8Block];
}

void int8_dequantize_add(const int8_t* q, const float* scales, int64_t n, float* out) {
  for (int64_t i = 0; i < n; ++i) out[i] += static_cast<float>(q[i]) * scales[i / kInt8Block];
}

void int8_quantize_with_feedback(const float* acc, int64_t n, int8_t* q, float* scales, float* residual) {
  int8_quantize(acc, n, q, scales);
  for (int64_t i = 0; i < n; ++i) residual[i] = acc[i] - static_cast<float>(q[i]) * scales[i / kInt8Block];
}

namespace {
// A segment of a wire buffer: scales first, then the int8 values.
float* seg_scales(std::vector<float>& buf, int64_t seg_floats, int r) { return buf.data() + r * seg_floats; }
int8_t* seg_values(std::vector<float>& buf, int64_t seg_floats, int64_t chunk, int r) {
  return reinterpret_cast<int8_t*>(buf.data() + r * seg_floats + int8_blocks(chunk));
}
}  // namespace

Int8Compressor::Int8Compressor(Communicator& dp, std::vector<GradBucket> buckets)
    : GradCompressor(dp, std::move(buckets)), buffers_(buckets_.size()) {
  // State: every compressed bucket's residual, then (without ZeRO) its owner residual.
  int64_t total = 0;
  std::vector<int64_t> at(buckets_.size());
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (!compresses(i)) continue;
    const int64_t n = buckets_[i].end - buckets_[i].begin;
    at[i] = total;
    total += n + (buckets_[i].shard.defined() ? 0 : n / p());
  }
  state_ = Tensor::zeros(Shape{std::max<int64_t>(total, 1)}, DType::kF32);
  for (size_t i = 0; i < buckets_.size(); ++i) {
    if (!compresses(i)) continue;
    Buffers& B = buffers_[i];
    const int64_t n = buckets_[i].end - buckets_[i].begin;
    B.chunk = n / p();
    TRIDENT_CHECK(B.chunk % 16 == 0, "int8 compression: chunk of ", B.chunk, " elements is not a multiple of 16");
    B.seg_floats = int8_blocks(B.chunk) + B.chunk / 4;
    B.send.resize(static_cast<size_t>(B.seg_floats * p()));
    B.recv.resize(B.send.size());
    B.sum.resize(static_cast<size_t>(B.chunk));
    B.residual = state_.data<float>() + at[i];
    if (!buckets_[i].shard.defined()) {
      B.gathered.resize(B.send.size());
      B.own.resize(static_cast<size_t>(B.seg_floats));
      B.owner_residual = B.residual + n;
    }
  }
}

bool Int8Compressor::compresses(size_t i) const {
  return buckets_[i].end - buckets_[i].begin >= kMinCompressedElements;
}

void Int8Compressor::start_compressed(size_t i) {
  Buffers& B = buffers_[i];
  const int64_t n = buckets_[i].end - buckets_[i].begin;
  float* g = buckets_[i].grads.data<float>();
  add_residual(g, B.residual, n);
  for (int r = 0; r < p(); ++r)
    int8_quantize_with_feedback(g + r * B.chunk, B.chunk, seg_values(B.send, B.seg_floats, B.chunk, r),
                                seg_scales(B.send, B.seg_floats, r), B.residual + r * B.chunk);
  const int64_t seg_bytes = B.seg_floats * int64_t(sizeof(float));
  count_wire(wire_reduce_scatter(uint64_t(seg_bytes) * uint64_t(p()), p()));
  requests_[i] = dp_.iall_to_all_bytes(B.send.data(), B.recv.data(), seg_bytes);
}

void Int8Compressor::advance_compressed(size_t i) {
  Buffers& B = buffers_[i];
  requests_[i].wait();
  std::fill(B.sum.begin(), B.sum.end(), 0.0f);
  for (int r = 0; r < p(); ++r)
    int8_dequantize_add(seg_values(B.recv, B.seg_floats, B.chunk, r), seg_scales(B.recv, B.seg_floats, r), B.chunk,
                        B.sum.data());
  GradBucket& b = buckets_[i];
  if (b.shard.defined()) {  // ZeRO-1: the fp32 sum is this rank's block
    std::copy(B.sum.begin(), B.sum.end(), b.shard.data<float>());
    return;
  }
  add_residual(B.sum.data(), B.owner_residual, B.chunk);
  int8_quantize_with_feedback(B.sum.data(), B.chunk, seg_values(B.own, B.seg_floats, B.chunk, 0),
                              seg_scales(B.own, B.seg_floats, 0), B.owner_residual);
  const int64_t seg_bytes = B.seg_floats * int64_t(sizeof(float));
  count_wire(wire_reduce_scatter(uint64_t(seg_bytes) * uint64_t(p()), p()));
  requests_[i] = dp_.iall_gather_bytes(B.own.data(), B.gathered.data(), seg_bytes);
}

void Int8Compressor::complete_compressed(size_t i) {
  Buffers& B = buffers_[i];
  GradBucket& b = buckets_[i];
  if (b.shard.defined()) return;
  requests_[i].wait();
  float* g = b.grads.data<float>();
  for (int r = 0; r < p(); ++r)
    int8_dequantize(seg_values(B.gathered, B.seg_floats, B.chunk, r), seg_scales(B.gathered, B.seg_floats, r), B.chunk,
                    g + r * B.chunk);
}

}  // namespace trident::dist
