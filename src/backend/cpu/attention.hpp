// Private helpers shared by the flash-style attention forward and backward on the CPU:
// the checked shape, key-tile packing and the score row q . K_tile^T.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>
#include <memory>
#include <type_traits>
#include <utility>
#include <vector>

#include "common.hpp"
#include "convert.hpp"  // immintrin.h where AVX-512 is on
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

// Keys are processed kAttnTile at a time; packed tiles are zero-padded to this width so the
// score loops have a constant trip count (4 zmm registers of fp32, 8 of fp64).
inline constexpr int64_t kAttnTile = 64;

// q, out, dout: [B, T, NH*HS]; k, v: [B, T, NKV*HS]; lse: [B, NH, T].
struct AttnShape {
  int64_t B, T, NH, NKV, HS;
  int64_t q_stride() const { return NH * HS; }
  int64_t kv_stride() const { return NKV * HS; }
};

inline AttnShape check_attention(const char* op, const Tensor& q, const Tensor& k, const Tensor& v,
                                 const Tensor& out, const Tensor& lse, int heads, int kv_heads) {
  const DType ct = compute_dtype(q, op, "q");
  TRIDENT_CHECK(q.ndim() == 3, op, ": q ", q.shape().str(), " must be [B, T, NH*HS]");
  TRIDENT_CHECK(heads > 0 && kv_heads > 0 && heads % kv_heads == 0, op, ": heads ", heads,
                " must be a positive multiple of kv_heads ", kv_heads);
  TRIDENT_CHECK(q.dim(2) % heads == 0, op, ": q width ", q.dim(2), " is not a multiple of heads ", heads);
  const AttnShape s{q.dim(0), q.dim(1), heads, kv_heads, q.dim(2) / heads};
  for (const Tensor* t : {&k, &v}) {
    check_act(*t, ct, op, t == &k ? "k" : "v");
    TRIDENT_CHECK(t->numel() == s.B * s.T * s.kv_stride() && last_dim(*t) == s.kv_stride(), op, ": ",
                  t == &k ? "k " : "v ", t->shape().str(), " is not [B=", s.B, ", T=", s.T,
                  ", NKV*HS=", s.kv_stride(), "]");
  }
  check_act(out, ct, op, "out");
  TRIDENT_CHECK(out.shape() == q.shape(), op, ": out ", out.shape().str(), " differs from q ", q.shape().str());
  check_dtype(lse, ct, op, "lse");
  check_numel(lse, s.B * s.NH * s.T, op, "lse [B, NH, T]");
  return s;
}

// Where each query's document starts (document masking, see Ops::attention_forward):
// start(b, t) = t - positions[b*T + t], checked to lie in [0, t] and never to decrease along a
// row (the kernels skip whole key tiles and query blocks relying on that).
class DocStarts {
 public:
  DocStarts(const char* op, const Tensor& positions, const AttnShape& s) : T_(s.T) {
    if (!positions.defined()) return;
    check_dtype(positions, DType::kI32, op, "positions");
    check_numel(positions, s.B * s.T, op, "positions [B*T]");
    pos_ = positions.data<int32_t>();
    for (int64_t b = 0; b < s.B; ++b) {
      int64_t previous = 0;
      for (int64_t t = 0; t < s.T; ++t) {
        const int64_t start = (*this)(b, t);
        TRIDENT_CHECK(start >= 0 && start <= t && start >= previous, op, ": positions[", b, ", ", t, "] = ",
                      pos_[b * s.T + t], " does not restart at a document start (row ", b, ")");
        previous = start;
      }
    }
  }
  int64_t operator()(int64_t b, int64_t t) const { return pos_ ? t - pos_[b * T_ + t] : 0; }

 private:
  const int32_t* pos_ = nullptr;
  int64_t T_;
};

