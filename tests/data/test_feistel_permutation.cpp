// The Feistel permutation of a mixture's source rows: a bijection of [0, n) for every n (odd,
// powers of 2 and their neighbours, 1), different per key and per epoch, spread like a uniform
// shuffle (first-position histogram, fixed points, displacement), and O(1) per point at any n.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <vector>

#include "trident/data/feistel_permutation.hpp"

namespace trident::data {
namespace {

std::vector<uint64_t> image(uint64_t n, uint64_t key, uint64_t epoch) {
  const FeistelPermutation p(n, key, epoch);
  std::vector<uint64_t> out(n);
  for (uint64_t x = 0; x < n; ++x) out[x] = p(x);
  return out;
}

TEST(FeistelPermutation, BijectionOfEveryDomain) {
  for (uint64_t n : {1u, 2u, 3u, 4u, 5u, 15u, 16u, 17u, 63u, 64u, 65u, 1000u, 4097u, 65535u, 100003u}) {
    std::vector<bool> hit(n, false);
    for (uint64_t y : image(n, 42, 0)) {
      ASSERT_LT(y, n);
      ASSERT_FALSE(hit[y]) << "n = " << n << ": " << y << " twice";
      hit[y] = true;
    }
  }
}

TEST(FeistelPermutation, KeysAndEpochsGiveOtherOrders) {
  const auto a = image(1000, 7, 0), b = image(1000, 7, 1), c = image(1000, 8, 0);
  int same_ab = 0, same_ac = 0;
  for (size_t i = 0; i < a.size(); ++i) same_ab += a[i] == b[i], same_ac += a[i] == c[i];
  EXPECT_LT(same_ab, 10);  // a uniform pair of permutations agrees at ~1 place
  EXPECT_LT(same_ac, 10);
  EXPECT_EQ(a, image(1000, 7, 0));  // a pure function of (n, key, epoch)
}

TEST(FeistelPermutation, SpreadLikeAUniformShuffle) {
  // Over 20,000 epochs of n = 10 (smaller than the sampler uses it for, so harder): where 0 goes
  // is uniform (chi-square, 9 degrees of freedom, below the 0.1% point 27.9), and where 0 and 1
  // go jointly too (89 degrees of freedom, 0.1% point 135.0); fixed points average 1.
  const uint64_t n = 10, epochs = 20000;
  std::vector<double> where(n, 0.0), pair(n * n, 0.0);
  double fixed = 0;
  for (uint64_t e = 0; e < epochs; ++e) {
    const auto p = image(n, 99, e);
    where[p[0]] += 1;
    pair[p[0] * n + p[1]] += 1;
    for (uint64_t x = 0; x < n; ++x) fixed += p[x] == x;
  }
  auto chi2 = [](const std::vector<double>& counts, double expect) {
    double sum = 0;
    for (double c : counts) sum += c < 0 ? 0 : (c - expect) * (c - expect) / expect;
    return sum;
  };
  EXPECT_LT(chi2(where, epochs / double(n)), 27.9);
  for (uint64_t a = 0; a < n; ++a) pair[a * n + a] = -1;  // never: 0 and 1 go to different places
  EXPECT_LT(chi2(pair, epochs / double(n * (n - 1))), 135.0);
  EXPECT_NEAR(fixed / epochs, 1.0, 0.05);
  // n = 100003: the mean displacement |p(x) - x| of a uniform permutation is n/3.
  const auto big = image(100003, 5, 0);
  double moved = 0;
  for (uint64_t x = 0; x < big.size(); ++x) moved += std::fabs(double(big[x]) - double(x));
  EXPECT_NEAR(moved / double(big.size()), 100003 / 3.0, 100003 * 0.01);
}

TEST(FeistelPermutation, ConstantTimeAtAnySize) {
  // A source of 1e8 rows (or 4e9): nothing built; a point costs a few Philox rounds.
  for (uint64_t n : {uint64_t(100000000), uint64_t(4000000000)}) {
    const auto start = std::chrono::steady_clock::now();
    const FeistelPermutation p(n, 3, 0);
    uint64_t sum = 0;
    for (uint64_t x = 0; x < 100000; ++x) sum += p(x * 997 % n);
    const double us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - start).count();
    std::printf("n = %llu: 1e5 points in %.0f us (%.0f ns each; checksum %llu)\n", (unsigned long long)n, us,
                us * 1e3 / 1e5, (unsigned long long)(sum % 1000));
    EXPECT_LT(us, 2e6);  // far below: ~100 ns a point
  }
}

}  // namespace
}  // namespace trident::data
