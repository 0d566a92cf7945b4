// Every layer's backward against central finite differences in fp64: the loss is <out, R> for
// a fixed random R, so dL/dout = R, and each parameter and input element is perturbed by +-h.
#include <gtest/gtest.h>

#include <functional>

#include "gradient_check.hpp"
#include "test_util.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/model/block.hpp"
#include "trident/model/embedding.hpp"
#include "trident/model/lm_head.hpp"

namespace trident::model {
namespace {

using testing::fill_uniform;
using gradient_check::check_gradients;
using gradient_check::randomize;

ModelConfig tiny_config(Arch arch) {
  ModelConfig c;
  c.arch = arch;
  c.layers = 2;
  c.hidden = 16;
  c.heads = 4;
  c.kv_heads = arch == Arch::kLlama ? 2 : 4;
  c.ffn_hidden = 20;
  c.vocab = 11;
  c.seq_len = 5;
  c.tie_embeddings = arch == Arch::kGPT2;
  c.resolve();
  return c;
}

class LayerGradients : public ::testing::TestWithParam<Arch> {
 protected:
  std::unique_ptr<Ops> ops_ = make_cpu_ops(1);
  ModelConfig cfg_ = tiny_config(GetParam());
  static constexpr int64_t kBatch = 2;
  int64_t rows() const { return kBatch * cfg_.seq_len; }
  Tensor positions() const {
    Tensor p = Tensor::zeros(Shape{rows()}, DType::kI32);
    for (int64_t i = 0; i < rows(); ++i) p.data<int32_t>()[i] = static_cast<int32_t>(i % cfg_.seq_len);
    return p;
  }
  Tensor random(Shape s, uint64_t seed) const {
    Tensor t = Tensor::zeros(s, DType::kF64);
    fill_uniform(t, seed);
    return t;
  }
};

TEST_P(LayerGradients, Linear) {
  ParamStore store;
  Linear layer(store, "lin", 7, 5, /*bias=*/true, 0.02);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 1);
  Tensor x = random(Shape{rows(), 7}, 2), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor r = random(Shape{rows(), 5}, 3), y = Tensor::zeros(r.shape(), DType::kF64);
  check_gradients(*ops_, store, {{x, dx}}, [&](bool backward) {
    layer.forward(*ops_, x, y);
    if (backward) layer.backward(*ops_, x, r, &dx);
    return testing::dot(y, r);
  });
}

TEST_P(LayerGradients, Norm) {
  ParamStore store;
  Norm norm(store, "norm", cfg_.hidden, GetParam() == Arch::kGPT2, 1e-5);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 4);
  NormActivations a = norm.make_activations(*ops_, rows(), DType::kF64);
  Tensor x = random(Shape{rows(), cfg_.hidden}, 5), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor r = random(x.shape(), 6);
  check_gradients(*ops_, store, {{x, dx}}, [&](bool backward) {
    norm.forward(*ops_, x, a);
    if (backward) norm.backward(*ops_, x, a, r, dx);
    return testing::dot(a.y, r);
  });
}

TEST_P(LayerGradients, Attention) {
  ParamStore store;
  Attention attn(store, "attn", cfg_);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 7);
  AttentionActivations a = attn.make_activations(*ops_, kBatch, DType::kF64);
  AttentionScratch s = attn.make_scratch(*ops_, kBatch, DType::kF64);
  Tensor pos = positions();
  Tensor x = random(Shape{rows(), cfg_.hidden}, 8), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor r = random(x.shape(), 9), out = Tensor::zeros(x.shape(), DType::kF64);
  check_gradients(*ops_, store, {{x, dx}}, [&](bool backward) {
    attn.forward(*ops_, x, pos, a, out, /*accumulate=*/false);
    if (backward) attn.backward(*ops_, x, pos, a, r, s, dx);
    return testing::dot(out, r);
  });
}

