// GEMMs with 16-bit operands on the host, for mixed-precision training. a, b, c may each be
// fp32, bf16 or fp16; arithmetic and accumulation are fp32.
//  - At bf16 matmul precision, products go to oneDNN's matmul primitive (AVX-512 BF16 dot
//    products or AMX tiles, fp32 accumulation); fp32 inputs are rounded to bf16 first. c is
//    written as fp32 or directly as bf16 (beta = 0); beta != 0 with a 16-bit c goes through an
//    fp32 copy of c.
//  - Anything with fp16, and anything at fp32 precision: the 16-bit inputs are widened
//    (exactly) to fp32 and multiplied by the fp32 sgemm (bf16 storage with fp32 arithmetic,
//    where bf16 GEMMs measure no faster). These CPUs have no fp16 arithmetic (no AVX512-FP16
//    path), so fp16 means fp16 storage at fp32 speed. At fp16 matmul precision fp32 inputs are
//    rounded through fp16 first, as before.
//  - Without AVX-512 BF16 (or SVE BF16), or where this oneDNN has no bf16 matmul for the
//    processor (Debian's aarch64 oneDNN, built without the Arm Compute Library, has none), the
//    bf16 products are widened and multiplied in fp32 as well.
// Primitives are cached by (shape, transposes, alpha, beta, output dtype).
#pragma once
#include <memory>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

// Whether oneDNN creates a bf16 matmul here (asked once). The processor's BF16 instructions are
// not enough: oneDNN 2.x on aarch64 has bf16 matmuls only when built with the Arm Compute Library.
bool onednn_has_bf16_matmul();

class LowPrecisionGemm {
 public:
  LowPrecisionGemm();
  ~LowPrecisionGemm();
  // c = alpha * op(a) op(b) + beta * c; precision is the matmul precision for fp32 inputs
  // (kF32, kBF16 or kF16, see Ops::set_matmul_precision).
  void run(DType precision, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b, double beta,
           Tensor& c);
  // Ops::gemm_parts: part by part, an operand shared by every part (a or b of one tensor) that
  // the fp32 path would widen is widened once for all of them.
  void run_parts(DType precision, bool trans_a, bool trans_b, double alpha, const std::vector<Tensor>& a,
                 const std::vector<Tensor>& b, double beta, const std::vector<Tensor>& c);

 private:
  // run() with the choice made: bf16 matmul, or widened to the fp32 sgemm.
  void run_as(bool bf16, DType precision, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
              double beta, Tensor& c);
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace trident::cpu
