// Gaussian noise added in place from the counter-based Philox stream: x[i] += std * z(g), g =
// first_index + i, where Philox block (key, g / 2, stream) gives u1, u2 from its first two
// words and z(g) = sqrt(-2 ln u1) * (g even ? cos : sin)(2 pi u2) (Box-Muller, both halves).
#include <cmath>

#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"
#include "trident/core/rng.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

void add_gaussian(Tensor& x, double std_dev, uint64_t key, uint64_t stream, int64_t first_index) {
  check_tensor(x, "add_gaussian", "x");
  TRIDENT_CHECK(first_index >= 0, "add_gaussian: first_index ", first_index);
  const DType ct = compute_dtype(x, "add_gaussian", "x");
  dispatch_float(ct, "add_gaussian", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x);
    for_chunks(x.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T buf[kChunk];
      T* px = xa.update(at, len, buf);
      const int64_t g0 = first_index + at;
      // One Philox block and one log per pair (g even, g + 1); a chunk may start or end mid-pair.
      for (int64_t blk = g0 / 2; blk < (g0 + len + 1) / 2; ++blk) {
        const PhiloxBlock r = rng_block(key, static_cast<uint64_t>(blk), stream);
        const double u1 = (r[0] + 0.5) * 0x1p-32, u2 = (r[1] + 0.5) * 0x1p-32;
        const double radius = std_dev * std::sqrt(-2.0 * std::log(u1)), angle = 6.283185307179586 * u2;
        const int64_t even = blk * 2 - g0, odd = even + 1;
        if (even >= 0) px[even] = T(double(px[even]) + radius * std::cos(angle));
        if (odd < len) px[odd] = T(double(px[odd]) + radius * std::sin(angle));
      }
      xa.commit(at, len, px);
    });
  });
}

}  // namespace trident::cpu
