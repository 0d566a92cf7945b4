// Dropout with a counter-based (Philox) mask, in place over any shape: x[i] *= keep(g)/(1-p)
// for the global element index g = first_index + i. One Philox block serves 4 elements.
#include "common.hpp"
#include "kernels.hpp"
#include "trident/core/rng.hpp"

namespace trident::cpu {

void dropout(Tensor& x, double p, uint64_t key, uint64_t stream, int64_t first_index) {
  check_tensor(x, "dropout", "x");
  TRIDENT_CHECK(p >= 0.0 && p < 1.0, "dropout: p = ", p, " must be in [0, 1)");
  TRIDENT_CHECK(first_index >= 0, "dropout: first_index ", first_index);
  if (p == 0.0) return;
  // u >= p  <=>  word + 0.5 >= p * 2^32: compare the raw 32-bit words.
  const double threshold = p * 4294967296.0 - 0.5;
  dispatch_float(x.dtype(), "dropout", [&](auto tag) {
    using T = decltype(tag);
    T* px = x.data<T>();
    const T keep_scale = T(1.0 / (1.0 - p));
    const int64_t n = x.numel();
    // Blocks of 4 global elements; the first and last block may be partial.
    const int64_t block_begin = first_index / 4, block_end = (first_index + n + 3) / 4;
#pragma omp parallel for if (n > kParallelElems) schedule(static)
    for (int64_t blk = block_begin; blk < block_end; ++blk) {
      const PhiloxBlock r = rng_block(key, static_cast<uint64_t>(blk), stream);
      for (int w = 0; w < 4; ++w) {
        const int64_t i = blk * 4 + w - first_index;
        if (i < 0 || i >= n) continue;
        px[i] = double(r[w]) >= threshold ? px[i] * keep_scale : T(0);
      }
    }
  });
}

}  // namespace trident::cpu
