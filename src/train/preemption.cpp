// SIGTERM / SIGUSR1 handling for preemptible runs.
#include "trident/train/preemption.hpp"

#include <csignal>

namespace trident::train {

namespace {
volatile std::sig_atomic_t g_preempt = 0;  // the only global: a signal handler can do nothing else
extern "C" void on_preemption_signal(int) { g_preempt = 1; }
}  // namespace

void install_preemption_handlers() {
  struct sigaction action {};
  action.sa_handler = on_preemption_signal;
  sigemptyset(&action.sa_mask);
  sigaction(SIGTERM, &action, nullptr);
  sigaction(SIGUSR1, &action, nullptr);
}

bool preemption_requested() { return g_preempt != 0; }

}  // namespace trident::train
