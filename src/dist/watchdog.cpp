// The communication watchdog thread.
#include "trident/dist/watchdog.hpp"

#include <mpi.h>

#include <chrono>
#include <cstdio>

namespace trident::dist {

Watchdog::Watchdog(double timeout_s, int world_rank) : timeout_s_(timeout_s), world_rank_(world_rank) {
  if (timeout_s_ > 0) thread_ = std::thread([this] { run(); });
}

Watchdog::~Watchdog() {
  {
    std::lock_guard<std::mutex> lock(mutex_);
    stop_ = true;
  }
  wake_.notify_all();
  if (thread_.joinable()) thread_.join();
}

void Watchdog::begin(std::string what) {
  std::lock_guard<std::mutex> lock(mutex_);
  what_ = std::move(what);
  started_ = MPI_Wtime();
}

void Watchdog::end() {
  std::lock_guard<std::mutex> lock(mutex_);
  what_.clear();
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  const auto poll = std::chrono::milliseconds(std::max(50, static_cast<int>(timeout_s_ * 1000 / 10)));
  while (!stop_) {
    wake_.wait_for(lock, poll);
    if (stop_ || what_.empty()) continue;
    const double waited = MPI_Wtime() - started_;
    if (waited < timeout_s_) continue;
    std::fprintf(stderr,
                 "[rank %d] watchdog: %s has waited %.1f s (comm.timeout_s = %g) at step %lld; a peer is stuck "
                 "or dead: aborting the job\n",
                 world_rank_, what_.c_str(), waited, timeout_s_, static_cast<long long>(step_.load()));
    std::fflush(stderr);
    MPI_Abort(MPI_COMM_WORLD, 3);
  }
}

WatchdogScope::WatchdogScope(Watchdog* dog, const char* op, const std::string& group) : dog_(dog) {
  if (dog_) dog_->begin(std::string(op) + " on " + group);
}

WatchdogScope::~WatchdogScope() {
  if (dog_) dog_->end();
}

}  // namespace trident::dist
