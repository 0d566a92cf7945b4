// Tests of the CPU fused softmax cross-entropy (ignored targets, aliasing, checks) and of the
// AdamW step against PyTorch's formula evaluated in double over several steps.
#include "test_cpu_util.hpp"

namespace trident::test {
namespace {

template <typename T>
class CpuLossAdamwTest : public CpuOpsTyped<T> {};
TYPED_TEST_SUITE(CpuLossAdamwTest, FloatTypes);

TYPED_TEST(CpuLossAdamwTest, CrossEntropyWithIgnoredTargetsAndAliasing) {
  using T = TypeParam;
  constexpr DType dt = DTypeOf<T>::value;
  for (int64_t V : {1, 13, 67, 5000}) {
    for (bool alias : {false, true}) {
      SCOPED_TRACE(testing::Message() << "V=" << V << " alias=" << alias);
      const int64_t N = 6;
      const double grad_scale = 0.125;
      std::vector<int32_t> tgt = {0, -1, static_cast<int32_t>(V - 1), static_cast<int32_t>(V / 2), -100, 0};
      Tensor logits = randn<T>(Shape{2, 3, V}, 81, 4.0), losses = this->ops_->zeros(Shape{N}, dt);
      logits.data<T>()[2 * V + V - 1] = T(30);  // a confident row
      const Vec vl = to_vec(logits);
      Vec want_loss(N), want_d(vl.size(), 0.0);
      for (int64_t n = 0; n < N; ++n) {
        if (tgt[n] < 0) continue;
        double mx = -INFINITY, sum = 0;
        for (int64_t j = 0; j < V; ++j) mx = std::max(mx, vl[n * V + j]);
        for (int64_t j = 0; j < V; ++j) sum += std::exp(vl[n * V + j] - mx);
        want_loss[n] = mx + std::log(sum) - vl[n * V + tgt[n]];
        for (int64_t j = 0; j < V; ++j)
          want_d[n * V + j] = grad_scale * (std::exp(vl[n * V + j] - mx) / sum - (j == tgt[n]));
      }
      Tensor dlogits = alias ? logits : randn<T>(Shape{2, 3, V}, 82);
      this->ops_->cross_entropy_forward_backward(logits, i32_tensor(tgt), grad_scale, losses, dlogits);
      EXPECT_CLOSE(losses, want_loss, T, 1);
      EXPECT_CLOSE(dlogits, want_d, T, 1);
    }
  }
}

TEST_F(CpuOpsTest, CrossEntropyRejectsTargetsOutsideTheVocabulary) {
  Tensor logits = Tensor::zeros(Shape{2, 7}, DType::kF32), losses = Tensor::zeros(Shape{2}, DType::kF32);
  EXPECT_THROW(ops_->cross_entropy_forward_backward(logits, i32_tensor({0, 7}), 1.0, losses, logits), Error);
  EXPECT_THROW(ops_->cross_entropy_forward_backward(logits, i32_tensor({0}), 1.0, losses, logits), Error);
}

TYPED_TEST(CpuLossAdamwTest, AdamWMatchesPyTorchFormulaOverSteps) {
  using T = TypeParam;
  const int64_t n = 50001;  // above the parallel threshold, odd
  Tensor p = randn<T>(Shape{n}, 91), m = this->ops_->zeros(Shape{n}, DTypeOf<T>::value),
         v = this->ops_->zeros(Shape{n}, DTypeOf<T>::value);
  Vec rp = to_vec(p), rm(n, 0.0), rv(n, 0.0);
  Ops::AdamWArgs args{.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .step = 0,
                      .grad_scale = 0.5};
  for (long step = 1; step <= 4; ++step) {
    Tensor g = randn<T>(Shape{n}, 100 + step, 3.0);
    const Vec vg = to_vec(g);
    args.step = step;
    const double bc1 = 1 - std::pow(args.beta1, step), bc2 = 1 - std::pow(args.beta2, step);
    for (int64_t i = 0; i < n; ++i) {
      const double gi = vg[i] * args.grad_scale;
      rp[i] *= 1 - args.lr * args.weight_decay;
      rm[i] = args.beta1 * rm[i] + (1 - args.beta1) * gi;
      rv[i] = args.beta2 * rv[i] + (1 - args.beta2) * gi * gi;
      rp[i] -= args.lr / bc1 * rm[i] / (std::sqrt(rv[i]) / std::sqrt(bc2) + args.eps);
    }
    this->ops_->adamw(p, g, m, v, args);
  }
  EXPECT_CLOSE(p, rp, T, 1);
  EXPECT_CLOSE(m, rm, T, 1);
  EXPECT_CLOSE(v, rv, T, 1);
}

// A frozen second moment (variance_step, top-k compression after a dense start): v is left
// bitwise as it is, and the step is bias-corrected as of variance_step.
TYPED_TEST(CpuLossAdamwTest, AdamWWithFrozenVarianceKeepsVAndCorrectsForItsStep) {
  using T = TypeParam;
  const int64_t n = 50001;
  Tensor p = randn<T>(Shape{n}, 7), m = randn<T>(Shape{n}, 8, 0.1), v = randn<T>(Shape{n}, 9, 0.1);
  for (int64_t i = 0; i < n; ++i) v.data<T>()[i] = std::fabs(v.data<T>()[i]);
  const Vec v0 = to_vec(v), m0 = to_vec(m), p0 = to_vec(p);
  const Ops::AdamWArgs args{.lr = 1e-2, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .step = 9,
                            .grad_scale = 1.0, .variance_step = 4};
  Tensor g = randn<T>(Shape{n}, 10, 3.0);
  const Vec vg = to_vec(g);
  this->ops_->adamw(p, g, m, v, args);
  Vec rp = p0, rm = m0;
  const double bc1 = 1 - std::pow(args.beta1, 9), bc2 = 1 - std::pow(args.beta2, 4);
  for (int64_t i = 0; i < n; ++i) {
    rm[i] = args.beta1 * m0[i] + (1 - args.beta1) * vg[i];
    rp[i] = p0[i] * (1 - args.lr * args.weight_decay) - args.lr / bc1 * rm[i] / (std::sqrt(v0[i]) / std::sqrt(bc2) + args.eps);
  }
  for (int64_t i = 0; i < n; ++i) ASSERT_EQ(v.data<T>()[i], T(v0[i])) << i;
  EXPECT_CLOSE(m, rm, T, 1);
  EXPECT_CLOSE(p, rp, T, 1);
}

}  // namespace
}  // namespace trident::test

