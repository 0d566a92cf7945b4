// The whole model's loss against central finite differences in fp64, for every element of
// every parameter tensor (tiny GPT-2 with tied embeddings and tiny Llama with GQA); with LoRA
// adapters on every projection, for every adapter element (the frozen base has no gradient).
#include <gtest/gtest.h>

#include "test_util.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/model/gpt_model.hpp"

namespace trident::model {
namespace {

struct Case {
  Arch arch;
  double dropout;
  bool lora = false;
  const char* targets = nullptr;  // LoRA targets (default: every projection)
};

class ModelGradients : public ::testing::TestWithParam<Case> {};

TEST_P(ModelGradients, EveryParameterMatchesFiniteDifferences) {
  auto ops = make_cpu_ops(1);
  ModelConfig cfg;
  cfg.arch = GetParam().arch;
  cfg.dropout = GetParam().dropout;
  cfg.layers = 2;
  cfg.hidden = 8;
  cfg.heads = 2;
  cfg.kv_heads = cfg.arch == Arch::kLlama ? 1 : 2;
  cfg.ffn_hidden = 12;
  cfg.vocab = 11;
  cfg.seq_len = 5;
  cfg.tie_embeddings = cfg.arch == Arch::kGPT2;
  if (GetParam().lora)
    cfg.lora = {.r = 2, .alpha = 3,
                .targets = GetParam().targets       ? GetParam().targets
                           : cfg.arch == Arch::kLlama ? "q,k,v,o,up,down,gate"
                                                      : "q,k,v,o,up,down",
                .dropout = GetParam().dropout > 0 ? 0.3 : 0.0};  // masks on the adapters' input too
  const int batch = 2;
  GPTModel model(cfg, *ops, DType::kF64, batch);
  model.initialize(42);
  model.set_micro_batch_position(0, 0, /*step=*/3, /*first_sequence=*/6);
  // Larger, non-trivial values than the initialiser's so every path carries gradient.
  for (auto& p : model.params().all()) {
    testing::fill_uniform(p->value, std::hash<std::string>{}(p->spec.name), 0.4);
    if (p->spec.init == Init::kOnes)
      for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data<double>()[i] += 1.0;
  }
  const int64_t rows = int64_t(batch) * cfg.seq_len;
  Tensor tokens = Tensor::zeros(Shape{batch, cfg.seq_len}, DType::kI32);
  Tensor targets = Tensor::zeros(Shape{batch, cfg.seq_len}, DType::kI32);
  Tensor positions = Tensor::zeros(Shape{batch, cfg.seq_len}, DType::kI32);
  int64_t valid = 0;
  for (int64_t i = 0; i < rows; ++i) {
    tokens.data<int32_t>()[i] = static_cast<int32_t>((i * 5 + 3) % cfg.vocab);
    targets.data<int32_t>()[i] = i == 2 ? -1 : static_cast<int32_t>((i * 7 + 1) % cfg.vocab);
    positions.data<int32_t>()[i] = static_cast<int32_t>(i % cfg.seq_len);
    valid += targets.data<int32_t>()[i] >= 0;
  }
  const double scale = 1.0 / double(valid);
  auto loss = [&] { return scale * model.forward_backward(tokens, targets, positions, scale); };

  model.params().zero_grads(*ops);
  loss();
  std::vector<std::vector<double>> analytic;
  int checked = 0;
  for (auto& p : model.params().all()) {
    EXPECT_EQ(p->trainable(), !GetParam().lora || p->spec.adapter) << p->spec.name;
    EXPECT_EQ(p->grad.defined(), p->trainable()) << p->spec.name;
    analytic.push_back(p->trainable() ? testing::to_vector(p->grad) : std::vector<double>{});
  }

  constexpr double h = 1e-6;
  for (size_t k = 0; k < model.params().all().size(); ++k) {
    Parameter& p = *model.params().all()[k];
    if (!p.trainable()) continue;
    ++checked;
    std::vector<double> fd(analytic[k].size());
    for (int64_t i = 0; i < p.value.numel(); ++i) {
      double& v = p.value.data<double>()[i];
      const double saved = v;
      v = saved + h;
      const double up = loss();
      v = saved - h;
      const double down = loss();
      v = saved;
      fd[i] = (up - down) / (2 * h);
    }
    EXPECT_LT(testing::relative_error(analytic[k], fd, 1e-3), 1e-6) << p.spec.name;
  }
  const int adapters = GetParam().targets ? 2 : cfg.arch == Arch::kLlama ? 7 : 6;
  EXPECT_EQ(checked, GetParam().lora ? 2 * adapters * cfg.layers : int(model.params().all().size()));
}

INSTANTIATE_TEST_SUITE_P(Models, ModelGradients,
                         ::testing::Values(Case{Arch::kGPT2, 0.0}, Case{Arch::kLlama, 0.0}, Case{Arch::kGPT2, 0.2},
                                           Case{Arch::kLlama, 0.2}, Case{Arch::kGPT2, 0.0, true},
                                           Case{Arch::kLlama, 0.2, true}, Case{Arch::kGPT2, 0.0, true, "q,v"},
                                           Case{Arch::kLlama, 0.0, true, "k,o"}),
                         [](const auto& info) {
                           return std::string(arch_name(info.param.arch)) + (info.param.dropout > 0 ? "_dropout" : "") +
                                  (info.param.lora ? "_lora" : "") +
                                  (info.param.targets ? std::string("_") + info.param.targets[0] + info.param.targets[2] : "");
                         });

}  // namespace
}  // namespace trident::model