// 16-bit q, k, v (and out) sharing one dtype are read where they lie: each tile the kernels
// touch is widened into the thread's fp32 scratch as it is used (rows_as, packing), and out is
// rounded row by row as it is written; the arithmetic is the fp32 kernel's, so results are the
// same bits as widening the tensors whole. Widening them whole (f32_stand_in, for any other mix
// of dtypes) cost a pass over each tensor per call: attention forward 20 -> 25 ms per step of
// bench-small with bf16 storage.
// The stand-in buffers are GrowingStorage (huge pages for large ones): the kernels walk
// rows of q, k, v with a stride of NH*HS elements, and 4 KiB pages made that TLB-bound.
template <int Slot>
Tensor f32_stand_in(const Tensor& t, bool widen) {
  if (t.dtype() == DType::kF32 || t.dtype() == DType::kF64) return t;
  static thread_local GrowingStorage buffer;
  Tensor f(buffer.at_least(static_cast<size_t>(t.numel()) * sizeof(float)), 0, t.shape(), DType::kF32);
  if (widen) copy(t, f);
  return f;
}
// Rounds an output computed in its stand-in back to the 16-bit tensor (nothing when it is t).
inline void store_stand_in(const Tensor& f, Tensor& t) {
  if (f.raw() != t.raw()) copy(f, t);
}

// The dtype q, k, v and out share when it is 16-bit (read in place, see above), else kF32.
inline DType shared_half_dtype(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out) {
  const DType dt = q.dtype();
  return is_half(dt) && k.dtype() == dt && v.dtype() == dt && out.dtype() == dt ? dt : DType::kF32;
}

// n rows of HS values at src (row stride `stride`) as T: src itself when S is T, else widened
// from 16-bit dtype dt into buf (row stride HS). Returns the rows and their stride.
template <typename T, typename S>
inline std::pair<const T*, int64_t> rows_as(const S* src, int64_t stride, int64_t n, int64_t HS, DType dt, T* buf) {
  if constexpr (std::is_same_v<S, T>) {
    return {src, stride};
  } else {
    for (int64_t r = 0; r < n; ++r) half_to_f32(src + r * stride, dt, buf + r * HS, HS);
    return {buf, HS};
  }
}

// dst[d * kAttnTile + j] = src[j * stride + d] for j < rows, 0 for rows <= j < kAttnTile.
// src: rows x HS (row stride `stride`), dst: [HS, kAttnTile].
template <typename T>
void pack_transposed(const T* src, int64_t stride, int64_t rows, int64_t HS, T* dst) {
  for (int64_t d = 0; d < HS; ++d) {
    T* out = dst + d * kAttnTile;
    for (int64_t j = 0; j < rows; ++j) out[j] = src[j * stride + d];
    for (int64_t j = rows; j < kAttnTile; ++j) out[j] = T(0);
  }
}

// Every key tile of k packed once for all query tiles that read it: tile jt of (b, kv head g) at
// ((b * NKV + g) * tiles + jt) * HS * kAttnTile, each as pack_transposed lays it out. The buffer
// is the calling thread's GrowingStorage, reused across calls.
// k of storage S (T, or 16-bit of dtype dt), packed as T.
template <typename T, typename S>
const T* pack_key_tiles(const AttnShape& s, const S* k, DType dt) {
  const int64_t tiles = (s.T + kAttnTile - 1) / kAttnTile, tile = s.HS * kAttnTile, kvs = s.kv_stride();
  static thread_local GrowingStorage buffer;
  T* packed = buffer.get<T>(s.B * s.NKV * tiles * tile);
#pragma omp parallel for collapse(3) schedule(static) if (s.B * s.T * kvs > (int64_t(1) << 16))
  for (int64_t b = 0; b < s.B; ++b)
    for (int64_t g = 0; g < s.NKV; ++g)
      for (int64_t jt = 0; jt < tiles; ++jt) {
        const int64_t j0 = jt * kAttnTile, nj = std::min(kAttnTile, s.T - j0);
        T* widened = thread_scratch<T, 12>(static_cast<size_t>(tile));  // 0-11: the kernels' slots
        const auto [rows, stride] = rows_as<T>(k + (b * s.T + j0) * kvs + g * s.HS, kvs, nj, s.HS, dt, widened);
        pack_transposed(rows, stride, nj, s.HS, packed + ((b * s.NKV + g) * tiles + jt) * tile);
      }
  return packed;
}

