// Counter-based random numbers (Philox4x32-10, Salmon et al. SC'11). A value depends only on
// (key, global element index, stream), never on call order or on which rank computes it, so
// a tensor-parallel shard of a weight holds exactly the slice of the unsplit weight
// (docs/design.md section 2) and dropout masks can be recomputed in backward instead of stored.
#pragma once
#include <array>
#include <cmath>
#include <cstdint>
#include <string_view>

namespace trident {

using PhiloxBlock = std::array<uint32_t, 4>;

inline PhiloxBlock philox4x32_10(PhiloxBlock ctr, uint64_t key) {
  constexpr uint32_t kMul0 = 0xD2511F53u, kMul1 = 0xCD9E8D57u;
  constexpr uint32_t kWeyl0 = 0x9E3779B9u, kWeyl1 = 0xBB67AE85u;
  uint32_t k0 = static_cast<uint32_t>(key), k1 = static_cast<uint32_t>(key >> 32);
  for (int round = 0; round < 10; ++round) {
    const uint64_t p0 = uint64_t(kMul0) * ctr[0];
    const uint64_t p1 = uint64_t(kMul1) * ctr[2];
    ctr = {uint32_t(p1 >> 32) ^ ctr[1] ^ k0, uint32_t(p1), uint32_t(p0 >> 32) ^ ctr[3] ^ k1, uint32_t(p0)};
    k0 += kWeyl0;
    k1 += kWeyl1;
  }
  return ctr;
}

// splitmix64's finaliser: every bit of z reaches every bit of the result (hashes, seeds).
inline uint64_t mix64(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// 64-bit FNV-1a of a name, mixed with the seed by splitmix64: the key of one parameter.
inline uint64_t rng_key(uint64_t seed, std::string_view name) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : name) h = (h ^ c) * 0x100000001b3ull;
  return mix64((seed ^ h) + 0x9E3779B97F4A7C15ull);
}

inline PhiloxBlock rng_block(uint64_t key, uint64_t index, uint64_t stream = 0) {
  return philox4x32_10({uint32_t(index), uint32_t(index >> 32), uint32_t(stream), uint32_t(stream >> 32)}, key);
}

// Uniform in (0, 1): never exactly 0 or 1.
inline double rng_uniform(uint64_t key, uint64_t index, uint64_t stream = 0) {
  return (rng_block(key, index, stream)[0] + 0.5) * 0x1p-32;
}

// Standard normal by Box-Muller on the first two words of the block.
inline double rng_normal(uint64_t key, uint64_t index, uint64_t stream = 0) {
  const PhiloxBlock r = rng_block(key, index, stream);
  const double u1 = (r[0] + 0.5) * 0x1p-32;
  const double u2 = (r[1] + 0.5) * 0x1p-32;
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(6.283185307179586 * u2);
}

}  // namespace trident
