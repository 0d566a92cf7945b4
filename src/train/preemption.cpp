// SIGTERM / SIGUSR1 / SIGINT, blocked everywhere and waited for by one thread.
#include "trident/train/preemption.hpp"

#include <mpi.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <ctime>

namespace trident::train {

namespace {
sigset_t preemption_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  sigaddset(&set, SIGINT);
  return set;
}
}  // namespace

void block_preemption_signals() {
  const sigset_t set = preemption_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

SignalWatch::SignalWatch(int world_rank, dist::Watchdog* watchdog) : world_rank_(world_rank), watchdog_(watchdog) {
  thread_ = std::thread([this] { run(); });
}

SignalWatch::~SignalWatch() {
  stop_ = true;
  if (thread_.joinable()) thread_.join();  // it polls stop_ at least once a second
}

void SignalWatch::acknowledge() { acknowledged_ = true; }

void SignalWatch::end_now(const char* why) {
  std::fprintf(stderr, "[rank %d] %s at step %lld: ending the job now, without a checkpoint (the newest one stays)\n",
               world_rank_, why, static_cast<long long>(step_.load()));
  std::fflush(stderr);
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Abort(MPI_COMM_WORLD, 128 + SIGTERM);
  std::_Exit(128 + SIGTERM);
}

void SignalWatch::run() {
  const sigset_t set = preemption_signals();
  double since = 0;  // when the first signal arrived (MPI_Wtime)
  while (!stop_) {
    const timespec second{1, 0};
    const int sig = sigtimedwait(&set, nullptr, &second);
    const double now = MPI_Wtime();
    if (sig > 0) {
      if (requested_ && sig != SIGUSR1) end_now("a second SIGTERM or SIGINT arrived");
      if (sig == SIGINT) end_now("SIGINT arrived");
      if (!requested_) {
        requested_ = true;
        since = now;
        std::fprintf(stderr, "[rank %d] got %s at step %lld: checkpoint and stop after this step (a second SIGTERM "
                     "ends the job at once)\n", world_rank_, sig == SIGTERM ? "SIGTERM" : "SIGUSR1",
                     static_cast<long long>(step_.load()));
      }
    }
    if (!requested_ || acknowledged_) continue;
    if (watchdog_ && watchdog_->waiting_seconds() > kStuckWaitSeconds)
      end_now("a preemption signal arrived while this rank waits for a stuck peer");
    if (now - since > kGraceSeconds) end_now("the step did not end within 120 s of the preemption signal");
  }
}

}  // namespace trident::train
