// The parameter counts of ModelConfig (plan::ModelShape's formula, the one the planner uses too)
// against the parameters a built GPTModel holds: dense, GQA with attention biases and q/k norms,
// MoE with a shared expert, and LoRA on every projection.
#include <gtest/gtest.h>

#include <string>

#include "trident/backend/cpu_ops.hpp"
#include "trident/model/gpt_model.hpp"

namespace trident::model {
namespace {

struct Held {
  int64_t total = 0, adapters = 0;
  double matmul = 0;  // the weights one token multiplies by (experts: top_k of them)
};

Held count(const ModelConfig& cfg) {
  auto ops = make_cpu_ops(1);
  GPTModel model(cfg, *ops, DType::kF32, /*micro_batch=*/1);
  Held h;
  for (const auto& p : model.params().all()) {
    const std::string& name = p->spec.name;
    const int64_t n = p->spec.global_shape.numel();
    h.total += n;
    if (name.find(".lora_") != std::string::npos) {
      h.adapters += n;
      continue;
    }
    if (p->spec.global_shape.ndim() != 2 || name == "embed.pos.weight") continue;
    if (name == "embed.tok.weight" && !cfg.tie_embeddings) continue;  // a lookup; the head multiplies
    h.matmul += p->spec.expert ? double(n) * cfg.moe.top_k / cfg.moe.experts : double(n);
  }
  return h;
}

ModelConfig resolved(ModelConfig m) {
  m.resolve();
  return m;
}

void expect_counts(const ModelConfig& m, const char* what) {
  const Held held = count(m);
  EXPECT_EQ(m.total_params(), held.total) << what;
  EXPECT_EQ(m.lora_params(), held.adapters) << what;
  EXPECT_DOUBLE_EQ(double(m.matmul_params()), held.matmul) << what;
  // Training FLOPs: 6 per matmul weight (4 when LoRA freezes it, 6 per adapter weight) and the
  // attention's 12 * layers * seq * heads * head size.
  const double attention = 12.0 * m.layers * m.seq_len * m.heads * m.head_size();
  const double weights = m.lora.enabled() ? 4.0 * held.matmul + 6.0 * double(held.adapters) : 6.0 * held.matmul;
  EXPECT_DOUBLE_EQ(m.train_flops_per_token(), weights + attention) << what;
}

TEST(ModelCounts, DenseGpt2) {
  ModelConfig m;
  m.max_positions = 96;  // position rows beyond seq_len
  expect_counts(resolved(m), "gpt2");
  m.tie_embeddings = false;
  expect_counts(resolved(m), "gpt2 untied");
}

TEST(ModelCounts, LlamaWithGqaBiasesAndQkNorms) {
  ModelConfig m;
  m.arch = Arch::kLlama;
  m.tie_embeddings = false;
  m.heads = 8;
  m.kv_heads = 2;
  m.head_dim = 16;  // q width 128 != hidden 64
  m.qkv_bias = true;
  m.o_bias = true;
  m.qk_norm = true;
  expect_counts(resolved(m), "llama, per-head q/k norms");
  m.qk_norm_whole = true;
  expect_counts(resolved(m), "llama, whole-projection q/k norms");
}

TEST(ModelCounts, MixtureOfExpertsWithASharedExpert) {
  for (const Arch arch : {Arch::kGPT2, Arch::kLlama}) {
    ModelConfig m;
    m.arch = arch;
    m.layers = 4;
    m.moe.experts = 4;
    m.moe.top_k = 2;
    m.moe.ffn_hidden = 32;
    m.moe.every = 2;
    m.moe.shared_experts = 1;
    expect_counts(resolved(m), arch_name(arch));
  }
}

TEST(ModelCounts, LoraOnEveryProjection) {
  for (const Arch arch : {Arch::kGPT2, Arch::kLlama}) {
    ModelConfig m;
    m.arch = arch;
    if (arch == Arch::kLlama) m.kv_heads = 2;
    m.lora.r = 4;
    m.lora.targets = arch == Arch::kLlama ? "q,k,v,o,up,gate,down" : "q,k,v,o,up,down";
    expect_counts(resolved(m), arch_name(arch));
    m.moe.experts = 4;  // adapters on every expert and the shared MLP
    m.moe.shared_experts = 1;
    m.moe.ffn_hidden = 32;
    expect_counts(resolved(m), arch_name(arch));
  }
}

}  // namespace
}  // namespace trident::model
