// Shared by every CUDA kernel file: element loads and stores by runtime dtype (fp32, bf16,
// fp16 widened to fp32 and rounded to nearest even on store, as the Ops dtype contract says),
// the error check after CUDA calls, and grid sizing. Device code only reads raw pointers: the
// host side checks shapes and dtypes before launching.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "trident/core/error.hpp"
#include "trident/core/tensor.hpp"

namespace trident::cuda {

// A CUDA call that must succeed: an Error naming the call and CUDA's message otherwise.
#define TRIDENT_CUDA_CHECK(call)                                                               \
  do {                                                                                         \
    cudaError_t trident_cuda_status_ = (call);                                                 \
    if (trident_cuda_status_ != cudaSuccess)                                                   \
      throw ::trident::Error(std::string(#call) + ": " + cudaGetErrorString(trident_cuda_status_)); \
  } while (0)

// After a kernel launch: launch-configuration errors surface here, not at the next sync.
#define TRIDENT_CUDA_LAUNCHED() TRIDENT_CUDA_CHECK(cudaGetLastError())

// The dtype of an activation argument as device code sees it (fp32 / bf16 / fp16 only).
enum class Elem : uint8_t { kF32 = 0, kBF16 = 1, kF16 = 2 };

// Elem of a dtype; an Error naming kernel and argument for other dtypes.
inline Elem elem_of(DType d, const char* kernel, const char* arg) {
  switch (d) {
    case DType::kF32: return Elem::kF32;
    case DType::kBF16: return Elem::kBF16;
    case DType::kF16: return Elem::kF16;
    default:
      throw Error(std::string(kernel) + ": " + arg + " is " + std::string(dtype_name(d)) +
                  "; the CUDA backend takes fp32, bf16 or fp16 here");
  }
}

// Elem of a tensor (device pointers are only passed on, never read on the host).
inline Elem elem_of(const Tensor& t, const char* kernel, const char* arg) { return elem_of(t.dtype(), kernel, arg); }

__device__ __forceinline__ float load(const void* p, Elem e, int64_t i) {
  switch (e) {
    case Elem::kBF16: return __bfloat162float(static_cast<const __nv_bfloat16*>(p)[i]);
    case Elem::kF16: return __half2float(static_cast<const __half*>(p)[i]);
    default: return static_cast<const float*>(p)[i];
  }
}

__device__ __forceinline__ void store(void* p, Elem e, int64_t i, float v) {
  switch (e) {
    case Elem::kBF16: static_cast<__nv_bfloat16*>(p)[i] = __float2bfloat16_rn(v); break;
    case Elem::kF16: static_cast<__half*>(p)[i] = __float2half_rn(v); break;
    default: static_cast<float*>(p)[i] = v; break;
  }
}

// Blocks for a grid-stride loop over n elements.
inline unsigned grid_for(int64_t n, int threads = 256) {
  int64_t blocks = (n + threads - 1) / threads;
  if (blocks > 65535 * 8) blocks = 65535 * 8;
  return static_cast<unsigned>(blocks < 1 ? 1 : blocks);
}

}  // namespace trident::cuda