// The attention of released Llama-family models: head size apart from hidden / heads, per-head
// q/k norms (Qwen3), q/k/v and o biases, YaRN-scaled rotary frequencies and a sliding window
// narrower than the sequence, over packed documents (positions restart at 0).
TEST(AttentionVariantGradients, QkNormHeadDimBiasesRopeScalingAndWindow) {
  std::unique_ptr<Ops> ops = make_cpu_ops(1);
  ModelConfig cfg = tiny_config(Arch::kLlama);
  cfg.head_dim = 6;
  cfg.qk_norm = cfg.qkv_bias = cfg.o_bias = true;
  cfg.rope_scaling = parse_rope_scaling("yarn:factor=4,original_max_positions=4");
  cfg.sliding_window = 3;
  cfg.resolve();
  ParamStore store;
  Attention attn(store, "attn", cfg, {}, /*layer=*/0);
  ASSERT_TRUE(attn.windowed());
  store.allocate(*ops, DType::kF64);
  randomize(store, 17);
  constexpr int64_t kBatch = 2;
  const int64_t rows = kBatch * cfg.seq_len;
  AttentionActivations a = attn.make_activations(*ops, kBatch, DType::kF64);
  AttentionScratch s = attn.make_scratch(*ops, kBatch, DType::kF64);
  const std::vector<int32_t> doc_positions{0, 1, 2, 3, 4, 0, 1, 0, 1, 2};  // row 2 packs two documents
  Tensor pos = Tensor::zeros(Shape{rows}, DType::kI32), window = Tensor::zeros(Shape{rows}, DType::kI32);
  for (int64_t i = 0; i < rows; ++i) {
    pos.data<int32_t>()[i] = doc_positions[size_t(i)];
    window.data<int32_t>()[i] = std::min(doc_positions[size_t(i)], cfg.sliding_window - 1);
  }
  const TokenPositions positions(pos, window);
  Tensor x = Tensor::zeros(Shape{rows, cfg.hidden}, DType::kF64), dx = Tensor::zeros(x.shape(), DType::kF64);
  fill_uniform(x, 18);
  Tensor r = Tensor::zeros(x.shape(), DType::kF64), out = Tensor::zeros(x.shape(), DType::kF64);
  fill_uniform(r, 19);
  check_gradients(*ops, store, {{x, dx}}, [&](bool backward) {
    attn.forward(*ops, x, positions, a, out, /*accumulate=*/false);
    if (backward) attn.backward(*ops, x, positions, a, r, s, dx);
    return testing::dot(out, r);
  });
  EXPECT_EQ(store.all().size(), 10u);  // q, k, v, o weights and biases, q_norm, k_norm
}

// OLMoE / OLMo 2: one RMSNorm over the whole q projection (all heads) and one over k.
TEST(AttentionVariantGradients, QkNormOverTheWholeProjection) {
  std::unique_ptr<Ops> ops = make_cpu_ops(1);
  ModelConfig cfg = tiny_config(Arch::kLlama);
  cfg.qk_norm = cfg.qk_norm_whole = true;
  cfg.qkv_bias = cfg.o_bias = true;
  cfg.resolve();
  ParamStore store;
  Attention attn(store, "attn", cfg, {}, /*layer=*/0);
  store.allocate(*ops, DType::kF64);
  randomize(store, 27);
  ASSERT_EQ(store.at("attn.q_norm.weight").local_shape.numel(), cfg.heads * cfg.head_size());
  ASSERT_EQ(store.at("attn.k_norm.weight").local_shape.numel(), cfg.kv_heads * cfg.head_size());
  constexpr int64_t kBatch = 2;
  const int64_t rows = kBatch * cfg.seq_len;
  AttentionActivations a = attn.make_activations(*ops, kBatch, DType::kF64);
  AttentionScratch s = attn.make_scratch(*ops, kBatch, DType::kF64);
  Tensor pos = Tensor::zeros(Shape{rows}, DType::kI32);
  for (int64_t i = 0; i < rows; ++i) pos.data<int32_t>()[i] = static_cast<int32_t>(i % cfg.seq_len);
  Tensor x = Tensor::zeros(Shape{rows, cfg.hidden}, DType::kF64), dx = Tensor::zeros(x.shape(), DType::kF64);
  fill_uniform(x, 28);
  Tensor r = Tensor::zeros(x.shape(), DType::kF64), out = Tensor::zeros(x.shape(), DType::kF64);
  fill_uniform(r, 29);
  check_gradients(*ops, store, {{x, dx}}, [&](bool backward) {
    attn.forward(*ops, x, pos, a, out, /*accumulate=*/false);
    if (backward) attn.backward(*ops, x, pos, a, r, s, dx);
    return testing::dot(out, r);
  });
}

