// GEMMs of the CUDA backend on cuBLASLt, for the row-major contract of Ops::gemm.
// Input dtypes: a 16-bit matmul precision rounds fp32 inputs to that type first; inputs of one
// 16-bit type run on tensor cores with fp32 accumulation; fp32 inputs (and inputs of two
// different types, widened to fp32 in scratch) run in TF32 (CUBLAS_COMPUTE_32F_FAST_TF32:
// 10-bit mantissa products, fp32 accumulation: about 1e-3 relative error, not fp32's 1e-7).
// c is written directly when it is fp32 or of the inputs' 16-bit type, else staged in fp32.
// All fp64 (a, b, c) runs in fp64.
#pragma once
#include <cuda_runtime.h>

#include <memory>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident::cuda {

class DeviceAllocator;

class LtGemm {
 public:
  // Uses alloc for scratch and a 32 MiB workspace; launches on stream.
  LtGemm(DeviceAllocator& alloc, cudaStream_t stream);
  ~LtGemm();
  LtGemm(const LtGemm&) = delete;
  LtGemm& operator=(const LtGemm&) = delete;

  // c = alpha * op(a) @ op(b) + beta * c; precision is the Ops matmul precision.
  void run(DType precision, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
           Tensor& c);
  // Ops::gemm_parts as one strided-batched GEMM; false (nothing done) where the parts do not lie
  // one stride apart, an input would need converting, or cuBLASLt has no batched algorithm.
  bool run_parts(DType precision, bool trans_a, bool trans_b, double alpha, const std::vector<Tensor>& a,
                 const std::vector<Tensor>& b, double beta, const std::vector<Tensor>& c);
  // FLOP/s of large square GEMMs whose inputs are `dtype` (fp32: the TF32 path), measured.
  double measure_peak(DType dtype);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trident::cuda
