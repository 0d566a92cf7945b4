// `trident train`: parse the configuration, set up MPI, the grid and the backend, then train.
#include <optional>
#include <cstdio>

#include "fault_injection.hpp"
#include "run_session.hpp"
#include "run_security.hpp"
#include "trident/cli/commands.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/core/log.hpp"
#include "trident/core/timer.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/train/preemption.hpp"
#include "trident/train/run_builder.hpp"
#include "trident/train/trainer.hpp"

namespace trident::cli {

namespace {

constexpr const char* kUsage =
    "usage: trident train --config FILE [--section.key=value ...]\n"
    "       mpirun -np N trident train --config FILE --parallel.dp=N";

bool wants_help(int argc, char** argv) {
  for (int i = 1; i < argc; ++i)
    if (std::string(argv[i]) == "--help" || std::string(argv[i]) == "-h") return true;
  return false;
}

}  // namespace

int run_train(int argc, char** argv) {
  if (wants_help(argc, argv)) {
    std::printf("%s\n", config_help(kUsage).c_str());
    return 0;
  }
  // Before MPI and OpenMP start their threads, which inherit the blocked mask.
  train::block_preemption_signals();
  dist::MpiSession mpi(&argc, &argv);
  Logger log(mpi.world_rank());
  train::RunConfig cfg;
  std::optional<RunSecurity> security;
  try {
    cfg = parse_run_config(argc, argv, mpi.world_size());
    TRIDENT_CONFIG_CHECK(!cfg.data.train.empty(), "data.train: no shard prefix given (training needs data)");
    security.emplace(cfg, argc, argv, mpi.world_rank(), log);  // before the run directory is made
  } catch (const ConfigError& e) {
    // Every rank parsed the same input and failed the same way: rank 0 reports, all exit 2.
    if (mpi.world_rank() == 0) std::fprintf(stderr, "trident train: error: %s\n", e.what());
    return 2;
  }
  try {
    FaultInjection faults = FaultInjection::from_environment(mpi.world_rank());
    RunSession session(cfg, MPI_COMM_WORLD, mpi.reductions(), log);
    train::SignalWatch signals(mpi.world_rank(), &session.watchdog());
    train::RunBuilder run(cfg, session.backend(), session.topology(), log, &faults);
    train::Trainer trainer(run, &signals);
    Stopwatch watch;
    const train::StepResult last = trainer.run();
    if (trainer.preempted())
      log.info("stopped at step ", trainer.steps_done(), " of ", cfg.train.steps, " (preempted) after ", watch.seconds(),
               " s; resume with checkpoint.resume = auto; run directory ", cfg.log.run_dir);
    else
      log.info("done: ", cfg.train.steps, " steps in ", watch.seconds(), " s, final loss ", last.loss,
               "; run directory ", cfg.log.run_dir);
    session.finish();
    return 0;
  } catch (const ConfigError& e) {
    mpi.abort(2, std::string("trident train: error: ") + e.what());
  } catch (const AgreedStop& e) {
    // Every rank reached the same verdict: one report, every rank exits with its code.
    if (mpi.world_rank() == 0) std::fprintf(stderr, "trident train: stopped: %s\n", e.what());
    return e.code();
  } catch (const std::exception& e) {
    mpi.abort(1, std::string("trident train: failed: ") + e.what());
  }
}

}  // namespace trident::cli
