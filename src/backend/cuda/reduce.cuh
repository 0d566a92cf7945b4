// Private helpers of the row kernels (embedding, norms, activations, RoPE, cross-entropy):
// warp/block reductions with a fixed order (results do not depend on timing), 8-element
// vector access by runtime dtype, and the host-side argument checks these launchers share.
#pragma once
#include <cuda_runtime.h>

#include <cmath>
#include <cstdint>
#include <initializer_list>
#include <string>

#include "backend/cuda/device_access.cuh"

namespace trident::cuda {

// --- reductions -------------------------------------------------------------------------------
// Block sizes used with these are multiples of 32, at most 1024.

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  return v;
}

// Sums of a and b over the block, returned to every thread. Every thread adds the warp
// partials in warp order, so all see the same value. The leading barrier lets a block call
// this repeatedly: no thread overwrites the partials another is still reading.
__device__ __forceinline__ void block_sum2(float& a, float& b) {
  __shared__ float part_a[32], part_b[32];
  a = warp_sum(a);
  b = warp_sum(b);
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) {
    part_a[warp] = a;
    part_b[warp] = b;
  }
  __syncthreads();
  a = 0.f;
  b = 0.f;
  for (int w = 0; w < warps; ++w) {
    a += part_a[w];
    b += part_b[w];
  }
}

__device__ __forceinline__ float block_sum(float v) {
  float unused = 0.f;
  block_sum2(v, unused);
  return v;
}

// Online softmax statistics: (m, s) stands for sum_j exp(x_j - m). s * exp(m - m_new) with a
// guard for the empty state (m = -inf, s = 0), where exp(-inf - -inf) would be NaN. A NaN in
// s (a NaN logit) is kept: it must reach the loss.
__device__ __forceinline__ float rescale_sum(float s, float m, float m_new) {
  return s == 0.f ? 0.f : s * expf(m - m_new);
}

// Adds element x to (m, s). -inf logits add nothing (also while the state is still empty).
__device__ __forceinline__ void online_add(float& m, float& s, float x) {
  if (x > m) {
    s = rescale_sum(s, m, x) + 1.f;
    m = x;
  } else if (x != -INFINITY) {
    s += expf(x - m);  // NaN x lands here and propagates into s
  }
}

__device__ __forceinline__ void online_merge(float& m, float& s, float m2, float s2) {
  const float mn = fmaxf(m, m2);
  s = rescale_sum(s, m, mn) + rescale_sum(s2, m2, mn);
  m = mn;
}

// (m, s) combined over the block, returned to every thread (same order for all threads).
__device__ __forceinline__ void block_max_sum(float& m, float& s) {
  __shared__ float part_m[32], part_s[32];
#pragma unroll
  for (int o = 16; o > 0; o >>= 1) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, o), s2 = __shfl_xor_sync(0xffffffffu, s, o);
    online_merge(m, s, m2, s2);
  }
  const int lane = threadIdx.x & 31, warp = threadIdx.x >> 5, warps = blockDim.x >> 5;
  __syncthreads();
  if (lane == 0) {
    part_m[warp] = m;
    part_s[warp] = s;
  }
  __syncthreads();
  m = -INFINITY;
  s = 0.f;
  for (int w = 0; w < warps; ++w) online_merge(m, s, part_m[w], part_s[w]);
}

// --- 8-element vector access --------------------------------------------------------------------
// Elements [i, i + 8) of p by runtime dtype, as one 16-byte access (16-bit) or two (fp32);
// p + i must be 16-byte aligned. Conversions round exactly like load/store in device_access.cuh.