// One register of the path (TRIDENT_CPU_VECTOR_BYTES: a zmm, a ymm or a NEON q register) through
// GCC/Clang vector extensions: the accumulators below must live in registers, which plain
// arrays in auto-vectorised loops did not reliably get.
template <typename T> struct Simd;
template <> struct Simd<float> {
  typedef float V __attribute__((vector_size(TRIDENT_CPU_VECTOR_BYTES)));
};
template <> struct Simd<double> {
  typedef double V __attribute__((vector_size(TRIDENT_CPU_VECTOR_BYTES)));
};
template <typename T> inline constexpr int64_t kLanes = TRIDENT_CPU_VECTOR_BYTES / sizeof(T);
inline constexpr int kVectorRegisters = TRIDENT_CPU_VECTOR_REGISTERS;
template <typename T>
inline typename Simd<T>::V vload(const T* p) {
  typename Simd<T>::V v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
template <typename T>
inline void vstore(T* p, typename Simd<T>::V v) {
  std::memcpy(p, &v, sizeof v);
}

template <typename T> using Vec = typename Simd<T>::V;

// Elementwise max of two vectors, and the largest / the sum of a vector's lanes (halving
// trees: lanes i and i + w combined for w = lanes/2 .. 1; a chain of one add per lane would be
// latency-bound). fp32 with AVX-512 reduces in registers, in the same order (GCC's
// _mm512_reduce_*_ps halve 512 -> 256 -> 128 -> 64 -> 32 bits); a tree through memory cost a
// store-forwarded load per step, twice per score row and key tile.
template <typename T>
inline Vec<T> vmax(Vec<T> a, Vec<T> b) {
  return a > b ? a : b;
}
template <typename T>
inline T hmax(Vec<T> v) {
#if TRIDENT_CPU_AVX512
  if constexpr (sizeof(T) == 4) return _mm512_reduce_max_ps(reinterpret_cast<__m512>(v));
#endif
  alignas(64) T a[kLanes<T>];
  vstore(a, v);
  for (int64_t w = kLanes<T> / 2; w >= 1; w /= 2)
    for (int64_t i = 0; i < w; ++i) a[i] = a[i + w] > a[i] ? a[i + w] : a[i];
  return a[0];
}
template <typename T>
inline T hsum(Vec<T> v) {
#if TRIDENT_CPU_AVX512
  if constexpr (sizeof(T) == 4) return _mm512_reduce_add_ps(reinterpret_cast<__m512>(v));
#endif
  alignas(64) T a[kLanes<T>];
  vstore(a, v);
  for (int64_t w = kLanes<T> / 2; w >= 1; w /= 2)
    for (int64_t i = 0; i < w; ++i) a[i] += a[i + w];
  return a[0];
}

// exp of every lane: fp32 by exp_fast's polynomial on whole vectors (the same arithmetic, so the
// same values), fp64 (the test path) lane by lane with std::exp. -inf lanes give 0.
template <typename T>
inline Vec<T> exp_lanes(Vec<T> x) {
  if constexpr (sizeof(T) == 8) {
    for (int64_t i = 0; i < kLanes<T>; ++i) x[i] = std::exp(x[i]);
    return x;
  } else {
    using V = Vec<float>;
    typedef int32_t IV __attribute__((vector_size(TRIDENT_CPU_VECTOR_BYTES)));
    const V low = V{} + -87.3f, high = V{} + 88.0f;
    const V xc = vmax<float>(x, low) < high ? vmax<float>(x, low) : high;
    const V n = exp_round(xc);
    const IV bits = (__builtin_convertvector(n, IV) + 127) << 23;
    V scale;
    std::memcpy(&scale, &bits, sizeof scale);
    return x < low ? V{} : exp_rest(xc, n) * scale;
  }
}

// Over n fp32 scores x: the largest x * scale, and x = exp(x * scale - shift) in place
// returning their sum; whole vectors, then a scalar tail.
inline float scaled_max(const float* x, int64_t n, float scale) {
  constexpr int64_t L = kLanes<float>;
  Vec<float> most = Vec<float>{} - INFINITY;
  int64_t j = 0;
  for (; j + L <= n; j += L) most = vmax<float>(most, vload(x + j) * scale);
  float m = hmax<float>(most);
  for (; j < n; ++j) m = std::max(m, x[j] * scale);
  return m;
}
inline float scaled_exp_sum(float* x, int64_t n, float scale, float shift) {
  constexpr int64_t L = kLanes<float>;
  Vec<float> total{};
  int64_t j = 0;
  for (; j + L <= n; j += L) {
    const Vec<float> e = exp_lanes<float>(vload(x + j) * scale - shift);
    vstore(x + j, e);
    total += e;
  }
  float sum = hsum<float>(total);
  for (; j < n; ++j) sum += x[j] = exp_fast(x[j] * scale - shift);
  return sum;
}

// A score row of one key tile where only keys [lo, hi) are visible: the others set to -inf (so
// exp makes them 0), touching nothing when the whole tile is visible.
template <typename T>
inline void mask_outside(T* p, int64_t lo, int64_t hi) {
  for (int64_t j = 0; j < lo; ++j) p[j] = -INFINITY;
  for (int64_t j = hi; j < kAttnTile; ++j) p[j] = -INFINITY;
}

// Rows handled together by the blocked kernels below: each vector of the shared operand (a key
// or value tile, a key or query row) is loaded once for kRowBlock rows (kRowBlock x NV
// accumulators, half the registers: 16 zmm for fp32 (4 rows), 8 ymm on AVX2 (1 row); fp64, the
// test path, takes fewer). One row alone is bound by those
// loads, not by its FMAs. Partial blocks are padded (repeated input rows, results dropped), so a
// row's arithmetic never depends on where it falls in a block.
template <typename T>
inline constexpr int kRowBlock = std::max<int>(1, kVectorRegisters / 2 / int(kAttnTile / kLanes<T>));

// s[r * kAttnTile + 0:kAttnTile] = scale * x_r[0:HS] @ tile, x_r = x + r * stride, for r < n
// (n <= kRowBlock): the score rows of n queries against a packed key tile (or dout against a
// packed value tile). s holds kRowBlock rows.
template <typename T>
inline void score_rows(const T* x, int64_t stride, int64_t n, const T* tile, int64_t HS, T scale, T* s) {
  using V = typename Simd<T>::V;
  constexpr int NV = kAttnTile / kLanes<T>, R = kRowBlock<T>;
  const T* xr[R];
  for (int r = 0; r < R; ++r) xr[r] = x + std::min<int64_t>(r, n - 1) * stride;
  V a[R][NV] = {};
  for (int64_t d = 0; d < HS; ++d) {
    V t[NV];
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) t[v] = vload(tile + d * kAttnTile + v * kLanes<T>);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const T xd = xr[r][d];
#pragma GCC unroll 8
      for (int v = 0; v < NV; ++v) a[r][v] += xd * t[v];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 8
    for (int v = 0; v < NV; ++v) vstore(s + r * kAttnTile + v * kLanes<T>, a[r][v] * scale);
}

// NV vectors of each of R output rows: o[r] = alpha[r] * o[r] + sum_{j<n} p[r * p_stride + j] * rows[j * stride].
template <typename T, int NV>
inline void accumulate_block_rows(T* const* o, int64_t d0, const T* alpha, const T* p, int64_t p_stride,
                                  const T* rows, int64_t stride, int64_t n) {
  using V = typename Simd<T>::V;
  constexpr int R = kRowBlock<T>;
  V a[R][NV];
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) a[r][v] = alpha[r] * vload(o[r] + d0 + v * kLanes<T>);
  for (int64_t j = 0; j < n; ++j) {
    V t[NV];
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) t[v] = vload(rows + j * stride + d0 + v * kLanes<T>);
#pragma GCC unroll 4
    for (int r = 0; r < R; ++r) {
      const T pj = p[r * p_stride + j];
#pragma GCC unroll 4
      for (int v = 0; v < NV; ++v) a[r][v] += pj * t[v];
    }
  }
