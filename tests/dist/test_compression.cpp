// Gradient compressors on one process: each round trip within its error bound, and the error
// feedback bookkeeping exact (the sum over steps of what was sent plus the final residual is
// the sum of the gradients).
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "trident/core/rng.hpp"
#include "trident/dist/compression_int8.hpp"
#include "trident/dist/compression_powersgd.hpp"
#include "trident/dist/compression_topk.hpp"

namespace trident::dist {
namespace {

// Values spanning several orders of magnitude, per block, so scales differ.
std::vector<float> gradient(int64_t n, uint64_t seed) {
  std::vector<float> g(static_cast<size_t>(n));
  const uint64_t key = rng_key(seed, "gradient");
  for (int64_t i = 0; i < n; ++i)
    g[i] = static_cast<float>(rng_normal(key, uint64_t(i)) * std::pow(10.0, double((i / 1000) % 5) - 3));
  return g;
}

TEST(Int8, RoundTripWithinHalfAStep) {
  for (int64_t n : {1, 17, 4096, 4097, 10000}) {
    std::vector<float> x = gradient(n, 7), out(x.size());
    std::vector<int8_t> q(x.size());
    std::vector<float> scales(static_cast<size_t>(int8_blocks(n)));
    int8_quantize(x.data(), n, q.data(), scales.data());
    int8_dequantize(q.data(), scales.data(), n, out.data());
    for (int64_t i = 0; i < n; ++i) {
      const float s = scales[i / kInt8Block];
      ASSERT_LE(std::fabs(x[i] - out[i]), s / 2 * (1 + 1e-5f) + 1e-30f) << "n " << n << " element " << i;
    }
  }
}

TEST(Int8, ZeroBlockAndNonFiniteBlock) {
  std::vector<float> x(2 * kInt8Block, 0.0f), out(x.size());
  x[kInt8Block + 3] = std::nanf("");
  std::vector<int8_t> q(x.size());
  std::vector<float> scales(2);
  int8_quantize(x.data(), int64_t(x.size()), q.data(), scales.data());
  int8_dequantize(q.data(), scales.data(), int64_t(x.size()), out.data());
  EXPECT_EQ(scales[0], 0.0f);
  EXPECT_EQ(out[5], 0.0f);
  EXPECT_TRUE(std::isnan(scales[1])) << "a NaN must reach the reduced gradient";
  EXPECT_TRUE(std::isnan(out[kInt8Block]));
}

TEST(Int8, ErrorFeedbackBookkeepingExact) {
  const int64_t n = 9000;
  std::vector<float> residual(n, 0.0f), acc(n), sent(n), scales(static_cast<size_t>(int8_blocks(n)));
  std::vector<int8_t> q(n);
  std::vector<double> total_grad(n, 0.0), total_sent(n, 0.0);
  for (int step = 0; step < 30; ++step) {
    std::vector<float> g = gradient(n, 100 + step);
    for (int64_t i = 0; i < n; ++i) {
      acc[i] = g[i] + residual[i];
      total_grad[i] += g[i];
    }
    int8_quantize_with_feedback(acc.data(), n, q.data(), scales.data(), residual.data());
    int8_dequantize(q.data(), scales.data(), n, sent.data());
    for (int64_t i = 0; i < n; ++i) {
      ASSERT_LE(std::fabs(double(sent[i]) + residual[i] - acc[i]), 1e-7 * std::fabs(acc[i]))
          << "acc = sent + residual (to one rounding), element " << i;
      total_sent[i] += sent[i];
    }
  }
  // Exact up to the fp32 rounding of each step's g + residual (30 steps, values up to ~40).
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(total_sent[i] + residual[i], total_grad[i], 30 * 4e-6) << i;
}

TEST(TopK, KeepsTheLargestExactlyAndTheRestAsResidual) {
  const int64_t n = 5000, k = 50;
  std::vector<float> x = gradient(n, 3), residual(n);
  std::vector<TopKPair> pairs(k);
  std::vector<float> scratch;
  topk_select(x.data(), n, k, pairs.data(), residual.data(), scratch);
  float smallest_kept = INFINITY;
  std::vector<bool> kept(n, false);
  for (int64_t j = 0; j < k; ++j) {
    ASSERT_EQ(pairs[j].value, x[pairs[j].index]) << "kept values are exact";
    if (j) {
      ASSERT_LT(pairs[j - 1].index, pairs[j].index) << "ascending indices";
    }
    kept[pairs[j].index] = true;
    smallest_kept = std::min(smallest_kept, std::fabs(pairs[j].value));
  }
  for (int64_t i = 0; i < n; ++i) {
    ASSERT_EQ(residual[i], kept[i] ? 0.0f : x[i]) << "residual is exactly the rest, element " << i;
    if (!kept[i]) {
      ASSERT_LE(std::fabs(x[i]), smallest_kept) << "element " << i << " should have been kept";
    }
  }
}

TEST(TopK, ErrorFeedbackBookkeepingExact) {
  const int64_t n = 4096, k = topk_count(n, 0.01);
  std::vector<float> residual(n, 0.0f), acc(n);
  std::vector<double> total_grad(n, 0.0), total_sent(n, 0.0);
  std::vector<TopKPair> pairs(k);
  std::vector<float> scratch;
  for (int step = 0; step < 40; ++step) {
    std::vector<float> g = gradient(n, 200 + step);
    for (int64_t i = 0; i < n; ++i) {
      acc[i] = g[i] + residual[i];
      total_grad[i] += g[i];
    }
    topk_select(acc.data(), n, k, pairs.data(), residual.data(), scratch);
    for (const TopKPair& p : pairs) total_sent[p.index] += p.value;
  }
  // Exact up to the fp32 rounding of each step's g + residual (40 steps, values up to ~40).
  for (int64_t i = 0; i < n; ++i) ASSERT_NEAR(total_sent[i] + residual[i], total_grad[i], 40 * 4e-6) << i;
}

// M = U V^T with U (m x r), V (n x r).
std::vector<float> low_rank_matrix(int64_t m, int64_t n, int r, uint64_t seed) {
  std::vector<float> U(m * r), V(n * r), M(m * n);
  const uint64_t key = rng_key(seed, "low-rank");
  for (int64_t e = 0; e < m * r; ++e) U[e] = static_cast<float>(rng_normal(key, uint64_t(e)));
  for (int64_t e = 0; e < n * r; ++e) V[e] = static_cast<float>(rng_normal(key, uint64_t(e), 1));
  powersgd_low_rank(U.data(), V.data(), m, n, r, M.data(), false);
  return M;
}

// Deep Gradient Compression's warm-up: the share falls from 1/4 by x1/4 per quarter of the
// warm-up, never below the ratio, and is the ratio from the warm-up's end (and without one).
TEST(TopK, DensityWarmUp) {
  EXPECT_EQ(TopKCompressor::density(0.01, 0, 0), 0.01);
  EXPECT_EQ(TopKCompressor::density(0.01, 100, 0), 0.25);
  EXPECT_EQ(TopKCompressor::density(0.01, 100, 24), 0.25);
  EXPECT_EQ(TopKCompressor::density(0.01, 100, 25), 0.0625);
  EXPECT_EQ(TopKCompressor::density(0.01, 100, 50), 0.015625);
  EXPECT_EQ(TopKCompressor::density(0.01, 100, 75), 0.01);  // 1/256 is below the ratio
  EXPECT_EQ(TopKCompressor::density(0.001, 100, 99), 0.00390625);
  EXPECT_EQ(TopKCompressor::density(0.001, 100, 100), 0.001);
  EXPECT_EQ(TopKCompressor::density(0.5, 100, 10), 0.5);  // a ratio above 1/4 is sent throughout
}

TEST(PowerSGD, ExactForRankRMatrices) {
  for (int r : {1, 2, 4}) {
    const int64_t m = 96, n = 64;
    std::vector<float> M = low_rank_matrix(m, n, r, 11), P(m * r), Q(n * r), approx(m * n);
    powersgd_initial_q(Q.data(), n, r, 5);
    powersgd_multiply(M.data(), m, n, Q.data(), r, P.data());
    powersgd_orthonormalize(P.data(), m, r, 5);
    powersgd_multiply_t(M.data(), m, n, P.data(), r, Q.data());
    powersgd_low_rank(P.data(), Q.data(), m, n, r, approx.data(), false);
    double err = 0, norm = 0;
    for (int64_t e = 0; e < m * n; ++e) {
      err += double(approx[e] - M[e]) * (approx[e] - M[e]);
      norm += double(M[e]) * M[e];
    }
    EXPECT_LT(std::sqrt(err / norm), 1e-5) << "rank " << r;
  }
}

TEST(PowerSGD, RankDeficientAndZeroMatricesStayFinite) {
  const int64_t m = 64, n = 64;
  const int r = 4;
  for (int true_rank : {0, 2}) {
    std::vector<float> M = true_rank ? low_rank_matrix(m, n, true_rank, 3) : std::vector<float>(m * n, 0.0f);
    std::vector<float> P(m * r), Q(n * r), approx(m * n);
    powersgd_initial_q(Q.data(), n, r, 9);
    powersgd_multiply(M.data(), m, n, Q.data(), r, P.data());
    powersgd_orthonormalize(P.data(), m, r, 9);
    powersgd_multiply_t(M.data(), m, n, P.data(), r, Q.data());
    powersgd_low_rank(P.data(), Q.data(), m, n, r, approx.data(), false);
    for (int64_t e = 0; e < m * n; ++e) ASSERT_NEAR(approx[e], M[e], 1e-4 * (1 + std::fabs(M[e]))) << true_rank;
    // P's columns are orthonormal even where the matrix gave nothing.
    for (int a = 0; a < r; ++a)
      for (int b = 0; b < r; ++b) {
        double dot = 0;
        for (int64_t i = 0; i < m; ++i) dot += double(P[i * r + a]) * P[i * r + b];
        ASSERT_NEAR(dot, a == b ? 1.0 : 0.0, 1e-5) << "columns " << a << ", " << b;
      }
  }
}

TEST(PowerSGD, ErrorFeedbackBookkeepingExact) {
  const int64_t m = 48, n = 80;
  const int r = 2;
  std::vector<float> E(m * n, 0.0f), M(m * n), P(m * r), Q(n * r), sent(m * n);
  std::vector<double> total_grad(m * n, 0.0), total_sent(m * n, 0.0);
  powersgd_initial_q(Q.data(), n, r, 1);
  for (int step = 0; step < 20; ++step) {
    std::vector<float> g = gradient(m * n, 300 + step);
    for (int64_t e = 0; e < m * n; ++e) {
      M[e] = g[e] + E[e];
      total_grad[e] += g[e];
    }
    powersgd_multiply(M.data(), m, n, Q.data(), r, P.data());
    powersgd_orthonormalize(P.data(), m, r, 1);
    powersgd_multiply_t(M.data(), m, n, P.data(), r, Q.data());
    E = M;
    powersgd_low_rank(P.data(), Q.data(), m, n, r, E.data(), /*subtract=*/true);
    powersgd_low_rank(P.data(), Q.data(), m, n, r, sent.data(), false);
    for (int64_t e = 0; e < m * n; ++e) total_sent[e] += sent[e];
  }
  for (int64_t e = 0; e < m * n; ++e) ASSERT_NEAR(total_sent[e] + E[e], total_grad[e], 20 * 4e-6) << e;
}

}  // namespace
}  // namespace trident::dist
