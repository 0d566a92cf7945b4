// Causal attention with bf16 q, k, v through oneDNN bf16 matmuls (AMX tiles where the processor
// has them). Work is cut into chunks of sequences and kv heads (a matmul batch entry per (sequence,
// kv head); the query heads of a kv head's group stacked as rows, so grouped-query attention needs
// no broadcast) and into tiles of kTile queries and keys. Per query tile and each key tile up to
// the diagonal: S = Q K^T in fp32; each row's softmax over its visible keys (doc_start(b, t) ..
// t) in fp32 across the tiles; P rounded to bf16; O = sum over key tiles of P V. Backward
// recomputes S and P from lse, forms dP = dO V^T and dS = P (dP - D) in fp32, then dQ += scale
// dS K, dK += scale dS^T Q, dV += P^T dO, accumulated in fp32 per tile. Every operand is a dense
// [batch, rows, cols] buffer (q, k, v, dout repacked, results scattered back), the layouts for
// which oneDNN 2.6 picks its AMX/brgemm kernels; strided views of the [B, T, heads*HS] tensors
// sent it to a slower jit gemm.
#include <oneapi/dnnl/dnnl.hpp>

#include <algorithm>
#include <bit>
#include <map>
#include <vector>

#include "attention.hpp"
#include "convert.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

constexpr int64_t kTile = 128;                           // queries and keys per tile
// The working set of one chunk, at most: 16 MiB measured 4-7% faster than 64 MiB in
// trident_kernel_bench (bf16, 8 x 256 tokens, 12 heads; 1-4 MiB made too many small matmuls).
constexpr int64_t kChunkBytes = int64_t(16) << 20;

using dt = dnnl::memory::data_type;

// A [batch, rows, cols] matmul operand: dense per batch entry, row-major or (transposed) with
// rows contiguous.
struct Operand {
  int64_t batch, rows, cols;
  bool transposed;
  dt type;
  void* data;
  dnnl::memory::desc desc() const {
    const dnnl::memory::dims strides = transposed ? dnnl::memory::dims{rows * cols, 1, rows}
                                                  : dnnl::memory::dims{rows * cols, cols, 1};
    return dnnl::memory::desc({batch, rows, cols}, type, strides);
  }
};

Operand dense(int64_t batch, int64_t rows, int64_t cols, dt type, void* data) {
  return {batch, rows, cols, false, type, data};
}
// The transpose of a dense [batch, cols, rows] buffer, as [batch, rows, cols].
Operand transposed(int64_t batch, int64_t rows, int64_t cols, dt type, void* data) {
  return {batch, rows, cols, true, type, data};
}

// c = alpha * a @ b (+ c when accumulate); primitives cached by everything that shapes them.
class Matmuls {
 public:
  void run(const Operand& a, const Operand& b, const Operand& c, float alpha = 1.0f, bool accumulate = false) {
    std::vector<int64_t> key;
    for (const Operand* o : {&a, &b, &c})
      key.insert(key.end(), {o->batch, o->rows, o->cols, int64_t(o->transposed), int64_t(o->type)});
    key.push_back(int64_t(std::bit_cast<uint32_t>(alpha)));
    key.push_back(accumulate);
    auto it = cache_.find(key);
    if (it == cache_.end()) {
      dnnl::primitive_attr attr;
      if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
      if (accumulate) {
        dnnl::post_ops ops;
        ops.append_sum(1.0f);
        attr.set_post_ops(ops);
      }
      try {
        const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a.desc(), b.desc(), c.desc()), attr, engine_);
        it = cache_.emplace(key, dnnl::matmul(pd)).first;
      } catch (const dnnl::error& e) {
        TRIDENT_CHECK(false, "attention: oneDNN has no bf16 matmul for these operands here (", e.what(), ")");
      }
    }
    dnnl::memory am(a.desc(), engine_, a.data), bm(b.desc(), engine_, b.data), cm(c.desc(), engine_, c.data);
    it->second.execute(stream_, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream_.wait();
  }

 private:
  dnnl::engine engine_{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream_{engine_};
  std::map<std::vector<int64_t>, dnnl::matmul> cache_;
};

Matmuls& matmuls() {
  static thread_local Matmuls m;
  return m;
}

