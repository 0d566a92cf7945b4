// Causal attention backward, flash-attention-2 style: probabilities are recomputed from lse per
// key tile; D_t = dout_t . out_t, dS = P * (dP - D). One task per (b, kv head) owns dk, dv of
// that kv head and dq of its query heads, so there are no races and no T x T matrix.
// Document masking: a key tile stops at the first query block whose document starts after it.
// q, k, v, out, dout, dq, dk, dv may be fp32, bf16 or fp16 (fp32 inside); lse is fp32.
#include "attention.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

// Query rows whose P and dS rows are kept (transposed) to update dk, dv with register accumulators.
constexpr int64_t kQBlock = 32;

// q, out, dout, dq: [B, T, NH*HS]; k, v, dk, dv: [B, T, NKV*HS]; lse: [B, NH, T]. q, k, v, out are
// stored as S: T, or 16-bit of dtype dt (T = float), widened tile by tile (see attention.hpp).
template <typename T, typename S>
void attention_backward_impl(const AttnShape& s, const DocStarts& doc_start, const S* q, const S* k, const S* v,
                             const S* out, const T* lse, const T* dout, T* dq, T* dk, T* dv, DType dt) {
  const int64_t B = s.B, Tn = s.T, NH = s.NH, NKV = s.NKV, HS = s.HS, group = s.NH / s.NKV;
  const int64_t qs = s.q_stride(), kvs = s.kv_stride();
  const T scale = T(1) / std::sqrt(T(HS));
#pragma omp parallel for collapse(2) schedule(dynamic, 1) if (B * NH * Tn * Tn * HS > (int64_t(1) << 17))
  for (int64_t b = 0; b < B; ++b) {
    for (int64_t g = 0; g < NKV; ++g) {
      T* kt = thread_scratch<T, 0>(static_cast<size_t>(HS * kAttnTile));
      T* vt = thread_scratch<T, 1>(static_cast<size_t>(HS * kAttnTile));
      T* dk_acc = thread_scratch<T, 2>(static_cast<size_t>(kAttnTile * HS));
      T* dv_acc = thread_scratch<T, 3>(static_cast<size_t>(kAttnTile * HS));
      T* D = thread_scratch<T, 4>(static_cast<size_t>(group * Tn));
      T* pt = thread_scratch<T, 5>(static_cast<size_t>(kAttnTile * kQBlock));   // P^T of a query block
      T* dst = thread_scratch<T, 6>(static_cast<size_t>(kAttnTile * kQBlock));  // dS^T of a query block
      constexpr int R = kRowBlock<T>;
      alignas(64) T p_rows[R * kAttnTile];
      alignas(64) T ds_rows[R * kAttnTile];
      T ones[R];
      std::fill(ones, ones + R, T(1));
      T* pad = thread_scratch<T, 7>(static_cast<size_t>(HS));  // output row of padding rows
      T* k_widened = thread_scratch<T, 8>(static_cast<size_t>(kAttnTile * HS));
      T* v_widened = thread_scratch<T, 9>(static_cast<size_t>(kAttnTile * HS));
      T* q_widened = thread_scratch<T, 10>(static_cast<size_t>(kQBlock * HS));
      T* out_widened = thread_scratch<T, 11>(static_cast<size_t>(HS));
      const int64_t kv_col = g * HS;
      // D[hh, t] = dout . out for the group's query heads; dq of those heads starts at zero.
      for (int64_t hh = 0; hh < group; ++hh) {
        const int64_t col = (g * group + hh) * HS;
        for (int64_t t = 0; t < Tn; ++t) {
          const T* o = rows_as<T>(out + (b * Tn + t) * qs + col, qs, 1, HS, dt, out_widened).first;
          const T* dout_row = dout + (b * Tn + t) * qs + col;
          T sum = 0;
#pragma omp simd reduction(+ : sum)
          for (int64_t d = 0; d < HS; ++d) sum += o[d] * dout_row[d];
          D[hh * Tn + t] = sum;
          std::fill(dq + (b * Tn + t) * qs + col, dq + (b * Tn + t) * qs + col + HS, T(0));
        }
      }
      for (int64_t j0 = 0; j0 < Tn; j0 += kAttnTile) {
        const int64_t nj = std::min(kAttnTile, Tn - j0);
        const auto [k_tile, k_stride] = rows_as<T>(k + (b * Tn + j0) * kvs + kv_col, kvs, nj, HS, dt, k_widened);
        const auto [v_tile, v_stride] = rows_as<T>(v + (b * Tn + j0) * kvs + kv_col, kvs, nj, HS, dt, v_widened);
        pack_transposed(k_tile, k_stride, nj, HS, kt);
        pack_transposed(v_tile, v_stride, nj, HS, vt);
        std::fill(dk_acc, dk_acc + nj * HS, T(0));
        std::fill(dv_acc, dv_acc + nj * HS, T(0));
        for (int64_t hh = 0; hh < group; ++hh) {
          const int64_t h = g * group + hh;
          const T* lse_h = lse + (b * NH + h) * Tn;
          // queries that see some key of this tile, kQBlock rows at a time
          for (int64_t t0 = j0; t0 < Tn; t0 += kQBlock) {
            if (doc_start(b, t0) >= j0 + nj) break;  // this block and all later ones start after the tile
            const int64_t nb = std::min(kQBlock, Tn - t0);
            const auto [q_blk, q_stride] = rows_as<T>(q + (b * Tn + t0) * qs + h * HS, qs, nb, HS, dt, q_widened);
            const T* do_blk = dout + (b * Tn + t0) * qs + h * HS;
            for (int64_t i = 0; i < nb; i += R) {
              const int64_t nr = std::min<int64_t>(R, nb - i);
              // p = exp(scale q.k - lse); dp = dout.v; ds = p (dp - D) * scale, a block of query rows
              score_rows(q_blk + i * q_stride, q_stride, nr, kt, HS, scale, p_rows);
              score_rows(do_blk + i * qs, qs, nr, vt, HS, T(1), ds_rows);
              T* dq_rows[R];
              int64_t keys = 0;  // the block's longest visible key range (ds is zero past each row's)
              for (int64_t r = 0; r < R; ++r) {
                T* p = p_rows + r * kAttnTile;
                T* ds = ds_rows + r * kAttnTile;
                if (r >= nr) {  // padding row: contributes nothing
                  dq_rows[r] = pad;
                  std::fill(ds, ds + kAttnTile, T(0));
                  continue;
                }
                const int64_t t = t0 + i + r, valid = std::min(nj, t - j0 + 1);
                const int64_t lo = std::max<int64_t>(0, doc_start(b, t) - j0);  // keys before lo: other document
                const T lse_t = lse_h[t], D_t = D[hh * Tn + t];
#pragma omp simd
                for (int64_t j = 0; j < kAttnTile; ++j) {
                  p[j] = j >= lo && j < valid ? exp_t<T>(p[j] - lse_t) : T(0);
                  ds[j] = p[j] * (ds[j] - D_t) * scale;
                }
                for (int64_t j = 0; j < nj; ++j) {
                  pt[j * kQBlock + i + r] = p[j];
                  dst[j * kQBlock + i + r] = ds[j];
                }
                dq_rows[r] = dq + (b * Tn + t) * qs + h * HS;
                keys = std::max(keys, valid);
              }
              accumulate_rows_blocked(dq_rows, ones, ds_rows, kAttnTile, k_tile, k_stride, keys, HS);  // dq += dS K
            }
            // dv[j] += sum_i P[i, j] dout[i]; dk[j] += sum_i dS[i, j] q[i], a block of keys at a time from
            // the first query that sees the block's first key (P and dS are zero before each key's own)
            const int64_t keys = std::min(nj, t0 + nb - j0);
            for (int64_t j = 0; j < keys; j += R) {
              const int64_t i0 = std::max<int64_t>(0, j0 + j - t0);
              T* dv_rows[R];
              T* dk_rows[R];
              for (int64_t r = 0; r < R; ++r) {
                dv_rows[r] = j + r < keys ? dv_acc + (j + r) * HS : pad;
                dk_rows[r] = j + r < keys ? dk_acc + (j + r) * HS : pad;
              }
              // padding keys read whatever P^T and dS^T rows lie past `keys` into the dropped pad row
              accumulate_rows_blocked(dv_rows, ones, pt + j * kQBlock + i0, kQBlock, do_blk + i0 * qs, qs, nb - i0, HS);
              accumulate_rows_blocked(dk_rows, ones, dst + j * kQBlock + i0, kQBlock, q_blk + i0 * q_stride, q_stride,
                                      nb - i0, HS);
            }
          }
        }
        for (int64_t j = 0; j < nj; ++j) {
          T* dk_out = dk + (b * Tn + j0 + j) * kvs + kv_col;
          T* dv_out = dv + (b * Tn + j0 + j) * kvs + kv_col;
          std::copy(dk_acc + j * HS, dk_acc + (j + 1) * HS, dk_out);
          std::copy(dv_acc + j * HS, dv_acc + (j + 1) * HS, dv_out);
        }
      }
    }
  }
}

}  // namespace

