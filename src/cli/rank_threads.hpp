// Threads per rank for the commands that compute (train, bench step).
#pragma once
#include <algorithm>
#include <thread>

#include "trident/dist/mpi_session.hpp"

namespace trident::cli {

// The configured number, or the node's cores shared among its ranks.
inline int compute_threads(int configured) {
  if (configured > 0) return configured;
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  return std::max(1, cores / dist::ranks_on_this_node());
}

}  // namespace trident::cli
