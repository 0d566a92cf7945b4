// Memory per rank of a training step: parameters, gradients, optimizer state, activations of the
// micro-batches in flight, logits, communication buffers (see step_model.hpp for the model).
#include <algorithm>

#include "trident/plan/step_model.hpp"

namespace trident::plan {

namespace {

// Bytes a block keeps for backward, per token, split by how tensor/sequence parallelism divides
// them. Counts follow Korthikanti et al. 2022 (GPT-2: 34 s b h + 5 a s^2 b for bf16 with masks).
struct BlockActivationBytes {
  double replicated = 0;  // norm inputs and outputs, residual-branch masks: / t only with SP
  double split = 0;       // QKV, attention output, MLP intermediates: / t
  double core = 0;        // attention core (score matrix or flash statistics): / t
  double whole = 0;       // MoE rows in expert order: never divided
};

BlockActivationBytes block_activation_bytes(const ModelShape& m, const Cluster& c) {
  const double e = c.activation_bytes, h = m.hidden, kvw = double(m.kv()) * m.head_size();
  const double a = m.heads, s = m.seq, f = m.ffn;
  const bool masks = m.dropout && c.stores_dropout_masks;
  BlockActivationBytes b;
  b.replicated = 4 * h * e + (masks ? 2 * h : 0);  // norm1 in/out, norm2 in/out, two branch masks
  b.split = (h + 2 * kvw + h) * e;  // q, k, v, attention out
  // The MLP intermediates: dense layers', or an MoE layer's k experts' per token, its shared
  // MLP's, and the expert-ordered inputs and outputs (T*k rows of h, whole on every tp rank);
  // mixed by the share of MoE layers.
  const double act = (m.gated() ? 3 : 2) * e;
  const double q_moe = m.experts > 0 ? m.moe_fraction() : 0.0;
  b.split += (1 - q_moe) * act * f + q_moe * act * (double(m.top_k) * m.moe_ffn + m.shared_ffn);
  b.whole = q_moe * 2.0 * m.top_k * h * e;
  if (c.flash_attention) {
    b.core = a * 4;  // log-sum-exp per head, fp32
  } else {
    b.core = a * s * e;                                 // softmax output
    if (m.dropout) b.core += a * s * (e + (masks ? 1 : 0));  // dropout output and its mask
  }
  return b;
}

// Chunk-micro-batches stage 0 holds at once (it holds most): gpipe all of them, 1F1B up to pp,
// interleaved Megatron's warm-up 2 (pp - 1) + (v - 1) pp plus the one being computed.
double in_flight(const Layout& l, int micro_batches) {
  const double m = micro_batches;
  if (l.pp == 1) return 1;
  switch (l.schedule) {
    case Schedule::kGPipe: return m;
    case Schedule::kOneFOneB: return std::min(m, double(l.pp));
    case Schedule::kInterleaved:
      return std::min(m * l.virtual_stages, 2.0 * (l.pp - 1) + double(l.virtual_stages - 1) * l.pp + 1);
  }
  return m;
}

}  // namespace

MemoryBreakdown estimate_memory(const ModelShape& m, const Layout& l, const Cluster& c, int micro_batches) {
  const double t = l.tp, tokens = double(l.micro_batch) * m.seq, e = c.activation_bytes;
  const double layers_per_stage = double(m.layers) / l.pp;
  const double layers_per_chunk = layers_per_stage / (l.pp > 1 && l.schedule == Schedule::kInterleaved ? l.virtual_stages : 1);
  const double rep_div = l.sequence_parallel ? t : 1.0;

  // Parameters of an end stage: its blocks plus the embedding (first) or the head (last).
  // Experts split over ep; under ZeRO-1 their state over the dp / ep ranks that share them.
  const double experts = layers_per_stage * m.block_expert_params() / l.ep / t;
  const double blocks = layers_per_stage * (m.block_params() - m.block_expert_params()) / t;
  const double embedding = m.embedding_params() / t;
  const double head = (m.tied ? double(m.vocab) * m.hidden : m.head_params()) / t + m.hidden;

  const BlockActivationBytes b = block_activation_bytes(m, c);
  const double full_layer = tokens * (b.replicated / rep_div + (b.split + b.core) / t + b.whole);
  double per_layer = full_layer, working = 0;
  if (l.recompute == Recompute::kFull) {
    per_layer = tokens * m.hidden * e / rep_div;  // the block input only
    working = full_layer;                         // one block rebuilt at a time
  } else if (l.recompute == Recompute::kSelective) {
    // Flash-style stacks (trident) drop q, k, v and the attention output and rebuild them from
    // the norm output; Megatron-Core (flash) and unfused attention drop the core's own tensors.
    const bool with_qkv = c.flash_attention && c.selective_recomputes_qkv;
    const double dropped = with_qkv ? (2.0 * m.hidden + 2.0 * m.kv() * m.head_size()) * e + b.core : b.core;
    per_layer = full_layer - tokens * dropped / t;
    working = tokens * dropped / t;
  }
  // The last stage's logits (vocab-parallel) and, for low-precision stacks, their fp32 copy.
  double logits = tokens * m.vocab / t * (e + (e < 4 ? 4.0 : 0.0));
  if (c.logits_chunk_bytes > 0) logits = std::min(logits, c.logits_chunk_bytes);
  // Temporaries of one block (gathered norm output, MLP gradient); pipeline receive buffers.
  double buffers = tokens * (m.hidden + double(m.ffn) / t) * e * 2;
  if (l.pp > 1) buffers += 2.0 * tokens * m.hidden / t * e;

  auto stage = [&](double dense, double flight, bool has_logits) {
    MemoryBreakdown r;
    const double params = dense + experts, state = 8.0 + (c.master_weights ? 4.0 : 0.0);
    r.weights = params * c.weight_bytes;
    r.grads = params * c.grad_bytes;
    r.optimizer = dense * state / (l.zero ? l.dp : 1) + experts * state / (l.zero ? l.dp / l.ep : 1);
    r.activations = flight * layers_per_chunk * per_layer + working;
    r.logits = has_logits ? logits : 0.0;
    r.buffers = buffers;
    return r;
  };
  MemoryBreakdown r;
  if (l.pp == 1) {
    r = stage(blocks + embedding + m.head_params() / t + m.hidden, 1, true);  // a tied head shares the table
  } else {
    // The first stage holds most micro-batches in flight; the last holds the logits.
    const double last_flight = l.schedule == Schedule::kInterleaved ? std::min(double(micro_batches) * l.virtual_stages,
                                                                                double(l.virtual_stages - 1) * l.pp + 1)
                                                                    : 1.0;
    const MemoryBreakdown a = stage(blocks + embedding, in_flight(l, micro_batches), false);
    const MemoryBreakdown z = stage(blocks + head, last_flight, true);
    r = a.total() >= z.total() ? a : z;
  }
  r.reserved = c.memory_reserved_bytes;
  return r;
}

}  // namespace trident::plan