__device__ __forceinline__ void load8(const void* p, Elem e, int64_t i, float (&v)[8]) {
  if (e == Elem::kF32) {
    const float4* q = reinterpret_cast<const float4*>(static_cast<const float*>(p) + i);
    const float4 a = q[0], b = q[1];
    v[0] = a.x; v[1] = a.y; v[2] = a.z; v[3] = a.w;
    v[4] = b.x; v[5] = b.y; v[6] = b.z; v[7] = b.w;
    return;
  }
  const uint4 raw = *reinterpret_cast<const uint4*>(static_cast<const uint16_t*>(p) + i);
  const uint32_t w[4] = {raw.x, raw.y, raw.z, raw.w};
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    const unsigned short lo = static_cast<unsigned short>(w[k] & 0xffffu), hi = static_cast<unsigned short>(w[k] >> 16);
    if (e == Elem::kBF16) {
      v[2 * k] = __bfloat162float(__ushort_as_bfloat16(lo));
      v[2 * k + 1] = __bfloat162float(__ushort_as_bfloat16(hi));
    } else {
      v[2 * k] = __half2float(__ushort_as_half(lo));
      v[2 * k + 1] = __half2float(__ushort_as_half(hi));
    }
  }
}

__device__ __forceinline__ void store8(void* p, Elem e, int64_t i, const float (&v)[8]) {
  if (e == Elem::kF32) {
    float4* q = reinterpret_cast<float4*>(static_cast<float*>(p) + i);
    q[0] = make_float4(v[0], v[1], v[2], v[3]);
    q[1] = make_float4(v[4], v[5], v[6], v[7]);
    return;
  }
  uint32_t w[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    unsigned short lo, hi;
    if (e == Elem::kBF16) {
      lo = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * k]));
      hi = __bfloat16_as_ushort(__float2bfloat16_rn(v[2 * k + 1]));
    } else {
      lo = __half_as_ushort(__float2half_rn(v[2 * k]));
      hi = __half_as_ushort(__float2half_rn(v[2 * k + 1]));
    }
    w[k] = uint32_t(lo) | (uint32_t(hi) << 16);
  }
  *reinterpret_cast<uint4*>(static_cast<uint16_t*>(p) + i) = make_uint4(w[0], w[1], w[2], w[3]);
}

// Pieces of W elements: a row kernel's body is written once over W (8 on the vector path, 1
// on the scalar one) and for_row/for_range pick the path.
template <int W> struct Width {
  static constexpr int value = W;
};

template <int W>
__device__ __forceinline__ void loadv(const void* p, Elem e, int64_t i, float (&v)[W]) {
  if constexpr (W == 8) load8(p, e, i, v);
  else v[0] = load(p, e, i);
}

template <int W>
__device__ __forceinline__ void storev(void* p, Elem e, int64_t i, const float (&v)[W]) {
  if constexpr (W == 8) store8(p, e, i, v);
  else store(p, e, i, v[0]);
}

// f(c, Width<W>{}) over columns [0, C) of one row, split among the block's threads: 8 columns
// at a time when vec (C % 8 == 0 and 16-byte aligned rows), else one. Each thread visits the
// same columns on every call, so a later pass over the row re-reads what this thread read.
template <typename F>
__device__ __forceinline__ void for_row(int64_t C, bool vec, F&& f) {
  if (vec) {
    for (int64_t c = int64_t(threadIdx.x) * 8; c < C; c += int64_t(blockDim.x) * 8) f(c, Width<8>{});
  } else {
    for (int64_t c = threadIdx.x; c < C; c += blockDim.x) f(c, Width<1>{});
  }
}

// f(i, Width<W>{}) over [0, n) in a grid-stride loop: 8 elements at a time over the first
// n / 8 * 8 when vec (all pointers 16-byte aligned), then single elements for the tail.
template <typename F>
__device__ __forceinline__ void for_range(int64_t n, bool vec, F&& f) {
  const int64_t stride = int64_t(gridDim.x) * blockDim.x, first = blockIdx.x * int64_t(blockDim.x) + threadIdx.x;
  const int64_t n8 = vec ? n / 8 * 8 : 0;
  for (int64_t i = first * 8; i < n8; i += stride * 8) f(i, Width<8>{});
  for (int64_t i = n8 + first; i < n; i += stride) f(i, Width<1>{});
}

// --- host side ----------------------------------------------------------------------------------

inline bool aligned16(const Tensor& t) { return reinterpret_cast<uintptr_t>(t.raw()) % 16 == 0; }

