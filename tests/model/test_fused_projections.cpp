// The q/k/v and gate/up projections run as one Ops::gemm_parts call, which the GPU turns into
// one strided-batched GEMM only when each operand's parts lie one stride apart. These tests pin
// that layout down: weights (master, gradient, 16-bit copy, frozen under LoRA) and the buffers the
// projections write and their backward reads sit side by side, for GPT-2 (MHA), Llama (GQA:
// k and v batched, q alone) and qk_norm.
#include <gtest/gtest.h>

#include "trident/backend/cpu_ops.hpp"
#include "trident/model/attention.hpp"
#include "trident/model/mlp.hpp"

namespace trident::model {
namespace {

bool side_by_side(const std::vector<Tensor>& parts) {
  for (size_t i = 1; i < parts.size(); ++i)
    if (static_cast<const char*>(parts[i].raw()) != static_cast<const char*>(parts[i - 1].raw()) + parts[i - 1].bytes())
      return false;
  return true;
}

ModelConfig config(Arch arch, bool qk_norm, bool lora) {
  ModelConfig c;
  c.arch = arch;
  c.layers = 2;
  c.hidden = 32;
  c.heads = 4;
  c.kv_heads = arch == Arch::kLlama ? 2 : 4;
  c.ffn_hidden = 48;
  c.vocab = 64;
  c.seq_len = 8;
  c.qk_norm = qk_norm;
  if (lora) {
    c.lora.r = 4;
    c.lora.targets = arch == Arch::kLlama ? "q,v,gate" : "q,v";
  }
  c.resolve();
  return c;
}

std::vector<Tensor> weights(ParamStore& store, const std::string& prefix, const std::vector<std::string>& names,
                            Tensor Parameter::*field) {
  std::vector<Tensor> out;
  for (const std::string& n : names) out.push_back(store.at(prefix + "." + n + ".weight").*field);
  return out;
}

struct Case {
  Arch arch;
  bool qk_norm, lora;
};

class FusedProjections : public ::testing::TestWithParam<Case> {};

TEST_P(FusedProjections, WeightsAndBuffersLieSideBySide) {
  const Case c = GetParam();
  const ModelConfig cfg = config(c.arch, c.qk_norm, c.lora);
  std::unique_ptr<Ops> ops = make_cpu_ops(1);
  ParamStore store;
  if (c.lora) store.freeze_base();
  Attention attn(store, "attn", cfg);
  Mlp mlp(store, "mlp", cfg);
  store.allocate(*ops, DType::kF32);
  store.allocate_low_precision(*ops, DType::kBF16);
  const std::vector<std::string> qkv = {"q", "k", "v"}, gate_up = {"gate", "up"};
  for (const auto* names : {&qkv, &gate_up}) {
    const std::string prefix = names == &qkv ? "attn" : "mlp";
    if (names == &gate_up && c.arch != Arch::kLlama) continue;
    EXPECT_TRUE(side_by_side(weights(store, prefix, *names, &Parameter::value))) << prefix;
    EXPECT_TRUE(side_by_side(weights(store, prefix, *names, &Parameter::value_low))) << prefix;
    if (!c.lora) {
      EXPECT_TRUE(side_by_side(weights(store, prefix, *names, &Parameter::grad))) << prefix;
    }
  }
  const AttentionActivations a = attn.make_activations(*ops, 2, DType::kF32, DType::kBF16);
  const AttentionScratch s = attn.make_scratch(*ops, 2, DType::kBF16);
  if (c.qk_norm) {
    EXPECT_TRUE(side_by_side({a.q_raw, a.k_raw, a.v}));
    EXPECT_TRUE(side_by_side({s.dq_raw, s.dk_raw, s.dv}));
  } else {
    EXPECT_TRUE(side_by_side({a.q, a.k, a.v}));
    EXPECT_TRUE(side_by_side({s.dq, s.dk, s.dv}));
  }
  const DecodeAttention d = attn.make_decode_scratch(*ops, 3, DType::kF32);
  EXPECT_TRUE(side_by_side(c.qk_norm ? std::vector<Tensor>{d.q_raw, d.k_raw, d.v} : std::vector<Tensor>{d.q, d.k, d.v}));
  if (c.arch == Arch::kLlama) {
    const MlpActivations m = mlp.make_activations(*ops, 16, DType::kF32, DType::kBF16);
    const MlpScratch ms = mlp.make_scratch(*ops, 16, DType::kBF16);
    EXPECT_TRUE(side_by_side({m.gate, m.up}));
    EXPECT_TRUE(side_by_side({ms.dgate, ms.dact}));
  }
}

INSTANTIATE_TEST_SUITE_P(Models, FusedProjections,
                         ::testing::Values(Case{Arch::kGPT2, false, false}, Case{Arch::kLlama, false, false},
                                           Case{Arch::kLlama, true, false}, Case{Arch::kLlama, false, true},
                                           Case{Arch::kGPT2, false, true}),
                         [](const auto& info) {
                           const Case& c = info.param;
                           return std::string(c.arch == Arch::kGPT2 ? "gpt2" : "llama") + (c.qk_norm ? "_qk_norm" : "") +
                                  (c.lora ? "_lora" : "");
                         });

}  // namespace
}  // namespace trident::model
