// Rotary position embedding (rotate-half pairing (i, i + HS/2) as in Llama), in place.
// x: [N, H*HS] fp32, bf16 or fp16 (rotated in fp32) or fp64; positions: [N] int32;
// angle(n, i) = positions[n] * inv_freq[i], i < HS/2; cos and sin times the frequencies' scale.
#include <limits>

#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

void RopeTable::ensure(const RotaryFrequencies& f, int64_t max_pos) {
  if (!(f == frequencies_)) {
    frequencies_ = f;
    half_ = static_cast<int64_t>(f.inv_freq.size());
    positions_ = 0;
    cos_.clear();
    sin_.clear();
  }
  if (max_pos < positions_) return;
  // Grow to at least double, so a slowly increasing max position rebuilds rarely.
  const int64_t grown = std::max<int64_t>(max_pos + 1, 2 * positions_);
  cos_.resize(static_cast<size_t>(grown * half_));
  sin_.resize(static_cast<size_t>(grown * half_));
  for (int64_t p = positions_; p < grown; ++p) {
    for (int64_t i = 0; i < half_; ++i) {
      const double angle = double(p) * f.inv_freq[size_t(i)];
      cos_[p * half_ + i] = std::cos(angle) * f.scale;
      sin_[p * half_ + i] = std::sin(angle) * f.scale;
    }
  }
  positions_ = grown;
}

// forward: x1' = x1 cos - x2 sin, x2' = x2 cos + x1 sin (x1 = x[i], x2 = x[i + HS/2] of a head);
// inverse (backward, the transpose of the rotation): g1' = g1 cos + g2 sin, g2' = g2 cos - g1 sin.
void rope(Tensor& x, const Tensor& positions, int head_size, const RotaryFrequencies& f, bool inverse,
          RopeTable& table) {
  const char* op = inverse ? "rope_backward" : "rope_forward";
  const DType ct = compute_dtype(x, op, "x");
  TRIDENT_CHECK(head_size > 0 && head_size % 2 == 0, op, ": head_size ", head_size, " must be positive and even");
  TRIDENT_CHECK(int64_t(f.inv_freq.size()) == head_size / 2, op, ": ", f.inv_freq.size(), " frequencies for head_size ",
                head_size);
  const int64_t width = last_dim(x), N = rows_of(x);
  TRIDENT_CHECK(width % head_size == 0, op, ": x ", x.shape().str(), " last dim is not a multiple of head_size ",
                head_size);
  check_numel(positions, N, op, "positions");
  check_ids(positions, std::numeric_limits<int32_t>::max(), op, "positions");
  const int32_t* pos = positions.data<int32_t>();
  int64_t max_pos = 0;
  for (int64_t n = 0; n < N; ++n) max_pos = std::max<int64_t>(max_pos, pos[n]);
  table.ensure(f, max_pos);
  const int64_t H = width / head_size, half = head_size / 2;
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x);
    const T sign = inverse ? T(-1) : T(1);
#pragma omp parallel for if (N * width > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      const double* cs = table.cos_row(pos[n]);
      const double* sn = table.sin_row(pos[n]);
      T* xr = xa.update(n * width, width, xa.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(width)));
      for (int64_t h = 0; h < H; ++h) {
        T* x1 = xr + h * head_size;
        T* x2 = x1 + half;
#pragma omp simd
        for (int64_t i = 0; i < half; ++i) {
          const T c = T(cs[i]), s = sign * T(sn[i]);
          const T a = x1[i], b = x2[i];
          x1[i] = a * c - b * s;
          x2[i] = b * c + a * s;
        }
      }
      xa.commit(n * width, width, xr);
    }
  });
}

}  // namespace trident::cpu
