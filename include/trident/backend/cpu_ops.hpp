// The CPU backend: oneDNN sgemm for fp32 GEMMs, own vectorised OpenMP loops for the rest.
// Float kernels take fp32 or fp64 (fp64 for finite-difference checks); ids are int32.
#pragma once
#include <memory>

#include "trident/backend/ops.hpp"

namespace trident {

// A CPU backend using `threads` OpenMP threads (omp_set_num_threads); threads <= 0 keeps the
// OpenMP default (OMP_NUM_THREADS or one per core).
std::unique_ptr<Ops> make_cpu_ops(int threads);

}  // namespace trident
