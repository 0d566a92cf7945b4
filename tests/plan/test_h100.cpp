// The planner against published H100 results it was not tuned on: NVIDIA's DGX Cloud benchmarking
// recipes (github.com/NVIDIA/dgxc-benchmarking), BF16, NeMo 24.09 / 24.11 containers (Megatron-Core).
//   GPT-3 175B:     nemo_megatron/README_175b.md (commit 0b71cfda), config gpt3_175b_hydra.yaml
//   Nemotron-4 15B: nemotron/README_15b.md (commit 0b71cfda), config nemotron4-15b-synth.yaml
//   Nemotron-4 340B: nemotron/README_340b.md (commit 143b90dd), config nemotron4-340b-synth.yaml
//                    and nemotron/configure.sh (ub_tp_comm_overlap=True, sequence_parallel=True)
// Each row is the smallest and the largest GPU count of its weak-scaling table. The stack of every
// row: Transformer Engine (flash attention), sequence parallelism, tensor-parallel communication
// overlapped with the GEMMs (ub_tp_comm_overlap), the distributed optimizer with its gradient
// reduce-scatter and parameter all-gather overlapped (overlap_grad_sync, overlap_param_sync),
// gradients reduced in bf16 (grad_sync_dtype: bf16), no recompute except 340B (selective: the core
// attention). The published figure is the training step time; the TFLOP/s printed next to it are
// the recipes' own "model flops" (sequence x (24 l h^2 + 12 l h s + 48 l h^2 + 6 V h), full s x s
// attention, no GQA discount) over that time, the definition their MFU column uses.
// Rows left out: Llama 3.1 70B and 405B of the same recipes (llama3.1/README_70b.md,
// README_405b.md) run context parallelism (CP=2), which the planner does not model.
#include <gtest/gtest.h>

#include <cstdio>

#include "trident/plan/step_model.hpp"

namespace trident::plan {
namespace {

struct Row {
  const char* name;
  int layers, hidden, heads, kv_heads, ffn, vocab, seq;
  bool nemotron;  // squared-ReLU MLP (ungated), RoPE, untied head, no dropout; else GPT-3
  int tp, pp, v, gpus, batch, micro_batch;
  Recompute recompute;
  double published_step_s;
};

constexpr Row kRows[] = {
    {"GPT-3 175B", 96, 12288, 96, 96, 49152, 51200, 2048, false, 4, 8, 12, 128, 256, 1, Recompute::kNone, 8.309},
    {"GPT-3 175B", 96, 12288, 96, 96, 49152, 51200, 2048, false, 4, 8, 12, 2048, 4096, 1, Recompute::kNone, 8.49},
    {"Nemotron-4 15B", 32, 6144, 48, 8, 24576, 256000, 4096, true, 4, 1, 1, 16, 64, 4, Recompute::kNone, 2.812},
    {"Nemotron-4 15B", 32, 6144, 48, 8, 24576, 256000, 4096, true, 4, 1, 1, 2048, 8192, 4, Recompute::kNone, 2.887},
    {"Nemotron-4 340B", 96, 18432, 96, 8, 73728, 256000, 4096, true, 8, 8, 12, 128, 32, 1, Recompute::kSelective, 4.61},
    {"Nemotron-4 340B", 96, 18432, 96, 8, 73728, 256000, 4096, true, 8, 8, 12, 2048, 512, 1, Recompute::kSelective, 4.84},
};

ModelShape shape(const Row& r) {
  ModelShape m;
  m.arch = ModelArch::kGPT2;  // ungated MLP with layer norms; learned positions and biases are < 0.1%
  m.layers = r.layers, m.hidden = r.hidden, m.heads = r.heads, m.kv_heads = r.kv_heads, m.ffn = r.ffn;
  m.vocab = r.vocab, m.seq = r.seq;
  m.tied = !r.nemotron;
  m.dropout = !r.nemotron;  // GPT-3: hidden and attention dropout 0.1
  m.resolve();
  return m;
}

// The NeMo / Megatron-Core stack of these recipes on the h100-sxm preset.
Cluster megatron_core_h100() {
  Cluster c = cluster_preset("h100-sxm");
  c.tp_comm_overlap = true;
  c.selective_recomputes_qkv = false;
  c.grad_bytes = 2;  // grad_sync_dtype: bf16
  return c;
}

StepEstimate predict(const Row& r) {
  Layout l;
  l.tp = r.tp, l.pp = r.pp, l.dp = r.gpus / (r.tp * r.pp), l.micro_batch = r.micro_batch;
  l.virtual_stages = r.v;
  l.schedule = r.v > 1 ? Schedule::kInterleaved : Schedule::kOneFOneB;
  l.recompute = r.recompute;
  l.sequence_parallel = true;
  l.zero = true;
  l.dp_overlap = true;
  return estimate_step(shape(r), l, megatron_core_h100(), r.batch);
}

// The recipes' model FLOPs per step (their README's formula).
double recipe_flops(const Row& r) {
  const double l = r.layers, h = r.hidden, s = r.seq, V = r.vocab;
  return double(r.batch) * s * (24 * l * h * h + 12 * l * h * s + 48 * l * h * h + 6 * V * h);
}

TEST(PlanH100, PublishedRowsWithin15Percent) {
  for (const Row& r : kRows) {
    const StepEstimate e = predict(r);
    const double published = recipe_flops(r) / r.published_step_s / r.gpus / 1e12;
    const double predicted = recipe_flops(r) / e.step_s / r.gpus / 1e12;
    std::printf("%-15s %4d GPUs: predicted %6.1f TFLOP/s per GPU (step %.2f s), published %5.1f (step %.2f s): %+5.1f%%"
                "  [tp %.2f exposed, dp %.2f, bubble %.2f s; %.1f GB]\n",
                r.name, r.gpus, predicted, e.step_s, published, r.published_step_s, 100 * (predicted / published - 1),
                e.time.tp_comm, e.time.dp_exposed, e.time.bubble, e.memory.total() / 1e9);
    EXPECT_NEAR(predicted, published, 0.15 * published) << r.name << " on " << r.gpus << " GPUs";
    // Memory is printed, not asserted: the recipes publish none, and the planner's 340B on 128
    // GPUs (dp = 2: Adam state over 2 ranks, 103 chunk-micro-batches in the interleaved warm-up)
    // comes out above 80 GB where NeMo's run fits.
  }
}

// Without the overlaps the same rows come out slower: the tp=8 rows most.
TEST(PlanH100, OverlapsHideCommunication) {
  for (const Row& r : kRows) {
    Cluster plain = megatron_core_h100();
    plain.tp_comm_overlap = false;
    Layout l = predict(r).layout;
    const StepEstimate overlapped = predict(r);
    const StepEstimate exposed = estimate_step(shape(r), l, plain, r.batch);
    EXPECT_LT(overlapped.step_s, exposed.step_s) << r.name;
    EXPECT_LT(overlapped.time.tp_comm, 0.5 * exposed.time.tp_comm) << r.name;
  }
}

}  // namespace
}  // namespace trident::plan
