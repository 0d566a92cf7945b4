// Gradient compression for the data-parallel reduction (comm.compression): the interface the
// GradReducer drives per bucket, the shared bookkeeping (plain buckets, bytes on the wire) and
// the factory. The compressors live in compression_int8/topk/powersgd.{hpp,cpp}.
//
// A bucket goes through three phases, each called on every rank of the dp group in the same
// bucket order (they issue collectives):
//   start(i)     bucket i's gradients are final: add the error-feedback residual, compress,
//                start the first exchange (non-blocking: overlaps the rest of backward);
//   advance(i)   wait for it, combine, start the second exchange (if the method has one);
//   complete(i)  wait, write the reduced sum (identical on every rank) into the bucket's
//                gradients, or with ZeRO-1 into this rank's block (the bucket's `shard`).
// complete() runs in ascending bucket order (PowerSGD writes a matrix that started in bucket i
// and runs into bucket i+1 when completing i).
//
// Size rule: a bucket (int8, topk) or a matrix (powersgd) with fewer than
// kMinCompressedElements = 4096 elements (one int8 block, 16 KiB) is reduced uncompressed: the
// saving would be a few KiB. PowerSGD also leaves a matrix uncompressed when its smaller side is
// at most 2r: thin matrices such as LoRA's factors (r_lora x hidden, hidden x r_lora) are
// already low-rank, a rank-r approximation of them loses much and saves little. So small
// adapters go uncompressed (with int8/topk too, when they sit in a bucket of their own).
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "trident/core/tensor.hpp"
#include "trident/dist/communicator.hpp"

namespace trident::dist {

enum class CompressionKind { kNone, kInt8, kTopK, kPowerSGD };
CompressionKind compression_from_name(const std::string& name);  // none | int8 | topk | powersgd
const char* compression_name(CompressionKind kind);

inline constexpr int64_t kMinCompressedElements = 4096;

struct CompressionOptions {
  CompressionKind kind = CompressionKind::kNone;
  double topk_ratio = 0.01;  // topk: share of a bucket's elements sent
  // topk: over the first topk_warmup steps the share falls from 1/4 by a factor 4 per quarter
  // (1/4, 1/16, 1/64, 1/256, never below topk_ratio), as Deep Gradient Compression's warm-up:
  // early gradients change fast and the residual of a sparse start would lag far behind.
  int topk_warmup = 0;
  // topk: the first topk_dense_steps steps are reduced uncompressed (the error-feedback residual
  // stays zero); the optimizer freezes Adam's second moment there (see AdamW). A coordinate
  // top-k sends every ~1/ratio steps would otherwise reach v as rare spikes of ~1/ratio steps'
  // accumulated gradient: v follows the spikes and its normalised step shrinks to a fraction of
  // the dense one; with v frozen at dense values, error feedback restores the dense movement.
  int topk_dense_steps = 0;
  int powersgd_rank = 4;     // powersgd: rank r of the approximation
  uint64_t seed = 1234;      // powersgd: the first Q, the same on every dp rank
};

// One gradient bucket: a view of the flat gradient buffer over [begin, end) (fp32, length a
// multiple of the dp size) and, with ZeRO-1, this rank's block of the reduced sum.
struct GradBucket {
  int64_t begin = 0, end = 0;
  Tensor grads;  // (end - begin)
  Tensor shard;  // ZeRO-1: (end - begin) / dp; undefined otherwise
};

// A 2-D parameter in the flat buffer, row-major (rows, cols): PowerSGD's unit. key seeds its
// first Q (rng_key(seed, name)).
struct GradMatrix {
  int64_t offset = 0, rows = 0, cols = 0;
  uint64_t key = 0;
};

// Bytes one rank puts on the wire in bandwidth-optimal algorithms (ring all-reduce, pairwise
// all-to-all), p ranks; `bytes` is the whole buffer. The unit of metrics comm_bytes(_raw).
uint64_t wire_all_reduce(uint64_t bytes, int p);      // 2 (p-1)/p bytes
uint64_t wire_reduce_scatter(uint64_t bytes, int p);  // (p-1)/p bytes (also all-gather, all-to-all)

class GradCompressor {
 public:
  GradCompressor(Communicator& dp, std::vector<GradBucket> buckets);
  virtual ~GradCompressor() = default;
  GradCompressor(const GradCompressor&) = delete;
  GradCompressor& operator=(const GradCompressor&) = delete;

  void start(size_t i);
  void advance(size_t i);
  void complete(size_t i);
  size_t num_buckets() const { return buckets_.size(); }
  // Lets MPI progress the exchanges in flight (called while backward goes on).
  void progress();
  // Before a step's first bucket: the optimizer steps done so far (schedules such as top-k's
  // warm-up).
  virtual void begin_step(int64_t /*steps_done*/) {}
  // Whether bucket i is compressed (else it is all-reduced / reduce-scattered as is).
  virtual bool compresses(size_t i) const = 0;

  // Error-feedback residuals (and PowerSGD's Q), one flat fp32 tensor: checkpointed per rank.
  const Tensor& state() const { return state_; }
  // Residuals to zero (and a fresh Q): a resume under another layout, a skipped step.
  virtual void reset_state();

  // Bytes on the wire since the last call: what was sent, and what the same exchanges
  // uncompressed would have sent.
  uint64_t take_wire_bytes() { return std::exchange(wire_bytes_, 0); }
  uint64_t take_raw_bytes() { return std::exchange(raw_bytes_, 0); }

 protected:
  virtual void start_compressed(size_t i) = 0;
  virtual void advance_compressed(size_t /*i*/) {}
  virtual void complete_compressed(size_t i) = 0;
  void count_wire(uint64_t bytes) { wire_bytes_ += bytes; }
  int p() const { return dp_.size(); }

  Communicator& dp_;
  std::vector<GradBucket> buckets_;
  std::vector<CommRequest> requests_;  // per bucket: the exchange in flight
  Tensor state_;

 private:
  uint64_t wire_bytes_ = 0, raw_bytes_ = 0;
};

// flat_grads: the whole flat gradient buffer; matrices: its 2-D parameters (powersgd).
std::unique_ptr<GradCompressor> make_compressor(const CompressionOptions& options, Communicator& dp,
                                                const Tensor& flat_grads, std::vector<GradBucket> buckets,
                                                const std::vector<GradMatrix>& matrices);

// g[i] += e[i]: the residual of the previous steps joins this step's gradient.
void add_residual(float* g, const float* e, int64_t n);

}  // namespace trident::dist
