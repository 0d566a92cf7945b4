// Time and FLOPs of one training step (the model is described in step_model.hpp).
#include <algorithm>
#include <cmath>

#include "trident/core/error.hpp"
#include "trident/plan/step_model.hpp"

namespace trident::plan {

namespace {

// Seconds of one block for one micro-batch on one rank, by phase.
struct BlockTimes {
  double forward = 0;            // GEMMs, attention, elementwise
  double backward = 0;
  double recompute = 0;          // extra forward work in backward
  double tp_forward = 0;         // tensor-parallel collectives of one forward (what is exposed)
  double tp_backward = 0;
  double tp_recompute = 0;
  double ep_forward = 0;         // expert all-to-alls of one forward (MoE layers)
  double ep_recompute = 0;
  double recompute_flops = 0;    // executed FLOPs the recompute adds, per micro-batch
};

// An MLP of f features over `rows` rows, split over t: forward and backward GEMM seconds, and
// the bytes of its activation pass (GELU or SwiGLU).
struct MlpTimes {
  double forward = 0, backward = 0, elementwise_bytes = 0;
};
MlpTimes mlp_times(const ModelShape& m, const Cluster& c, double rows, double f, double t, double batch = 1) {
  const double h = m.hidden, in = (m.gated() ? 2 : 1) * f / t;
  MlpTimes r;
  r.forward = gemm_seconds(c, rows, in, h, batch) + gemm_seconds(c, rows, h, f / t, batch);
  r.backward = gemm_seconds(c, rows, h, in, batch) + gemm_seconds(c, h, in, rows, batch) +
               gemm_seconds(c, rows, f / t, h, batch) + gemm_seconds(c, f / t, h, rows, batch);
  r.elementwise_bytes = batch * rows * f / t * (m.gated() ? 3 : 2) * c.activation_bytes;
  return r;
}

// Under tp_comm_overlap, the share of an overlapped collective's time that still lands on the
// critical path: Transformer Engine's pipelined reduce-scatter holds 20-24 of H100's 132 SMs
// (15-18%) while its GEMM runs, and the ring-exchange all-gathers compete for HBM bandwidth.
constexpr double kTpOverlapInterference = 0.2;

// A collective of `comm` seconds pipelined with a GEMM of `gemm` seconds: the part longer than
// the GEMM, and the interference for the part that hides.
double overlapped_seconds(double comm, double gemm) {
  return std::max(0.0, comm - gemm) + kTpOverlapInterference * std::min(comm, gemm);
}

// All-to-all among `ranks` devices: each sends (ranks - 1) / ranks of `bytes` to the others.
double all_to_all_seconds(const Cluster& c, double bytes, int ranks, bool intra) {
  if (ranks <= 1) return 0;
  const double bandwidth = intra ? c.intra_bandwidth : c.inter_bandwidth;
  const double latency = intra ? c.intra_latency_s : c.inter_latency_s;
  return bytes * (ranks - 1) / ranks / bandwidth + (ranks - 1) * latency;
}

// Data-parallel reduction of `params` weights over `ranks` ranks: the gradients (all-reduce;
// ZeRO-1: reduce-scatter) and ZeRO-1's all-gather of the updated weights. node_ranks = L > 1:
// hierarchical, L of the ranks on each node (NVLink inside, the network across ranks / L nodes).
struct DpTimes {
  double grads = 0, params = 0;
};
DpTimes dp_reduction(const Cluster& c, const Layout& l, double params, int ranks, bool intra, int node_ranks) {
  DpTimes r;
  const double g = params * c.grad_bytes, w = params * c.weight_bytes;
  const int L = node_ranks, nodes = L > 1 ? ranks / L : 1;
  // A reduce-scatter moves what an all-gather of the same result moves.
  if (L > 1 && nodes > 1) {
    const double inside = all_gather_seconds(c, g, L, true);  // reduce-scatter of B over L, and its mirror
    const double across = l.zero ? all_gather_seconds(c, g / L, nodes, false) : all_reduce_seconds(c, g / L, nodes, false);
    r.grads = inside + across + (l.zero ? 0.0 : inside);  // ZeRO-1 keeps its shard: no gather back
    if (l.zero) r.params = all_gather_seconds(c, w / L, nodes, false) + all_gather_seconds(c, w, L, true);
  } else if (l.zero) {
    r.grads = all_gather_seconds(c, g, ranks, intra);
    r.params = all_gather_seconds(c, w, ranks, intra);
  } else {
    r.grads = all_reduce_seconds(c, g, ranks, intra);
  }
  return r;
}

BlockTimes block_times(const ModelShape& m, const Layout& l, const Cluster& c) {
  const double t = l.tp, b = l.micro_batch, s = m.seq, tokens = b * s, e = c.activation_bytes;
  const double h = m.hidden, kvw = double(m.kv()) * m.head_size(), f = m.ffn, d = m.head_size();
  const double heads_local = m.heads / t;
  const double rows = l.sequence_parallel ? tokens / t : tokens;  // rows of the norm/residual kernels

  // GEMMs of one forward: [T, in] x [in, out/t] (column parallel) or [T, in/t] x [in/t, out] (row).
  const double qkv = gemm_seconds(c, tokens, (h + 2 * kvw) / t, h);
  const double proj = gemm_seconds(c, tokens, h, h / t);
  // The MLP: dense layers', and MoE layers' (router, local experts, shared MLP), mixed by the
  // share of MoE layers (the planner costs the mean block).
  const double q_moe = m.experts > 0 ? m.moe_fraction() : 0.0;
  const MlpTimes dense = mlp_times(m, c, tokens, f, t);
  MlpTimes moe;
  double moe_elem = 0, a2a = 0;
  if (q_moe > 0) {
    const double local = double(m.experts) / l.ep, rows = tokens * m.top_k * l.ep / m.experts;
    moe = mlp_times(m, c, rows, m.moe_ffn, t, local);
    moe.forward += gemm_seconds(c, tokens, m.experts, h);
    moe.backward += gemm_seconds(c, tokens, h, m.experts) + gemm_seconds(c, h, m.experts, tokens);
    if (m.shared_ffn > 0) {
      const MlpTimes shared = mlp_times(m, c, tokens, m.shared_ffn, t);
      moe.forward += shared.forward, moe.backward += shared.backward;
      moe.elementwise_bytes += shared.elementwise_bytes;
    }
    moe_elem = tokens * m.top_k * h * e * 4;  // gather into expert order and combine back
    const bool intra = l.ep * l.tp <= c.devices_per_node;
    a2a = 2 * all_to_all_seconds(c, tokens * m.top_k * h * e, l.ep, intra);
  }
  const double mlp_f = (1 - q_moe) * dense.forward + q_moe * moe.forward;
  const double mlp_b = (1 - q_moe) * dense.backward + q_moe * moe.backward;
  // Backward: the input gradient (same shape) and the weight gradient ([in, T] x [T, out]).
  const double qkv_b = gemm_seconds(c, tokens, h, (h + 2 * kvw) / t) + gemm_seconds(c, h, (h + 2 * kvw) / t, tokens);
  const double proj_b = gemm_seconds(c, tokens, h / t, h) + gemm_seconds(c, h / t, h, tokens);

  // Attention core.
  double core_f = 0, core_b = 0;
  if (c.flash_attention) {
    // Causal: half of the s x s products are computed; backward is 2.5x forward (it rebuilds P).
    const double flops = 4.0 * tokens * s * h / t / 2;
    core_f = flops / (c.peak_flops * c.attention_efficiency) + c.kernel_overhead_s;
    core_b = 2.5 * flops / (c.peak_flops * c.attention_efficiency) + 2 * c.kernel_overhead_s;
  } else {
    const double batch = b * heads_local, scores = batch * s * s;
    const bool drop = m.dropout;
    core_f = gemm_seconds(c, s, s, d, batch) + gemm_seconds(c, s, d, s, batch) +
             memory_seconds(c, scores * 2 * e) +                                       // scale, mask, softmax
             (drop ? memory_seconds(c, scores * (2 * e + (c.stores_dropout_masks ? 1 : 0))) : 0) +
             memory_seconds(c, tokens * (h + 2 * kvw + h) / t * 2 * e, 2);          // head transposes
    core_b = 2 * gemm_seconds(c, s, s, d, batch) + 2 * gemm_seconds(c, s, d, s, batch) +
             memory_seconds(c, scores * 3 * e) +
             (drop ? memory_seconds(c, scores * (2 * e + (c.stores_dropout_masks ? 1 : 0))) : 0) +
             memory_seconds(c, tokens * (h + 2 * kvw + h) / t * 2 * e, 2);
  }

  // Elementwise kernels of one forward: two norms (read, write), two residual adds with bias and
  // dropout (read 2, write 1, mask), the activation (GELU: read, write; SwiGLU: read 2, write 1),
  // RoPE on q and k (llama). Backward moves about twice the bytes.
  const double masks = m.dropout && c.stores_dropout_masks ? 1.0 : 0.0;
  double elem = 2 * rows * h * 2 * e + 2 * rows * h * (3 * e + masks);
  elem += (1 - q_moe) * dense.elementwise_bytes + q_moe * (moe.elementwise_bytes + moe_elem);
  if (m.gated()) elem += tokens * (h + kvw) / t * 2 * e;
  const double elem_f = memory_seconds(c, elem, 8), elem_b = memory_seconds(c, 2 * elem, 12);

  // Two all-reduces per forward (after the projection and the MLP) of [T, h]; with sequence
  // parallelism a reduce-scatter and an all-gather each, the same bytes on the wire.
  const double tp_one = all_reduce_seconds(c, tokens * h * e, l.tp, true);

  BlockTimes r;
  r.forward = qkv + proj + mlp_f + core_f + elem_f;
  r.backward = qkv_b + proj_b + mlp_b + core_b + elem_b;
  r.tp_forward = 2 * tp_one;
  r.tp_backward = 2 * tp_one;
  if (c.tp_comm_overlap && l.sequence_parallel && l.tp > 1) {
    // Each half (all-gather or reduce-scatter) runs chunk by chunk with the GEMM next to it.
    // Forward: gather -> QKV, projection -> scatter, gather -> MLP in, MLP out -> scatter.
    // Backward, mirrored: gather -> MLP-out input gradient, MLP-in input gradient -> scatter,
    // gather -> projection input gradient, QKV input gradient -> scatter. (MoE layers: the
    // dense MLP's GEMMs stand for the window.)
    const double half = tp_one / 2, in = (m.gated() ? 2 : 1) * f / t;
    const double fc1 = gemm_seconds(c, tokens, in, h), fc2 = gemm_seconds(c, tokens, h, f / t);
    const double fc1_b = gemm_seconds(c, tokens, h, in), fc2_b = gemm_seconds(c, tokens, f / t, h);
    const double qkv_dgrad = gemm_seconds(c, tokens, h, (h + 2 * kvw) / t), proj_dgrad = gemm_seconds(c, tokens, h / t, h);
    r.tp_forward = overlapped_seconds(half, qkv) + overlapped_seconds(half, proj) + overlapped_seconds(half, fc1) +
                   overlapped_seconds(half, fc2);
    r.tp_backward = overlapped_seconds(half, fc2_b) + overlapped_seconds(half, fc1_b) +
                    overlapped_seconds(half, proj_dgrad) + overlapped_seconds(half, qkv_dgrad);
  }
  r.ep_forward = q_moe * a2a;
  if (l.recompute == Recompute::kFull) {
    r.recompute = r.forward;
    r.tp_recompute = r.tp_forward;
    r.ep_recompute = r.ep_forward;
    r.recompute_flops = tokens * (m.block_gemm_flops_per_token() + m.block_attention_flops_per_token()) / t;
  } else if (l.recompute == Recompute::kSelective) {
    // Flash stacks rebuild q, k, v (one GEMM) and the attention (trident), or the attention core
    // alone (Megatron-Core); unfused ones the attention core.
    const bool with_qkv = c.flash_attention && c.selective_recomputes_qkv;
    r.recompute = core_f + (with_qkv ? qkv : 0);
    r.recompute_flops = tokens * (m.block_attention_flops_per_token() + (with_qkv ? 2 * h * (h + 2 * kvw) : 0)) / t;
  }
  return r;
}

}  // namespace

int dp_node_ranks(const Layout& l, const Cluster& c) {
  // rank = (pp_i * dp + dp_i) * tp + tp_i: a dp group's ranks sit tp apart, nodes hold
  // devices_per_node consecutive ranks.
  const int n = c.devices_per_node;
  if (l.dp * l.tp <= n || n % l.tp || (l.dp * l.tp) % n) return 1;
  return n / l.tp;
}

std::string layout_problem(const ModelShape& m, const Layout& l, const Cluster& c, long global_batch) {
  if (l.dp < 1 || l.tp < 1 || l.pp < 1 || l.micro_batch < 1) return "dp, tp, pp and the micro-batch must be >= 1";
  if (m.heads % l.tp || m.kv() % l.tp || m.ffn % l.tp)
    return detail::concat("tp=", l.tp, " must divide heads (", m.heads, "), kv_heads (", m.kv(), ") and ffn (", m.ffn, ")");
  if (l.ep < 1 || l.dp % l.ep) return detail::concat("ep=", l.ep, " must divide dp=", l.dp);
  if (l.ep > 1 && (m.experts == 0 || m.experts % l.ep))
    return detail::concat("ep=", l.ep, " must divide the experts (", m.experts, ")");
  if (m.experts > 0 && (m.moe_ffn % l.tp || m.shared_ffn % l.tp))
    return detail::concat("tp=", l.tp, " must divide the experts' ffn (", m.moe_ffn, ") and the shared one (", m.shared_ffn, ")");
  if (l.tp > c.devices_per_node) return detail::concat("tp=", l.tp, " spans more than one node of ", c.devices_per_node, " devices");
  if (l.pp > m.layers) return detail::concat("pp=", l.pp, " exceeds the ", m.layers, " layers");
  const long per_replica = global_batch / l.dp;
  if (global_batch % l.dp || per_replica % l.micro_batch)
    return detail::concat("global batch ", global_batch, " is not divisible by dp x micro-batch (", l.dp, " x ", l.micro_batch, ")");
  if (l.schedule == Schedule::kInterleaved && l.pp > 1) {
    const long m_count = per_replica / l.micro_batch;
    if (l.virtual_stages < 2) return "the interleaved schedule needs v >= 2";
    if (m.layers % (l.pp * l.virtual_stages)) return detail::concat("pp x v (", l.pp * l.virtual_stages, ") must divide the ", m.layers, " layers");
    if (m_count % l.pp) return detail::concat("interleaved needs micro-batches (", m_count, ") divisible by pp (", l.pp, ")");
  } else if (l.virtual_stages != 1) {
    return "virtual stages > 1 need the interleaved schedule and pp > 1";
  }
  if (l.sequence_parallel && l.tp == 1) return "sequence parallelism needs tp > 1";
  return "";
}

StepEstimate estimate_step(const ModelShape& m, const Layout& l, const Cluster& c, long global_batch) {
  const std::string problem = layout_problem(m, l, c, global_batch);
  TRIDENT_CONFIG_CHECK(problem.empty(), "layout ", l.describe(), ": ", problem);
  const int mb_count = static_cast<int>(global_batch / l.dp / l.micro_batch);
  const double v = l.pp > 1 && l.schedule == Schedule::kInterleaved ? l.virtual_stages : 1;
  const double t = l.tp, tokens = double(l.micro_batch) * m.seq, e = c.activation_bytes;
  const double layers_per_stage = double(m.layers) / l.pp;
  const bool dp_intra = l.tp * l.dp <= c.devices_per_node;
  const bool pp_intra = 2 * l.tp * l.dp <= c.devices_per_node;

  const BlockTimes blk = block_times(m, l, c);
  // Head (last stage): final norm, logits GEMM [T, h] x [h, V/t], vocab-parallel cross-entropy
  // (softmax statistics all-reduced: small), backward GEMMs.
  const double vloc = double(m.vocab) / t;
  const double head_f = gemm_seconds(c, tokens, vloc, m.hidden) + memory_seconds(c, tokens * vloc * 2 * e, 2) +
                        memory_seconds(c, tokens * m.hidden * 2 * e);
  const double head_b = gemm_seconds(c, tokens, m.hidden, vloc) + gemm_seconds(c, m.hidden, vloc, tokens) +
                        memory_seconds(c, tokens * vloc * 2 * e, 2) + memory_seconds(c, tokens * m.hidden * 2 * e);
  const double head_tp = 3 * all_reduce_seconds(c, tokens * 4, l.tp, true);
  // Embedding (first stage): gather and scatter-add of T rows; vocab-parallel: one all-reduce.
  const double emb_f = memory_seconds(c, tokens * m.hidden * 2 * e), emb_b = memory_seconds(c, tokens * m.hidden * 3 * e);
  const double emb_tp = all_reduce_seconds(c, tokens * m.hidden * e, l.tp, true);

  // Per micro-batch on a stage (all its chunks): compute, tp collectives, p2p.
  const double blocks_f = layers_per_stage * blk.forward, blocks_b = layers_per_stage * blk.backward;
  const double blocks_r = layers_per_stage * blk.recompute;
  const double blocks_tp = layers_per_stage * (blk.tp_forward + blk.tp_backward + blk.tp_recompute);
  const double blocks_ep = layers_per_stage * (2 * blk.ep_forward + blk.ep_recompute);
  const double p2p_bytes = tokens * m.hidden * e / t;  // scatter/gather or SP: each tp rank sends its 1/t
  const double p2p = l.pp > 1 ? 2 * v * p2p_seconds(c, p2p_bytes, pp_intra) : 0;
  struct StageTime {
    double f, b, r, tp, p2p, ep;
    double total() const { return f + b + r + tp + p2p + ep; }
  };
  StageTime first{blocks_f + emb_f, blocks_b + emb_b, blocks_r, blocks_tp + 2 * emb_tp, p2p, blocks_ep};
  StageTime last{blocks_f + head_f, blocks_b + head_b, blocks_r, blocks_tp + head_tp, p2p, blocks_ep};
  StageTime slow = l.pp == 1 ? StageTime{first.f + head_f, first.b + head_b, first.r, first.tp + head_tp, 0, blocks_ep}
                             : (first.total() >= last.total() ? first : last);

  StepEstimate r;
  r.layout = l;
  r.micro_batches = mb_count;
  const double bubble_units = (l.pp - 1) / v;  // in micro-batch-times of the slowest stage
  TimeBreakdown& tb = r.time;
  tb.forward = mb_count * slow.f;
  tb.backward = mb_count * slow.b;
  tb.recompute = mb_count * slow.r;
  tb.tp_comm = mb_count * slow.tp;
  tb.p2p = mb_count * slow.p2p;
  tb.ep_comm = mb_count * slow.ep;
  tb.bubble = bubble_units * slow.total();

  // Data parallel: the stage's fp32 gradients all-reduced (ZeRO-1: reduce-scattered, then the
  // updated weights all-gathered), overlapped with the last micro-batch's backward when allowed.
  // Expert weights are split over ep and reduced over the dp / ep ranks holding the same ones.
  const double expert_params = layers_per_stage * m.block_expert_params() / l.ep / t;
  const double dense_params = layers_per_stage * (m.block_params() - m.block_expert_params()) / t +
                              (l.pp == 1 ? (m.embedding_params() + m.head_params()) / t
                                         : std::max(m.embedding_params(), double(m.vocab) * m.hidden) / t);
  const double stage_params = dense_params + expert_params;
  // Dense weights reduce over the dp group (hierarchically where dp_node_ranks says it applies),
  // expert weights over the dp / ep ranks sharing them (flat, as the engine does).
  const int node_ranks = dp_node_ranks(l, c);
  const DpTimes dense_dp = dp_reduction(c, l, dense_params, l.dp, dp_intra, l.hierarchical_dp ? node_ranks : 1);
  const DpTimes expert_dp = expert_params > 0 ? dp_reduction(c, l, expert_params, l.dp / l.ep, dp_intra, 1) : DpTimes{};
  const double grad_comm = dense_dp.grads + expert_dp.grads, param_comm = dense_dp.params + expert_dp.params;
  tb.dp_comm = grad_comm + param_comm;
  // Overlapped: the gradients behind the last micro-batch's backward, ZeRO-1's parameter
  // all-gather behind the first forward of the next step.
  tb.dp_exposed = l.dp_overlap ? std::max(0.0, grad_comm - (slow.b + slow.r)) + std::max(0.0, param_comm - slow.f)
                               : tb.dp_comm;
  if (l.pp > 1 && m.tied) tb.embedding_sync = all_reduce_seconds(c, double(m.vocab) * m.hidden / t * c.grad_bytes, 2, pp_intra);
  // AdamW reads the gradient and m, v (and the fp32 master), writes them and the weights; the
  // gradient norm reads the gradients once more.
  const double opt_params = dense_params / (l.zero ? l.dp : 1) + expert_params / (l.zero ? l.dp / l.ep : 1);
  const double opt_bytes = opt_params * (c.grad_bytes + 16 + (c.master_weights ? 8 + c.weight_bytes : 2 * c.weight_bytes)) +
                           stage_params * c.grad_bytes * 2;  // norm, zeroing
  tb.optimizer = memory_seconds(c, opt_bytes, 3);

  r.step_s = tb.forward + tb.backward + tb.recompute + tb.tp_comm + tb.p2p + tb.ep_comm + tb.bubble + tb.dp_exposed +
             tb.embedding_sync + tb.optimizer;
  r.bubble_fraction = tb.bubble / r.step_s;
  const double step_tokens = double(global_batch) * m.seq;
  r.tokens_per_s = step_tokens / r.step_s;
  r.model_flops = step_tokens * m.train_flops_per_token();
  r.executed_flops = r.model_flops + double(global_batch) / l.micro_batch * m.layers * blk.recompute_flops * t;
  const double devices = l.ranks();
  r.tflops_per_gpu = r.executed_flops / r.step_s / devices / 1e12;
  r.model_tflops_per_gpu = r.model_flops / r.step_s / devices / 1e12;
  r.mfu = r.model_flops / r.step_s / devices / c.peak_flops;
  r.memory = estimate_memory(m, l, c, mb_count);
  r.fits = r.memory.total() <= c.memory_bytes * c.memory_usable_fraction;
  return r;
}

PartitionCosts partition_costs(const ModelShape& m) {
  PartitionCosts p;
  for (int l = 0; l < m.layers; ++l) {  // MoE layers count their router, k experts and shared MLP
    p.sublayers.push_back(3.0 * (m.attention_gemm_flops_per_token() + m.block_attention_flops_per_token()));
    p.sublayers.push_back(3.0 * m.mlp_gemm_flops_per_token(l));
    p.layers.push_back(p.sublayers[2 * l] + p.sublayers[2 * l + 1]);
  }
  p.first_extra = 0.0;  // a gather: no FLOPs worth counting
  // Logits forward and both backward GEMMs, plus the softmax / cross-entropy passes.
  p.last_extra = 3.0 * m.head_flops_per_token() + 10.0 * m.vocab;
  return p;
}

}  // namespace trident::plan
