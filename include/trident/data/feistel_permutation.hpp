// A pseudorandom permutation of [0, n) evaluated at any point in O(1) time and memory: an
// 8-round balanced Feistel network over b-bit words (b even, 2^b >= n, so 2^b < 4n) whose round
// function is Philox keyed by (key, round, half word, stream), restricted to [0, n) by cycle
// walking (re-encrypt until the value falls inside; under 4 passes expected). Four rounds of a
// pseudorandom function already make a strong pseudorandom permutation (Luby-Rackoff) for
// half words of many bits; small halves need more (at n = 10, 4 rounds place pairs far from
// uniformly, 8 do not), and the sampler uses this only above kFeistelMinRows rows, whose halves
// have 9 bits or more. A mixture's large source walks its rows in one such permutation per
// epoch (stream = the epoch): no shuffle table, where a Fisher-Yates table of 1e8 rows costs
// 381 MiB and ~10 s on one core at start and at every epoch.
#pragma once
#include <cstdint>

#include "trident/core/rng.hpp"

namespace trident::data {

// Smaller domains keep a Fisher-Yates table (4 bytes a row: 256 KiB at most).
inline constexpr uint64_t kFeistelMinRows = uint64_t{1} << 16;

class FeistelPermutation {
 public:
  static constexpr uint64_t kRounds = 8;

  FeistelPermutation(uint64_t n, uint64_t key, uint64_t stream) : n_(n), key_(key), stream_(stream) {
    while ((uint64_t{1} << (2 * half_bits_)) < n) ++half_bits_;
    mask_ = (uint64_t{1} << half_bits_) - 1;
  }

  // The image of x in [0, n).
  uint64_t operator()(uint64_t x) const {
    do x = encrypt(x);
    while (x >= n_);
    return x;
  }

 private:
  uint64_t encrypt(uint64_t x) const {
    uint64_t left = x >> half_bits_, right = x & mask_;
    for (uint64_t round = 0; round < kRounds; ++round) {
      const PhiloxBlock f = rng_block(key_, (round << 32) | right, stream_);
      const uint64_t next = left ^ (((uint64_t(f[1]) << 32) | f[0]) & mask_);
      left = right;
      right = next;
    }
    return (left << half_bits_) | right;
  }

  uint64_t n_, key_, stream_;
  int half_bits_ = 1;  // b / 2: words of at least 2 bits
  uint64_t mask_ = 1;
};

}  // namespace trident::data
