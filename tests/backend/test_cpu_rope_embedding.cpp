// Tests of the CPU rotary embedding (forward/backward against a naive rotation, adjointness,
// round trip) and of the token/position embedding lookup and its backward.
#include "test_cpu_util.hpp"

namespace trident::test {
namespace {

template <typename T>
class CpuRopeEmbeddingTest : public CpuOpsTyped<T> {};
TYPED_TEST_SUITE(CpuRopeEmbeddingTest, FloatTypes);

// Rotates x[N, H*HS] by sign * angle, pairs (i, i + HS/2) of each head.
Vec ref_rope(const Vec& x, const std::vector<int32_t>& pos, int64_t width, int HS, double theta, double sign) {
  Vec y = x;
  const int64_t N = static_cast<int64_t>(pos.size()), H = width / HS;
  for (int64_t n = 0; n < N; ++n)
    for (int64_t h = 0; h < H; ++h)
      for (int i = 0; i < HS / 2; ++i) {
        const double angle = pos[n] * std::pow(theta, -2.0 * i / HS), c = std::cos(angle),
                     s = sign * std::sin(angle);
        const int64_t a = n * width + h * HS + i, b = a + HS / 2;
        y[a] = x[a] * c - x[b] * s;
        y[b] = x[b] * c + x[a] * s;
      }
  return y;
}

TYPED_TEST(CpuRopeEmbeddingTest, RopeMatchesReferenceAndBackwardIsTheInverse) {
  using T = TypeParam;
  struct Case { int HS, H; double theta; };
  for (const Case cs : {Case{8, 3, 10000.0}, Case{16, 2, 500000.0}, Case{24, 1, 10000.0}, Case{64, 4, 10000.0}}) {
    SCOPED_TRACE(testing::Message() << "HS=" << cs.HS << " H=" << cs.H);
    const int64_t N = 37, width = int64_t(cs.H) * cs.HS;
    std::vector<int32_t> pos(N);
    for (int64_t n = 0; n < N; ++n) pos[n] = static_cast<int32_t>((n * 7919) % 3000);  // any order
    const Tensor positions = i32_tensor(pos);
    Tensor x = randn<T>(Shape{N, width}, 61), g = randn<T>(Shape{N, width}, 62);
    const Vec vx = to_vec(x), vg = to_vec(g);
    this->ops_->rope_forward(x, positions, cs.HS, RotaryFrequencies::plain(cs.theta, cs.HS));
    EXPECT_CLOSE(x, ref_rope(vx, pos, width, cs.HS, cs.theta, +1), T, 1);
    // backward = transpose: <rope(x), g> == <x, rope_backward(g)>
    Tensor gb = from_vec<T>(vg, Shape{N, width});
    this->ops_->rope_backward(gb, positions, cs.HS, RotaryFrequencies::plain(cs.theta, cs.HS));
    EXPECT_CLOSE(gb, ref_rope(vg, pos, width, cs.HS, cs.theta, -1), T, 1);
    double lhs = 0, rhs = 0;
    const Vec vy = to_vec(x), vgb = to_vec(gb);
    for (size_t i = 0; i < vx.size(); ++i) {
      lhs += vy[i] * vg[i];
      rhs += vx[i] * vgb[i];
    }
    EXPECT_NEAR(lhs, rhs, kTol<T> * 10 * std::abs(lhs) + kTol<T>);
    // rotating back recovers the input
    this->ops_->rope_backward(x, positions, cs.HS, RotaryFrequencies::plain(cs.theta, cs.HS));
    EXPECT_CLOSE(x, vx, T, 1);
  }
}

TEST_F(CpuOpsTest, RopeRejectsBadHeadSizeAndPositions) {
  Tensor x = Tensor::zeros(Shape{2, 12}, DType::kF32);
  EXPECT_THROW(ops_->rope_forward(x, i32_tensor({0, 1}), 5, RotaryFrequencies::plain(1e4, 5)), Error);
  EXPECT_THROW(ops_->rope_forward(x, i32_tensor({0, 1}), 8, RotaryFrequencies::plain(1e4, 8)), Error);  // 12 % 8 != 0
  EXPECT_THROW(ops_->rope_forward(x, i32_tensor({0, -1}), 6, RotaryFrequencies::plain(1e4, 6)), Error);
  EXPECT_THROW(ops_->rope_forward(x, i32_tensor({0}), 6, RotaryFrequencies::plain(1e4, 6)), Error);
}

TYPED_TEST(CpuRopeEmbeddingTest, EmbeddingForwardBackwardWithAndWithoutPositions) {
  using T = TypeParam;
  constexpr DType dt = DTypeOf<T>::value;
  for (int64_t C : {13, 67, 200}) {
    for (bool learned_pos : {true, false}) {
      SCOPED_TRACE(testing::Message() << "C=" << C << " wpe=" << learned_pos);
      const int64_t V = 11, P = 9, B = 3, Tn = 9, N = B * Tn;
      std::vector<int32_t> tok(N), pos(N);
      for (int64_t n = 0; n < N; ++n) {
        tok[n] = static_cast<int32_t>((n * n + 3) % V);  // repeated tokens
        pos[n] = static_cast<int32_t>(n % Tn);
      }
      const Tensor tokens = i32_tensor(tok), positions = i32_tensor(pos);
      Tensor wte = randn<T>(Shape{V, C}, 71), wpe = learned_pos ? randn<T>(Shape{P, C}, 72) : Tensor();
      Tensor dwte = randn<T>(Shape{V, C}, 73), dwpe = learned_pos ? randn<T>(Shape{P, C}, 74) : Tensor();
      Tensor out = this->ops_->zeros(Shape{B, Tn, C}, dt), dout = randn<T>(Shape{B, Tn, C}, 75);
      const Vec vte = to_vec(wte), vpe = learned_pos ? to_vec(wpe) : Vec(), vd = to_vec(dout);
      Vec want_out(static_cast<size_t>(N * C)), want_dte = to_vec(dwte), want_dpe = learned_pos ? to_vec(dwpe) : Vec();
      for (int64_t n = 0; n < N; ++n)
        for (int64_t c = 0; c < C; ++c) {
          want_out[n * C + c] = vte[tok[n] * C + c] + (learned_pos ? vpe[pos[n] * C + c] : 0.0);
          want_dte[tok[n] * C + c] += vd[n * C + c];
          if (learned_pos) want_dpe[pos[n] * C + c] += vd[n * C + c];
        }
      this->ops_->embedding_forward(tokens, learned_pos ? positions : Tensor(), wte, wpe, 0, out);
      EXPECT_CLOSE(out, want_out, T, 1);
      this->ops_->embedding_backward(tokens, positions, dout, 0, dwte, dwpe);
      EXPECT_CLOSE(dwte, want_dte, T, 1);
      if (learned_pos) {
        EXPECT_CLOSE(dwpe, want_dpe, T, 1);
      }
    }
  }
}

TEST_F(CpuOpsTest, EmbeddingRejectsNegativeTokens) {
  Tensor wte = Tensor::zeros(Shape{5, 4}, DType::kF32), out = Tensor::zeros(Shape{2, 4}, DType::kF32);
  EXPECT_THROW(ops_->embedding_forward(i32_tensor({-1, 0}), Tensor(), wte, Tensor(), 0, out), Error);
}

// A vocabulary split into shards: the shards' outputs sum to the whole table's lookup, and each
// shard's gradient is its slice of the whole table's gradient.
TEST_F(CpuOpsTest, EmbeddingShardsSumToTheWholeTable) {
  const int64_t V = 10, C = 6, N = 9;
  Tensor tokens = i32_tensor({0, 9, 3, 4, 5, 3, 8, 1, 6});
  Tensor wte = Tensor::zeros(Shape{V, C}, DType::kF64), out = Tensor::zeros(Shape{N, C}, DType::kF64);
  for (int64_t i = 0; i < V * C; ++i) wte.data<double>()[i] = double(i) * 0.5 - 7;
  ops_->embedding_forward(tokens, Tensor(), wte, Tensor(), 0, out);
  Tensor dout = Tensor::zeros(Shape{N, C}, DType::kF64), dwte = Tensor::zeros(Shape{V, C}, DType::kF64), none;
  for (int64_t i = 0; i < N * C; ++i) dout.data<double>()[i] = double(i % 11) - 3;
  ops_->embedding_backward(tokens, Tensor(), dout, 0, dwte, none);
  for (int64_t parts : {2, 5}) {
    Tensor sum = Tensor::zeros(Shape{N, C}, DType::kF64), part = Tensor::zeros(Shape{N, C}, DType::kF64);
    for (int64_t k = 0; k < parts; ++k) {
      const int64_t rows = V / parts;
      Tensor shard = wte.narrow(k * rows, (k + 1) * rows);
      ops_->embedding_forward(tokens, Tensor(), shard, Tensor(), k * rows, part);
      ops_->add(sum, part, sum);
      Tensor dshard = Tensor::zeros(Shape{rows, C}, DType::kF64);
      ops_->embedding_backward(tokens, Tensor(), dout, k * rows, dshard, none);
      for (int64_t i = 0; i < rows * C; ++i) ASSERT_EQ(dshard.data<double>()[i], dwte.data<double>()[k * rows * C + i]);
    }
    for (int64_t i = 0; i < N * C; ++i) ASSERT_EQ(sum.data<double>()[i], out.data<double>()[i]) << parts;
  }
}

}  // namespace
}  // namespace trident::test
