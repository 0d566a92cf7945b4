// Helpers of the 16-bit kernel tests: each kernel runs once on bf16/fp16 tensors and once in
// fp32 on the same values (the 16-bit inputs widened), and the two outputs must agree to the
// rounding of the 16-bit outputs.
//
// Tolerance (normalised max error, max|got - want| / max|want|): a 16-bit output is the fp32
// result rounded once, to nearest even, so it is off by at most the unit roundoff u relative to
// itself: u = 2^-8 for bf16 (8 significant bits), 2^-11 for fp16 (11 bits). We allow 1.5 u for
// the few ulps of fp32 rounding in which the two runs may differ. fp32 outputs computed from the
// same inputs differ only by fp32 rounding: 1e-5.
#pragma once
#include <cstring>

#include "test_cpu_util.hpp"

namespace trident::test {

inline double half_tol(DType dtype) {
  switch (dtype) {
    case DType::kBF16: return 1.5 * std::ldexp(1.0, -8);
    case DType::kF16: return 1.5 * std::ldexp(1.0, -11);
    default: return 1e-5;
  }
}

// t converted to dtype (a new tensor of the same shape); ops.copy converts.
inline Tensor as_dtype(Ops& ops, const Tensor& t, DType dtype) {
  Tensor out = ops.zeros(t.shape(), dtype);
  ops.copy(t, out);
  return out;
}

// Values of a tensor of any float dtype, in double.
inline Vec values(Ops& ops, const Tensor& t) {
  return to_vec(t.dtype() == DType::kF32 || t.dtype() == DType::kF64 ? t : as_dtype(ops, t, DType::kF32));
}

// A random fp32 tensor whose values are exactly representable in dtype, and its dtype twin.
struct Pair {
  Tensor f32, half;
};
inline Pair random_pair(Ops& ops, Shape shape, uint64_t seed, DType dtype, double scale = 1.0) {
  Tensor half = as_dtype(ops, randn<float>(shape, seed, scale), dtype);
  return {as_dtype(ops, half, DType::kF32), half};
}

#define EXPECT_HALF_CLOSE(ops, got, want, run)                                                                 \
  EXPECT_LE(::trident::test::max_err(::trident::test::values((ops), (got)), ::trident::test::values((ops), (want))), \
            ::trident::test::half_tol((got).dtype()))                                                         \
      << #got << " (" << dtype_name((got).dtype()) << ", inputs " << dtype_name(run) << ")"

inline const DType kHalfTypes[] = {DType::kBF16, DType::kF16};

}  // namespace trident::test
