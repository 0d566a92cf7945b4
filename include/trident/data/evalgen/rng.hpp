// EvalRng: the seeded random source of `trident evalgen`. std::mt19937_64 is specified bit for
// bit by the standard, but std::uniform_int_distribution is not, so bounded draws are our own
// (rejection sampling): the same seed gives the same cases with any standard library.
#pragma once
#include <cstdint>
#include <random>
#include <string_view>

#include "trident/core/rng.hpp"

namespace trident::data::evalgen {

class EvalRng {
 public:
  explicit EvalRng(uint64_t seed) : engine_(seed) {}
  // One independent stream per (seed, name), e.g. "arithmetic/easy": adding a suite or a level
  // leaves the cases of the others unchanged.
  EvalRng(uint64_t seed, std::string_view stream) : engine_(rng_key(seed, stream)) {}

  // Uniform in [0, n), n >= 1: draws below the largest multiple of n are kept.
  uint64_t below(uint64_t n) {
    const uint64_t reject_below = (0 - n) % n;  // 2^64 mod n
    for (;;) {
      const uint64_t r = engine_();
      if (r >= reject_below) return r % n;
    }
  }
  // Uniform in [lo, hi], lo <= hi.
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  bool coin() { return below(2) == 1; }

 private:
  std::mt19937_64 engine_;
};

}  // namespace trident::data::evalgen
