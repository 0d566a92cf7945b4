// int8 gradient compression: blocks of kInt8Block values share one fp32 scale
// (max |x| / 127), values rounded to the nearest step, so |x - q * scale| <= scale / 2.
//
// Reduction of a bucket of n elements over p ranks (never summing int8 values):
//   1. each rank adds its residual, quantises chunk r (n/p elements, dp.block) of the bucket
//      for every r and keeps what rounding lost as its new residual;
//   2. all-to-all: rank r receives every rank's int8 chunk r with its scales, dequantises and
//      sums in fp32 (in rank order, so the same on every rank that would do it);
//   3. without ZeRO: rank r adds its second residual (what re-quantising its summed chunk lost
//      last time), re-quantises the sum and keeps the new loss; all-gather of the int8 chunks;
//      every rank dequantises every chunk: the same gradient everywhere.
//      With ZeRO-1 the fp32 sum of step 2 is rank r's block: no step 3.
// Wire per rank: (p-1)/p n (1 + 4/4096) bytes per exchange, a quarter of fp32's.
// Re-quantising (not sending fp32 sums) in step 3 keeps the cut at 75% instead of 37.5%; its
// error is fed back like the first one.
// Wire segment for one chunk: [scales: fp32 x blocks][values: int8 x chunk] (chunk is a
// multiple of 16, so the next segment's scales stay 4-byte aligned).
#pragma once
#include <cstdint>
#include <vector>

#include "trident/dist/compression.hpp"

namespace trident::dist {

inline constexpr int64_t kInt8Block = 4096;

inline int64_t int8_blocks(int64_t n) { return (n + kInt8Block - 1) / kInt8Block; }
// q: n values; scales: int8_blocks(n). A block holding a NaN or inf gets a NaN scale, so the
// fault reaches the reduced gradient (and the step is skipped) instead of vanishing.
void int8_quantize(const float* x, int64_t n, int8_t* q, float* scales);
void int8_dequantize(const int8_t* q, const float* scales, int64_t n, float* out);       // out = q * s
void int8_dequantize_add(const int8_t* q, const float* scales, int64_t n, float* out);   // out += q * s
// Quantises acc and leaves in residual what the quantisation lost (acc - q * s).
void int8_quantize_with_feedback(const float* acc, int64_t n, int8_t* q, float* scales, float* residual);

class Int8Compressor : public GradCompressor {
 public:
  Int8Compressor(Communicator& dp, std::vector<GradBucket> buckets);
  bool compresses(size_t i) const override;

 protected:
  void start_compressed(size_t i) override;
  void advance_compressed(size_t i) override;
  void complete_compressed(size_t i) override;

 private:
  struct Buffers {
    int64_t chunk = 0;         // elements per rank's chunk (n / p)
    int64_t seg_floats = 0;    // one wire segment in floats (scales + chunk int8 bytes / 4)
    std::vector<float> send, recv, gathered;  // p segments each
    std::vector<float> own;    // this rank's re-quantised chunk (one segment)
    std::vector<float> sum;    // fp32 sum of this rank's chunk
    float* residual = nullptr;        // bucket-long: step 1's loss
    float* owner_residual = nullptr;  // chunk-long: step 3's loss (none with ZeRO)
  };
  std::vector<Buffers> buffers_;
};

}  // namespace trident::dist
