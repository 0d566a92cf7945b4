// The communication watchdog thread.
#include "trident/dist/watchdog.hpp"

#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <vector>

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

double Watchdog::waiting_seconds() {
  std::lock_guard<std::mutex> lock(mutex_);
  return what_.empty() ? 0.0 : MPI_Wtime() - started_;
}

uint64_t Watchdog::begin_phase(std::string what) {
  if (timeout_s_ <= 0) return 0;
  std::lock_guard<std::mutex> lock(mutex_);
  phases_.push_back({next_phase_, std::move(what), MPI_Wtime()});
  return next_phase_++;
}

void Watchdog::end_phase(uint64_t id) {
  if (id == 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(phases_, [id](const Phase& p) { return p.id == id; });
}

void Watchdog::track(const void* owner, std::function<bool()> done, std::shared_ptr<const std::string> what) {
  if (timeout_s_ <= 0) return;
  std::lock_guard<std::mutex> lock(mutex_);
  tracked_.push_back({owner, std::move(done), std::move(what), MPI_Wtime()});
}

void Watchdog::forget(const void* owner) {
  std::lock_guard<std::mutex> lock(mutex_);
  std::erase_if(tracked_, [owner](const Tracked& t) { return t.owner == owner; });
}

void Watchdog::run() {
  std::unique_lock<std::mutex> lock(mutex_);
  // At least once a second: tracked GPU operations are retired here, and pile up in between.
  const auto poll = std::chrono::milliseconds(std::clamp(static_cast<int>(timeout_s_ * 1000 / 10), 50, 1000));
  while (!stop_) {
    wake_.wait_for(lock, poll);
    if (stop_) break;
    check_tracked();
    const double now = MPI_Wtime();
    if (what_.empty()) {
      // A phase is this rank's own slowness only while it waits for no peer (a wait in progress
      // is reported as the wait, naming the peers, once it is overdue itself).
      for (const Phase& p : phases_)
        if (now - p.since >= timeout_s_) abort_job(p.what, "has run", now - p.since, /*own_work=*/true);
      continue;
    }
    const double waited = now - started_;
    if (waited >= timeout_s_) abort_job(what_, "has waited", waited);
  }
}

void Watchdog::check_tracked() {
  const double now = MPI_Wtime();
  std::vector<const void*> blocked;  // an owner's operations complete in order: skip after the first pending
  for (auto it = tracked_.begin(); it != tracked_.end();) {
    if (std::find(blocked.begin(), blocked.end(), it->owner) != blocked.end()) {
      ++it;
      continue;
    }
    bool done = false;
    try {
      done = it->done();
    } catch (const std::exception& e) {
      abort_job(*it->what + " failed (" + e.what() + ")", "after", now - it->since);
    }
    if (done) {
      it = tracked_.erase(it);
      continue;
    }
    if (now - it->since >= timeout_s_) abort_job(*it->what, "has not completed after", now - it->since);
    blocked.push_back(it->owner);
    ++it;
  }
}

void Watchdog::abort_job(const std::string& what, const char* why, double waited, bool own_work) {
  std::fprintf(stderr,
               "[rank %d] watchdog: %s %s %.1f s (comm.timeout_s = %g) at step %lld; %s: aborting the job\n",
               world_rank_, what.c_str(), why, waited, timeout_s_, static_cast<long long>(step_.load()),
               own_work ? "this rank is stuck in it (a kernel, or I/O), or it needs a larger comm.timeout_s"
                        : "a peer is stuck or dead");
  std::fflush(stderr);
  MPI_Abort(MPI_COMM_WORLD, 3);
  std::abort();  // MPI_Abort does not return; the compiler cannot know
}

WatchdogScope::WatchdogScope(Watchdog* dog, const char* op, const std::string& group) : dog_(dog) {
  if (dog_) dog_->begin(std::string(op) + " on " + group);
}

WatchdogScope::~WatchdogScope() {
  if (dog_) dog_->end();
}

}  // namespace trident::dist
