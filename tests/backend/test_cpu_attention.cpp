// Tests of the CPU flash-style causal attention against a naive full-softmax reference in
// double: forward (out, lse), backward by formula, and the backward against finite differences.
#include "test_cpu_util.hpp"

namespace trident::test {
namespace {

template <typename T>
class CpuAttentionTest : public CpuOpsTyped<T> {};
TYPED_TEST_SUITE(CpuAttentionTest, FloatTypes);

struct AttnCase {
  int64_t B, T, NH, NKV, HS;
};

// Naive causal attention with the full T x T softmax. q, out: [B, T, NH*HS]; k, v: [B, T, NKV*HS].
struct RefAttention {
  AttnCase s;
  Vec q, k, v;
  std::vector<int32_t> pos;  // empty: plain causal; else key j >= t - pos[b*T + t] (document masking)
  int64_t first_key(int64_t b, int64_t t) const { return pos.empty() ? 0 : t - pos[b * s.T + t]; }
  int64_t qi(int64_t b, int64_t t, int64_t h) const { return (b * s.T + t) * s.NH * s.HS + h * s.HS; }
  int64_t ki(int64_t b, int64_t t, int64_t h) const {
    return (b * s.T + t) * s.NKV * s.HS + (h / (s.NH / s.NKV)) * s.HS;
  }
  // Softmax row P[b, h, t, 0..t].
  Vec probs(int64_t b, int64_t h, int64_t t, double* lse) const {
    Vec p(static_cast<size_t>(t + 1));
    double mx = -INFINITY, sum = 0;
    for (int64_t j = 0; j < first_key(b, t); ++j) p[j] = -INFINITY;
    for (int64_t j = first_key(b, t); j <= t; ++j) {
      double dot = 0;
      for (int64_t d = 0; d < s.HS; ++d) dot += q[qi(b, t, h) + d] * k[ki(b, j, h) + d];
      p[j] = dot / std::sqrt(double(s.HS));
      mx = std::max(mx, p[j]);
    }
    for (double& x : p) sum += std::exp(x - mx);  // exp(-inf) = 0 for masked keys
    for (double& x : p) x = std::exp(x - mx) / sum;
    if (lse) *lse = mx + std::log(sum);
    return p;
  }
  void forward(Vec& out, Vec& lse) const {
    out.assign(q.size(), 0.0);
    lse.assign(static_cast<size_t>(s.B * s.NH * s.T), 0.0);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.NH; ++h)
        for (int64_t t = 0; t < s.T; ++t) {
          const Vec p = probs(b, h, t, &lse[(b * s.NH + h) * s.T + t]);
          for (int64_t j = 0; j <= t; ++j)
            for (int64_t d = 0; d < s.HS; ++d) out[qi(b, t, h) + d] += p[j] * v[ki(b, j, h) + d];
        }
  }
  // dP = dO V^T, dS = P (dP - rowsum(P dP)), dQ = dS K / sqrt(HS), dK = dS^T Q / sqrt(HS), dV = P^T dO.
  void backward(const Vec& dout, Vec& dq, Vec& dk, Vec& dv) const {
    dq.assign(q.size(), 0.0);
    dk.assign(k.size(), 0.0);
    dv.assign(v.size(), 0.0);
    const double scale = 1 / std::sqrt(double(s.HS));
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t h = 0; h < s.NH; ++h)
        for (int64_t t = 0; t < s.T; ++t) {
          const Vec p = probs(b, h, t, nullptr);
          Vec dp(p.size(), 0.0);
          double D = 0;
          for (int64_t j = 0; j <= t; ++j) {
            for (int64_t d = 0; d < s.HS; ++d) dp[j] += dout[qi(b, t, h) + d] * v[ki(b, j, h) + d];
            D += p[j] * dp[j];
          }
          for (int64_t j = 0; j <= t; ++j) {
            const double ds = p[j] * (dp[j] - D) * scale;
            for (int64_t d = 0; d < s.HS; ++d) {
              dq[qi(b, t, h) + d] += ds * k[ki(b, j, h) + d];
              dk[ki(b, j, h) + d] += ds * q[qi(b, t, h) + d];
              dv[ki(b, j, h) + d] += p[j] * dout[qi(b, t, h) + d];
            }
          }
        }
  }
};

