// Dropout with a counter-based (Philox) mask, in place over any shape: x[i] *= keep(g)/(1-p)
// for the global element index g = first_index + i. One Philox block serves 4 elements.
// x may be fp32, bf16 or fp16 (the mask is the same for every dtype) or fp64.
#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"
#include "trident/core/rng.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

void dropout(Tensor& x, double p, uint64_t key, uint64_t stream, int64_t first_index) {
  check_tensor(x, "dropout", "x");
  TRIDENT_CHECK(p >= 0.0 && p < 1.0, "dropout: p = ", p, " must be in [0, 1)");
  TRIDENT_CHECK(first_index >= 0, "dropout: first_index ", first_index);
  if (p == 0.0) return;
  // u >= p  <=>  word + 0.5 >= p * 2^32: compare the raw 32-bit words.
  const double threshold = p * 4294967296.0 - 0.5;
  const DType ct = compute_dtype(x, "dropout", "x");
  dispatch_float(ct, "dropout", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x);
    const T keep_scale = T(1.0 / (1.0 - p));
    // Each chunk covers the Philox blocks of its global elements; blocks shared by two chunks are
    // generated twice (cheap) and each chunk keeps only its own words.
    for_chunks(x.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T buf[kChunk];
      T* px = xa.update(at, len, buf);  // px[i] is element at + i
      const int64_t g0 = first_index + at;
      for (int64_t blk = g0 / 4; blk < (g0 + len + 3) / 4; ++blk) {
        const PhiloxBlock r = rng_block(key, static_cast<uint64_t>(blk), stream);
        for (int w = 0; w < 4; ++w) {
          const int64_t i = blk * 4 + w - g0;
          if (i < 0 || i >= len) continue;
          px[i] = double(r[w]) >= threshold ? px[i] * keep_scale : T(0);
        }
      }
      xa.commit(at, len, px);
    });
  });
}

}  // namespace trident::cpu
