// The analytical model of one training step for (model, layout, cluster): executed FLOPs, time
// split by phase on the slowest pipeline stage, and memory per rank split by kind.
//
// Time (b = micro-batch, s = seq, T = b*s tokens, t = tp, m = micro-batches per step, v = chunks):
//   per micro-batch and stage: forward + backward (+ recompute) of its blocks, each the sum of its
//   GEMMs (gemm_seconds: wave quantisation, K fill, roofline), attention (flash: FLOPs at the
//   fused-kernel rate; unfused: batched score GEMMs + softmax/dropout over b*a*s*s elements at
//   HBM bandwidth), elementwise kernels (norms, activations, residual adds: bytes / bandwidth),
//   tensor-parallel all-reduces (2 per block forward, 2 backward, 2 more when recomputed) and
//   point-to-point sends (activations T*h/t per chunk boundary, forward and backward);
//   the first stage adds the embedding, the last the head and the loss.
//   Mixture of experts: an MoE layer's MLP is the router GEMM, the local experts' GEMMs over
//   T*k rows (balanced load: E/ep GEMMs of T*k*ep/E rows each), the shared MLP, gather and
//   combine passes, and four all-to-alls (dispatch and combine, forward and backward) of
//   T*k*h*(ep-1)/ep bytes per rank, inside a node when ep*tp ranks fit one. Expert weights are
//   split over ep; their gradients reduce over dp/ep ranks.
//   Tensor-parallel overlap (Cluster::tp_comm_overlap, Megatron-Core --tp-comm-overlap; needs
//   sequence parallelism): each all-gather / reduce-scatter half runs chunk by chunk with the GEMM
//   that consumes or produces it (QKV, projection, MLP in, MLP out; their input-gradient GEMMs in
//   backward), exposing only what is longer than that GEMM plus a fixed share of the hidden part
//   (the SMs and HBM bandwidth the communication kernels take from the GEMM).
//   step = (m + (pp - 1) / v) * slowest stage per micro-batch      (the bubble is the second term)
//        + data-parallel reduction not hidden: with dp_overlap, the gradient all-reduce (ZeRO-1:
//          reduce-scatter) behind the last micro-batch's backward and ZeRO-1's parameter
//          all-gather behind the next step's first forward (Megatron-Core's distributed optimizer
//          with --overlap-grad-reduce --overlap-param-gather); hierarchical where the dp group
//          spans nodes with L > 1 of its ranks on each (Layout::hierarchical_dp, trident's
//          comm.hierarchical = auto): reduce-scatter over the L ranks of a node (NVLink), all-reduce
//          (ZeRO-1: reduce-scatter) of the 1/L shard over the dp / L nodes (network), all-gather
//          in the node; ZeRO-1's parameter all-gather mirrors it (across nodes, then inside)
//        + tied-embedding all-reduce + optimizer (memory-bound).
// Validated against Narayanan et al. SC21 Table 1 (A100, tests/plan/test_sc21.cpp) and NVIDIA's
// published H100 BF16 Megatron-Core recipes (tests/plan/test_h100.cpp). Not modelled: context
// parallelism, fp8 GEMMs.
// Memory (the stage that needs most): weights, fp32 gradients, Adam state (+ fp32 master) / dp
// under ZeRO-1, activations per layer (Korthikanti et al. 2022: replicated and tp-split tensors,
// the s x s score matrix of unfused attention, dropout masks) times layers per chunk times the
// micro-batches the schedule holds in flight, the logits on the last stage, communication
// buffers and the runtime's reserve.
#pragma once
#include <string>
#include <vector>

#include "trident/plan/cluster.hpp"
#include "trident/plan/layout.hpp"
#include "trident/plan/model_shape.hpp"

namespace trident::plan {

struct TimeBreakdown {  // seconds per step on the critical path
  double forward = 0, backward = 0, recompute = 0;  // compute of the slowest stage, all micro-batches
  double tp_comm = 0, p2p = 0, bubble = 0;
  double ep_comm = 0;  // MoE: the experts' token all-to-alls (dispatch and combine, both passes)
  double dp_comm = 0, dp_exposed = 0;  // gradient reduction: all of it, and the part not overlapped
  double embedding_sync = 0, optimizer = 0;
};

struct MemoryBreakdown {  // bytes on the rank that needs most
  double weights = 0, grads = 0, optimizer = 0, activations = 0, logits = 0, buffers = 0, reserved = 0;
  double total() const { return weights + grads + optimizer + activations + logits + buffers + reserved; }
};

struct StepEstimate {
  Layout layout;
  int micro_batches = 0;  // m, per step per dp rank
  double step_s = 0, tokens_per_s = 0;
  double executed_flops = 0, model_flops = 0;  // per step, all ranks
  double tflops_per_gpu = 0, model_tflops_per_gpu = 0, mfu = 0;
  double bubble_fraction = 0;
  bool fits = true;
  TimeBreakdown time;
  MemoryBreakdown memory;
};

// Ranks of a dp group on each node where the group spans more than one node evenly (the
// hierarchical reduction's L), else 1 (one node, or an uneven split: flat).
int dp_node_ranks(const Layout& layout, const Cluster& cluster);

// Empty when the layout is valid for the model and cluster, else why not (for messages and the
// search): ranks, divisibility of heads/layers/batch, tp within a node, schedule rules.
std::string layout_problem(const ModelShape& model, const Layout& layout, const Cluster& cluster, long global_batch);

// ConfigError when layout_problem is not empty.
StepEstimate estimate_step(const ModelShape& model, const Layout& layout, const Cluster& cluster, long global_batch);

MemoryBreakdown estimate_memory(const ModelShape& model, const Layout& layout, const Cluster& cluster, int micro_batches);

// Costs for the pipeline partitioner, in training FLOPs per token: each block, each half of a
// block (sublayers[2l]: attention, [2l + 1]: MLP), and what the first stage (embedding) and the
// last stage (final norm, head, loss) carry besides their blocks.
struct PartitionCosts {
  std::vector<double> layers, sublayers;
  double first_extra = 0, last_extra = 0;
};
PartitionCosts partition_costs(const ModelShape& model);

}  // namespace trident::plan
