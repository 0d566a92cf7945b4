// Dropout in place with the counter-based Philox mask of the CPU backend (cpu/dropout.cpp,
// core/rng.hpp), bit for bit: global element g = first_index + i is kept, scaled by the fp32
// factor 1/(1-p), when word g % 4 of Philox block (key, g / 4, stream) >= p * 2^32 - 0.5.
// One thread per Philox block: it computes the block once and handles its (up to) 4 elements.
#include <cmath>

#include "core_kernels.cuh"
#include "device_access.cuh"

namespace trident::cuda {
namespace {

// Philox4x32-10 exactly as trident::philox4x32_10 (core/rng.hpp).
__device__ __forceinline__ uint4 philox4x32_10(uint4 ctr, uint64_t key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
#pragma unroll
  for (int round = 0; round < 10; ++round) {
    const uint32_t hi0 = __umulhi(kMul0, ctr.x), lo0 = kMul0 * ctr.x;
    const uint32_t hi1 = __umulhi(kMul1, ctr.z), lo1 = kMul1 * ctr.z;
    ctr = make_uint4(hi1 ^ ctr.y ^ k0, lo1, hi0 ^ ctr.w ^ k1, lo0);
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return ctr;
}

// Philox block `block` of stream `stream_id` (core/rng.hpp's rng_block).
__device__ __forceinline__ uint4 philox_block(uint64_t block, uint64_t stream_id, uint64_t key) {
  return philox4x32_10(make_uint4(uint32_t(block), uint32_t(block >> 32), uint32_t(stream_id), uint32_t(stream_id >> 32)),
                       key);
}

// threshold: the smallest 32-bit word that keeps an element (2^32: none is kept).
__global__ void dropout_kernel(void* x, Elem e, int64_t n, int64_t first_index, uint64_t key, uint64_t stream_id,
                               uint64_t threshold, float keep_scale) {
  const int64_t blk0 = first_index / 4, blk_end = (first_index + n + 3) / 4;
  for (int64_t blk = blk0 + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; blk < blk_end;
       blk += int64_t(gridDim.x) * blockDim.x) {
    const uint4 r = philox_block(static_cast<uint64_t>(blk), stream_id, key);
    const uint32_t words[4] = {r.x, r.y, r.z, r.w};
#pragma unroll
    for (int w = 0; w < 4; ++w) {
      const int64_t i = blk * 4 + w - first_index;
      if (i < 0 || i >= n) continue;
      store(x, e, i, words[w] >= threshold ? load(x, e, i) * keep_scale : 0.0f);
    }
  }
}

// One thread per Philox block (two elements: the cos and sin halves of one Box-Muller pair).
__global__ void add_gaussian_kernel(void* x, Elem e, int64_t n, int64_t first_index, uint64_t key, uint64_t stream_id,
                                    double std_dev) {
  const int64_t blk0 = first_index / 2, blk_end = (first_index + n + 1) / 2;
  for (int64_t blk = blk0 + blockIdx.x * int64_t(blockDim.x) + threadIdx.x; blk < blk_end;
       blk += int64_t(gridDim.x) * blockDim.x) {
    const uint4 r = philox_block(static_cast<uint64_t>(blk), stream_id, key);
    const double u1 = (r.x + 0.5) * 0x1p-32, u2 = (r.y + 0.5) * 0x1p-32;
    const double radius = sqrt(-2.0 * log(u1)), angle = 6.283185307179586 * u2;
    double s, c;
    sincos(angle, &s, &c);
#pragma unroll
    for (int w = 0; w < 2; ++w) {
      const int64_t i = blk * 2 + w - first_index;
      if (i < 0 || i >= n) continue;
      store(x, e, i, float(double(load(x, e, i)) + std_dev * radius * (w == 0 ? c : s)));
    }
  }
}

}  // namespace

void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream_id, int64_t first_index,
                  cudaStream_t stream) {
  const Elem e = elem_of(x, "add_gaussian", "x");
  TRIDENT_CHECK(first_index >= 0, "add_gaussian: first_index ", first_index);
  const int64_t n = x.numel();
  if (n == 0) return;
  const int64_t blocks = (first_index + n + 1) / 2 - first_index / 2;
  add_gaussian_kernel<<<grid_for(blocks), 256, 0, stream>>>(x.raw(), e, n, first_index, key, stream_id, std_dev);
  TRIDENT_CUDA_LAUNCHED();
}

void dropout(Tensor& x, double p, uint64_t key, uint64_t stream_id, int64_t first_index, cudaStream_t stream) {
  const Elem e = elem_of(x, "dropout", "x");
  TRIDENT_CHECK(p >= 0.0 && p < 1.0, "dropout: p = ", p, " must be in [0, 1)");
  TRIDENT_CHECK(first_index >= 0, "dropout: first_index ", first_index);
  const int64_t n = x.numel();
  if (p == 0.0 || n == 0) return;
  // The CPU keeps word w when double(w) >= p * 2^32 - 0.5; for an integer w that is
  // w >= ceil(p * 2^32 - 0.5).
  const double t = std::ceil(p * 4294967296.0 - 0.5);
  const uint64_t threshold = t <= 0.0 ? 0 : static_cast<uint64_t>(t);
  const float keep_scale = static_cast<float>(1.0 / (1.0 - p));
  const int64_t blocks = (first_index + n + 3) / 4 - first_index / 4;
  dropout_kernel<<<grid_for(blocks), 256, 0, stream>>>(x.raw(), e, n, first_index, key, stream_id, threshold,
                                                       keep_scale);
  TRIDENT_CUDA_LAUNCHED();
}

}  // namespace trident::cuda
