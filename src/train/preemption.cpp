// SIGTERM / SIGUSR1 as polled, blocked signals.
#include "trident/train/preemption.hpp"

#include <csignal>
#include <ctime>

namespace trident::train {

namespace {
sigset_t preemption_signals() {
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, SIGTERM);
  sigaddset(&set, SIGUSR1);
  return set;
}
}  // namespace

void block_preemption_signals() {
  const sigset_t set = preemption_signals();
  pthread_sigmask(SIG_BLOCK, &set, nullptr);
}

bool preemption_requested() {
  sigset_t pending;
  sigpending(&pending);
  if (!sigismember(&pending, SIGTERM) && !sigismember(&pending, SIGUSR1)) return false;
  const sigset_t set = preemption_signals();
  const timespec now{0, 0};
  sigtimedwait(&set, nullptr, &now);  // consume it
  return true;
}

}  // namespace trident::train
