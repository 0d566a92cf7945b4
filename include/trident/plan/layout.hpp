// One candidate way to run a training step: the 3D grid, the micro-batch, the pipeline schedule
// and the memory savers. The planner's own types (plan sits below train, docs/design.md section 1).
#pragma once
#include <string>

namespace trident::plan {

enum class Schedule { kGPipe, kOneFOneB, kInterleaved };
enum class Recompute { kNone, kSelective, kFull };

struct Layout {
  int dp = 1, tp = 1, pp = 1;
  int ep = 1;               // expert parallelism: a divisor of dp (MoE models)
  int micro_batch = 1;      // sequences per micro-batch
  int virtual_stages = 1;   // v: model chunks per pipeline rank (interleaved only)
  Schedule schedule = Schedule::kOneFOneB;
  Recompute recompute = Recompute::kNone;
  bool sequence_parallel = false;
  bool zero = false;        // ZeRO-1: optimizer state (and fp32 master) sharded over dp
  // Gradient reduction started during the last backward, bucket by bucket (DDP); under ZeRO-1
  // also the parameter all-gather overlapped with the next forward (Megatron-Core's distributed
  // optimizer: --overlap-grad-reduce --overlap-param-gather).
  bool dp_overlap = true;
  // Node-aware data-parallel reduction (trident's comm.hierarchical): where the dp group spans
  // nodes with the same number L > 1 of its ranks on each, a bucket is reduce-scattered inside the
  // node, its 1/L shard all-reduced (ZeRO-1: reduce-scattered) across nodes, then all-gathered
  // inside the node. true = auto (on where that holds); false = one flat ring.
  bool hierarchical_dp = true;

  int ranks() const { return dp * tp * pp; }
  // "dp=32 tp=8 pp=8 mb=2 interleaved v=2 sp full zero1"
  std::string describe() const;
};

const char* schedule_name(Schedule s);
const char* recompute_name(Recompute r);
Schedule schedule_from_name(const std::string& name);    // ConfigError when unknown
Recompute recompute_from_name(const std::string& name);  // ConfigError when unknown

}  // namespace trident::plan