// Elementwise kernels use the 8-wide path when every tensor starts 16-byte aligned.
inline bool all_aligned16(std::initializer_list<const Tensor*> ts) {
  for (const Tensor* t : ts)
    if (!aligned16(*t)) return false;
  return true;
}

// Rows of a row kernel can use load8/store8 when every tensor starts 16-byte aligned and the
// row length is a multiple of 8 (then every row start is aligned too, for 2- and 4-byte types).
inline bool rows_vectorisable(int64_t row_len, std::initializer_list<const Tensor*> ts) {
  return row_len % 8 == 0 && all_aligned16(ts);
}

// Threads of a one-block-per-row kernel doing `units` pieces of work per row: a multiple of
// 32 between 32 and max_threads.
inline int row_threads(int64_t units, int max_threads) {
  const int64_t t = (units + 31) / 32 * 32;
  return static_cast<int>(t < 32 ? 32 : (t > max_threads ? max_threads : t));
}

inline int64_t last_dim(const Tensor& t) { return t.ndim() == 0 ? 1 : t.dim(-1); }
inline int64_t rows_of(const Tensor& t) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < t.ndim(); ++i) rows *= t.dim(i);
  return rows;
}

inline void check_defined(const Tensor& t, const char* kernel, const char* arg) {
  TRIDENT_CHECK(t.defined(), kernel, ": ", arg, " is undefined");
}

// An [ACT] argument: fp32, bf16 or fp16; fp64 has its own message (no fp64 kernels on CUDA).
inline Elem act_elem(const Tensor& t, const char* kernel, const char* arg) {
  check_defined(t, kernel, arg);
  TRIDENT_CHECK(t.dtype() != DType::kF64, kernel, ": ", arg,
                " is fp64; fp64 is the CPU backend's finite-difference mode, the CUDA backend computes in fp32");
  return elem_of(t, kernel, arg);
}

// A parameter, parameter gradient or saved statistic: fp32 only.
inline void check_f32(const Tensor& t, const char* kernel, const char* arg) {
  check_defined(t, kernel, arg);
  TRIDENT_CHECK(t.dtype() == DType::kF32, kernel, ": ", arg, " is ", dtype_name(t.dtype()),
                t.dtype() == DType::kF64 ? "; fp64 is the CPU backend's finite-difference mode, CUDA takes fp32"
                                         : "; parameters, their gradients and statistics are fp32");
}

inline void check_i32(const Tensor& t, const char* kernel, const char* arg) {
  check_defined(t, kernel, arg);
  TRIDENT_CHECK(t.dtype() == DType::kI32, kernel, ": ", arg, " is ", dtype_name(t.dtype()), ", expected i32");
}

inline void check_numel(const Tensor& t, int64_t numel, const char* kernel, const char* arg) {
  TRIDENT_CHECK(t.numel() == numel, kernel, ": ", arg, " ", t.shape().str(), " has ", t.numel(),
                " elements, expected ", numel);
}

// Scratch device memory for one call, stream-ordered: cudaMallocAsync/cudaFreeAsync take it
// from the device's default memory pool, so it is safe whatever else runs on other streams,
// costs no device synchronisation, and is reused by the pool between calls.
class StreamScratch {
 public:
  StreamScratch(size_t bytes, cudaStream_t stream) : stream_(stream) {
    if (bytes > 0) TRIDENT_CUDA_CHECK(cudaMallocAsync(&ptr_, bytes, stream));
  }
  ~StreamScratch() {
    if (ptr_) cudaFreeAsync(ptr_, stream_);  // no throw from a destructor; a failure shows at the next check
  }
  StreamScratch(const StreamScratch&) = delete;
  StreamScratch& operator=(const StreamScratch&) = delete;
  char* get() const { return static_cast<char*>(ptr_); }

 private:
  void* ptr_ = nullptr;
  cudaStream_t stream_;
};

// Bytes rounded up to a multiple of 256 (carving one scratch allocation into aligned parts).
inline size_t round256(size_t bytes) { return (bytes + 255) / 256 * 256; }

}  // namespace trident::cuda
