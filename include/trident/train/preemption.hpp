// Preemption: SIGTERM or SIGUSR1 (what Slurm sends with --signal, or before a time limit) asks
// the run to finish its current step, write a checkpoint and exit 0. A signal handler can
// only set a flag, so this is the one process-wide state: a sig_atomic_t the handler sets and
// the trainer reads between steps (then agrees on across ranks with one all-reduce).
#pragma once

namespace trident::train {

// Installs the handlers (idempotent).
void install_preemption_handlers();
// True once SIGTERM or SIGUSR1 has arrived at this process.
bool preemption_requested();

}  // namespace trident::train
