// Tests of the CPU backend's basic ops against naive double loops: gemm (all transposes,
// alpha/beta, odd shapes), copy/fill/add/scale/sum_squares, bias add and backward, peak FLOP/s.
#include "test_cpu_util.hpp"

namespace trident::test {
namespace {

template <typename T>
class CpuBasicTest : public CpuOpsTyped<T> {};
TYPED_TEST_SUITE(CpuBasicTest, FloatTypes);

TEST_F(CpuOpsTest, NameDeviceAndZeros) {
  EXPECT_EQ(ops_->name(), "cpu");
  EXPECT_EQ(ops_->device(), Device::kCPU);
  Tensor z = ops_->zeros(Shape{3, 5}, DType::kF32);
  EXPECT_EQ(z.shape(), (Shape{3, 5}));
  for (double x : to_vec(z)) EXPECT_EQ(x, 0.0);
}

TEST_F(CpuOpsTest, PeakFlopsIsPositiveAndCached) {
  const double f32 = ops_->peak_flops(DType::kF32);
  EXPECT_GT(f32, 1e9);
  EXPECT_EQ(ops_->peak_flops(DType::kF32), f32);  // measured once
  EXPECT_GE(ops_->peak_flops(DType::kBF16), f32);
  EXPECT_GT(ops_->peak_flops(DType::kF64), 0.0);
}

// c = alpha * op(a) @ op(b) + beta * c in double.
Vec ref_gemm(bool ta, bool tb, int64_t M, int64_t N, int64_t K, double alpha, const Vec& a, const Vec& b,
             double beta, const Vec& c) {
  Vec out(static_cast<size_t>(M * N));
  for (int64_t i = 0; i < M; ++i)
    for (int64_t j = 0; j < N; ++j) {
      double s = 0;
      for (int64_t k = 0; k < K; ++k) s += (ta ? a[k * M + i] : a[i * K + k]) * (tb ? b[j * K + k] : b[k * N + j]);
      out[i * N + j] = alpha * s + (beta == 0 ? 0.0 : beta * c[i * N + j]);
    }
  return out;
}

TYPED_TEST(CpuBasicTest, GemmAllTransposesAlphaBetaOddShapes) {
  using T = TypeParam;
  const int64_t shapes[][3] = {{1, 1, 1}, {7, 13, 5}, {33, 17, 67}, {128, 65, 96}, {3, 200, 1}};
  uint64_t seed = 1;
  for (const auto& mnk : shapes) {
    const int64_t M = mnk[0], N = mnk[1], K = mnk[2];
    for (int ta = 0; ta < 2; ++ta)
      for (int tb = 0; tb < 2; ++tb)
        for (double beta : {0.0, 1.0, -0.5}) {
          SCOPED_TRACE(testing::Message() << "M=" << M << " N=" << N << " K=" << K << " ta=" << ta
                                          << " tb=" << tb << " beta=" << beta);
          Tensor a = randn<T>(ta ? Shape{K, M} : Shape{M, K}, seed++);
          Tensor b = randn<T>(tb ? Shape{N, K} : Shape{K, N}, seed++);
          Tensor c = randn<T>(Shape{M, N}, seed++);
          if (beta == 0.0) c.data<T>()[0] = NAN;  // beta = 0 overwrites, never reads c
          const Vec want = ref_gemm(ta, tb, M, N, K, 0.7, to_vec(a), to_vec(b), beta, to_vec(c));
          this->ops_->gemm(ta, tb, 0.7, a, b, beta, c);
          EXPECT_CLOSE(c, want, T, 1);
        }
  }
}

TYPED_TEST(CpuBasicTest, GemmSeesHigherRankTensorsAsRowsByLastDim) {
  using T = TypeParam;
  // x[B=2, T=3, in=5] @ W[out=4, in=5]^T -> y[2, 3, 4]
  Tensor x = randn<T>(Shape{2, 3, 5}, 11), w = randn<T>(Shape{4, 5}, 12);
  Tensor y = this->ops_->zeros(Shape{2, 3, 4}, DTypeOf<T>::value);
  this->ops_->gemm(false, true, 1.0, x, w, 0.0, y);
  EXPECT_CLOSE(y, ref_gemm(false, true, 6, 4, 5, 1.0, to_vec(x), to_vec(w), 0.0, Vec(24)), T, 1);
}

// gemm_parts: every part as its own gemm, with a shared a (the projections' input) or a shared b
// (the weight gradients' input), alpha and beta; a count that matches neither is an error.
TYPED_TEST(CpuBasicTest, GemmPartsEqualsEachPartAlone) {
  using T = TypeParam;
  const int64_t M = 9, N = 6, K = 5;
  const Tensor x = randn<T>(Shape{M, K}, 31);
  std::vector<Tensor> w, c, want;
  for (int g = 0; g < 3; ++g) {
    w.push_back(randn<T>(Shape{N, K}, 32 + g));
    c.push_back(randn<T>(Shape{M, N}, 35 + g));
    want.push_back(Tensor::zeros(c.back().shape(), DTypeOf<T>::value));
    this->ops_->copy(c.back(), want.back());
    this->ops_->gemm(false, true, 0.5, x, w.back(), 1.0, want.back());
  }
  this->ops_->gemm_parts(false, true, 0.5, {x}, w, 1.0, c);
  for (int g = 0; g < 3; ++g) EXPECT_CLOSE(c[size_t(g)], to_vec(want[size_t(g)]), T, 1);
  // Shared b: c[g] = a[g]^T x.
  std::vector<Tensor> dw, dw_want;
  for (int g = 0; g < 3; ++g) {
    dw.push_back(Tensor::zeros(Shape{N, K}, DTypeOf<T>::value));
    dw_want.push_back(Tensor::zeros(Shape{N, K}, DTypeOf<T>::value));
    this->ops_->gemm(true, false, 1.0, c[size_t(g)], x, 0.0, dw_want.back());
  }
  this->ops_->gemm_parts(true, false, 1.0, c, {x}, 0.0, dw);
  for (int g = 0; g < 3; ++g) EXPECT_CLOSE(dw[size_t(g)], to_vec(dw_want[size_t(g)]), T, 1);
  EXPECT_THROW(this->ops_->gemm_parts(false, true, 1.0, {x, x}, w, 0.0, c), Error);
  EXPECT_THROW(this->ops_->gemm_parts(false, true, 1.0, {x}, w, 0.0, {}), Error);
}

TEST_F(CpuOpsTest, GemmRejectsMismatchedShapesAndDtypes) {
  Tensor a = Tensor::zeros(Shape{3, 4}, DType::kF32), b = Tensor::zeros(Shape{5, 6}, DType::kF32);
  Tensor c = Tensor::zeros(Shape{3, 6}, DType::kF32), b64 = Tensor::zeros(Shape{4, 6}, DType::kF64);
  EXPECT_THROW(ops_->gemm(false, false, 1.0, a, b, 0.0, c), Error);
  EXPECT_THROW(ops_->gemm(false, false, 1.0, a, b64, 0.0, c), Error);
}

TEST_F(CpuOpsTest, CopyConvertsBetweenFloatTypes) {
  Tensor a = randn<float>(Shape{1000}, 3);
  Tensor d = ops_->zeros(Shape{10, 100}, DType::kF64);
  ops_->copy(a, d);
  EXPECT_EQ(to_vec(d), to_vec(a));
  Tensor f = ops_->zeros(Shape{1000}, DType::kF32);
  ops_->copy(d, f);
  EXPECT_EQ(to_vec(f), to_vec(a));
  Tensor same = ops_->zeros(Shape{1000}, DType::kF32);
  ops_->copy(a, same);
  EXPECT_EQ(to_vec(same), to_vec(a));
  Tensor h = ops_->zeros(Shape{1000}, DType::kBF16);
  ops_->copy(a, h);
  ops_->copy(h, f);
  for (int i = 0; i < 1000; ++i) EXPECT_EQ(f.data<float>()[i], bf16_bits_to_fp32(fp32_to_bf16_bits(a.data<float>()[i])));
  Tensor wrong_size = ops_->zeros(Shape{999}, DType::kF32);
  EXPECT_THROW(ops_->copy(a, wrong_size), Error);
}

TYPED_TEST(CpuBasicTest, FillAddScaleSumSquares) {
  using T = TypeParam;
  const int64_t n = 100003;  // above the parallel threshold, odd
  Tensor a = randn<T>(Shape{n}, 5), b = randn<T>(Shape{n}, 6);
  const Vec va = to_vec(a), vb = to_vec(b);
  Vec sum(va.size()), scaled(va.size());
  double ss = 0;
  for (size_t i = 0; i < va.size(); ++i) {
    sum[i] = va[i] + vb[i];
    scaled[i] = T(va[i] + vb[i]) * -1.5;
    ss += double(T(va[i] + vb[i])) * double(T(va[i] + vb[i]));
  }
  this->ops_->add(a, b, a);  // out aliases a
  EXPECT_CLOSE(a, sum, T, 1);
  EXPECT_NEAR(this->ops_->sum_squares(a), ss, 1e-12 * ss);
  this->ops_->scale(a, -1.5);
  EXPECT_CLOSE(a, scaled, T, 1);
  this->ops_->fill(a, 0.25);
  EXPECT_EQ(to_vec(a), Vec(static_cast<size_t>(n), 0.25));
}

TYPED_TEST(CpuBasicTest, BiasAddAndBackward) {
  using T = TypeParam;
  for (int64_t C : {1, 13, 67, 130}) {
    const int64_t N = 700;
    Tensor y = randn<T>(Shape{N, C}, 7), bias = randn<T>(Shape{C}, 8), dbias = randn<T>(Shape{C}, 9);
    Vec want_y = to_vec(y), want_db = to_vec(dbias);
    const Vec vb = to_vec(bias), vy = to_vec(y);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c = 0; c < C; ++c) {
        want_y[n * C + c] += vb[c];
        want_db[c] += vy[n * C + c];
      }
    this->ops_->bias_backward(y, dbias);
    EXPECT_CLOSE(dbias, want_db, T, 1);
    this->ops_->add_bias(y, bias);
    EXPECT_CLOSE(y, want_y, T, 1);
  }
}

}  // namespace
}  // namespace trident::test