// Per-thread scratch (thread_scratch) of n elements of T in slot kSlot + s: slots of its own,
// apart from the other kernels'.
template <typename T, int S>
T* buffer(int64_t n) {
  constexpr int kSlot = 100;
  return thread_scratch<T, kSlot + S>(size_t(n));
}

// n values of t (fp32 or 16-bit) from element `at` as fp32, and back.
void load_values(const Tensor& t, int64_t at, float* dst, int64_t n) {
  if (t.dtype() == DType::kF32) std::memcpy(dst, t.data<float>() + at, size_t(n) * sizeof(float));
  else load_f32(t.raw(), t.dtype(), at, dst, n);
}
void store_values(const float* src, const Tensor& t, int64_t at, int64_t n) {
  if (t.dtype() == DType::kF32) std::memcpy(t.data<float>() + at, src, size_t(n) * sizeof(float));
  else store_f32(src, t.dtype(), t.raw(), at, n);
}

// One chunk: sequences [b0, b0 + nb) and kv heads [g0, g0 + nkv); batch entry e = (sequence
// b0 + e / nkv, kv head g0 + e % nkv). Tile j covers positions [j * kTile, j * kTile + len(j)).
// Query rows of a tile within an entry: (head of the group hh, query i) -> hh * len + i.
struct Chunk {
  const AttnShape& s;
  int64_t b0, nb, g0, nkv;
  int64_t group() const { return s.NH / s.NKV; }
  int64_t batch() const { return nb * nkv; }
  int64_t tiles() const { return (s.T + kTile - 1) / kTile; }
  int64_t len(int64_t j) const { return std::min(kTile, s.T - j * kTile); }
  // Offset of tile j's region in a buffer of per-tile [batch, rows_per_pos * len(j), width]
  // regions (every earlier tile is full).
  int64_t region(int64_t j, int64_t rows_per_pos, int64_t width) const {
    return j * batch() * rows_per_pos * kTile * width;
  }
  int64_t sequence(int64_t e) const { return b0 + e / nkv; }
  int64_t kv_head(int64_t e) const { return g0 + e % nkv; }
  // Tile j as [batch, rows(j), HS] rows of a [B, T, heads * HS] tensor: k or v (one row per
  // position of the entry's kv head), or q, dout, out, dq (the group's heads stacked).
  int64_t rows(int64_t j, bool queries) const { return (queries ? group() : 1) * len(j); }
  // The element offset in that tensor of row r's first value.
  int64_t offset(int64_t j, bool queries, int64_t r) const {
    const int64_t n = rows(j, queries), e = r / n, hh = r % n / len(j), i = r % len(j);
    const int64_t head = queries ? kv_head(e) * group() + hh : kv_head(e);
    return (sequence(e) * s.T + j * kTile + i) * (queries ? s.NH : s.NKV) * s.HS + head * s.HS;
  }
};

// The rows of tile j of x (Chunk::rows) as bf16 [batch, rows, HS] at dst.
void gather_tile(const Chunk& c, const Tensor& x, bool queries, int64_t j, uint16_t* dst) {
  const AttnShape& s = c.s;
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < c.batch() * c.rows(j, queries); ++r) {
    const int64_t at = c.offset(j, queries, r);
    uint16_t* out = dst + r * s.HS;
    if (x.dtype() == DType::kBF16) {
      std::memcpy(out, static_cast<const uint16_t*>(x.raw()) + at, size_t(s.HS) * 2);
      continue;
    }
    float row[256];
    for (int64_t d0 = 0; d0 < s.HS; d0 += 256) {
      const int64_t n = std::min<int64_t>(256, s.HS - d0);
      load_values(x, at + d0, row, n);
      f32_to_half(row, DType::kBF16, out + d0, n);
    }
  }
}

// The inverse for results: fp32 src [batch, rows, HS] of tile j into x's rows (any float dtype).
void scatter_tile(const Chunk& c, const float* src, bool queries, int64_t j, const Tensor& x) {
#pragma omp parallel for schedule(static)
  for (int64_t r = 0; r < c.batch() * c.rows(j, queries); ++r)
    store_values(src + r * c.s.HS, x, c.offset(j, queries, r), c.s.HS);
}

