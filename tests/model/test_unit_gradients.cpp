// Differential privacy's per-unit gradient norms (UnitGradients: ghost norms, the instantiated
// per-unit gradient, norm gains and biases, embeddings by token equality, LoRA adapters)
// against brute force in fp64: each unit alone through forward and backward, the squared norm
// of its whole gradient. Packed rows hold several documents (units) each; they are long
// enough that both the ghost and the instantiated form run.
#include <gtest/gtest.h>

#include <cmath>

#include "test_util.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/model/gpt_model.hpp"

namespace trident::model {
namespace {

struct Case {
  const char* name;
  Arch arch;
  bool lora = false;
};

class UnitGradientNorms : public ::testing::TestWithParam<Case> {};

TEST_P(UnitGradientNorms, EqualEachUnitAloneInFp64) {
  auto ops = make_cpu_ops(1);
  ModelConfig cfg;
  cfg.arch = GetParam().arch;
  cfg.layers = 2;
  cfg.hidden = 16;
  cfg.heads = 2;
  cfg.kv_heads = cfg.arch == Arch::kLlama ? 1 : 2;
  cfg.ffn_hidden = 24;
  cfg.vocab = 29;
  cfg.seq_len = 48;
  cfg.tie_embeddings = GetParam().lora;  // the table trains only untied (a LoRA base is frozen)
  if (GetParam().lora)
    cfg.lora = {.r = 3, .alpha = 5, .targets = cfg.arch == Arch::kLlama ? "q,k,v,o,up,down,gate" : "q,k,v,o,up,down"};
  const int batch = 2;
  const int64_t T = cfg.seq_len;
  GPTModel model(cfg, *ops, DType::kF64, batch);
  model.initialize(7);
  for (auto& p : model.params().all()) {  // values that carry gradient everywhere
    testing::fill_uniform(p->value, std::hash<std::string>{}(p->spec.name), 0.4);
    if (p->spec.init == Init::kOnes)
      for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data<double>()[i] += 1.0;
  }
  // Row 0: documents of 30, 3 and 15 tokens; row 1: 1, 40 and 7 (the 1-token one has no target,
  // the 40-token one is long enough for the instantiated form). A document's last token
  // predicts nothing; tokens repeat within a document (the embedding's equal-id pairs).
  const std::vector<std::vector<int>> docs = {{30, 3, 15}, {1, 40, 7}};
  Tensor tokens = Tensor::zeros(Shape{batch, T}, DType::kI32);
  Tensor targets = Tensor::zeros(Shape{batch, T}, DType::kI32);
  Tensor positions = Tensor::zeros(Shape{batch, T}, DType::kI32);
  std::vector<data::UnitSpan> spans;
  std::vector<int64_t> unit_targets;
  for (int r = 0; r < batch; ++r) {
    int64_t at = 0;
    for (const int length : docs[size_t(r)]) {
      const int64_t unit = int64_t(spans.size());
      spans.push_back({.unit = unit, .begin = r * T + at, .count = length});
      for (int i = 0; i < length; ++i) {
        const int64_t t = r * T + at + i;
        tokens.data<int32_t>()[t] = int32_t((t * 7 + unit * 3) % 11);
        targets.data<int32_t>()[t] = i + 1 < length ? int32_t((t * 5 + 2) % cfg.vocab) : -1;
        positions.data<int32_t>()[t] = i;
      }
      unit_targets.push_back(length - 1);
      at += length;
    }
  }
  const int64_t units = int64_t(spans.size());
  std::vector<double> weights;
  for (const int64_t n : unit_targets) weights.push_back(n > 0 ? 1.0 / double(n) : 0.0);

  UnitGradients measured;
  measured.start(units, /*measure=*/true, weights);
  model.set_unit_gradients(&measured);
  model.set_micro_batch_units(0, 0, &spans);
  model.params().zero_grads(*ops);
  model.forward(0, 0, tokens, targets, positions, 1.0);
  model.backward(0, 0);
  EXPECT_EQ(ops->sum_squares(model.params().flat_grads()), 0.0) << "the norm pass accumulates no gradient";
  model.set_unit_gradients(nullptr);

  for (int64_t u = 0; u < units; ++u) {
    Tensor alone = Tensor::zeros(Shape{batch, T}, DType::kI32);
    for (int64_t t = 0; t < batch * T; ++t) alone.data<int32_t>()[t] = -1;
    for (int64_t t = spans[size_t(u)].begin; t < spans[size_t(u)].begin + spans[size_t(u)].count; ++t)
      alone.data<int32_t>()[t] = targets.data<int32_t>()[t];
    model.params().zero_grads(*ops);
    model.forward_backward(tokens, alone, positions, weights[size_t(u)]);
    const double brute = ops->sum_squares(model.params().flat_grads());
    if (unit_targets[size_t(u)] == 0) {
      EXPECT_EQ(measured.squares()[size_t(u)], 0.0);
      continue;
    }
    ASSERT_GT(brute, 0.0);
    EXPECT_NEAR(measured.squares()[size_t(u)] / brute, 1.0, 1e-10) << "unit " << u;
  }
}

INSTANTIATE_TEST_SUITE_P(Models, UnitGradientNorms,
                         ::testing::Values(Case{"gpt2", Arch::kGPT2}, Case{"llama", Arch::kLlama},
                                           Case{"gpt2_lora", Arch::kGPT2, true}, Case{"llama_lora", Arch::kLlama, true}),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace trident::model