#pragma GCC unroll 4
  for (int r = 0; r < R; ++r)
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) vstore(o[r] + d0 + v * kLanes<T>, a[r][v]);
}

// o[r][0:HS] = alpha[r] * o[r] + sum_{j < n} p[r * p_stride + j] * rows[j * stride + 0:HS] for the
// kRowBlock rows r (padding rows: p zero, alpha 1, o any scratch row): P @ V for a block of
// output rows, dS @ K for a block of dq rows, or (p a block of columns of P^T) rows of dV.
// No o row may overlap rows.
template <typename T>
inline void accumulate_rows_blocked(T* const* o, const T* alpha, const T* p, int64_t p_stride, const T* rows,
                                    int64_t stride, int64_t n, int64_t HS) {
  constexpr int64_t L = kLanes<T>;
  int64_t d0 = 0;
  for (; d0 + 4 * L <= HS; d0 += 4 * L) accumulate_block_rows<T, 4>(o, d0, alpha, p, p_stride, rows, stride, n);
  for (; d0 + L <= HS; d0 += L) accumulate_block_rows<T, 1>(o, d0, alpha, p, p_stride, rows, stride, n);
  for (int r = 0; r < kRowBlock<T>; ++r)
    for (int64_t d = d0; d < HS; ++d) {
      T acc = alpha[r] * o[r][d];
      for (int64_t j = 0; j < n; ++j) acc += p[r * p_stride + j] * rows[j * stride + d];
      o[r][d] = acc;
    }
}