// Sequences and kv heads per chunk: all kv heads and as many sequences as fit kChunkBytes, or
// one sequence and as many kv heads as fit (at least one).
Chunk first_chunk_shape(const AttnShape& s) {
  // fp32 + bf16 scores and probabilities of one query tile against every key (twice backward),
  // the repacked keys and values and their fp32 gradients.
  const int64_t per_kv_head = (s.NH / s.NKV) * kTile * s.T * 12 + s.T * s.HS * 12;
  const int64_t kv = std::clamp<int64_t>(kChunkBytes / std::max<int64_t>(per_kv_head, 1), 1, s.NKV);
  const int64_t nb = kv < s.NKV ? 1 : std::clamp<int64_t>(kChunkBytes / (per_kv_head * s.NKV), 1, s.B);
  return {s, 0, nb, 0, kv};
}

template <typename F>
void for_each_chunk(const AttnShape& s, F&& f) {
  const Chunk shape = first_chunk_shape(s);
  for (int64_t b0 = 0; b0 < s.B; b0 += shape.nb)
    for (int64_t g0 = 0; g0 < s.NKV; g0 += shape.nkv)
      f(Chunk{s, b0, std::min(shape.nb, s.B - b0), g0, std::min(shape.nkv, s.NKV - g0)});
}

void check_bf16_inputs(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& lse, const char* op) {
  for (const Tensor* t : {&q, &k, &v})
    TRIDENT_CHECK(t->dtype() == DType::kBF16, op, ": the matmul path takes bf16 q, k, v (got ",
                  dtype_name(t->dtype()), ")");
  TRIDENT_CHECK(lse.dtype() == DType::kF32, op, ": the matmul path keeps fp32 lse");
}

// Keys, values (and their fp32 gradient accumulators) of a chunk: every tile's [batch, len, HS].
struct KeyTiles {
  uint16_t *k, *v;
  int64_t offset(const Chunk& c, int64_t j) const { return c.region(j, 1, c.s.HS); }
};
KeyTiles gather_keys(const Chunk& c, const Tensor& k, const Tensor& v) {
  const int64_t n = c.batch() * c.s.T * c.s.HS;
  KeyTiles t{buffer<uint16_t, 0>(n), buffer<uint16_t, 1>(n)};
  for (int64_t j = 0; j < c.tiles(); ++j) {
    gather_tile(c, k, false, j, t.k + t.offset(c, j));
    gather_tile(c, v, false, j, t.v + t.offset(c, j));
  }
  return t;
}

}  // namespace

void attention_forward_matmul(const Tensor& q, const Tensor& k, const Tensor& v, int heads, int kv_heads,
                              const Tensor& positions, Tensor& out, Tensor& lse) {
  constexpr const char* op = "attention_forward";
  const AttnShape s = check_attention(op, q, k, v, out, lse, heads, kv_heads);
  check_bf16_inputs(q, k, v, lse, op);
  const DocStarts doc_start(op, positions, s);
  const float scale = 1.0f / std::sqrt(float(s.HS));
  float* lse_p = lse.data<float>();
  for_each_chunk(s, [&](const Chunk& c) {
    const KeyTiles keys = gather_keys(c, k, v);
    const int64_t G = c.group(), B = c.batch(), HS = s.HS;
    for (int64_t qt = 0; qt < c.tiles(); ++qt) {
      const int64_t nq = c.len(qt), rows = G * nq;  // query rows per batch entry
      uint16_t* qrep = buffer<uint16_t, 2>(B * rows * HS);
      float* scores = buffer<float, 3>(B * rows * (qt * kTile + nq));  // tile kt: [B, rows, len(kt)]
      uint16_t* probs = buffer<uint16_t, 4>(B * rows * (qt * kTile + nq));
      float* orep = buffer<float, 5>(B * rows * HS);
      gather_tile(c, q, true, qt, qrep);
      auto tile_at = [&](int64_t kt) { return kt * B * rows * kTile; };
      for (int64_t kt = 0; kt <= qt; ++kt)
        matmuls().run(dense(B, rows, HS, dt::bf16, qrep),
                      transposed(B, HS, c.len(kt), dt::bf16, keys.k + keys.offset(c, kt)),
                      dense(B, rows, c.len(kt), dt::f32, scores + tile_at(kt)));
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < B * rows; ++r) {
        const int64_t e = r / rows, hh = r % rows / nq, t = qt * kTile + r % nq;
        const int64_t b = c.sequence(e), h = c.kv_head(e) * G + hh;
        const int64_t lo = doc_start(b, t), hi = t + 1;  // visible keys
        // The row's visible keys in key tile kt: [j0, j1) of its len(kt).
        auto visible = [&](int64_t kt) {
          const int64_t nk = c.len(kt);
          return std::pair(std::clamp(lo - kt * kTile, int64_t(0), nk), std::clamp(hi - kt * kTile, int64_t(0), nk));
        };
        float most = -INFINITY;
        for (int64_t kt = lo / kTile; kt <= qt; ++kt) {
          const auto [j0, j1] = visible(kt);
          most = std::max(most, scaled_max(scores + tile_at(kt) + r * c.len(kt) + j0, j1 - j0, scale));
        }
        float sum = 0;
        for (int64_t kt = 0; kt <= qt; ++kt) {
          const auto [j0, j1] = visible(kt);
          float* srow = scores + tile_at(kt) + r * c.len(kt);
          std::fill(srow, srow + j0, 0.0f);
          std::fill(srow + j1, srow + c.len(kt), 0.0f);
          sum += scaled_exp_sum(srow + j0, j1 - j0, scale, most);
        }
        const float inv = 1.0f / sum;
        for (int64_t kt = 0; kt <= qt; ++kt) {
          const auto [j0, j1] = visible(kt);
          float* srow = scores + tile_at(kt) + r * c.len(kt);
          for (int64_t j = j0; j < j1; ++j) srow[j] *= inv;
          f32_to_half(srow, DType::kBF16, probs + tile_at(kt) + r * c.len(kt), c.len(kt));
        }
        lse_p[(b * s.NH + h) * s.T + t] = most + std::log(sum);
      }
      for (int64_t kt = 0; kt <= qt; ++kt)
        matmuls().run(dense(B, rows, c.len(kt), dt::bf16, probs + tile_at(kt)),
                      dense(B, c.len(kt), HS, dt::bf16, keys.v + keys.offset(c, kt)),
                      dense(B, rows, HS, dt::f32, orep), 1.0f, /*accumulate=*/kt > 0);
      scatter_tile(c, orep, true, qt, out);
    }
  });
}

