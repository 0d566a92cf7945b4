// Preemption: SIGTERM or SIGUSR1 (what Slurm sends with --signal, or before a time limit) asks
// the run to finish its current step, write a checkpoint and exit 0. The signals are blocked
// in every thread from the start (before MPI and OpenMP create theirs, which inherit the mask),
// so no handler ever runs inside MPI, OpenMP or the allocator; one thread (SignalWatch) waits
// for them and the Trainer reads its flag between steps. What a blocked signal must not do is
// leave a run deaf: a second SIGTERM (or SIGINT), a first one while this rank has waited for a
// peer longer than kStuckWaitSeconds, or a step that does not end within kGraceSeconds of the
// signal end the job at once with a message (MPI_Abort, exit code 143), without a checkpoint.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <mutex>
#include <thread>

#include "trident/dist/watchdog.hpp"

namespace trident::train {

// Blocks SIGTERM, SIGUSR1 and SIGINT in the calling thread and the threads it creates later.
// Call first thing in main, before MPI_Init.
void block_preemption_signals();

class SignalWatch {
 public:
  // Slurm's --signal=B:USR1@120 leaves two minutes before the time limit: a step and its
  // checkpoint must fit in them.
  static constexpr double kGraceSeconds = 120;
  static constexpr double kStuckWaitSeconds = 10;

  // Starts the waiting thread (the signals must be blocked already). watchdog (nullable) says
  // whether this rank is stuck waiting for a peer.
  SignalWatch(int world_rank, dist::Watchdog* watchdog);
  ~SignalWatch();
  SignalWatch(const SignalWatch&) = delete;
  SignalWatch& operator=(const SignalWatch&) = delete;

  // A preemption signal arrived (it stays set). The Trainer checks between steps.
  bool requested() const { return requested_; }
  // The Trainer is acting on it (its checkpoint follows): the grace timer stops.
  void acknowledge();
  // The step now running, for the message (1-based).
  void set_step(int64_t step) { step_ = step; }

 private:
  void run();
  [[noreturn]] void end_now(const char* why);

  int world_rank_;
  dist::Watchdog* watchdog_;
  std::atomic<bool> requested_{false}, acknowledged_{false}, stop_{false};
  std::atomic<int64_t> step_{0};
  std::thread thread_;
};

}  // namespace trident::train