TEST_P(LayerGradients, Mlp) {
  ParamStore store;
  Mlp mlp(store, "mlp", cfg_);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 10);
  MlpActivations a = mlp.make_activations(*ops_, rows(), DType::kF64);
  MlpScratch s = mlp.make_scratch(*ops_, rows(), DType::kF64);
  Tensor x = random(Shape{rows(), cfg_.hidden}, 11), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor r = random(x.shape(), 12), out = Tensor::zeros(x.shape(), DType::kF64);
  check_gradients(*ops_, store, {{x, dx}}, [&](bool backward) {
    mlp.forward(*ops_, x, a, out, /*accumulate=*/false);
    if (backward) mlp.backward(*ops_, x, a, r, s, dx);
    return testing::dot(out, r);
  });
}

void check_block(Ops& ops, const ModelConfig& cfg, int64_t batch, const Tensor& pos,
                 const TransformerBlock::Dropout& dropout) {
  ParamStore store;
  TransformerBlock block(store, 0, cfg);
  store.allocate(ops, DType::kF64);
  randomize(store, 13);
  BlockActivations a = block.make_activations(ops, batch, DType::kF64);
  BlockScratch s = block.make_scratch(ops, batch, DType::kF64);
  const int64_t rows = batch * cfg.seq_len;
  Tensor x = Tensor::zeros(Shape{rows, cfg.hidden}, DType::kF64), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor r = Tensor::zeros(x.shape(), DType::kF64), y = Tensor::zeros(x.shape(), DType::kF64);
  fill_uniform(x, 14);
  fill_uniform(r, 15);
  check_gradients(ops, store, {{x, dx}}, [&](bool backward) {
    block.forward(ops, x, pos, a, y, s, dropout);
    if (backward) {
      ops.copy(r, dx);  // backward turns dL/dy into dL/dx in place
      block.backward(ops, x, pos, a, dx, s, dropout);
    }
    return testing::dot(y, r);
  });
}

TEST_P(LayerGradients, TransformerBlock) { check_block(*ops_, cfg_, kBatch, positions(), {}); }

// Dropout masks are fixed by (key, step, index), so the block stays a deterministic function.
TEST_P(LayerGradients, TransformerBlockWithDropout) {
  const DropoutSite attn{.p = 0.2, .key = 11, .stream = 3, .first_index = 40};
  const DropoutSite mlp{.p = 0.3, .key = 12, .stream = 3, .first_index = 40};
  check_block(*ops_, cfg_, kBatch, positions(), {.attn = attn, .mlp = mlp, .lora = {}});
}

TEST_P(LayerGradients, Embedding) {
  ParamStore store;
  Embedding emb(store, cfg_);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 16);
  Tensor tokens = Tensor::zeros(Shape{rows()}, DType::kI32), pos = positions();
  for (int64_t i = 0; i < rows(); ++i) tokens.data<int32_t>()[i] = static_cast<int32_t>((i * 7) % 5);  // repeats
  Tensor r = random(Shape{rows(), cfg_.hidden}, 17), out = Tensor::zeros(r.shape(), DType::kF64);
  check_gradients(*ops_, store, {}, [&](bool backward) {
    Tensor unused;  // the [N, C] scratch is for sequence parallelism only
    emb.forward(*ops_, tokens, pos, out, unused);
    if (backward) emb.backward(*ops_, tokens, pos, r, unused);
    return testing::dot(out, r);
  });
}

