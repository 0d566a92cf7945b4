// Watchdog: a thread per rank that notices when a blocking communication has waited longer than
// comm.timeout_s, prints which operation, which group, which peer ranks and the step, and ends
// the job with MPI_Abort (exit code 3) so the scheduler can requeue it, instead of hanging
// silently. It also guards the long phases of a rank's own work (a training step, a checkpoint
// written in the foreground or from the writer thread): one that runs past comm.timeout_s, stuck
// in a kernel or in I/O, is reported by what it is doing and ends the job the same way.
// Communicators report their blocking waits to it (Communicator::set_watchdog), and their GPU
// operations, which never block the host: the thread polls those until they complete, so a
// collective stuck on the GPU is reported by name too.
#pragma once
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

namespace trident::dist {

class Watchdog {
 public:
  // timeout_s <= 0: disabled (no thread).
  Watchdog(double timeout_s, int world_rank);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void set_step(int64_t step) { step_ = step; }
  // A blocking wait starts / ends (called by the communicator, one at a time per rank).
  void begin(std::string what);
  void end();
  // Seconds the blocking wait in progress has waited (0: none).
  double waiting_seconds();
  // A phase of this rank's own work starts / ends (any thread; several may overlap): returns
  // its id for end_phase. A no-op when disabled (id 0).
  uint64_t begin_phase(std::string what);
  void end_phase(uint64_t id);
  // An asynchronous operation of owner: done() (called from the watchdog's thread; it may throw
  // on a failed operation) must turn true within the timeout. A no-op when disabled.
  // what is shared: one string per communicator and operation, not one per call.
  void track(const void* owner, std::function<bool()> done, std::shared_ptr<const std::string> what);
  // Drops owner's operations (before owner goes away).
  void forget(const void* owner);

 private:
  struct Tracked {
    const void* owner;
    std::function<bool()> done;
    std::shared_ptr<const std::string> what;
    double since;
  };
  void run();
  // Caller holds mutex_. Drops completed operations; aborts the job on a failed or late one.
  void check_tracked();
  [[noreturn]] void abort_job(const std::string& what, const char* why, double waited, bool own_work = false);

  double timeout_s_;
  int world_rank_;
  std::atomic<int64_t> step_{0};
  std::mutex mutex_;
  std::condition_variable wake_;
  std::string what_;        // the wait in progress ("" = none)
  double started_ = 0;      // MPI_Wtime at its start
  std::deque<Tracked> tracked_;
  struct Phase {
    uint64_t id;
    std::string what;
    double since;
  };
  std::deque<Phase> phases_;
  uint64_t next_phase_ = 1;
  bool stop_ = false;
  std::thread thread_;
};

// One phase of a rank's work (a training step, a checkpoint write) under the watchdog (if any)
// for its scope.
class WatchdogPhase {
 public:
  WatchdogPhase(Watchdog* dog, std::string what) : dog_(dog), id_(dog ? dog->begin_phase(std::move(what)) : 0) {}
  ~WatchdogPhase() {
    if (dog_) dog_->end_phase(id_);
  }
  WatchdogPhase(const WatchdogPhase&) = delete;
  WatchdogPhase& operator=(const WatchdogPhase&) = delete;

 private:
  Watchdog* dog_;
  uint64_t id_;
};

// Reports one blocking wait to the watchdog (if any) for its scope.
class WatchdogScope {
 public:
  WatchdogScope(Watchdog* dog, const char* op, const std::string& group);
  ~WatchdogScope();
  WatchdogScope(const WatchdogScope&) = delete;
  WatchdogScope& operator=(const WatchdogScope&) = delete;

 private:
  Watchdog* dog_;
};

}  // namespace trident::dist
