// parallel.layout = auto: the planner chooses dp, tp, pp and the micro-batch for the job's world
// size, the model and the global batch, on parallel.cluster (the local machine from its
// calibration, or a GPU preset), keeping what the configuration fixed (schedule, virtual stages,
// recompute, sequence parallelism, ZeRO) and never a larger micro-batch than train.micro_batch.
#include <mpi.h>

#include <filesystem>
#include <thread>

#include "config_values.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/plan/search.hpp"

namespace trident::cli {

namespace {

// Nominal figures of a CPU core, for ranking layouts when the machine has no calibration file
// (`trident plan --calibrate` measures the real ones): an AVX2/AVX-512 FMA core, its GEMMs at
// 80% of it, a flash-style attention at 30%, a memory stream shared by the cores.
plan::LocalCalibration nominal_calibration() {
  plan::LocalCalibration c;
  c.cores = std::max(1u, std::thread::hardware_concurrency());
  c.peak_fp32 = 64e9 * c.cores;
  c.peak_bf16 = c.peak_fp32;
  c.gemm_fp32 = c.gemm_bf16 = 0.8 * c.peak_fp32;
  c.attention_fp32 = 0.3 * c.peak_fp32;
  c.memory_bandwidth = 20e9;
  c.kernel_overhead_s = 5e-6;
  c.gemm_overhead_s = 2e-5;
  c.base_rss_bytes = 200e6;
  return c;
}

// Ranks of this job on this node (every rank calls it: collective when MPI runs).
int ranks_per_node(int world_size) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  return initialized ? dist::ranks_on_this_node() : world_size;
}

plan::Cluster auto_cluster(const std::string& name, int world_size, bool bf16) {
  if (name != "local") return plan::cluster_preset(name);
  const std::string path = calibration_path();
  const bool measured = std::filesystem::exists(path);
  return plan::local_cluster(measured ? plan::read_calibration(path) : nominal_calibration(),
                             ranks_per_node(world_size), bf16);
}

}  // namespace

void choose_auto_layout(const Values& v, train::RunConfig& c, int world_size,
                        const std::function<bool(const train::RunConfig&)>& valid) {
  const std::string cluster_name = v.str("parallel.cluster");
  for (const char* key : {"parallel.dp", "parallel.tp", "parallel.pp", "parallel.microbatches"})
    TRIDENT_CONFIG_CHECK(v.str(key) == (std::string(key) == "parallel.microbatches" ? "0" : "1"), key, " = ",
                         v.str(key), " with parallel.layout = auto: the planner chooses it (give one or the other)");
  TRIDENT_CONFIG_CHECK(!c.model.moe.enabled() || c.layout.ep == 1,
                       "parallel.layout = auto with parallel.ep: the planner chooses dp (leave parallel.ep = 1)");
  plan::SearchSpace space;
  space.ranks = world_size;
  space.global_batch = c.train.global_batch;
  space.recompute = c.recompute == model::Recompute::kFull        ? plan::Recompute::kFull
                    : c.recompute == model::Recompute::kSelective ? plan::Recompute::kSelective
                                                                  : plan::Recompute::kNone;
  space.sequence_parallel = c.sequence_parallel;
  space.zero = c.zero == 1;
  space.dp_overlap = c.comm.overlap;
  space.hierarchical_dp = c.comm.hierarchical != train::CommConfig::Hierarchical::kOff;
  space.max_micro_batch = c.train.micro_batch;
  space.max_virtual_stages = c.virtual_stages;
  const plan::Cluster cluster = auto_cluster(cluster_name, world_size, c.train.precision == DType::kBF16);
  const plan::SearchResult found = plan::search_layouts(c.model.plan_shape(), cluster, space);
  // The configured schedule and virtual stages only; the first of those the planner ranks.
  const plan::StepEstimate* best = nullptr;
  for (const plan::StepEstimate& e : found.fitting) {
    const plan::Layout& l = e.layout;
    const bool interleaved = c.schedule == train::ScheduleKind::kInterleaved;
    if (l.pp > 1 && (l.schedule == plan::Schedule::kInterleaved) != interleaved) continue;
    if (l.pp > 1 && interleaved && l.virtual_stages != c.virtual_stages) continue;
    train::RunConfig trial = c;
    trial.layout.dp = l.dp, trial.layout.tp = l.tp, trial.layout.pp = l.pp;
    trial.train.micro_batch = l.micro_batch;
    if (!valid(trial)) continue;
    best = &e;
    break;
  }
  TRIDENT_CONFIG_CHECK(best != nullptr, "parallel.layout = auto: no layout of ", world_size, " ranks fits on ",
                       cluster.name, " for this model and train.global_batch = ", c.train.global_batch, " (",
                       found.considered, " valid, ", found.too_big, " over memory); give parallel.dp/tp/pp");
  const plan::Layout& l = best->layout;
  c.layout.dp = l.dp, c.layout.tp = l.tp, c.layout.pp = l.pp;
  c.train.micro_batch = l.micro_batch;
  c.layout_note = detail::concat("parallel.layout = auto: dp ", l.dp, " tp ", l.tp, " pp ", l.pp, ", micro_batch ",
                                 l.micro_batch, " (", c.train.global_batch / (l.dp * l.micro_batch),
                                 " micro-batches per step), the planner's best of ", found.considered, " layouts on ",
                                 cluster.name, ": ", best->step_s, " s per step predicted");
}

}  // namespace trident::cli
