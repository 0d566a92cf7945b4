// Threads per rank for the commands that compute (train, bench step, eval).
#pragma once
#include <sched.h>

#include <algorithm>
#include <cstdlib>
#include <thread>

#include "trident/dist/mpi_session.hpp"

namespace trident::cli {

// The configured number; else the cores the launcher bound this rank to (Slurm's
// --cpus-per-task, mpirun --bind-to); else the node's cores shared among its ranks.
inline int compute_threads(int configured) {
  if (configured > 0) return configured;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    const int bound = CPU_COUNT(&set);
    if (bound > 0 && bound < cores) return bound;
  }
  if (const char* per_task = std::getenv("SLURM_CPUS_PER_TASK")) {
    const int n = std::atoi(per_task);
    if (n > 0) return n;
  }
  return std::max(1, cores / dist::ranks_on_this_node());
}

}  // namespace trident::cli
