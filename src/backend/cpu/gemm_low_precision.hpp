// GEMMs with 16-bit inputs and fp32 accumulation on the host, for mixed-precision training:
// bf16 through oneDNN's matmul primitive (AVX-512 BF16 dot products where the CPU has them),
// fp16 by rounding the inputs to fp16 and multiplying in fp32 (no fp16 arithmetic on these
// CPUs: the numbers are fp16's, the speed fp32's). a, b, c are fp32 tensors as in cpu::gemm.
#pragma once
#include <map>
#include <memory>
#include <tuple>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident::cpu {

class LowPrecisionGemm {
 public:
  LowPrecisionGemm();
  ~LowPrecisionGemm();
  // c = alpha * op(a) op(b) + beta * c with a and b rounded to dtype (kBF16 or kF16).
  void run(DType dtype, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
           Tensor& c);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trident::cpu