const AttnCase kCases[] = {
    {1, 1, 2, 2, 8},     // one token
    {2, 7, 4, 2, 16},    // GQA 2:1, T below the tile
    {1, 65, 4, 1, 24},   // multi-query, one past the tile
    {2, 100, 3, 3, 8},   // T not a multiple of the tile
    {1, 64, 2, 1, 16},   // exactly one tile
    {1, 130, 4, 2, 8},   // three tiles
    {1, 70, 2, 1, 64},   // HS = 4 fp32 vectors (the register-blocked path)
    {2, 33, 2, 2, 40},   // HS = 2.5 fp32 / 5 fp64 vectors (block, single vectors and a scalar tail)
};

// Document lengths for the masking case: row b is cut into documents of these lengths, cycled
// (some shorter than a query block, some spanning several key tiles).
const int kDocLengths[] = {5, 1, 70, 31, 2, 64, 17, 100, 3};

std::vector<int32_t> packed_positions(int64_t B, int64_t T) { return document_positions(B, T, kDocLengths); }

template <typename T>
void check_against_reference(Ops& ops, bool document_masking) {
  constexpr DType dt = DTypeOf<T>::value;
  uint64_t seed = 200;
  for (const AttnCase& s : kCases) {
    SCOPED_TRACE(testing::Message() << "B=" << s.B << " T=" << s.T << " NH=" << s.NH << " NKV=" << s.NKV
                                    << " HS=" << s.HS);
    const Shape q_shape{s.B, s.T, s.NH * s.HS}, kv_shape{s.B, s.T, s.NKV * s.HS};
    Tensor q = randn<T>(q_shape, seed++, 1.5), k = randn<T>(kv_shape, seed++, 1.5), v = randn<T>(kv_shape, seed++);
    Tensor dout = randn<T>(q_shape, seed++);
    Tensor out = ops.zeros(q_shape, dt), lse = ops.zeros(Shape{s.B, s.NH, s.T}, dt);
    // dq/dk/dv start as garbage: they are overwritten, not accumulated.
    Tensor dq = randn<T>(q_shape, seed++), dk = randn<T>(kv_shape, seed++), dv = randn<T>(kv_shape, seed++);
    RefAttention ref{s, to_vec(q), to_vec(k), to_vec(v), {}};
    Tensor positions;
    if (document_masking) {
      ref.pos = packed_positions(s.B, s.T);
      positions = Tensor::zeros(Shape{s.B * s.T}, DType::kI32);
      std::copy(ref.pos.begin(), ref.pos.end(), positions.data<int32_t>());
    }
    Vec want_out, want_lse, want_dq, want_dk, want_dv;
    ref.forward(want_out, want_lse);
    ref.backward(to_vec(dout), want_dq, want_dk, want_dv);
    ops.attention_forward(q, k, v, int(s.NH), int(s.NKV), positions, out, lse);
    EXPECT_CLOSE(out, want_out, T, 1);
    EXPECT_CLOSE(lse, want_lse, T, 1);
    ops.attention_backward(q, k, v, out, lse, dout, int(s.NH), int(s.NKV), positions, dq, dk, dv);
    // inputs are O(1), so are the gradients; the floor matters only for T=1 (dq = dk = 0)
    EXPECT_CLOSE_FLOOR(dq, want_dq, T, 2, 1.0);
    EXPECT_CLOSE_FLOOR(dk, want_dk, T, 2, 1.0);
    EXPECT_CLOSE(dv, want_dv, T, 2);
  }
}

TYPED_TEST(CpuAttentionTest, ForwardAndBackwardMatchNaiveReference) {
  check_against_reference<TypeParam>(*this->ops_, /*document_masking=*/false);
}

// Packed rows: positions restart at each document, a query sees only its own document.
TYPED_TEST(CpuAttentionTest, DocumentMaskingMatchesNaiveReference) {
  check_against_reference<TypeParam>(*this->ops_, /*document_masking=*/true);
}

