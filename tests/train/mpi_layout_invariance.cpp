// mpi-ranks: 2 4 8
// Layout invariance for data parallelism (docs/design.md section 2): dp = world size, with and
// without overlap, with and without ZeRO-1, with and without gradient accumulation, gives the
// single-rank loss at every step and the single-rank final parameters within 1e-5 relative.
// Each rank trains the single-rank reference itself (on MPI_COMM_SELF) to compare against.
#include <gtest/gtest.h>
#include <mpi.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "../../src/cli/backend_select.hpp"
#include "test_util.hpp"
#include "trident/backend/cpu_ops.hpp"
#include "trident/data/prep.hpp"
#include "trident/train/pipeline/stage_plan.hpp"
#include "trident/train/trainer.hpp"

namespace trident::train {
namespace {

RunConfig tiny_run(int dp, const std::string& run_dir) {
  RunConfig c;
  c.model.arch = model::Arch::kLlama;  // GQA, untied head: every parameter kind
  c.model.layers = 2;
  c.model.hidden = 32;
  c.model.heads = 4;
  c.model.kv_heads = 2;
  c.model.vocab = 320;
  c.model.seq_len = 32;
  c.model.tie_embeddings = false;
  c.model.resolve();
  c.layout = {.dp = dp, .tp = 1, .pp = 1};
  c.train.steps = 20;
  c.train.micro_batch = 2;
  c.train.global_batch = 16;
  c.train.lr = 2e-3;
  c.train.min_lr = 2e-4;
  c.train.warmup = 5;
  c.train.clip = 1.0;
  c.data.train = std::string(TRIDENT_SOURCE_DIR) + "/input/data/pystdlib";
  c.log.run_dir = run_dir;
  c.log.interval = 1000;  // quiet
  return c;
}

struct Curve {
  std::vector<double> losses;
  std::vector<double> moe_aux, moe_load;  // MoE: the step's load-balancing loss and max/mean load
  std::vector<double> params;  // this rank's flat parameter buffer
  // Per parameter: each local element's global index and value (shards map into the whole).
  std::map<std::string, std::vector<std::pair<int64_t, double>>> by_name;
};

// Relative L2 error ||got - ref|| / ||ref|| of got's parameter elements (shards included)
// against the same global elements of reference; elements beyond the reference's tensor
// (vocabulary padding) are skipped. L2 rather than the largest element: Adam divides each
// update by the gradient's own size, so an element whose gradient is near zero turns a
// different fp32 summation order (a GEMM split over tp ranks) into a visible change of that one
// element (seen: 1.5e-5 of the largest parameter after 20 steps), while the whole stays at ~1e-7.
double parameter_error(const Curve& got, const Curve& reference) {
  double diff = 0, norm = 0;
  for (const auto& [name, elements] : got.by_name) {
    const auto& ref = reference.by_name.at(name);
    for (const auto& [g, v] : elements) {
      if (g >= static_cast<int64_t>(ref.size())) continue;
      const double r = ref[static_cast<size_t>(g)].second;
      diff += (v - r) * (v - r);
      norm += r * r;
    }
  }
  return std::sqrt(diff / norm);
}

// One backend per process: it measures its GEMM rates once, so every run of the process (the
// single-rank reference and the layouts) computes its GEMMs in the same precision.
Ops& process_ops() {
  static const std::unique_ptr<Ops> ops = make_cpu_ops(1);
  return *ops;
}

// Every rank calls train() with the same configs in the same order (the precision is agreed over
// MPI_COMM_WORLD, as the CLI's backend selection does over the run's ranks).
Curve train(const RunConfig& cfg, MPI_Comm base) {
  Ops* ops = &process_ops();
  Logger quiet(/*rank=*/1);
  cli::agree_matmul_precision(*ops, cfg.train.precision, MPI_COMM_WORLD, quiet);
  dist::Topology topology(cfg.layout, base);
  RunBuilder builder(cfg, *ops, topology, quiet);
  Trainer trainer(builder);
  Curve curve;
  for (int64_t s = 0; s < cfg.train.steps; ++s) {
    const StepResult r = builder.train_step(s);
    curve.losses.push_back(r.loss);
    curve.moe_aux.push_back(r.moe_aux_loss);
    curve.moe_load.push_back(r.moe_load_max_over_mean);
  }
  auto& store = builder.model().params();
  curve.params = testing::to_vector(store.flat_values().narrow(0, store.numel()));
  for (const auto& p : store.all()) {
    auto& elements = curve.by_name[p->spec.name];
    for (int64_t i = 0; i < p->value.numel(); ++i)
      elements.emplace_back(model::ParamStore::global_index(*p, i), testing::element(p->value, i));
  }
  return curve;
}

// A (dp, tp, pp) layout.
struct Layout3 {
  int dp, tp, pp;
  std::string str() const {
    return "(dp, tp, pp) = (" + std::to_string(dp) + ", " + std::to_string(tp) + ", " + std::to_string(pp) + ")";
  }
};

// The layouts of up to two ranks per dimension that fill the world (fine-tuning tests).
std::vector<Layout3> small_layouts(int world) {
  std::vector<Layout3> out;
  for (const Layout3& L : std::vector<Layout3>{{2, 1, 1}, {1, 2, 1}, {1, 1, 2}, {2, 2, 1}, {1, 2, 2}, {2, 1, 2}, {2, 2, 2}})
    if (L.dp * L.tp * L.pp == world) out.push_back(L);
  return out;
}

// The tiny model with 4 MoE layers' worth of experts: Llama (every layer MoE, a shared expert,
// renormalised weights, both auxiliary losses, dropless) or GPT-2 (every second layer, GELU
// experts with biases, raw weights, capacity 1).
RunConfig moe_run(bool llama, const std::string& run_dir) {
  RunConfig c = tiny_run(1, run_dir);
  c.model.arch = llama ? model::Arch::kLlama : model::Arch::kGPT2;
  c.model.layers = 4;
  c.model.kv_heads = llama ? 2 : 4;
  c.model.tie_embeddings = !llama;
  c.model.ffn_hidden = 0;
  c.model.moe = {.experts = 4, .top_k = 2, .ffn_hidden = 48, .every = llama ? 1 : 2,
                 .shared_experts = llama ? 1 : 0, .norm_topk_prob = llama, .aux_loss_coef = 0.1,
                 .z_loss_coef = llama ? 0.01 : 0.0, .capacity_factor = llama ? 0.0 : 1.0};
  c.model.resolve();
  return c;
}

// ref moved to layout L (ZeRO-1 when there is data parallelism), run in run_dir.
RunConfig in_layout(RunConfig cfg, const Layout3& L, const std::string& run_dir) {
  cfg.log.run_dir = run_dir;
  cfg.layout = {.dp = L.dp, .tp = L.tp, .pp = L.pp};
  cfg.zero = L.dp > 1 ? 1 : 0;
  return cfg;
}

// Every test: this rank's place in MPI_COMM_WORLD and scratch run directories named by the
// process id (so ranks never share one), removed after the test.
class LayoutInvariance : public ::testing::Test {
 protected:
  void SetUp() override {
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &world);
    dir = "/tmp/trident_layout_" + std::to_string(getpid());
  }
  void TearDown() override {
    MPI_Barrier(MPI_COMM_WORLD);  // every rank is done with the runs before they go
    std::filesystem::remove_all(ref_dir());
    std::filesystem::remove_all(dp_dir());
    std::filesystem::remove_all(dir);
  }
  std::string ref_dir() const { return dir + "_ref"; }
  std::string dp_dir() const { return dir + "_dp"; }
  int rank = 0, world = 1;
  std::string dir;
};

struct Variant {
  bool overlap;
  int zero;
  int micro_batch;
  double bucket_mb;
};

TEST_F(LayoutInvariance, DataParallelMatchesSingleRank) {
  const Curve reference = train(tiny_run(1, ref_dir()), MPI_COMM_SELF);

  // Small buckets so several reductions are in flight during backward.
  const Variant variants[] = {{true, 0, 2, 0.05}, {false, 0, 2, 25}, {true, 1, 2, 0.05}, {false, 1, 1, 25},
                              {true, 0, 1, 0.05}};
  for (const Variant& v : variants) {
    RunConfig cfg = tiny_run(world, dp_dir());
    cfg.comm = {.bucket_mb = v.bucket_mb, .overlap = v.overlap};
    cfg.zero = v.zero;
    cfg.train.micro_batch = v.micro_batch;
    const Curve got = train(cfg, MPI_COMM_WORLD);
    const std::string what = "dp " + std::to_string(world) + " overlap " + std::to_string(v.overlap) + " zero " +
                             std::to_string(v.zero) + " micro_batch " + std::to_string(v.micro_batch);
    for (size_t s = 0; s < reference.losses.size(); ++s)
      EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what << " step " << s + 1;
    EXPECT_LT(testing::relative_error(got.params, reference.params), 1e-5) << what;
  }
}

// Tensor parallelism (with data parallelism and ZeRO-1 where the world allows): every
// (dp, tp) with dp * tp = world, GPT-2 (tied vocabulary-parallel embedding, learned
// positions, biases) and Llama (GQA, untied head), vocabulary padded for tp.
TEST_F(LayoutInvariance, TensorParallelMatchesSingleRank) {
  for (model::Arch arch : {model::Arch::kGPT2, model::Arch::kLlama}) {
    RunConfig ref_cfg = tiny_run(1, ref_dir());
    ref_cfg.model.arch = arch;
    ref_cfg.model.kv_heads = arch == model::Arch::kLlama ? 2 : 4;
    ref_cfg.model.tie_embeddings = arch == model::Arch::kGPT2;
    ref_cfg.model.vocab = 321;  // not a multiple of tp: padded
    ref_cfg.model.ffn_hidden = 0;
    ref_cfg.model.resolve();
    const Curve reference = train(ref_cfg, MPI_COMM_SELF);
    for (int tp = 2; tp <= world; tp *= 2)
    for (bool sequence_parallel : {false, true}) {
      if (ref_cfg.model.kv_heads % tp) continue;
      RunConfig cfg = ref_cfg;
      cfg.log.run_dir = dp_dir();
      cfg.layout = {.dp = world / tp, .tp = tp, .pp = 1};
      cfg.zero = world / tp > 1 ? 1 : 0;
      cfg.sequence_parallel = sequence_parallel;
      const Curve got = train(cfg, MPI_COMM_WORLD);
      const std::string what = std::string(model::arch_name(arch)) + " dp " + std::to_string(world / tp) + " tp " +
                               std::to_string(tp) + (sequence_parallel ? " sequence parallel" : "");
      for (size_t s = 0; s < reference.losses.size(); ++s)
        EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what << " step " << s + 1;
      // Parameters: this rank's shards against the matching elements of the reference.
      EXPECT_LT(parameter_error(got, reference), 1e-5) << what;
    }
  }
}

// The full 3D grid: every layout of docs/design.md's list that fits the world size, with each
// pipeline schedule, GPT-2 (embeddings tied across the first and last stage) and Llama.
TEST_F(LayoutInvariance, PipelineAndThreeDimensionalLayouts) {
  const std::vector<Layout3> all = {{1, 1, 2}, {1, 1, 4}, {2, 1, 2}, {1, 2, 2}, {2, 2, 2}, {1, 2, 4}, {4, 2, 1}, {2, 1, 4}};
  for (model::Arch arch : {model::Arch::kGPT2, model::Arch::kLlama}) {
    RunConfig ref_cfg = tiny_run(1, ref_dir());
    ref_cfg.model.arch = arch;
    ref_cfg.model.layers = 8;
    ref_cfg.model.kv_heads = arch == model::Arch::kLlama ? 2 : 4;
    ref_cfg.model.tie_embeddings = arch == model::Arch::kGPT2;
    ref_cfg.model.ffn_hidden = 0;
    ref_cfg.model.resolve();
    const Curve reference = train(ref_cfg, MPI_COMM_SELF);
    for (const Layout3& L : all) {
      if (L.dp * L.tp * L.pp != world || ref_cfg.model.kv_heads % L.tp) continue;
      for (ScheduleKind kind : {ScheduleKind::kGPipe, ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved}) {
        RunConfig cfg = ref_cfg;
        cfg.log.run_dir = dp_dir();
        cfg.layout = {.dp = L.dp, .tp = L.tp, .pp = L.pp};
        cfg.schedule = kind;
        cfg.virtual_stages = kind == ScheduleKind::kInterleaved ? 2 : 1;
        cfg.zero = L.dp > 1 ? 1 : 0;
        cfg.sequence_parallel = L.tp > 1 && kind == ScheduleKind::kOneFOneB;  // with and without
        if (kind == ScheduleKind::kInterleaved && (cfg.train.global_batch / (cfg.train.micro_batch * L.dp)) % L.pp)
          continue;
        const Curve got = train(cfg, MPI_COMM_WORLD);
        std::ostringstream what;
        what << model::arch_name(arch) << " (dp, tp, pp) = (" << L.dp << ", " << L.tp << ", " << L.pp << ") "
             << schedule_name(kind);
        for (size_t s = 0; s < reference.losses.size(); ++s)
          EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what.str() << " step " << s + 1;
        EXPECT_LT(parameter_error(got, reference), 1e-5) << what.str();
      }
    }
  }
}

// Sub-layer partition: stage bounds between a block's attention and its MLP (the residual
// stream h crossing stages) give the single-rank curve for GPT-2 with dropout, Llama, an MoE
// model, LoRA and both recompute modes, under 1f1b and interleaved schedules, pp = 2 and pp =
// world (with dp and tp where the world allows), each partition checked to cut a block.
TEST_F(LayoutInvariance, SublayerPartitionMatchesSingleRank) {
  for (const std::string variant : {"gpt2", "llama", "moe", "lora", "recompute"}) {
    RunConfig ref_cfg = variant == "moe" ? moe_run(true, ref_dir()) : tiny_run(1, ref_dir());
    if (variant != "moe") {
      ref_cfg.model.arch = variant == "gpt2" || variant == "recompute" ? model::Arch::kGPT2 : model::Arch::kLlama;
      ref_cfg.model.layers = 4;
      ref_cfg.model.kv_heads = ref_cfg.model.arch == model::Arch::kLlama ? 2 : 4;
      ref_cfg.model.tie_embeddings = ref_cfg.model.arch == model::Arch::kGPT2;
      ref_cfg.model.ffn_hidden = 0;
      ref_cfg.model.dropout = variant == "gpt2" || variant == "recompute" ? 0.1 : 0.0;
    }
    if (variant == "lora") ref_cfg.model.lora = {.r = 4, .alpha = 8, .targets = "q,v,up,down"};
    ref_cfg.model.resolve();
    ref_cfg.train.steps = 10;
    const Curve reference = train(ref_cfg, MPI_COMM_SELF);
    std::vector<Layout3> layouts = {{world / 2, 1, 2}};
    if (world >= 4) layouts.insert(layouts.end(), {{1, 1, world}, {world / 4, 2, 2}});
    for (const Layout3& L : layouts)
      for (ScheduleKind kind : {ScheduleKind::kOneFOneB, ScheduleKind::kInterleaved}) {
        RunConfig cfg = in_layout(ref_cfg, L, dp_dir());
        cfg.partition = Partition::kBalancedSublayer;
        cfg.schedule = kind;
        cfg.virtual_stages = kind == ScheduleKind::kInterleaved ? 2 : 1;
        cfg.sequence_parallel = L.tp > 1;
        if (variant == "recompute") cfg.recompute = L.pp == 2 ? model::Recompute::kSelective : model::Recompute::kFull;
        if (2 * cfg.model.layers < L.pp * cfg.virtual_stages) continue;
        if (kind == ScheduleKind::kInterleaved && cfg.micro_batches_per_step() % L.pp) continue;
        const std::vector<std::pair<int, int>> parts = partition_sublayers(cfg);
        std::ostringstream what;
        what << variant << " " << L.str() << " " << schedule_name(kind) << " sub-layers";
        for (const auto& [first, last] : parts) what << " [" << first << "," << last << ")";
        ASSERT_TRUE(std::any_of(parts.begin(), parts.end(), [](const auto& p) { return p.first % 2; }))
            << what.str() << ": no stage starts between a block's halves";
        const Curve got = train(cfg, MPI_COMM_WORLD);
        for (size_t s = 0; s < reference.losses.size(); ++s)
          EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what.str() << " step " << s + 1;
        EXPECT_LT(parameter_error(got, reference), 1e-5) << what.str();
      }
  }
}

// Mixture of experts (dropless, and with a capacity that drops assignments), every layout that
// fits the world with tp sequence-parallel, and pp: the single-rank losses, auxiliary losses,
// expert loads and parameters. Llama: every layer MoE with a shared expert, both auxiliary
// losses; GPT-2: every second layer, GELU experts with biases, capacity 1.
TEST_F(LayoutInvariance, MixtureOfExpertsMatchesSingleRank) {
  for (model::Arch arch : {model::Arch::kLlama, model::Arch::kGPT2}) {
    const RunConfig ref_cfg = moe_run(arch == model::Arch::kLlama, ref_dir());
    const Curve reference = train(ref_cfg, MPI_COMM_SELF);
    std::vector<Layout3> layouts = small_layouts(world);
    if (world == 4) layouts.push_back({1, 1, 4});
    for (const Layout3& L : layouts) {
      RunConfig cfg = in_layout(ref_cfg, L, dp_dir());
      cfg.sequence_parallel = L.tp > 1;
      const Curve got = train(cfg, MPI_COMM_WORLD);
      const std::string what = std::string("MoE ") + model::arch_name(arch) + " " + L.str();
      for (size_t s = 0; s < reference.losses.size(); ++s) {
        EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what << " step " << s + 1;
        EXPECT_NEAR(got.moe_aux[s], reference.moe_aux[s], 1e-5 * reference.moe_aux[s]) << what << " step " << s + 1;
        EXPECT_NEAR(got.moe_load[s], reference.moe_load[s], 1e-9) << what << " step " << s + 1;
      }
      EXPECT_LT(parameter_error(got, reference), 1e-5) << what;
    }
  }
}

// Expert parallelism: each MoE layer's experts split over ep of the dp ranks, tokens traded by
// all-to-all, expert gradients reduced (and ZeRO-1 sharded) over the expert-data-parallel
// group: dropless and capacity-limited MoE in every (dp, tp, pp, ep) that fits the world give
// the single-rank curve.
TEST_F(LayoutInvariance, ExpertParallelMatchesSingleRank) {
  struct Layout4 {
    int dp, tp, pp, ep;
  };
  const std::vector<Layout4> all = {{2, 1, 1, 2}, {2, 1, 2, 2}, {2, 2, 1, 2}, {4, 1, 1, 4}, {4, 1, 1, 2},
                                    {4, 1, 2, 2}, {4, 2, 1, 4}, {2, 2, 2, 2}, {8, 1, 1, 4}};
  // Llama (shared expert, z-loss), GPT-2 (every second layer, capacity 1), and Llama with LoRA
  // on attention and the experts' projections (the adapters of each expert live with it).
  for (const std::string variant : {"llama", "gpt2", "lora"}) {
    RunConfig ref_cfg = moe_run(variant != "gpt2", ref_dir());
    if (variant == "lora") ref_cfg.model.lora = {.r = 4, .alpha = 8, .targets = "q,v,gate,up,down"};
    ref_cfg.model.resolve();
    ref_cfg.train.steps = variant == "lora" ? 10 : 20;
    const Curve reference = train(ref_cfg, MPI_COMM_SELF);
    for (const Layout4& L : all) {
      if (L.dp * L.tp * L.pp != world) continue;
      RunConfig cfg = in_layout(ref_cfg, {L.dp, L.tp, L.pp}, dp_dir());
      cfg.layout.ep = L.ep;
      cfg.sequence_parallel = L.tp > 1;
      cfg.comm.bucket_mb = 0.05;  // several buckets of each kind in flight
      const Curve got = train(cfg, MPI_COMM_WORLD);
      std::ostringstream what;
      what << "MoE " << variant << " (dp, tp, pp, ep) = (" << L.dp << ", " << L.tp << ", " << L.pp
           << ", " << L.ep << ")";
      for (size_t s = 0; s < reference.losses.size(); ++s) {
        EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what.str() << " step " << s + 1;
        EXPECT_NEAR(got.moe_aux[s], reference.moe_aux[s], 1e-5 * reference.moe_aux[s]) << what.str() << " step " << s + 1;
      }
      EXPECT_LT(parameter_error(got, reference), 1e-5) << what.str();
    }
  }
}

// Dropout masks are keyed by the global index of each element, so dp changes nothing either.
TEST_F(LayoutInvariance, DataParallelWithDropout) {
  RunConfig ref_cfg = tiny_run(1, ref_dir());
  ref_cfg.model.dropout = 0.1;
  const Curve reference = train(ref_cfg, MPI_COMM_SELF);
  RunConfig cfg = tiny_run(world, dp_dir());
  cfg.model.dropout = 0.1;
  cfg.train.micro_batch = 1;
  const Curve got = train(cfg, MPI_COMM_WORLD);
  for (size_t s = 0; s < reference.losses.size(); ++s)
    EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << "step " << s + 1;
  EXPECT_LT(testing::relative_error(got.params, reference.params), 1e-5);
}

// Sequence parallelism with dropout: each rank drops the elements of its own rows, keyed by
// their global index, so the masks equal the single rank's.
TEST_F(LayoutInvariance, SequenceParallelWithDropout) {
  RunConfig ref_cfg = tiny_run(1, ref_dir());
  ref_cfg.model.arch = model::Arch::kGPT2;
  ref_cfg.model.kv_heads = 4;
  ref_cfg.model.tie_embeddings = true;
  ref_cfg.model.dropout = 0.1;
  ref_cfg.model.layers = 4;  // pp up to 4
  ref_cfg.model.resolve();
  const Curve reference = train(ref_cfg, MPI_COMM_SELF);
  RunConfig cfg = ref_cfg;
  cfg.log.run_dir = dp_dir();
  cfg.layout = {.dp = 1, .tp = 2, .pp = world / 2};
  cfg.sequence_parallel = true;
  const Curve got = train(cfg, MPI_COMM_WORLD);
  for (size_t s = 0; s < reference.losses.size(); ++s)
    EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << "step " << s + 1;
  EXPECT_LT(parameter_error(got, reference), 1e-5);
}

// Activation recompute reruns the same kernels on the same inputs: full and selective give
// bitwise the losses and parameters of none, under pipeline and tensor (sequence) parallelism,
// with dropout (masks recomputed from their keys).
TEST_F(LayoutInvariance, RecomputeIsBitwiseIdentical) {
  for (int tp : {1, 2}) {
    if (world % tp) continue;
    RunConfig base = tiny_run(world, dp_dir());
    base.model.arch = model::Arch::kGPT2;
    base.model.kv_heads = 4;
    base.model.tie_embeddings = true;
    base.model.layers = 8;  // pp up to 8
    base.model.dropout = 0.1;
    base.model.resolve();
    base.layout = {.dp = 1, .tp = tp, .pp = world / tp};
    base.sequence_parallel = tp > 1;
    base.train.steps = 6;
    const Curve none = train(base, MPI_COMM_WORLD);
    for (model::Recompute mode : {model::Recompute::kSelective, model::Recompute::kFull}) {
      RunConfig cfg = base;
      cfg.recompute = mode;
      const Curve got = train(cfg, MPI_COMM_WORLD);
      EXPECT_EQ(got.losses, none.losses) << model::recompute_name(mode) << " tp " << tp;
      EXPECT_EQ(got.params, none.params) << model::recompute_name(mode) << " tp " << tp;
    }
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// bf16 GEMM inputs: rounding is per element and deterministic, but fp32 accumulation inside a
// GEMM of another shape (fewer rows per rank, a K split over tp) may sum in another order, and
// an activation then near a bf16 rounding boundary moves by one bf16 step (2^-8 relative).
// Measured after 20 steps: losses within ~1e-5, parameters ~1.5e-4 (relative L2); the bounds
// are 1e-4 and 1e-3, a quarter of a bf16 step.
TEST_F(LayoutInvariance, BFloat16MatchesSingleRankWithinItsTolerance) {
  RunConfig ref_cfg = tiny_run(1, ref_dir());
  ref_cfg.train.precision = DType::kBF16;
  const Curve reference = train(ref_cfg, MPI_COMM_SELF);
  RunConfig cfg = ref_cfg;
  cfg.log.run_dir = dp_dir();
  cfg.layout = {.dp = world / 2, .tp = 2, .pp = 1};
  const Curve got = train(cfg, MPI_COMM_WORLD);
  for (size_t s = 0; s < reference.losses.size(); ++s)
    EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-4 * reference.losses[s]) << "step " << s + 1;
  EXPECT_LT(parameter_error(got, reference), 1e-3);
}

// Fine-tuning data: prompts are not trained on, so micro-batches hold unequal numbers of valid
// targets. The loss is normalised by the global batch's count, so dp still changes nothing.
TEST_F(LayoutInvariance, DataParallelWithLossMasks) {
  std::string shards = "/tmp/trident_masks_XXXXXX";
  if (rank == 0) {
    shards = mkdtemp(shards.data());
    std::ofstream jsonl(shards + "/tasks.jsonl");
    for (int i = 0; i < 400; ++i) {
      // Prompts of 5 to 120 characters, answers of 3 to 40: masks cover very different shares.
      jsonl << "{\"input\": \"Q" << i << ": " << std::string(5 + (i * 37) % 115, char('a' + i % 26))
            << "\", \"output\": \"A: " << i * i << std::string((i * 11) % 37, 'z') << "\"}\n";
    }
    jsonl.close();
    data::PrepOptions prep;
    prep.inputs = {shards + "/tasks.jsonl"};
    prep.output = shards + "/tasks";
    data::prepare_shards(prep);
  }
  char path[64] = {};
  std::snprintf(path, sizeof path, "%s", shards.c_str());
  MPI_Bcast(path, sizeof path, MPI_CHAR, 0, MPI_COMM_WORLD);
  shards = path;

  RunConfig ref_cfg = tiny_run(1, ref_dir());
  ref_cfg.data.train = shards + "/tasks";
  const Curve reference = train(ref_cfg, MPI_COMM_SELF);
  for (int zero : {0, 1}) {
    RunConfig cfg = tiny_run(world, dp_dir());
    cfg.data.train = shards + "/tasks";
    cfg.zero = zero;
    cfg.comm.bucket_mb = 0.05;
    const Curve got = train(cfg, MPI_COMM_WORLD);
    for (size_t s = 0; s < reference.losses.size(); ++s)
      EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << "zero " << zero << " step " << s + 1;
    EXPECT_LT(testing::relative_error(got.params, reference.params), 1e-5) << "zero " << zero;
  }
  MPI_Barrier(MPI_COMM_WORLD);
  if (rank == 0) std::filesystem::remove_all(shards);
}

// LoRA (adapters on every projection, the base frozen; Llama with lora.dropout, whose masks on
// row-parallel shards must land on the same global elements) in every layout that fits the world,
// (2, 2, 2) among them: the single-rank losses and adapters; every frozen weight bitwise what
// initialisation gave it, after training.
TEST_F(LayoutInvariance, LoraMatchesSingleRank) {
  // Llama with q, v only: the inputs of the adapter-less projections are not kept.
  const std::pair<model::Arch, std::string> cases[] = {
      {model::Arch::kGPT2, "all"}, {model::Arch::kLlama, "all"}, {model::Arch::kLlama, "q,v"}};
  for (const auto& [arch, targets] : cases) {
    RunConfig ref_cfg = tiny_run(1, ref_dir());
    ref_cfg.model.arch = arch;
    ref_cfg.model.layers = 4;
    ref_cfg.model.kv_heads = arch == model::Arch::kLlama ? 2 : 4;
    ref_cfg.model.tie_embeddings = arch == model::Arch::kGPT2;
    ref_cfg.model.ffn_hidden = 0;
    ref_cfg.model.lora = {.r = 4, .alpha = 8,
                          .targets = targets != "all"                ? targets
                                     : arch == model::Arch::kLlama ? "q,k,v,o,gate,up,down"
                                                                   : "q,k,v,o,up,down",
                          .dropout = arch == model::Arch::kLlama && targets == "all" ? 0.1 : 0.0};
    ref_cfg.model.resolve();
    ref_cfg.train.steps = 10;
    const Curve reference = train(ref_cfg, MPI_COMM_SELF);
    for (const Layout3& L : small_layouts(world)) {
      RunConfig cfg = in_layout(ref_cfg, L, dp_dir());
      cfg.sequence_parallel = L.tp > 1;
      std::ostringstream what;
      what << "LoRA " << model::arch_name(arch) << " on " << targets << " " << L.str();
      auto ops = make_cpu_ops(1);
      dist::Topology topology(cfg.layout, MPI_COMM_WORLD);
      Logger quiet(/*rank=*/1);
      RunBuilder builder(cfg, *ops, topology, quiet);
      Trainer trainer(builder);
      std::map<std::string, std::vector<double>> initial;
      for (const auto& p : builder.model().params().all())
        if (!p->trainable()) initial[p->spec.name] = testing::to_vector(p->value);
      Curve got;
      for (int64_t s = 0; s < cfg.train.steps; ++s) got.losses.push_back(builder.train_step(s).loss);
      for (const auto& p : builder.model().params().all()) {
        if (!p->trainable()) {
          EXPECT_EQ(testing::to_vector(p->value), initial.at(p->spec.name)) << what.str() << " " << p->spec.name;
          continue;
        }
        auto& elements = got.by_name[p->spec.name];
        for (int64_t i = 0; i < p->value.numel(); ++i)
          elements.emplace_back(model::ParamStore::global_index(*p, i), testing::element(p->value, i));
      }
      EXPECT_EQ(builder.model().params().numel() > 0, true);
      for (size_t s = 0; s < reference.losses.size(); ++s)
        EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what.str() << " step " << s + 1;
      EXPECT_LT(parameter_error(got, reference), 1e-5) << what.str();
      if (targets == "all") {
        EXPECT_LT(reference.losses.back(), reference.losses.front() - 0.05) << "LoRA did not train";
      }
    }
  }
}

// LISA (2 of 4 blocks drawn every 3 steps) in every layout that fits the world: the
// single-rank losses and parameters. On one rank: the optimizer holds moments for exactly the
// trained parameters, idle blocks do not move within their period, and a run stopped mid-period
// and resumed from its checkpoint continues exactly as the uninterrupted one.
TEST_F(LayoutInvariance, LisaMatchesSingleRankAndResumes) {
  RunConfig ref_cfg = tiny_run(1, ref_dir());
  ref_cfg.model.layers = 4;
  ref_cfg.model.resolve();
  ref_cfg.lisa = {.enabled = true, .layers = 2, .interval = 3};
  ref_cfg.train.steps = 9;
  const Curve reference = train(ref_cfg, MPI_COMM_SELF);
  EXPECT_LT(reference.losses.back(), reference.losses.front() - 0.05) << "LISA did not train";

  if (rank == 0) {  // memory, idle blocks and resume on one rank
    auto ops = make_cpu_ops(1);
    dist::Topology topology(ref_cfg.layout, MPI_COMM_SELF);
    Logger quiet(/*rank=*/1);
    RunConfig cfg = ref_cfg;
    cfg.log.run_dir = dir + "_resume";
    cfg.checkpoint.resume = "none";
    std::vector<double> losses;
    {
      RunBuilder builder(cfg, *ops, topology, quiet);
      Trainer t(builder);
      const LisaSchedule lisa(cfg.lisa, cfg.model.layers, cfg.train.seed);
      for (int64_t s = 0; s < 5; ++s) {
        std::map<std::string, std::vector<double>> before;
        for (const auto& p : builder.model().params().all()) before[p->spec.name] = testing::to_vector(p->value);
        losses.push_back(builder.train_step(s).loss);
        size_t trained = 0;
        for (const auto& p : builder.model().params().all()) {
          const bool trains = lisa.trains(p->spec.name, s, cfg.model.tie_embeddings);
          EXPECT_EQ(p->idle, !trains) << p->spec.name << " step " << s;
          if (trains) trained += size_t(p->value.numel());
          else EXPECT_EQ(testing::to_vector(p->value), before[p->spec.name]) << p->spec.name << " moved while idle";
        }
        EXPECT_EQ(builder.optimizer().state_bytes(), 2 * sizeof(float) * trained) << "step " << s;
      }
      builder.checkpointer().save(5, {});  // mid-period: steps 3..5 are one period
      builder.checkpointer().wait();
    }
    cfg.checkpoint.resume = "auto";
    RunBuilder resumed_builder(cfg, *ops, topology, quiet);
    Trainer resumed(resumed_builder);
    EXPECT_EQ(resumed.start_step(), 5);
    for (int64_t s = 5; s < cfg.train.steps; ++s) losses.push_back(resumed_builder.train_step(s).loss);
    for (size_t s = 0; s < losses.size(); ++s)
      EXPECT_NEAR(losses[s], reference.losses[s], 1e-12 * reference.losses[s]) << "resumed run, step " << s + 1;
    std::filesystem::remove_all(cfg.log.run_dir);
  }

  for (const Layout3& L : small_layouts(world)) {
    const Curve got = train(in_layout(ref_cfg, L, dp_dir()), MPI_COMM_WORLD);
    const std::string what = "LISA " + L.str();
    for (size_t s = 0; s < reference.losses.size(); ++s)
      EXPECT_NEAR(got.losses[s], reference.losses[s], 1e-5 * reference.losses[s]) << what << " step " << s + 1;
    EXPECT_LT(parameter_error(got, reference), 1e-5) << what;
  }
}

}  // namespace
}  // namespace trident::train
