// Causal attention forward, flash style: per (b, h, query tile) stream over key tiles up to the
// diagonal with an online softmax; no T x T matrix. GQA: query head h reads kv head h/(NH/NKV).
// Document masking starts the stream at the tile of the query tile's first document start.
// q, k, v, out may be fp32, bf16 or fp16 (computed in fp32, see attention.hpp); lse is fp32.
#include "attention.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

// q: [B, T, NH*HS]; k, v: [B, T, NKV*HS]; out: [B, T, NH*HS]; lse: [B, NH, T]. q, k, v, out are
// stored as S: T, or 16-bit of dtype dt (T = float), widened tile by tile (see attention.hpp).
template <typename T, typename S>
void attention_forward_impl(const AttnShape& s, const DocStarts& doc_start, const S* q, const S* k, const S* v,
                            S* out, T* lse, DType dt) {
  const int64_t B = s.B, Tn = s.T, NH = s.NH, HS = s.HS, group = s.NH / s.NKV;
  const int64_t qs = s.q_stride(), kvs = s.kv_stride();
  const int64_t q_tiles = (Tn + kAttnTile - 1) / kAttnTile;
  const T scale = T(1) / std::sqrt(T(HS));
  const T* k_packed = pack_key_tiles<T>(s, k, dt);
#pragma omp parallel for collapse(3) schedule(dynamic, 1) if (B * NH * Tn * Tn * HS > (int64_t(1) << 18))
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t h = 0; h < NH; ++h) {
      for (int64_t qt = 0; qt < q_tiles; ++qt) {
        T* acc = thread_scratch<T, 1>(static_cast<size_t>(kAttnTile * HS));
        T m[kAttnTile], l[kAttnTile];
        constexpr int R = kRowBlock<T>;
        constexpr int NV = kAttnTile / kLanes<T>;
        alignas(64) T scores[R * kAttnTile];
        T* pad = thread_scratch<T, 2>(static_cast<size_t>(HS));  // output row of padding rows
        T* q_widened = thread_scratch<T, 3>(static_cast<size_t>(kAttnTile * HS));
        T* v_widened = thread_scratch<T, 4>(static_cast<size_t>(kAttnTile * HS));
        T* out_row = thread_scratch<T, 5>(static_cast<size_t>(HS));
        const int64_t i0 = qt * kAttnTile, ni = std::min(kAttnTile, Tn - i0);
        const int64_t kv_col = (h / group) * HS;
        const auto [q_rows, q_stride] = rows_as<T>(q + (b * Tn + i0) * qs + h * HS, qs, ni, HS, dt, q_widened);
        for (int64_t i = 0; i < ni; ++i) {
          m[i] = -INFINITY;
          l[i] = T(0);
        }
        std::fill(acc, acc + ni * HS, T(0));
        const int64_t first_key = doc_start(b, i0) / kAttnTile * kAttnTile;
        for (int64_t j0 = first_key; j0 < i0 + ni; j0 += kAttnTile) {
          const int64_t nj = std::min(kAttnTile, i0 + ni - j0);
          const T* kt = k_packed + ((b * s.NKV + h / group) * q_tiles + j0 / kAttnTile) * HS * kAttnTile;
          const auto [v_tile, v_stride] = rows_as<T>(v + (b * Tn + j0) * kvs + kv_col, kvs, nj, HS, dt, v_widened);
          for (int64_t i = 0; i < ni; i += R) {
            const int64_t nr = std::min<int64_t>(R, ni - i);
            score_rows(q_rows + i * q_stride, q_stride, nr, kt, HS, scale, scores);
            T alpha[R];
            T* o[R];
            int64_t keys = 0;  // the block's longest visible key range (p is zero past each row's)
            for (int64_t r = 0; r < R; ++r) {
              T* p = scores + r * kAttnTile;
              const int64_t t = i0 + i + r;
              // keys lo .. hi-1 of this tile: from the document start to the diagonal
              const int64_t lo = r < nr ? std::max<int64_t>(0, doc_start(b, t) - j0) : 0;
              const int64_t hi = r < nr ? std::min(nj, t - j0 + 1) : 0;
              o[r] = r < nr ? acc + (i + r) * HS : pad;
              if (hi <= lo) {  // nothing visible here (or a padding row): unchanged
                alpha[r] = T(1);
                std::fill(p, p + kAttnTile, T(0));
                continue;
              }
              // Online softmax on whole vectors: the tile's max, p = exp(s - max), their sum.
              mask_outside(p, lo, hi);
              Vec<T> x[NV], most = Vec<T>{} - T(INFINITY);
              for (int v = 0; v < NV; ++v) most = vmax<T>(most, x[v] = vload(p + v * kLanes<T>));
              const T row_max = std::max(m[i + r], hmax<T>(most));
              alpha[r] = m[i + r] == -INFINITY ? T(0) : exp_t<T>(m[i + r] - row_max);
              Vec<T> total{};
              for (int v = 0; v < NV; ++v) {
                x[v] = exp_lanes<T>(x[v] - row_max);
                total += x[v];
                vstore(p + v * kLanes<T>, x[v]);
              }
              const T sum = hsum<T>(total);
              m[i + r] = row_max;
              l[i + r] = l[i + r] * alpha[r] + sum;
              keys = std::max(keys, hi);
            }
            if (keys > 0) accumulate_rows_blocked(o, alpha, scores, kAttnTile, v_tile, v_stride, keys, HS);
          }
        }
        for (int64_t i = 0; i < ni; ++i) {
          const int64_t t = i0 + i;
          const T inv = T(1) / l[i];
          S* orow = out + (b * Tn + t) * qs + h * HS;
          T* o = out_row;  // 16-bit out: the row in fp32, then rounded
          if constexpr (std::is_same_v<S, T>) o = orow;
#pragma omp simd
          for (int64_t d = 0; d < HS; ++d) o[d] = acc[i * HS + d] * inv;
          if constexpr (!std::is_same_v<S, T>) f32_to_half(o, dt, orow, HS);
          lse[(b * NH + h) * Tn + t] = m[i] + std::log(l[i]);
        }
      }
    }
  }
}

}  // namespace

void attention_forward(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                       const Tensor& positions, Tensor& out, Tensor& lse) {
  const AttnShape s = check_attention("attention_forward", q, k, v, out, lse, heads, kv_heads);
  const DocStarts doc_start("attention_forward", positions, s);
  if (const DType dt = shared_half_dtype(q, k, v, out); is_half(dt) && lse.dtype() == DType::kF32) {
    auto half = [](const Tensor& t) { return static_cast<uint16_t*>(t.raw()); };
    attention_forward_impl<float>(s, doc_start, half(q), half(k), half(v), half(out), lse.data<float>(), dt);
    return;
  }
  const Tensor qf = f32_stand_in<0>(q, true), kf = f32_stand_in<1>(k, true), vf = f32_stand_in<2>(v, true);
  Tensor of = f32_stand_in<3>(out, false);
  dispatch_float(lse.dtype(), "attention_forward", [&](auto tag) {
    using T = decltype(tag);
    attention_forward_impl<T>(s, doc_start, qf.data<T>(), kf.data<T>(), vf.data<T>(), of.data<T>(), lse.data<T>(),
                              lse.dtype());
  });
  store_stand_in(of, out);
}

}  // namespace trident::cpu