// Generation: queries against a key/value cache give the causal attention's rows. The cache is
// longer than the sequence (junk past it must stay unseen); queries come all at once
// (prefill), one row at a time (decode) and in a chunk starting at a different position per
// sequence. With a sliding window the reference masks each query to its window's keys.
TYPED_TEST(CpuAttentionTest, CachedAttentionMatchesCausalRows) {
  using T = TypeParam;
  constexpr DType dt = DTypeOf<T>::value;
  Ops& ops = *this->ops_;
  uint64_t seed = 900;
  for (const AttnCase& s : kCases)
    for (const int window : {0, 3}) {
    SCOPED_TRACE(testing::Message() << "B=" << s.B << " T=" << s.T << " NH=" << s.NH << " NKV=" << s.NKV
                                    << " window=" << window);
    const int64_t L = s.T + 3, qw = s.NH * s.HS, kw = s.NKV * s.HS;
    Tensor q = randn<T>(Shape{s.B, s.T, qw}, seed++, 1.5), k = randn<T>(Shape{s.B, s.T, kw}, seed++, 1.5);
    Tensor v = randn<T>(Shape{s.B, s.T, kw}, seed++);
    RefAttention ref{s, to_vec(q), to_vec(k), to_vec(v), {}};
    if (window > 0)  // key j visible from query t when t - j < window
      for (int64_t b = 0; b < s.B; ++b)
        for (int64_t t = 0; t < s.T; ++t) ref.pos.push_back(int32_t(std::min<int64_t>(t, window - 1)));
    Vec want, lse;
    ref.forward(want, lse);
    // The cache: the sequence's keys and values, then junk.
    Tensor kc = randn<T>(Shape{s.B, L, kw}, seed++, 100.0), vc = randn<T>(Shape{s.B, L, kw}, seed++, 100.0);
    for (int64_t b = 0; b < s.B; ++b)
      for (int64_t i = 0; i < s.T * kw; ++i) {
        kc.data<T>()[b * L * kw + i] = k.data<T>()[b * s.T * kw + i];
        vc.data<T>()[b * L * kw + i] = v.data<T>()[b * s.T * kw + i];
      }
    // Queries rows [start[b], start[b] + S) of each sequence.
    auto run = [&](const std::vector<int32_t>& start, int64_t S) {
      Tensor qs = ops.zeros(Shape{s.B, S, qw}, dt), out = ops.zeros(Shape{s.B, S, qw}, dt);
      Tensor st = Tensor::zeros(Shape{s.B}, DType::kI32);
      Vec expect(static_cast<size_t>(s.B * S * qw));
      for (int64_t b = 0; b < s.B; ++b) {
        st.data<int32_t>()[b] = start[b];
        for (int64_t r = 0; r < S; ++r)
          for (int64_t i = 0; i < qw; ++i) {
            const int64_t from = (b * s.T + start[b] + r) * qw + i, to = (b * S + r) * qw + i;
            qs.data<T>()[to] = q.data<T>()[from];
            expect[to] = want[from];
          }
      }
      ops.attention_cached(qs, kc, vc, int(s.NH), int(s.NKV), st, out, window);
      EXPECT_CLOSE(out, expect, T, 1);
    };
    run(std::vector<int32_t>(s.B, 0), s.T);  // prefill
    for (int32_t t = 0; t < s.T; ++t) run(std::vector<int32_t>(s.B, t), 1);  // decode
    std::vector<int32_t> chunk_start(s.B);
    for (int64_t b = 0; b < s.B; ++b) chunk_start[b] = int32_t((b * 3) % s.T / 2);
    const int64_t S = s.T - *std::max_element(chunk_start.begin(), chunk_start.end());
    run(chunk_start, S);
  }
}

TEST_F(CpuOpsTest, CachedAttentionRejectsStartsPastTheCache) {
  Tensor q = ops_->zeros(Shape{1, 2, 8}, DType::kF32), kc = ops_->zeros(Shape{1, 4, 8}, DType::kF32);
  Tensor vc = ops_->zeros(Shape{1, 4, 8}, DType::kF32), out = ops_->zeros(Shape{1, 2, 8}, DType::kF32);
  Tensor start = Tensor::zeros(Shape{1}, DType::kI32);
  start.data<int32_t>()[0] = 3;  // rows 3 and 4 of a 4-position cache
  EXPECT_THROW(ops_->attention_cached(q, kc, vc, 2, 2, start, out), Error);
}

