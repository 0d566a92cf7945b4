// RunSession: what every command that runs a model sets up first, in this order: the backend
// (train.backend; its GEMM precision decided here, from train.precision), the watchdog
// (comm.timeout_s), the topology of cfg.layout over `base` reporting to it, the topology's GPU
// groups, and the lines that say so. Members go in reverse: the topology before the watchdog it
// reports to, the backend last.
//
// A command that succeeds ends with finish() (collective: ends the GPU groups explicitly, never
// from a destructor); one that fails aborts MPI instead, so no rank waits in a collective that
// another has left.
#pragma once
#include <mpi.h>

#include <memory>

#include "trident/backend/ops.hpp"
#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"
#include "trident/dist/watchdog.hpp"
#include "trident/train/run_config.hpp"

namespace trident::cli {

class RunSession {
 public:
  // Collective over MPI_COMM_WORLD (backend selection) and base. base: MPI_COMM_WORLD, or
  // MPI_COMM_SELF for a rank's own model (prep's scorer). describe: log the topology and the
  // threads per rank.
  RunSession(const train::RunConfig& cfg, MPI_Comm base, const dist::ReductionOps* reductions, const Logger& log,
             bool describe = true);
  ~RunSession();
  RunSession(const RunSession&) = delete;
  RunSession& operator=(const RunSession&) = delete;

  Ops& backend() { return *backend_; }
  dist::Watchdog& watchdog() { return *watchdog_; }
  dist::Topology& topology() { return *topology_; }
  int threads() const { return threads_; }  // CPU threads per rank
  // Collective: ends the GPU groups (the command's last collective work).
  void finish() { topology_->shutdown_device(); }

 private:
  int threads_;
  std::unique_ptr<Ops> backend_;
  std::unique_ptr<dist::Watchdog> watchdog_;
  std::unique_ptr<dist::Topology> topology_;
};

}  // namespace trident::cli