void attention_backward_matmul(const Tensor& q, const Tensor& k, const Tensor& v, const Tensor& out, const Tensor& lse,
                               const Tensor& dout, int heads, int kv_heads, const Tensor& positions, Tensor& dq,
                               Tensor& dk, Tensor& dv) {
  constexpr const char* op = "attention_backward";
  const AttnShape s = check_attention(op, q, k, v, out, lse, heads, kv_heads);
  check_bf16_inputs(q, k, v, lse, op);
  for (const Tensor* t : {&dout, static_cast<const Tensor*>(&dq), static_cast<const Tensor*>(&dk),
                          static_cast<const Tensor*>(&dv)})
    TRIDENT_CHECK(t->dtype() == DType::kF32 || t->dtype() == DType::kBF16, op, ": gradients are fp32 or bf16");
  TRIDENT_CHECK(dout.shape() == q.shape() && dq.shape() == q.shape() && dk.numel() == k.numel() &&
                    dv.numel() == v.numel(), op, ": dout, dq, dk, dv must match q, q, k, v");
  const DocStarts doc_start(op, positions, s);
  const float scale = 1.0f / std::sqrt(float(s.HS));
  const float* lse_p = lse.data<float>();
  for_each_chunk(s, [&](const Chunk& c) {
    const KeyTiles keys = gather_keys(c, k, v);
    const int64_t G = c.group(), B = c.batch(), HS = s.HS, n = B * s.T * HS;
    float* dk_acc = buffer<float, 6>(n);  // per tile [B, len, HS], as KeyTiles
    float* dv_acc = buffer<float, 7>(n);
    for (int64_t qt = 0; qt < c.tiles(); ++qt) {
      const int64_t nq = c.len(qt), rows = G * nq, cols = qt * kTile + nq;
      uint16_t* qrep = buffer<uint16_t, 2>(B * rows * HS);
      uint16_t* dorep = buffer<uint16_t, 8>(B * rows * HS);
      float* scores = buffer<float, 3>(B * rows * cols);
      float* dprobs = buffer<float, 9>(B * rows * cols);
      uint16_t* probs = buffer<uint16_t, 4>(B * rows * cols);
      uint16_t* dscores = buffer<uint16_t, 10>(B * rows * cols);
      float* dqrep = buffer<float, 5>(B * rows * HS);
      gather_tile(c, q, true, qt, qrep);
      gather_tile(c, dout, true, qt, dorep);
      auto tile_at = [&](int64_t kt) { return kt * B * rows * kTile; };
      for (int64_t kt = 0; kt <= qt; ++kt) {
        const int64_t nk = c.len(kt);
        matmuls().run(dense(B, rows, HS, dt::bf16, qrep), transposed(B, HS, nk, dt::bf16, keys.k + keys.offset(c, kt)),
                      dense(B, rows, nk, dt::f32, scores + tile_at(kt)));
        matmuls().run(dense(B, rows, HS, dt::bf16, dorep), transposed(B, HS, nk, dt::bf16, keys.v + keys.offset(c, kt)),
                      dense(B, rows, nk, dt::f32, dprobs + tile_at(kt)));
      }
#pragma omp parallel for schedule(static)
      for (int64_t r = 0; r < B * rows; ++r) {
        const int64_t e = r / rows, hh = r % rows / nq, t = qt * kTile + r % nq;
        const int64_t b = c.sequence(e), h = c.kv_head(e) * G + hh;
        const int64_t lo = doc_start(b, t), hi = t + 1;
        // D_t = dout_t . out_t in fp32, with dout rounded to bf16 as in the dP product (so D
        // cancels dP exactly where it should, e.g. a lone token).
        float o[256], g[256], D = 0;
        for (int64_t d0 = 0; d0 < HS; d0 += 256) {
          const int64_t m = std::min<int64_t>(256, HS - d0);
          load_values(out, (b * s.T + t) * s.q_stride() + h * HS + d0, o, m);
          half_to_f32(dorep + r * HS + d0, DType::kBF16, g, m);
#pragma omp simd reduction(+ : D)
          for (int64_t d = 0; d < m; ++d) D += o[d] * g[d];
        }
        const float lse_t = lse_p[(b * s.NH + h) * s.T + t];
        for (int64_t kt = 0; kt <= qt; ++kt) {
          const int64_t nk = c.len(kt);
          const int64_t j0 = std::clamp(lo - kt * kTile, int64_t(0), nk), j1 = std::clamp(hi - kt * kTile, int64_t(0), nk);
          float* srow = scores + tile_at(kt) + r * nk;
          float* dprow = dprobs + tile_at(kt) + r * nk;
          for (float* row : {srow, dprow}) {  // P and dS are zero outside the visible keys
            std::fill(row, row + j0, 0.0f);
            std::fill(row + j1, row + nk, 0.0f);
          }
          scaled_exp_sum(srow + j0, j1 - j0, scale, lse_t);
          for (int64_t j = j0; j < j1; ++j) dprow[j] = srow[j] * (dprow[j] - D);
          f32_to_half(srow, DType::kBF16, probs + tile_at(kt) + r * nk, nk);
          f32_to_half(dprow, DType::kBF16, dscores + tile_at(kt) + r * nk, nk);
        }
      }
      for (int64_t kt = 0; kt <= qt; ++kt) {
        const int64_t nk = c.len(kt);
        const Operand ds = dense(B, rows, nk, dt::bf16, dscores + tile_at(kt));
        // dQ += scale dS K; dK += scale dS^T Q and dV += P^T dO (the group's heads and the tile's
        // queries are one reduction dimension); the first key tile / query tile overwrites.
        matmuls().run(ds, dense(B, nk, HS, dt::bf16, keys.k + keys.offset(c, kt)), dense(B, rows, HS, dt::f32, dqrep),
                      scale, kt > 0);
        matmuls().run(transposed(B, nk, rows, dt::bf16, ds.data), dense(B, rows, HS, dt::bf16, qrep),
                      dense(B, nk, HS, dt::f32, dk_acc + keys.offset(c, kt)), scale, qt > kt);
        matmuls().run(transposed(B, nk, rows, dt::bf16, probs + tile_at(kt)), dense(B, rows, HS, dt::bf16, dorep),
                      dense(B, nk, HS, dt::f32, dv_acc + keys.offset(c, kt)), 1.0f, qt > kt);
      }
      scatter_tile(c, dqrep, true, qt, dq);
    }
    for (int64_t j = 0; j < c.tiles(); ++j) {
      scatter_tile(c, dk_acc + keys.offset(c, j), false, j, dk);
      scatter_tile(c, dv_acc + keys.offset(c, j), false, j, dv);
    }
  });
}

}  // namespace trident::cpu