TEST_F(CpuOpsTest, AttentionRejectsPositionsThatDoNotRestartAtDocuments) {
  Tensor q = Tensor::zeros(Shape{1, 4, 8}, DType::kF32), out = Tensor::zeros(Shape{1, 4, 8}, DType::kF32);
  Tensor lse = Tensor::zeros(Shape{1, 1, 4}, DType::kF32), pos = Tensor::zeros(Shape{4}, DType::kI32);
  int32_t* p = pos.data<int32_t>();
  p[0] = 0, p[1] = 1, p[2] = 0, p[3] = 1;
  EXPECT_NO_THROW(ops_->attention_forward(q, q, q, 1, 1, pos, out, lse));
  p[3] = 3;  // start 0 after a document that started at 2: goes back
  EXPECT_THROW(ops_->attention_forward(q, q, q, 1, 1, pos, out, lse), Error);
  p[3] = 5;  // before the row
  EXPECT_THROW(ops_->attention_forward(q, q, q, 1, 1, pos, out, lse), Error);
}

// d/dx of L = sum(dout * attention(q, k, v)) by central differences, fp64, for every input.
TEST_F(CpuOpsTest, AttentionBackwardMatchesFiniteDifferences) {
  const AttnCase s{1, 5, 4, 2, 8};
  const Shape q_shape{s.B, s.T, s.NH * s.HS}, kv_shape{s.B, s.T, s.NKV * s.HS};
  Tensor q = randn<double>(q_shape, 301), k = randn<double>(kv_shape, 302), v = randn<double>(kv_shape, 303);
  const Tensor dout = randn<double>(q_shape, 304);
  Tensor out = ops_->zeros(q_shape, DType::kF64), lse = ops_->zeros(Shape{s.B, s.NH, s.T}, DType::kF64);
  Tensor dq = ops_->zeros(q_shape, DType::kF64), dk = ops_->zeros(kv_shape, DType::kF64),
         dv = ops_->zeros(kv_shape, DType::kF64);
  auto loss = [&] {
    ops_->attention_forward(q, k, v, int(s.NH), int(s.NKV), Tensor(), out, lse);
    double l = 0;
    for (int64_t i = 0; i < out.numel(); ++i) l += out.data<double>()[i] * dout.data<double>()[i];
    return l;
  };
  loss();
  ops_->attention_backward(q, k, v, out, lse, dout, int(s.NH), int(s.NKV), Tensor(), dq, dk, dv);
  for (auto [x, dx, name] : {std::tuple{&q, &dq, "q"}, std::tuple{&k, &dk, "k"}, std::tuple{&v, &dv, "v"}}) {
    Vec numeric(static_cast<size_t>(x->numel()));
    for (int64_t i = 0; i < x->numel(); ++i) {
      double& xi = x->data<double>()[i];
      const double saved = xi, h = 1e-5;
      xi = saved + h;
      const double plus = loss();
      xi = saved - h;
      const double minus = loss();
      xi = saved;
      numeric[i] = (plus - minus) / (2 * h);
    }
    EXPECT_LE(max_err(*dx, numeric), 1e-8) << name;
  }
}

TEST_F(CpuOpsTest, AttentionRejectsBadHeadCounts) {
  Tensor q = Tensor::zeros(Shape{1, 4, 24}, DType::kF32), kv = Tensor::zeros(Shape{1, 4, 16}, DType::kF32);
  Tensor out = Tensor::zeros(Shape{1, 4, 24}, DType::kF32), lse = Tensor::zeros(Shape{1, 3, 4}, DType::kF32);
  EXPECT_THROW(ops_->attention_forward(q, kv, kv, 3, 2, Tensor(), out, lse), Error);  // 3 % 2 != 0
  Tensor lse64 = Tensor::zeros(Shape{1, 3, 4}, DType::kF64);
  Tensor kv3 = Tensor::zeros(Shape{1, 4, 24}, DType::kF32);
  EXPECT_NO_THROW(ops_->attention_forward(q, kv3, kv3, 3, 3, Tensor(), out, lse));
  EXPECT_THROW(ops_->attention_forward(q, kv3, kv3, 3, 3, Tensor(), out, lse64), Error);
}

}  // namespace
}  // namespace trident::test
