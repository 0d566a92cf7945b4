// The CPU backend: oneDNN sgemm for fp32 GEMMs, own vectorised OpenMP loops for the rest.
// Float kernels compute in fp32 on fp32/bf16/fp16 activations, or in fp64 (finite-difference
// checks); the dtype contract is in ops.hpp. ids are int32.
#pragma once
#include <memory>

#include "trident/backend/ops.hpp"

namespace trident {

// A CPU backend using `threads` OpenMP threads (omp_set_num_threads); threads <= 0 keeps the
// OpenMP default (OMP_NUM_THREADS or one per core).
std::unique_ptr<Ops> make_cpu_ops(int threads);

}  // namespace trident