// Vocabulary-parallel cross-entropy: shards' statistics combined as the model combines them
// (global max, rescaled sums, summed target logits) give the fused kernel's loss and gradient,
// with the last shard's padding columns ignored.
namespace trident {
namespace {

TEST(CpuCrossEntropyShards, CombinedShardsEqualTheFusedKernel) {
  auto ops = make_cpu_ops(2);
  const int64_t N = 7, V = 23, parts = 3, Vp = 24;  // padded to a multiple of 3
  Tensor logits = Tensor::zeros(Shape{N, V}, DType::kF64), targets = Tensor::zeros(Shape{N}, DType::kI32);
  for (int64_t i = 0; i < N * V; ++i) logits.data<double>()[i] = std::sin(double(i) * 0.37) * 4;
  for (int64_t n = 0; n < N; ++n) targets.data<int32_t>()[n] = n == 3 ? -1 : static_cast<int32_t>((n * 5 + 2) % V);
  Tensor losses = Tensor::zeros(Shape{N}, DType::kF64), dfused = Tensor::zeros(Shape{N, V}, DType::kF64);
  ops->cross_entropy_forward_backward(logits, targets, 0.5, losses, dfused);

  const int64_t Vl = Vp / parts;
  std::vector<Tensor> shards, maxes, sums, tls;
  for (int64_t k = 0; k < parts; ++k) {
    Tensor shard = Tensor::zeros(Shape{N, Vl}, DType::kF64);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < Vl; ++j)
        shard.data<double>()[n * Vl + j] = k * Vl + j < V ? logits.data<double>()[n * V + k * Vl + j] : 1e3;  // padding
    shards.push_back(shard);
    maxes.push_back(Tensor::zeros(Shape{N}, DType::kF64));
    sums.push_back(Tensor::zeros(Shape{N}, DType::kF64));
    tls.push_back(Tensor::zeros(Shape{N}, DType::kF64));
    ops->cross_entropy_shard_stats(shard, targets, k * Vl, std::min(Vl, V - k * Vl), maxes[k], sums[k], tls[k]);
  }
  Tensor gmax = Tensor::zeros(Shape{N}, DType::kF64), gsum = Tensor::zeros(Shape{N}, DType::kF64);
  for (int64_t n = 0; n < N; ++n) {
    double m = -INFINITY, s = 0, t = 0;
    for (int64_t k = 0; k < parts; ++k) m = std::max(m, maxes[k].data<double>()[n]);
    for (int64_t k = 0; k < parts; ++k) {
      s += sums[k].data<double>()[n] * std::exp(maxes[k].data<double>()[n] - m);
      t += tls[k].data<double>()[n];
    }
    gmax.data<double>()[n] = m;
    gsum.data<double>()[n] = s;
    const double loss = targets.data<int32_t>()[n] < 0 ? 0.0 : m + std::log(s) - t;
    EXPECT_NEAR(loss, losses.data<double>()[n], 1e-12) << n;
  }
  for (int64_t k = 0; k < parts; ++k) {
    ops->cross_entropy_shard_backward(shards[k], targets, k * Vl, std::min(Vl, V - k * Vl), gmax, gsum, 0.5, shards[k]);
    for (int64_t n = 0; n < N; ++n)
      for (int64_t j = 0; j < Vl; ++j) {
        const double want = k * Vl + j < V ? dfused.data<double>()[n * V + k * Vl + j] : 0.0;
        EXPECT_NEAR(shards[k].data<double>()[n * Vl + j], want, 1e-14) << n << " " << k * Vl + j;
      }
  }
}

}  // namespace
}  // namespace trident
