// Enumerates layouts: tp within a node dividing the heads, pp dividing the layers, dp the rest
// (and for MoE models ep dividing dp and the experts); micro-batch sizes dividing the
// per-replica batch; 1F1B, GPipe and interleaved schedules.
#include "trident/plan/search.hpp"

#include <algorithm>

namespace trident::plan {

namespace {

std::vector<int> divisors(long n, long limit) {
  std::vector<int> d;
  for (long i = 1; i <= n && i <= limit; ++i)
    if (n % i == 0) d.push_back(static_cast<int>(i));
  return d;
}

}  // namespace

SearchResult search_layouts(const ModelShape& m, const Cluster& c, const SearchSpace& space) {
  SearchResult result;
  std::vector<Recompute> recomputes = {Recompute::kNone, Recompute::kSelective, Recompute::kFull};
  if (space.recompute) recomputes = {*space.recompute};
  for (int tp : divisors(space.ranks, c.devices_per_node)) {
    if (m.heads % tp || m.kv() % tp || m.ffn % tp) continue;
    for (int pp : divisors(space.ranks / tp, m.layers)) {
      if (m.layers % pp) continue;  // uneven stages only slow the slowest one down
      const int dp = space.ranks / (tp * pp);
      if (space.global_batch % dp) continue;
      // Expert parallelism (MoE models): every divisor of dp that splits the experts evenly.
      std::vector<int> eps = {1};
      if (m.experts > 0) eps = divisors(dp, m.experts);
      for (int ep : eps) {
        const long per_replica = space.global_batch / dp;
        for (int mb : divisors(per_replica, space.max_micro_batch)) {
          const long micro_batches = per_replica / mb;
          // Schedules: one entry for pp = 1; 1F1B (GPipe only when it is the sole option is never
          // faster, and it holds more memory, so it is left out), interleaved with v chunks.
          std::vector<std::pair<Schedule, int>> schedules = {{Schedule::kOneFOneB, 1}};
          if (pp > 1)
            for (int v = 2; v <= space.max_virtual_stages; ++v)
              if (m.layers % (pp * v) == 0 && micro_batches % pp == 0) schedules.push_back({Schedule::kInterleaved, v});
          for (auto [schedule, v] : schedules)
            for (Recompute rc : recomputes) {
              Layout l;
              l.dp = dp, l.tp = tp, l.pp = pp, l.ep = ep, l.micro_batch = mb, l.virtual_stages = v, l.schedule = schedule;
              l.recompute = rc;
              l.sequence_parallel = tp > 1 && space.sequence_parallel.value_or(true);
              l.zero = dp > 1 && space.zero.value_or(true);
              l.dp_overlap = space.dp_overlap;
              l.hierarchical_dp = space.hierarchical_dp;
              if (!layout_problem(m, l, c, space.global_batch).empty()) continue;
              StepEstimate e = estimate_step(m, l, c, space.global_batch);
              ++result.considered;
              if (e.fits) {
                result.fitting.push_back(std::move(e));
              } else {
                ++result.too_big;
                if (!result.smallest_misfit || e.memory.total() < result.smallest_misfit->memory.total())
                  result.smallest_misfit = std::move(e);
              }
            }
        }
      }
    }
  }
  std::stable_sort(result.fitting.begin(), result.fitting.end(),
                   [](const StepEstimate& a, const StepEstimate& b) { return a.step_s < b.step_s; });
  return result;
}

}  // namespace trident::plan
