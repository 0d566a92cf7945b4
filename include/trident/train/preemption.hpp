// Preemption: SIGTERM or SIGUSR1 (what Slurm sends with --signal, or before a time limit) asks
// the run to finish its current step, write a checkpoint and exit 0. The signals are blocked
// in every thread from the start (before MPI and OpenMP create theirs, which inherit the mask)
// and polled between steps: no handler ever runs asynchronously inside MPI, OpenMP or the
// allocator.
#pragma once

namespace trident::train {

// Blocks SIGTERM and SIGUSR1 in the calling thread and the threads it creates later. Call first
// thing in main, before MPI_Init.
void block_preemption_signals();
// True if SIGTERM or SIGUSR1 is pending for this process (consumes it).
bool preemption_requested();

}  // namespace trident::train
