// GradCompressor's shared part: uncompressed buckets, byte accounting, the factory.
#include "trident/dist/compression.hpp"

#include <algorithm>

#include "trident/dist/compression_int8.hpp"
#include "trident/dist/compression_powersgd.hpp"
#include "trident/dist/compression_topk.hpp"

namespace trident::dist {

CompressionKind compression_from_name(const std::string& name) {
  if (name == "none") return CompressionKind::kNone;
  if (name == "int8") return CompressionKind::kInt8;
  if (name == "topk") return CompressionKind::kTopK;
  if (name == "powersgd") return CompressionKind::kPowerSGD;
  TRIDENT_CONFIG_CHECK(false, "comm.compression: '", name, "' is not one of none, int8, topk, powersgd");
  return CompressionKind::kNone;
}

const char* compression_name(CompressionKind kind) {
  switch (kind) {
    case CompressionKind::kNone: return "none";
    case CompressionKind::kInt8: return "int8";
    case CompressionKind::kTopK: return "topk";
    case CompressionKind::kPowerSGD: return "powersgd";
  }
  return "?";
}

uint64_t wire_all_reduce(uint64_t bytes, int p) { return p > 1 ? 2 * bytes * uint64_t(p - 1) / uint64_t(p) : 0; }
uint64_t wire_reduce_scatter(uint64_t bytes, int p) { return p > 1 ? bytes * uint64_t(p - 1) / uint64_t(p) : 0; }

void add_residual(float* g, const float* e, int64_t n) {
  for (int64_t i = 0; i < n; ++i) g[i] += e[i];
}

GradCompressor::GradCompressor(Communicator& dp, std::vector<GradBucket> buckets)
    : dp_(dp), buckets_(std::move(buckets)), requests_(buckets_.size()) {
  for (const GradBucket& b : buckets_) {
    TRIDENT_CHECK(b.grads.dtype() == DType::kF32, "gradient compression works on fp32 gradients, got ",
                  dtype_name(b.grads.dtype()));
    TRIDENT_CHECK((b.end - b.begin) % dp.size() == 0, "bucket of ", b.end - b.begin, " elements is not a multiple of dp ",
                  dp.size());
  }
}

void GradCompressor::start(size_t i) {
  GradBucket& b = buckets_[i];
  const uint64_t bytes = static_cast<uint64_t>(b.grads.bytes());
  raw_bytes_ += b.shard.defined() ? wire_reduce_scatter(bytes, p()) : wire_all_reduce(bytes, p());
  if (compresses(i)) return start_compressed(i);
  // Uncompressed: exactly what GradReducer does without compression.
  count_wire(b.shard.defined() ? wire_reduce_scatter(bytes, p()) : wire_all_reduce(bytes, p()));
  requests_[i] = b.shard.defined() ? dp_.ireduce_scatter_sum(b.grads, b.shard) : dp_.iall_reduce_sum(b.grads);
}

void GradCompressor::advance(size_t i) {
  if (compresses(i)) advance_compressed(i);
}

void GradCompressor::complete(size_t i) {
  if (compresses(i)) return complete_compressed(i);
  requests_[i].wait();
}

void GradCompressor::progress() {
  for (CommRequest& r : requests_) r.test();
}

void GradCompressor::reset_state() {
  if (state_.defined()) std::fill_n(state_.data<float>(), state_.numel(), 0.0f);
}

std::unique_ptr<GradCompressor> make_compressor(const CompressionOptions& options, Communicator& dp,
                                                const Tensor& flat_grads, std::vector<GradBucket> buckets,
                                                const std::vector<GradMatrix>& matrices) {
  TRIDENT_CONFIG_CHECK(options.kind == CompressionKind::kNone || flat_grads.device() == Device::kCPU,
                       "comm.compression = ", compression_name(options.kind),
                       ": the compressors work on host gradients; not supported on the CUDA backend yet");
  switch (options.kind) {
    case CompressionKind::kNone: return nullptr;
    case CompressionKind::kInt8: return std::make_unique<Int8Compressor>(dp, std::move(buckets));
    case CompressionKind::kTopK:
      return std::make_unique<TopKCompressor>(dp, std::move(buckets), options.topk_ratio, options.topk_warmup,
                                              options.topk_dense_steps);
    case CompressionKind::kPowerSGD:
      return std::make_unique<PowerSGDCompressor>(dp, flat_grads, std::move(buckets), matrices, options.powersgd_rank);
  }
  return nullptr;
}

}  // namespace trident::dist
