// Pipeline schedules as plain lists of actions per rank, separate from the model and testable
// alone. With pp stages, v model chunks per rank (virtual stages, interleaved only) and m
// micro-batches per step, virtual stage j = chunk * pp + stage holds layers of
// partition[j]; activations flow from virtual stage j to j + 1.
//   gpipe:       all forwards, then all backwards (m micro-batches in flight).
//   1f1b:        PipeDream-flush: pp - stage - 1 warm-up forwards, then one forward, one
//                backward; at most pp - stage micro-batches in flight.
//   interleaved: Megatron's interleaved 1F1B over v chunks per rank (m % pp == 0): a smaller
//                bubble, (pp - 1) / (v*m + pp - 1) instead of (pp - 1) / (m + pp - 1).
#pragma once
#include <string>
#include <utility>
#include <vector>

namespace trident::train {

enum class ScheduleKind { kGPipe, kOneFOneB, kInterleaved };
ScheduleKind schedule_from_name(const std::string& name);
const char* schedule_name(ScheduleKind kind);

// parallel.partition: layers to the pp * v virtual stages: uniform, balanced by the planner's
// costs at block boundaries, or balanced at sub-layer boundaries (a stage may end between a
// block's attention and its MLP).
enum class Partition { kUniform, kBalanced, kBalancedSublayer };
Partition partition_from_name(const std::string& name);
const char* partition_name(Partition partition);

enum class ActionKind { kRecvAct, kForward, kSendAct, kRecvGrad, kBackward, kSendGrad };

struct Action {
  ActionKind kind;
  int micro_batch;
  int chunk;
  bool operator==(const Action&) const = default;
};

// This rank's actions for one optimizer step. Communication actions name the micro-batch and
// chunk they carry; the peer is the neighbouring virtual stage.
std::vector<Action> build_schedule(ScheduleKind kind, int pp, int stage, int micro_batches, int virtual_stages);

// Most micro-batches one chunk holds activations for at once under the schedule.
int max_in_flight(const std::vector<Action>& actions, int chunks);

// Bubble fraction in theory: (pp - 1) / (v * m + pp - 1) (v = 1 for gpipe and 1f1b).
double theoretical_bubble(ScheduleKind kind, int pp, int micro_batches, int virtual_stages);

// Layer (or sub-layer) ranges [first, last) of the pp * v virtual stages: uniform (earlier
// stages take one more layer when layers do not divide), or balanced by dynamic programming over
// per-unit costs to minimise the slowest stage (balanced_partition).
std::vector<std::pair<int, int>> uniform_partition(int layers, int stages);
// costs[l]: cost of layer l; first_extra / last_extra: cost the first / last stage carries
// besides its layers (embedding; final norm, head and loss); make_stage_plan takes them from the
// planner's cost model (plan::partition_costs). Every stage gets >= 1 layer.
std::vector<std::pair<int, int>> balanced_partition(const std::vector<double>& costs, int stages,
                                                     double first_extra, double last_extra);
// The cost of each stage of `parts` under those costs (its units plus the extras).
std::vector<double> stage_costs(const std::vector<std::pair<int, int>>& parts, const std::vector<double>& costs,
                                double first_extra, double last_extra);

}  // namespace trident::train
