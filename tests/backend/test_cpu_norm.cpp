// Tests of the CPU norms and activations against naive double loops: LayerNorm and RMSNorm
// (backward against the full Jacobian, "+=" semantics), GELU and SwiGLU (and their aliasing).
#include "test_cpu_util.hpp"

namespace trident::test {
namespace {

template <typename T>
class CpuNormTest : public CpuOpsTyped<T> {};
TYPED_TEST_SUITE(CpuNormTest, FloatTypes);

constexpr double kEps = 1e-5;

TYPED_TEST(CpuNormTest, LayerNormForwardBackward) {
  using T = TypeParam;
  constexpr DType dt = DTypeOf<T>::value;
  for (int64_t C : {1, 13, 67, 200}) {
    SCOPED_TRACE(testing::Message() << "C=" << C);
    const int64_t N = 9;
    Tensor x = randn<T>(Shape{3, 3, C}, 21, 2.0), w = randn<T>(Shape{C}, 22), b = randn<T>(Shape{C}, 23);
    Tensor dy = randn<T>(Shape{3, 3, C}, 24), dx = randn<T>(Shape{3, 3, C}, 25);
    Tensor dw = randn<T>(Shape{C}, 26), db = randn<T>(Shape{C}, 27);
    Tensor y = this->ops_->zeros(Shape{3, 3, C}, dt), mean = this->ops_->zeros(Shape{N}, dt),
           rstd = this->ops_->zeros(Shape{N}, dt);
    const Vec vx = to_vec(x), vw = to_vec(w), vb = to_vec(b), vdy = to_vec(dy);
    Vec want_y(vx.size()), want_mean(N), want_rstd(N), want_dx = to_vec(dx), want_dw = to_vec(dw),
        want_db = to_vec(db);
    for (int64_t n = 0; n < N; ++n) {
      const double* xr = &vx[n * C];
      double m = 0, var = 0;
      for (int64_t c = 0; c < C; ++c) m += xr[c] / C;
      for (int64_t c = 0; c < C; ++c) var += (xr[c] - m) * (xr[c] - m) / C;
      const double r = 1 / std::sqrt(var + kEps);
      want_mean[n] = m;
      want_rstd[n] = r;
      for (int64_t c = 0; c < C; ++c) {
        const double xhat = (xr[c] - m) * r;
        want_y[n * C + c] = xhat * vw[c] + vb[c];
        want_dw[c] += vdy[n * C + c] * xhat;
        want_db[c] += vdy[n * C + c];
      }
      // dx_i += sum_j dy_j w_j dxhat_j/dx_i, dxhat_j/dx_i = r (delta_ij - 1/C - xhat_i xhat_j / C)
      for (int64_t i = 0; i < C; ++i)
        for (int64_t j = 0; j < C; ++j) {
          const double xi = (xr[i] - m) * r, xj = (xr[j] - m) * r;
          want_dx[n * C + i] += vdy[n * C + j] * vw[j] * r * ((i == j) - 1.0 / C - xi * xj / C);
        }
    }
    this->ops_->layernorm_forward(x, w, b, kEps, y, mean, rstd);
    EXPECT_CLOSE(y, want_y, T, 1);
    EXPECT_CLOSE(mean, want_mean, T, 1);
    EXPECT_CLOSE(rstd, want_rstd, T, 1);
    this->ops_->layernorm_backward(dy, x, w, mean, rstd, dx, dw, db);
    EXPECT_CLOSE(dx, want_dx, T, 2);
    EXPECT_CLOSE(dw, want_dw, T, 1);
    EXPECT_CLOSE(db, want_db, T, 1);
  }
}

TYPED_TEST(CpuNormTest, RmsNormForwardBackward) {
  using T = TypeParam;
  constexpr DType dt = DTypeOf<T>::value;
  for (int64_t C : {1, 13, 67, 200}) {
    SCOPED_TRACE(testing::Message() << "C=" << C);
    const int64_t N = 7;
    Tensor x = randn<T>(Shape{N, C}, 31, 2.0), w = randn<T>(Shape{C}, 32);
    Tensor dy = randn<T>(Shape{N, C}, 34), dx = randn<T>(Shape{N, C}, 35), dw = randn<T>(Shape{C}, 36);
    Tensor y = this->ops_->zeros(Shape{N, C}, dt), rstd = this->ops_->zeros(Shape{N}, dt);
    const Vec vx = to_vec(x), vw = to_vec(w), vdy = to_vec(dy);
    Vec want_y(vx.size()), want_rstd(N), want_dx = to_vec(dx), want_dw = to_vec(dw);
    for (int64_t n = 0; n < N; ++n) {
      const double* xr = &vx[n * C];
      double ms = 0;
      for (int64_t c = 0; c < C; ++c) ms += xr[c] * xr[c] / C;
      const double r = 1 / std::sqrt(ms + kEps);
      want_rstd[n] = r;
      for (int64_t c = 0; c < C; ++c) {
        want_y[n * C + c] = xr[c] * r * vw[c];
        want_dw[c] += vdy[n * C + c] * xr[c] * r;
      }
      // d(x_j r)/dx_i = r delta_ij - x_j x_i r^3 / C
      for (int64_t i = 0; i < C; ++i)
        for (int64_t j = 0; j < C; ++j)
          want_dx[n * C + i] += vdy[n * C + j] * vw[j] * (r * (i == j) - xr[j] * xr[i] * r * r * r / C);
    }
    this->ops_->rmsnorm_forward(x, w, kEps, y, rstd);
    EXPECT_CLOSE(y, want_y, T, 1);
    EXPECT_CLOSE(rstd, want_rstd, T, 1);
    this->ops_->rmsnorm_backward(dy, x, w, rstd, dx, dw);
    EXPECT_CLOSE(dx, want_dx, T, 2);
    EXPECT_CLOSE(dw, want_dw, T, 1);
  }
}

TEST_F(CpuOpsTest, NormRejectsWrongStatDtype) {
  Tensor x = Tensor::zeros(Shape{4, 8}, DType::kF64), w = Tensor::zeros(Shape{8}, DType::kF64);
  Tensor y = Tensor::zeros(Shape{4, 8}, DType::kF64), rstd = Tensor::zeros(Shape{4}, DType::kF32);
  EXPECT_THROW(ops_->rmsnorm_forward(x, w, kEps, y, rstd), Error);
}

TYPED_TEST(CpuNormTest, GeluTanhForwardBackwardInPlace) {
  using T = TypeParam;
  const int64_t n = 40001;  // above the parallel threshold, odd
  Tensor x = randn<T>(Shape{n}, 41, 3.0), dy = randn<T>(Shape{n}, 42);
  x.data<T>()[0] = T(-30);  // far tails
  x.data<T>()[1] = T(30);
  const Vec vx = to_vec(x), vdy = to_vec(dy);
  Vec want_y(vx.size()), want_dx(vx.size());
  const double k = std::sqrt(2 / M_PI);
  for (size_t i = 0; i < vx.size(); ++i) {
    const double v = vx[i], u = k * (v + 0.044715 * v * v * v), th = std::tanh(u);
    want_y[i] = 0.5 * v * (1 + th);
    want_dx[i] = vdy[i] * (0.5 * (1 + th) + 0.5 * v * (1 - th * th) * k * (1 + 3 * 0.044715 * v * v));
  }
  Tensor y = this->ops_->zeros(Shape{n}, DTypeOf<T>::value);
  this->ops_->gelu_forward(x, y);
  EXPECT_CLOSE(y, want_y, T, 1);
  this->ops_->gelu_backward(x, dy, dy);  // dx aliases dy
  EXPECT_CLOSE(dy, want_dx, T, 1);
}

// The fused bias + GELU passes equal add_bias then gelu_forward, and gelu_backward then
// bias_backward (dbias accumulates onto what it held), dx aliasing dy; rows wider than a chunk
// and not a multiple of a column block.
TYPED_TEST(CpuNormTest, FusedBiasGeluEqualsItsParts) {
  using T = TypeParam;
  constexpr DType dt = DTypeOf<T>::value;
  const int64_t N = 23, F = 2100;  // N * F above the parallel threshold
  const Tensor x0 = randn<T>(Shape{N, F}, 61, 3.0), bias = randn<T>(Shape{F}, 62), dy0 = randn<T>(Shape{N, F}, 63);
  const Tensor db0 = randn<T>(Shape{F}, 64);
  auto clone = [&](const Tensor& t) {
    Tensor c = Tensor::zeros(t.shape(), t.dtype());
    this->ops_->copy(t, c);
    return c;
  };
  Tensor x_want = clone(x0), y_want = this->ops_->zeros(Shape{N, F}, dt);
  this->ops_->add_bias(x_want, bias);
  this->ops_->gelu_forward(x_want, y_want);
  Tensor x = clone(x0), y = this->ops_->zeros(Shape{N, F}, dt);
  this->ops_->bias_gelu_forward(x, bias, y);
  EXPECT_CLOSE(x, to_vec(x_want), T, 1);
  EXPECT_CLOSE(y, to_vec(y_want), T, 1);

  Tensor dx_want = clone(dy0), db_want = clone(db0);
  this->ops_->gelu_backward(x_want, dx_want, dx_want);
  this->ops_->bias_backward(dx_want, db_want);
  Tensor dx = clone(dy0), db = clone(db0);
  this->ops_->gelu_bias_backward(x, dx, dx, db);
  EXPECT_CLOSE(dx, to_vec(dx_want), T, 1);
  EXPECT_CLOSE(db, to_vec(db_want), T, 4);
  Tensor wrong = this->ops_->zeros(Shape{F + 1}, dt);
  EXPECT_THROW(this->ops_->bias_gelu_forward(x, wrong, y), Error);
  EXPECT_THROW(this->ops_->gelu_bias_backward(x, dx, dx, wrong), Error);
}

// bf16 activations: the pre-activation is rounded once after the bias, GELU computed from the fp32
// sum, dbias from the fp32 gradients (each within bf16 rounding of the fp32 composition).
TEST_F(CpuOpsTest, FusedBiasGeluOnBf16Activations) {
  const int64_t N = 17, F = 300;
  const Tensor x32 = randn<float>(Shape{N, F}, 71, 3.0), bias = randn<float>(Shape{F}, 72), dy32 = randn<float>(Shape{N, F}, 73);
  Tensor x16 = Tensor::zeros(x32.shape(), DType::kBF16), dy16 = Tensor::zeros(x32.shape(), DType::kBF16);
  ops_->copy(x32, x16);
  ops_->copy(dy32, dy16);
  auto widened = [&](const Tensor& t) {
    Tensor f = Tensor::zeros(t.shape(), DType::kF32);
    ops_->copy(t, f);
    return to_vec(f);
  };
  Tensor xr = Tensor::zeros(x32.shape(), DType::kF32), dyr = Tensor::zeros(x32.shape(), DType::kF32);
  ops_->copy(x16, xr);
  ops_->copy(dy16, dyr);
  Tensor y_want = Tensor::zeros(x32.shape(), DType::kF32), db_want = Tensor::zeros(Shape{F}, DType::kF32);
  ops_->add_bias(xr, bias);
  ops_->gelu_forward(xr, y_want);
  Tensor y16 = Tensor::zeros(x32.shape(), DType::kBF16), db = Tensor::zeros(Shape{F}, DType::kF32);
  ops_->bias_gelu_forward(x16, bias, y16);
  EXPECT_LE(max_err(widened(y16), to_vec(y_want)), 1.0 / 128);
  ops_->gelu_backward(xr, dyr, dyr);
  ops_->bias_backward(dyr, db_want);
  ops_->gelu_bias_backward(x16, dy16, dy16, db);
  EXPECT_LE(max_err(widened(dy16), to_vec(dyr)), 1.0 / 64);
  EXPECT_LE(max_err(to_vec(db), to_vec(db_want)), 1.0 / 64);
}

TYPED_TEST(CpuNormTest, SwigluForwardBackward) {
  using T = TypeParam;
  const int64_t n = 40001;
  Tensor g = randn<T>(Shape{n}, 51, 3.0), u = randn<T>(Shape{n}, 52), dy = randn<T>(Shape{n}, 53);
  const Vec vg = to_vec(g), vu = to_vec(u), vdy = to_vec(dy);
  Vec want_y(vg.size()), want_dg(vg.size()), want_du(vg.size());
  for (size_t i = 0; i < vg.size(); ++i) {
    const double s = 1 / (1 + std::exp(-vg[i]));
    want_y[i] = vg[i] * s * vu[i];
    want_dg[i] = vdy[i] * vu[i] * (s + vg[i] * s * (1 - s));
    want_du[i] = vdy[i] * vg[i] * s;
  }
  constexpr DType dt = DTypeOf<T>::value;
  Tensor y = this->ops_->zeros(Shape{n}, dt), dg = this->ops_->zeros(Shape{n}, dt),
         du = this->ops_->zeros(Shape{n}, dt);
  this->ops_->swiglu_forward(g, u, y);
  EXPECT_CLOSE(y, want_y, T, 1);
  this->ops_->swiglu_backward(g, u, dy, dg, du);
  EXPECT_CLOSE(dg, want_dg, T, 1);
  EXPECT_CLOSE(du, want_du, T, 1);
  this->ops_->swiglu_backward(g, u, dy, g, u);  // outputs over their own inputs
  EXPECT_CLOSE(g, want_dg, T, 1);
  EXPECT_CLOSE(u, want_du, T, 1);
}

}  // namespace
}  // namespace trident::test
