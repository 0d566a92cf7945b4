// Building the per-rank action lists of the pipeline schedules and partitioning layers.
#include "trident/train/pipeline/pipeline_schedule.hpp"

#include <algorithm>
#include <limits>

#include "trident/core/error.hpp"

namespace trident::train {

ScheduleKind schedule_from_name(const std::string& name) {
  if (name == "gpipe") return ScheduleKind::kGPipe;
  if (name == "1f1b") return ScheduleKind::kOneFOneB;
  if (name == "interleaved") return ScheduleKind::kInterleaved;
  throw ConfigError("parallel.schedule: unknown schedule '" + name + "' (expected gpipe, 1f1b or interleaved)");
}

Partition partition_from_name(const std::string& name) {
  if (name == "uniform") return Partition::kUniform;
  if (name == "balanced") return Partition::kBalanced;
  if (name == "balanced_sublayer") return Partition::kBalancedSublayer;
  throw ConfigError("parallel.partition: unknown partition '" + name +
                    "' (expected uniform, balanced or balanced_sublayer)");
}

const char* partition_name(Partition partition) {
  switch (partition) {
    case Partition::kUniform: return "uniform";
    case Partition::kBalanced: return "balanced";
    case Partition::kBalancedSublayer: return "balanced_sublayer";
  }
  return "?";
}

const char* schedule_name(ScheduleKind kind) {
  switch (kind) {
    case ScheduleKind::kGPipe: return "gpipe";
    case ScheduleKind::kOneFOneB: return "1f1b";
    case ScheduleKind::kInterleaved: return "interleaved";
  }
  return "?";
}

namespace {

// Appends one unit of work with the communication around it.
struct Builder {
  int pp, stage, chunks;
  std::vector<Action> out;
  bool first_virtual(int chunk) const { return stage == 0 && chunk == 0; }
  bool last_virtual(int chunk) const { return stage == pp - 1 && chunk == chunks - 1; }
  void forward(int mb, int chunk) {
    if (!first_virtual(chunk)) out.push_back({ActionKind::kRecvAct, mb, chunk});
    out.push_back({ActionKind::kForward, mb, chunk});
    if (!last_virtual(chunk)) out.push_back({ActionKind::kSendAct, mb, chunk});
  }
  void backward(int mb, int chunk) {
    if (!last_virtual(chunk)) out.push_back({ActionKind::kRecvGrad, mb, chunk});
    out.push_back({ActionKind::kBackward, mb, chunk});
    if (!first_virtual(chunk)) out.push_back({ActionKind::kSendGrad, mb, chunk});
  }
};

}  // namespace

std::vector<Action> build_schedule(ScheduleKind kind, int pp, int stage, int m, int v) {
  TRIDENT_CHECK(pp >= 1 && stage >= 0 && stage < pp && m >= 1 && v >= 1, "schedule pp=", pp, " stage=", stage,
                " m=", m, " v=", v);
  if (kind != ScheduleKind::kInterleaved) v = 1;
  Builder b{pp, stage, v, {}};
  if (kind == ScheduleKind::kGPipe) {
    for (int mb = 0; mb < m; ++mb) b.forward(mb, 0);
    for (int mb = 0; mb < m; ++mb) b.backward(mb, 0);
    return b.out;
  }
  if (kind == ScheduleKind::kOneFOneB) {
    const int warmup = std::min(pp - stage - 1, m);
    int next_forward = 0, next_backward = 0;
    for (; next_forward < warmup; ++next_forward) b.forward(next_forward, 0);
    while (next_forward < m) {
      b.forward(next_forward++, 0);
      b.backward(next_backward++, 0);
    }
    while (next_backward < m) b.backward(next_backward++, 0);
    return b.out;
  }
  // Interleaved: the k-th forward unit on a rank is micro-batch
  // (k / (pp*v)) * pp + k % pp of chunk (k / pp) % v; backward units run the chunks in reverse.
  TRIDENT_CHECK(m % pp == 0, "the interleaved schedule needs micro-batches (", m, ") divisible by pp (", pp, ")");
  const int units = m * v;
  auto unit_mb = [&](int k) { return (k / (pp * v)) * pp + k % pp; };
  auto forward_chunk = [&](int k) { return (k / pp) % v; };
  auto backward_chunk = [&](int k) { return v - 1 - (k / pp) % v; };
  const int warmup = std::min(units, (pp - stage - 1) * 2 + (v - 1) * pp);
  int f = 0, bk = 0;
  for (; f < warmup; ++f) b.forward(unit_mb(f), forward_chunk(f));
  while (f < units) {
    b.forward(unit_mb(f), forward_chunk(f));
    ++f;
    b.backward(unit_mb(bk), backward_chunk(bk));
    ++bk;
  }
  for (; bk < units; ++bk) b.backward(unit_mb(bk), backward_chunk(bk));
  return b.out;
}

int max_in_flight(const std::vector<Action>& actions, int chunks) {
  std::vector<int> live(static_cast<size_t>(chunks), 0);
  int most = 0;
  for (const Action& a : actions) {
    if (a.kind == ActionKind::kForward) most = std::max(most, ++live[a.chunk]);
    if (a.kind == ActionKind::kBackward) --live[a.chunk];
  }
  return most;
}

double theoretical_bubble(ScheduleKind kind, int pp, int m, int v) {
  const int chunks = kind == ScheduleKind::kInterleaved ? v : 1;
  return double(pp - 1) / double(chunks * m + pp - 1);
}

std::vector<std::pair<int, int>> uniform_partition(int layers, int stages) {
  TRIDENT_CHECK(stages >= 1 && layers >= stages, layers, " layers cannot fill ", stages, " stages");
  std::vector<std::pair<int, int>> out;
  int first = 0;
  for (int s = 0; s < stages; ++s) {
    const int n = layers / stages + (s < layers % stages ? 1 : 0);
    out.emplace_back(first, first + n);
    first += n;
  }
  return out;
}

std::vector<std::pair<int, int>> balanced_partition(const std::vector<double>& costs, int stages, double first_extra,
                                                     double last_extra) {
  const int n = static_cast<int>(costs.size());
  TRIDENT_CHECK(stages >= 1 && n >= stages, n, " layers cannot fill ", stages, " stages");
  std::vector<double> prefix(static_cast<size_t>(n) + 1, 0.0);
  for (int l = 0; l < n; ++l) prefix[l + 1] = prefix[l] + costs[l];
  // best[s][l]: smallest possible slowest-stage cost when stages 0..s-1 hold layers [0, l).
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<std::vector<double>> best(stages + 1, std::vector<double>(n + 1, inf));
  std::vector<std::vector<int>> cut(stages + 1, std::vector<int>(n + 1, -1));
  best[0][0] = 0;
  for (int s = 1; s <= stages; ++s)
    for (int l = s; l <= n - (stages - s); ++l)
      for (int k = s - 1; k < l; ++k) {
        if (best[s - 1][k] == inf) continue;
        double stage_cost = prefix[l] - prefix[k];
        if (s == 1) stage_cost += first_extra;
        if (s == stages) stage_cost += last_extra;
        const double worst = std::max(best[s - 1][k], stage_cost);
        if (worst < best[s][l]) {
          best[s][l] = worst;
          cut[s][l] = k;
        }
      }
  std::vector<std::pair<int, int>> out(static_cast<size_t>(stages));
  for (int s = stages, l = n; s >= 1; --s) {
    out[s - 1] = {cut[s][l], l};
    l = cut[s][l];
  }
  return out;
}

std::vector<double> stage_costs(const std::vector<std::pair<int, int>>& parts, const std::vector<double>& costs,
                                double first_extra, double last_extra) {
  std::vector<double> out;
  for (const auto& [first, last] : parts) {
    double sum = 0;
    for (int u = first; u < last; ++u) sum += costs.at(static_cast<size_t>(u));
    out.push_back(sum);
  }
  if (!out.empty()) {
    out.front() += first_extra;
    out.back() += last_extra;
  }
  return out;
}

}  // namespace trident::train