TEST_P(LayerGradients, HeadWithCrossEntropy) {
  ParamStore store;
  LMHead head(store, cfg_, nullptr);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 18);
  HeadBuffers b = head.make_buffers(*ops_, rows(), DType::kF64, {}, /*chunk_rows=*/3);  // chunks of 3 rows
  Tensor targets = Tensor::zeros(Shape{rows()}, DType::kI32);
  for (int64_t i = 0; i < rows(); ++i) targets.data<int32_t>()[i] = i % 4 == 1 ? -1 : static_cast<int32_t>((i * 3) % cfg_.vocab);
  Tensor x = random(Shape{rows(), cfg_.hidden}, 19), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor dx_scratch = Tensor::zeros(x.shape(), DType::kF64);
  check_gradients(*ops_, store, {{x, dx}}, [&](bool backward) {
    head.forward(*ops_, x, b);
    // loss_backward always computes the gradient; only the analytic pass keeps it.
    StepLosses losses;
    head.loss_backward(*ops_, x, targets, 0.25, b, backward ? dx : dx_scratch, losses);
    return 0.25 * losses.take(*ops_);
  });
}

// The loss over chunks of rows is the loss over all rows at once: the same loss, input gradient,
// head gradient and evaluation sums (fp64, to rounding), for chunks that divide the rows and not.
TEST_P(LayerGradients, HeadInChunksEqualsAllRowsAtOnce) {
  ParamStore store;
  LMHead head(store, cfg_, nullptr);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 21);
  Tensor targets = Tensor::zeros(Shape{rows()}, DType::kI32);
  for (int64_t i = 0; i < rows(); ++i) targets.data<int32_t>()[i] = i % 3 == 2 ? -1 : static_cast<int32_t>((i * 5) % cfg_.vocab);
  const Tensor x = random(Shape{rows(), cfg_.hidden}, 22);
  struct Result {
    double loss;
    std::vector<double> dx, dw;
    EvalSums eval;
  };
  auto run = [&](int64_t chunk) {
    HeadBuffers b = head.make_buffers(*ops_, rows(), DType::kF64, {}, chunk);
    store.zero_grads(*ops_);
    Tensor dx = Tensor::zeros(x.shape(), DType::kF64);
    head.forward(*ops_, x, b);
    StepLosses losses;
    head.loss_backward(*ops_, x, targets, 0.5, b, dx, losses);
    Result r{losses.take(*ops_), testing::to_vector(dx), testing::to_vector(store.flat_grads()), {}};
    head.forward(*ops_, x, b);
    r.eval = head.evaluate(*ops_, targets, b);
    return r;
  };
  const Result whole = run(rows());
  for (int64_t chunk : {int64_t(1), int64_t(3), rows() / 2}) {
    const Result got = run(chunk);
    EXPECT_NEAR(got.loss, whole.loss, 1e-12 * std::abs(whole.loss)) << "chunk " << chunk;
    EXPECT_LT(testing::relative_error(got.dx, whole.dx), 1e-12) << "chunk " << chunk;
    EXPECT_LT(testing::relative_error(got.dw, whole.dw), 1e-12) << "chunk " << chunk;
    EXPECT_NEAR(got.eval.loss_sum, whole.eval.loss_sum, 1e-12 * std::abs(whole.eval.loss_sum)) << "chunk " << chunk;
    EXPECT_EQ(got.eval.correct, whole.eval.correct) << "chunk " << chunk;
    EXPECT_EQ(got.eval.count, whole.eval.count) << "chunk " << chunk;
  }
}

INSTANTIATE_TEST_SUITE_P(Arch, LayerGradients, ::testing::Values(Arch::kGPT2, Arch::kLlama),
                         [](const auto& info) { return std::string(arch_name(info.param)); });

}  // namespace
}  // namespace trident::model