// NV vectors of o[0:NV*lanes] = alpha * o + sum_{j<n} p[j] * rows[j * stride + 0:NV*lanes], kept in
// registers across j, with j unrolled by two into separate accumulators.
template <typename T, int NV>
inline void accumulate_block(T* o, T alpha, const T* p, const T* rows, int64_t stride, int64_t n) {
  using V = typename Simd<T>::V;
  V a[NV], b[NV] = {};
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) a[v] = alpha * vload(o + v * kLanes<T>);
  int64_t j = 0;
  for (; j + 2 <= n; j += 2) {
    const T p0 = p[j], p1 = p[j + 1];
    const T* r0 = rows + j * stride;
    const T* r1 = r0 + stride;
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) {
      a[v] += p0 * vload(r0 + v * kLanes<T>);
      b[v] += p1 * vload(r1 + v * kLanes<T>);
    }
  }
  if (j < n) {
#pragma GCC unroll 4
    for (int v = 0; v < NV; ++v) a[v] += p[j] * vload(rows + j * stride + v * kLanes<T>);
  }
#pragma GCC unroll 4
  for (int v = 0; v < NV; ++v) vstore(o + v * kLanes<T>, a[v] + b[v]);
}

// o[0:HS] = alpha * o + sum_{j < n} p[j] * rows[j * stride + 0:HS]: P @ V for one output row, or
// dS @ K, or (with p a column of P^T) one row of dV. o must not overlap rows.
template <typename T>
inline void accumulate_rows(T* o, T alpha, const T* p, const T* rows, int64_t stride, int64_t n, int64_t HS) {
  constexpr int64_t L = kLanes<T>;
  int64_t d0 = 0;
  for (; d0 + 4 * L <= HS; d0 += 4 * L) accumulate_block<T, 4>(o + d0, alpha, p, rows + d0, stride, n);
  for (; d0 + L <= HS; d0 += L) accumulate_block<T, 1>(o + d0, alpha, p, rows + d0, stride, n);
  if (d0 == HS) return;
  for (int64_t d = d0; d < HS; ++d) {
    T acc = alpha * o[d];
    for (int64_t j = 0; j < n; ++j) acc += p[j] * rows[j * stride + d];
    o[d] = acc;
  }
}

}  // namespace trident::cpu
