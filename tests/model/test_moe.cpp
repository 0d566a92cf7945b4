// Mixture of experts: the router's rules (top-k and its ties, renormalisation, capacity,
// dispatch order, auxiliary losses against their definitions) and the MoE layer's and an
// MoE block's backward against fp64 finite differences, the router's gradient through the
// top-k weights and the auxiliary losses included.
#include <gtest/gtest.h>

#include <cmath>

#include "gradient_check.hpp"
#include "test_util.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/model/block.hpp"
#include "trident/model/moe.hpp"

namespace trident::model {
namespace {

using gradient_check::check_gradients;
using gradient_check::randomize;
using testing::fill_uniform;

TEST(MoeRouter, TopKTiesRenormalisationAndDispatchOrder) {
  // Token 0: experts 1 and 2 tie for first place (the lower index wins), token 1 prefers 3, 0.
  const std::vector<double> logits = {0.0, 2.0, 2.0, 1.0, 1.5, -1.0, 0.0, 3.0};
  Routing r;
  route(logits.data(), 2, {.experts = 4, .top_k = 2, .normalize = true}, r);
  EXPECT_EQ(r.choice, (std::vector<int32_t>{1, 2, 3, 0}));
  EXPECT_NEAR(r.weight[0], 0.5, 1e-15);
  EXPECT_NEAR(r.weight[2] + r.weight[3], 1.0, 1e-15);
  EXPECT_NEAR(r.weight[2] / r.weight[3], std::exp(1.5), 1e-12);
  // Rows by expert, then token: expert 0 <- token 1, 1 <- 0, 2 <- 0, 3 <- 1.
  EXPECT_EQ(r.rows, (std::vector<int32_t>{1, 0, 0, 1}));
  EXPECT_EQ(r.slot, (std::vector<int32_t>{1, 2, 3, 0}));
  EXPECT_EQ(r.offsets, (std::vector<int64_t>{0, 1, 2, 3, 4}));
  EXPECT_EQ(r.dropped, 0);

  Routing raw;
  route(logits.data(), 2, {.experts = 4, .top_k = 2, .normalize = false}, raw);
  EXPECT_NEAR(raw.weight[0], raw.probs[1], 1e-15);  // Qwen's norm_topk_prob = false
}

TEST(MoeRouter, AuxiliaryLossesFollowTheirDefinitions) {
  std::vector<double> logits(6 * 3);
  for (size_t i = 0; i < logits.size(); ++i) logits[i] = std::sin(1.7 * double(i));
  Routing r;
  route(logits.data(), 6, {.experts = 3, .top_k = 2}, r);
  double aux = 0, z = 0;
  for (int e = 0; e < 3; ++e) {
    double f = 0, p = 0;
    for (int n = 0; n < 6; ++n) {
      f += (r.choice[size_t(2 * n)] == e) + (r.choice[size_t(2 * n + 1)] == e);
      p += r.probs[size_t(3 * n + e)];
    }
    aux += (f / 6) * (p / 6);
  }
  for (int n = 0; n < 6; ++n) {
    double s = 0;
    for (int e = 0; e < 3; ++e) s += std::exp(logits[size_t(3 * n + e)]);
    z += std::log(s) * std::log(s) / 6;
  }
  EXPECT_NEAR(r.aux, 3 * aux, 1e-14);  // E * sum_e f_e P_e, f_e over the k choices (Mixtral)
  EXPECT_NEAR(r.z, z, 1e-13);
  // A perfectly balanced router scores k.
  std::vector<double> flat(4 * 4, 0.0);
  Routing even;
  route(flat.data(), 4, {.experts = 4, .top_k = 1}, even);
  EXPECT_EQ(even.choice, (std::vector<int32_t>{0, 0, 0, 0}));  // all tie: the lowest index
  EXPECT_NEAR(even.aux, 4 * 1.0 * 0.25, 1e-15);
}

TEST(MoeRouter, CapacityDropsLaterChoicesFirst) {
  // Every token's first choice is expert 0, its second expert 1; capacity ceil(0.5 * 4 * 2 / 2) = 2.
  std::vector<double> logits = {2, 1, 2, 1, 2, 1, 2, 1};
  Routing r;
  route(logits.data(), 4, {.experts = 2, .top_k = 2, .capacity_factor = 0.5}, r);
  EXPECT_EQ(r.dropped, 4);
  EXPECT_EQ(r.slot, (std::vector<int32_t>{0, 2, 1, 3, -1, -1, -1, -1}));  // tokens 0, 1 keep both
  EXPECT_EQ(r.assigned, (std::vector<int64_t>{4, 4}));                  // the load counts every choice
}

// The MoE layer's variants: SwiGLU or GELU experts, renormalised or raw weights, a shared
// expert behind its gate, capacity dropping, both auxiliary losses.
struct MoeVariant {
  Arch arch;
  bool normalize;
  int shared;
  double capacity;
  std::string name;
};

void PrintTo(const MoeVariant& v, std::ostream* os) { *os << v.name; }

class MoeGradients : public ::testing::TestWithParam<MoeVariant> {
 protected:
  ModelConfig config() const {
    ModelConfig c;
    c.arch = GetParam().arch;
    c.layers = 2;
    c.hidden = 8;
    c.heads = 2;
    c.ffn_hidden = 12;
    c.vocab = 11;
    c.seq_len = 5;
    c.moe = {.experts = 4, .top_k = 2, .ffn_hidden = 6, .every = 1, .shared_experts = GetParam().shared,
             .norm_topk_prob = GetParam().normalize, .aux_loss_coef = 0.3, .z_loss_coef = 0.2,
             .capacity_factor = GetParam().capacity};
    c.resolve();
    return c;
  }
  std::unique_ptr<Ops> ops_ = make_cpu_ops(1);
};

TEST_P(MoeGradients, LayerMatchesFiniteDifferences) {
  const ModelConfig cfg = config();
  ParamStore store;
  MoeLayer layer(store, "moe", cfg, {}, 0);
  store.allocate(*ops_, DType::kF64);
  randomize(store, 21);
  const int64_t rows = 10;
  MoeActivations a = layer.make_activations(*ops_, rows, DType::kF64);
  MoeScratch s = layer.make_scratch(*ops_, rows, DType::kF64);
  Tensor x = Tensor::zeros(Shape{rows, cfg.hidden}, DType::kF64), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor r = Tensor::zeros(x.shape(), DType::kF64), out = Tensor::zeros(x.shape(), DType::kF64);
  fill_uniform(x, 22, 2.0);  // wide logits: confident, well separated routing
  fill_uniform(r, 23);
  const MoeStep step{.aux_scale = 1.0};
  check_gradients(*ops_, store, {{x, dx}}, [&](bool backward) {
    layer.forward(*ops_, x, a, out, /*accumulate=*/false, step);
    if (backward) layer.backward(*ops_, x, a, r, s, dx);
    const Routing& routing = *a.routing;
    return testing::dot(out, r) + routing.aux_scale * routing.aux + routing.z_scale * routing.z;
  });
  if (GetParam().capacity > 0) {
    EXPECT_GT(a.routing->dropped, 0) << "the capacity must drop some assignments";
  }
}

TEST_P(MoeGradients, BlockMatchesFiniteDifferences) {
  const ModelConfig cfg = config();
  ParamStore store;
  TransformerBlock block(store, 0, cfg);
  ASSERT_TRUE(block.is_moe());
  store.allocate(*ops_, DType::kF64);
  randomize(store, 24);
  const int64_t batch = 2, rows = batch * cfg.seq_len;
  BlockActivations a = block.make_activations(*ops_, batch, DType::kF64);
  BlockScratch s = block.make_scratch(*ops_, batch, DType::kF64);
  Tensor pos = Tensor::zeros(Shape{rows}, DType::kI32);
  for (int64_t i = 0; i < rows; ++i) pos.data<int32_t>()[i] = static_cast<int32_t>(i % cfg.seq_len);
  Tensor x = Tensor::zeros(Shape{rows, cfg.hidden}, DType::kF64), dx = Tensor::zeros(x.shape(), DType::kF64);
  Tensor r = Tensor::zeros(x.shape(), DType::kF64), y = Tensor::zeros(x.shape(), DType::kF64);
  fill_uniform(x, 25);
  fill_uniform(r, 26);
  std::vector<double> stats(kMoeStatFields + 4, 0.0);
  check_gradients(*ops_, store, {{x, dx}}, [&](bool backward) {
    block.forward(*ops_, x, pos, a, y, s, {}, MoeStep{.aux_scale = 0.5, .stats = stats.data()});
    if (backward) {
      ops_->copy(r, dx);
      block.backward(*ops_, x, pos, a, dx, s, {});
    }
    const Routing& routing = *a.moe.routing;
    return testing::dot(y, r) + routing.aux_scale * routing.aux + routing.z_scale * routing.z;
  });
  EXPECT_GT(stats[0], 0);  // tokens recorded
  double assigned = 0;
  for (int e = 0; e < 4; ++e) assigned += stats[size_t(kMoeStatFields + e)];
  EXPECT_DOUBLE_EQ(assigned, 2 * stats[0]);  // k assignments per token
}

INSTANTIATE_TEST_SUITE_P(Variants, MoeGradients,
                         ::testing::Values(MoeVariant{Arch::kLlama, true, 0, 0, "MixtralLike"},
                                           MoeVariant{Arch::kLlama, false, 2, 0, "Qwen2MoeLike"},
                                           MoeVariant{Arch::kGPT2, true, 1, 0, "Gpt2Experts"},
                                           MoeVariant{Arch::kLlama, true, 0, 0.5, "Capacity"}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
}  // namespace trident::model
