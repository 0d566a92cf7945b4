// The step model's parts on their own: spec parsing, parameter and FLOP counts, what each
// memory saver and schedule changes, and the search.
#include <gtest/gtest.h>

#include "trident/core/error.hpp"
#include "trident/plan/search.hpp"

namespace trident::plan {
namespace {

ModelShape gpt2_small() {
  ModelShape m = parse_model_spec("layers=12,hidden=768,heads=12,vocab=50304,seq=1024");
  m.resolve();
  return m;
}

TEST(PlanModelSpec, ParsesAndFillsDefaults) {
  ModelShape m = parse_model_spec("layers=80,hidden=8192,heads=64,kv_heads=8,ffn=28672,vocab=128256,arch=llama,seq=4096");
  m.resolve();
  EXPECT_EQ(m.arch, ModelArch::kLlama);
  EXPECT_FALSE(m.tied);
  EXPECT_NEAR(m.total_params() / 1e9, 70.55, 0.05);  // Llama-3 70B
  EXPECT_EQ(gpt2_small().ffn, 4 * 768);
  EXPECT_NEAR(gpt2_small().total_params() / 1e6, 124.5, 1.0);  // GPT-2 124M (vocab padded to 50304)
}

TEST(PlanModelSpec, RejectsBadInput) {
  EXPECT_THROW(parse_model_spec("layers=12,hidden=x"), ConfigError);
  EXPECT_THROW(parse_model_spec("layers=12,depth=3"), ConfigError);
  EXPECT_THROW(parse_model_spec("arch=bert"), ConfigError);
  ModelShape m = parse_model_spec("layers=2,hidden=100,heads=3,vocab=10,seq=8");
  EXPECT_THROW(m.resolve(), ConfigError);  // heads do not divide hidden
}

TEST(PlanStepModel, ModelFlopsAreSixNPlusAttention) {
  const ModelShape m = gpt2_small();
  const double matmul = 12 * (4.0 * 768 * 768 + 8.0 * 768 * 768) + 50304.0 * 768;
  EXPECT_NEAR(m.train_flops_per_token(), 6 * matmul + 12.0 * 12 * 1024 * 768, 1.0);
}

// Mixtral 8x7B: its published sizes, FLOPs by the active experts, partition costs per layer,
// and what expert parallelism changes.
TEST(PlanStepModel, MixtureOfExperts) {
  ModelShape m = parse_model_spec(
      "layers=32,hidden=4096,heads=32,kv_heads=8,ffn=14336,vocab=32000,arch=llama,experts=8,top_k=2,seq=4096");
  m.resolve();
  EXPECT_NEAR(m.total_params() / 1e9, 46.70, 0.05);  // Mixtral 8x7B
  const double active = m.layers * m.block_gemm_flops_per_token() / 2 + 32000.0 * 4096;
  EXPECT_NEAR(active / 1e9, 12.75, 0.05);  // "12.9B active" counts the embedding too
  // Every second layer MoE: the partitioner sees the difference.
  ModelShape half = m;
  half.moe_every = 2;
  const PartitionCosts costs = partition_costs(half);
  EXPECT_GT(costs.layers[1], costs.layers[0]);
  EXPECT_DOUBLE_EQ(costs.layers[1], costs.layers[3]);
  // ep splits the expert weights (and their state) and adds all-to-all time.
  const Cluster c = cluster_preset("h100-sxm");
  Layout l;
  l.dp = 8, l.tp = 1, l.pp = 4, l.micro_batch = 1, l.zero = true;
  Layout ep = l;
  ep.ep = 8;
  const StepEstimate a = estimate_step(m, l, c, 64), b = estimate_step(m, ep, c, 64);
  EXPECT_LT(b.memory.weights, a.memory.weights / 4);
  EXPECT_EQ(a.time.ep_comm, 0);
  EXPECT_GT(b.time.ep_comm, 0);
  EXPECT_DOUBLE_EQ(b.model_flops, a.model_flops);
  Layout bad = l;
  bad.ep = 3;
  EXPECT_NE(layout_problem(m, bad, c, 64).find("ep=3 must divide dp=8"), std::string::npos);
}

TEST(PlanStepModel, MemorySaversSaveMemory) {
  const ModelShape m = gpt2_small();
  const Cluster c = cluster_preset("h100-sxm");
  Layout l;
  l.dp = 4, l.tp = 2, l.micro_batch = 4;
  auto mem = [&](Layout x) { return estimate_step(m, x, c, 64).memory; };
  Layout sel = l, full = l, sp = l, zero = l;
  sel.recompute = Recompute::kSelective, full.recompute = Recompute::kFull;
  sp.sequence_parallel = true, zero.zero = true;
  EXPECT_LT(mem(sel).activations, mem(l).activations);
  EXPECT_LT(mem(full).activations, mem(sel).activations);
  EXPECT_LT(mem(sp).activations, mem(l).activations);
  EXPECT_NEAR(mem(zero).optimizer, mem(l).optimizer / 4, 1.0);
  // Recompute costs time and executes more FLOPs; the model FLOPs stay.
  const StepEstimate a = estimate_step(m, l, c, 64), b = estimate_step(m, full, c, 64);
  EXPECT_GT(b.step_s, a.step_s);
  EXPECT_GT(b.executed_flops, a.executed_flops);
  EXPECT_DOUBLE_EQ(b.model_flops, a.model_flops);
}

TEST(PlanStepModel, InterleavingShrinksTheBubble) {
  ModelShape m = parse_model_spec("layers=32,hidden=4096,heads=32,vocab=51200,seq=2048");
  m.resolve();
  const Cluster c = cluster_preset("a100-80g");
  Layout l;
  l.dp = 1, l.tp = 8, l.pp = 4, l.micro_batch = 1, l.recompute = Recompute::kFull;
  const StepEstimate plain = estimate_step(m, l, c, 16);
  l.schedule = Schedule::kInterleaved, l.virtual_stages = 4;
  const StepEstimate inter = estimate_step(m, l, c, 16);
  EXPECT_NEAR(plain.time.bubble / inter.time.bubble, 4.0, 0.5);
  EXPECT_LT(inter.step_s, plain.step_s);
  EXPECT_GT(inter.time.p2p, plain.time.p2p);  // v times the point-to-point traffic
}

// Hierarchical dp reduction (comm.hierarchical): faster than one flat ring where the dp group
// spans nodes with several of its ranks on each, the same where the group fits in one node.
TEST(PlanStepModel, HierarchicalReductionAcrossNodes) {
  ModelShape m = parse_model_spec("layers=24,hidden=2048,heads=16,vocab=50304,seq=2048");
  m.resolve();
  const Cluster c = cluster_preset("h100-sxm");
  auto dp_time = [&](int dp, int tp, bool zero, bool hierarchical) {
    Layout l;
    l.dp = dp, l.tp = tp, l.zero = zero, l.hierarchical_dp = hierarchical;
    l.dp_overlap = false;  // the whole reduction on the critical path
    const StepEstimate e = estimate_step(m, l, c, 64);
    EXPECT_DOUBLE_EQ(e.time.dp_exposed, e.time.dp_comm);
    return e.time.dp_comm;
  };
  for (bool zero : {false, true}) {
    // 16 ranks on two nodes of 8: reduce-scatter over NVLink, 1/8 of the bytes over the network.
    EXPECT_LT(dp_time(16, 1, zero, true), 0.5 * dp_time(16, 1, zero, false)) << "zero " << zero;
    EXPECT_LT(dp_time(8, 2, zero, true), dp_time(8, 2, zero, false)) << "zero " << zero;  // 4 per node
    // One node: nothing to split.
    EXPECT_DOUBLE_EQ(dp_time(8, 1, zero, true), dp_time(8, 1, zero, false)) << "zero " << zero;
    // tp = 8 fills the node: one dp rank per node, flat either way.
    EXPECT_DOUBLE_EQ(dp_time(4, 8, zero, true), dp_time(4, 8, zero, false)) << "zero " << zero;
  }
  Layout l;
  l.dp = 16, l.tp = 1;
  EXPECT_EQ(dp_node_ranks(l, c), 8);
  l.dp = 8, l.tp = 2;
  EXPECT_EQ(dp_node_ranks(l, c), 4);
  l.dp = 8, l.tp = 1;
  EXPECT_EQ(dp_node_ranks(l, c), 1);
  l.dp = 4, l.tp = 8;
  EXPECT_EQ(dp_node_ranks(l, c), 1);
}

// The distributed optimizer's overlap: the gradient reduce-scatter hides behind the backward and
// the parameter all-gather behind the next forward.
TEST(PlanStepModel, ZeroOverlapsBothHalves) {
  ModelShape m = parse_model_spec("layers=24,hidden=2048,heads=16,vocab=50304,seq=2048");
  m.resolve();
  const Cluster c = cluster_preset("h100-sxm");
  Layout l;
  l.dp = 64, l.tp = 1, l.micro_batch = 1, l.zero = true, l.hierarchical_dp = false;
  l.dp_overlap = false;
  const StepEstimate plain = estimate_step(m, l, c, 64);
  l.dp_overlap = true;
  const StepEstimate overlapped = estimate_step(m, l, c, 64);
  EXPECT_DOUBLE_EQ(plain.time.dp_comm, overlapped.time.dp_comm);
  // Each half hides behind up to one pass: what stays is at most the excess over each window.
  const double window = overlapped.time.forward + overlapped.time.backward;  // one micro-batch per rank
  EXPECT_LT(overlapped.time.dp_exposed, plain.time.dp_exposed);
  EXPECT_GE(overlapped.time.dp_exposed, plain.time.dp_comm - window - 1e-12);
}

TEST(PlanStepModel, InvalidLayoutsAreExplained) {
  const ModelShape m = gpt2_small();
  const Cluster c = cluster_preset("a100-80g");
  Layout l;
  l.tp = 5;
  EXPECT_NE(layout_problem(m, l, c, 8).find("tp=5"), std::string::npos);
  l.tp = 16;
  EXPECT_FALSE(layout_problem(m, l, c, 8).empty());  // beyond a node of 8
  l.tp = 1, l.dp = 3;
  EXPECT_FALSE(layout_problem(m, l, c, 8).empty());  // batch 8 over dp 3
  EXPECT_THROW(estimate_step(m, l, c, 8), ConfigError);
}

TEST(PlanSearch, RanksFittingLayoutsFastestFirst) {
  ModelShape m = parse_model_spec("layers=80,hidden=8192,heads=64,kv_heads=8,ffn=28672,vocab=128256,arch=llama,seq=4096");
  m.resolve();
  SearchSpace space;
  space.ranks = 64, space.global_batch = 128;
  const SearchResult r = search_layouts(m, cluster_preset("h100-sxm"), space);
  ASSERT_FALSE(r.fitting.empty());
  EXPECT_GT(r.too_big, 0);  // a 70B model does not fit everywhere on 64 GPUs
  for (size_t i = 1; i < r.fitting.size(); ++i) EXPECT_LE(r.fitting[i - 1].step_s, r.fitting[i].step_s);
  for (const StepEstimate& e : r.fitting) {
    EXPECT_TRUE(e.fits);
    EXPECT_EQ(e.layout.ranks(), 64);
    EXPECT_LT(e.mfu, 0.8);
  }
}

TEST(PlanCluster, CollectivesAndGemms) {
  const Cluster c = cluster_preset("a100-80g");
  EXPECT_EQ(all_reduce_seconds(c, 1e9, 1, true), 0.0);
  EXPECT_GT(all_reduce_seconds(c, 1e9, 8, false), 5 * all_reduce_seconds(c, 1e9, 8, true));  // IB vs NVLink
  // Small GEMMs reach a smaller share of peak than large ones.
  const double big = 2.0 * 8192 * 8192 * 8192 / gemm_seconds(c, 8192, 8192, 8192);
  const double small = 2.0 * 256 * 256 * 256 / gemm_seconds(c, 256, 256, 256);
  EXPECT_GT(big, 0.7 * c.peak_flops);
  EXPECT_LT(small, 0.2 * c.peak_flops);
  EXPECT_THROW(cluster_preset("tpu"), ConfigError);
}

// The local machine under bf16: where the calibration found bf16 GEMMs faster, bf16 GEMMs at
// their rate with a 16-bit weight copy beside the fp32 masters; where it did not (gemm_bf16 = 0),
// fp32 GEMMs on the masters with only the activations in bf16 (as the CPU backend runs it).
TEST(PlanCluster, LocalBf16FollowsTheMeasuredGemmRates) {
  LocalCalibration cal;
  cal.cores = 2;
  cal.peak_fp32 = 400e9, cal.peak_bf16 = 1600e9;
  cal.gemm_fp32 = 300e9, cal.gemm_bf16 = 1200e9;
  cal.memory_bandwidth = 20e9;
  const Cluster fp32 = local_cluster(cal, 1, false), fast = local_cluster(cal, 1, true);
  cal.gemm_bf16 = 0;
  const Cluster slow = local_cluster(cal, 1, true);
  EXPECT_EQ(fast.peak_flops, 1600e9);
  EXPECT_DOUBLE_EQ(fast.gemm_efficiency, 0.75);
  EXPECT_EQ(fast.weight_bytes, 2);
  EXPECT_TRUE(fast.master_weights);
  EXPECT_EQ(slow.peak_flops, fp32.peak_flops);
  EXPECT_DOUBLE_EQ(slow.gemm_efficiency, fp32.gemm_efficiency);
  EXPECT_EQ(slow.weight_bytes, 4);
  EXPECT_FALSE(slow.master_weights);
  EXPECT_EQ(slow.activation_bytes, 2);
  EXPECT_EQ(fp32.activation_bytes, 4);
  const ModelShape m = gpt2_small();
  const Layout one{.dp = 1, .tp = 1, .pp = 1};
  const MemoryBreakdown f = estimate_memory(m, one, fp32, 1), b = estimate_memory(m, one, fast, 1),
                        s = estimate_memory(m, one, slow, 1);
  EXPECT_EQ(s.weights + s.optimizer, f.weights + f.optimizer);  // the masters are the weights
  EXPECT_GT(b.weights + b.optimizer, f.weights + f.optimizer);  // + the 16-bit copy
  EXPECT_LT(s.activations, f.activations);
}

}  // namespace
}  // namespace trident::plan