void attention_backward(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                        const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                        Tensor& dk, Tensor& dv) {
  constexpr const char* op = "attention_backward";
  const AttnShape s = check_attention(op, q, k, v, out, lse, heads, kv_heads);
  const DocStarts doc_start(op, positions, s);
  const DType ct = lse.dtype();
  check_act(dout, ct, op, "dout");
  TRIDENT_CHECK(dout.shape() == q.shape(), op, ": dout ", dout.shape().str(), " differs from q ", q.shape().str());
  check_act(dq, ct, op, "dq");
  TRIDENT_CHECK(dq.shape() == q.shape(), op, ": dq ", dq.shape().str(), " differs from q ", q.shape().str());
  check_act(dk, ct, op, "dk");
  check_numel(dk, k.numel(), op, "dk");
  check_act(dv, ct, op, "dv");
  check_numel(dv, v.numel(), op, "dv");
  const Tensor dof = f32_stand_in<4>(dout, true);
  Tensor dqf = f32_stand_in<5>(dq, false), dkf = f32_stand_in<6>(dk, false), dvf = f32_stand_in<7>(dv, false);
  if (const DType dt = shared_half_dtype(q, k, v, out); is_half(dt) && ct == DType::kF32) {
    auto half = [](const Tensor& t) { return static_cast<const uint16_t*>(t.raw()); };
    attention_backward_impl<float>(s, doc_start, half(q), half(k), half(v), half(out), lse.data<float>(),
                                   dof.data<float>(), dqf.data<float>(), dkf.data<float>(), dvf.data<float>(), dt);
  } else {
    const Tensor qf = f32_stand_in<0>(q, true), kf = f32_stand_in<1>(k, true), vf = f32_stand_in<2>(v, true);
    const Tensor of = f32_stand_in<3>(out, true);
    dispatch_float(ct, op, [&](auto tag) {
      using T = decltype(tag);
      attention_backward_impl<T>(s, doc_start, qf.data<T>(), kf.data<T>(), vf.data<T>(), of.data<T>(), lse.data<T>(),
                                 dof.data<T>(), dqf.data<T>(), dkf.data<T>(), dvf.data<T>(), ct);
    });
  }
  store_stand_in(dqf, dq);
  store_stand_in(dkf, dk);
  store_stand_in(dvf, dv);
}

}  // namespace trident::cpu
