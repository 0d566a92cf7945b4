// The set-up every model-running command shares (run_session.hpp).
#include "run_session.hpp"

#include "backend_select.hpp"
#include "rank_threads.hpp"

namespace trident::cli {

RunSession::RunSession(const train::RunConfig& cfg, MPI_Comm base, const dist::ReductionOps* reductions,
                       const Logger& log, bool describe)
    : threads_(compute_threads(cfg.train.threads)) {
  backend_ = select_backend(cfg.train.backend, threads_, cfg.train.precision, base, log);
  int world_rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &world_rank);
  watchdog_ = std::make_unique<dist::Watchdog>(cfg.comm.timeout_s, world_rank);
  topology_ = std::make_unique<dist::Topology>(cfg.layout, base, reductions);
  topology_->set_watchdog(watchdog_.get());
  attach_device_groups(*topology_, *backend_);
  if (!describe) return;
  log.info(topology_->describe());
  log.info("threads per rank: ", threads_);
}

RunSession::~RunSession() = default;

}  // namespace trident::cli
