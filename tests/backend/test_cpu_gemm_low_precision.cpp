// Mixed-precision GEMMs: with the inputs rounded to bf16 (or fp16) first, the result equals a
// double-precision reference of the rounded inputs to fp32 accumulation error; against the
// unrounded fp32 product it stays within the 16-bit format's tolerance. All transposes,
// alpha/beta, odd shapes.
#include <gtest/gtest.h>

#include <cmath>

#include "trident/backend/cpu_ops.hpp"
#include "trident/core/dtype.hpp"
#include "trident/core/rng.hpp"

namespace trident {
namespace {

Tensor random_matrix(int64_t rows, int64_t cols, uint64_t seed) {
  Tensor t = Tensor::zeros(Shape{rows, cols}, DType::kF32);
  const uint64_t key = rng_key(seed, "gemm");
  for (int64_t i = 0; i < t.numel(); ++i) t.data<float>()[i] = static_cast<float>(rng_normal(key, uint64_t(i)));
  return t;
}

double round_to(DType dtype, float x) {
  return dtype == DType::kBF16 ? bf16_bits_to_fp32(fp32_to_bf16_bits(x)) : fp16_bits_to_fp32(fp32_to_fp16_bits(x));
}

TEST(LowPrecisionGemm, MatchesRoundedReferenceForEveryTranspose) {
  auto ops = make_cpu_ops(2);
  for (DType dtype : {DType::kBF16, DType::kF16}) {
    // A path without bf16 dot products computes a bf16-precision GEMM in fp32 (and says so).
    if (ops->set_matmul_precision(dtype) != dtype) {
      EXPECT_FALSE(ops->matmul_precision_note().empty());
      continue;
    }
    for (bool ta : {false, true})
      for (bool tb : {false, true})
        for (auto [M, N, K] : {std::tuple{37, 29, 61}, std::tuple{64, 128, 256}, std::tuple{1, 7, 3}}) {
          Tensor a = ta ? random_matrix(K, M, 1) : random_matrix(M, K, 1);
          Tensor b = tb ? random_matrix(N, K, 2) : random_matrix(K, N, 2);
          Tensor c = random_matrix(M, N, 3), c0 = random_matrix(M, N, 3);
          const double alpha = 0.75, beta = 0.5;
          ops->gemm(ta, tb, alpha, a, b, beta, c);
          double worst_rounded = 0, worst_exact = 0, scale = 0;
          for (int64_t i = 0; i < M; ++i)
            for (int64_t j = 0; j < N; ++j) {
              double rounded = 0, exact = 0;
              for (int64_t k = 0; k < K; ++k) {
                const float x = ta ? a.data<float>()[k * M + i] : a.data<float>()[i * K + k];
                const float y = tb ? b.data<float>()[j * K + k] : b.data<float>()[k * N + j];
                rounded += round_to(dtype, x) * round_to(dtype, y);
                exact += double(x) * double(y);
              }
              const double base = beta * c0.data<float>()[i * N + j];
              const double got = c.data<float>()[i * N + j];
              worst_rounded = std::max(worst_rounded, std::fabs(got - (alpha * rounded + base)));
              worst_exact = std::max(worst_exact, std::fabs(got - (alpha * exact + base)));
              scale = std::max(scale, std::fabs(alpha * exact + base));
            }
          EXPECT_LT(worst_rounded / scale, 2e-6) << dtype_name(dtype) << " ta=" << ta << " tb=" << tb << " M=" << M;
          EXPECT_LT(worst_exact / scale, dtype == DType::kBF16 ? 3e-2 : 3e-3) << dtype_name(dtype);
        }
  }
  ASSERT_EQ(ops->set_matmul_precision(DType::kF32), DType::kF32);
}

}  // namespace
}  // namespace trident