// Dropout: the keep rate and scaling, determinism, and that the mask follows the global index
// (a slice with its offset drops exactly what the whole tensor drops there).
namespace trident {
namespace {

// Differential privacy's noise: standard normal moments (mean, variance, 4th moment, tails) at
// 200k draws, a function of the global index alone (any split of the range adds the same), and
// another stream (step) draws other values.
TEST(CpuGaussian, NormalAndFollowsGlobalIndex) {
  auto ops = make_cpu_ops(2);
  const int64_t n = 200001;
  const double std_dev = 0.5;
  Tensor whole = Tensor::zeros(Shape{n}, DType::kF64);
  std::fill(whole.data<double>(), whole.data<double>() + n, 3.0);
  ops->add_gaussian(whole, std_dev, 91, 4, 0);
  double sum = 0, sum2 = 0, sum4 = 0;
  int64_t beyond_2sd = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double z = (whole.data<double>()[i] - 3.0) / std_dev;
    sum += z, sum2 += z * z, sum4 += z * z * z * z;
    beyond_2sd += std::abs(z) > 2.0;
  }
  const double mean = sum / n, var = sum2 / n - mean * mean;
  EXPECT_NEAR(mean, 0.0, 0.01);          // 4.5 standard errors
  EXPECT_NEAR(var, 1.0, 0.015);
  EXPECT_NEAR(sum4 / n, 3.0, 0.1);       // a normal's kurtosis
  EXPECT_NEAR(double(beyond_2sd) / n, 0.0455, 0.003);
  for (int64_t offset : {int64_t(1), int64_t(6), int64_t(4097)}) {
    Tensor part = Tensor::zeros(Shape{777}, DType::kF64);
    ops->add_gaussian(part, std_dev, 91, 4, offset);
    for (int64_t i = 0; i < part.numel(); ++i)
      ASSERT_NEAR(part.data<double>()[i], whole.data<double>()[offset + i] - 3.0, 1e-12) << offset << " " << i;
  }
  Tensor other = Tensor::zeros(Shape{1000}, DType::kF64), same = Tensor::zeros(Shape{1000}, DType::kF32);
  ops->add_gaussian(other, std_dev, 91, 5, 0);
  ops->add_gaussian(same, std_dev, 91, 4, 0);  // fp32 draws the same values, rounded
  int64_t equal = 0;
  for (int64_t i = 0; i < 1000; ++i) {
    equal += other.data<double>()[i] == whole.data<double>()[i] - 3.0;
    ASSERT_NEAR(same.data<float>()[i], whole.data<double>()[i] - 3.0, 1e-6);
  }
  EXPECT_EQ(equal, 0);
}

TEST(CpuDropout, MaskFollowsGlobalIndex) {
  auto ops = make_cpu_ops(2);
  const int64_t n = 100003;
  const double p = 0.25;
  Tensor whole = Tensor::zeros(Shape{n}, DType::kF64);
  std::fill(whole.data<double>(), whole.data<double>() + n, 1.0);
  ops->dropout(whole, p, 77, 5, 0);
  int64_t kept = 0;
  for (int64_t i = 0; i < n; ++i) {
    const double v = whole.data<double>()[i];
    ASSERT_TRUE(v == 0.0 || std::abs(v - 1.0 / (1.0 - p)) < 1e-15) << v;
    kept += v != 0.0;
  }
  EXPECT_NEAR(double(kept) / n, 1.0 - p, 0.01);
  for (int64_t offset : {int64_t(1), int64_t(6), int64_t(4097)}) {
    Tensor part = Tensor::zeros(Shape{777}, DType::kF32);
    std::fill(part.data<float>(), part.data<float>() + part.numel(), 1.0f);
    ops->dropout(part, p, 77, 5, offset);
    for (int64_t i = 0; i < part.numel(); ++i)
      ASSERT_EQ(part.data<float>()[i] != 0.0f, whole.data<double>()[offset + i] != 0.0) << offset << " " << i;
  }
  Tensor other = Tensor::zeros(Shape{n}, DType::kF64);
  std::fill(other.data<double>(), other.data<double>() + n, 1.0);
  ops->dropout(other, p, 77, 6, 0);  // another stream (step) drops other elements
  int64_t same = 0;
  for (int64_t i = 0; i < n; ++i) same += (other.data<double>()[i] == 0.0) == (whole.data<double>()[i] == 0.0);
  EXPECT_LT(same, n * 0.7);
  Tensor untouched = Tensor::zeros(Shape{9}, DType::kF32);
  ops->dropout(untouched, 0.0, 1, 1, 0);
  EXPECT_THROW(ops->dropout(untouched, 1.0, 1, 1, 0), Error);
}

}  // namespace
}  // namespace trident
