// The CPU backend: oneDNN sgemm for fp32 GEMMs, own vectorised OpenMP loops for the rest.
// Float kernels compute in fp32 on fp32/bf16/fp16 activations, or in fp64 (finite-difference
// checks); the dtype contract is in ops.hpp. ids are int32.
#pragma once
#include <memory>

#include "trident/backend/ops.hpp"

namespace trident {

// A CPU backend using `threads` OpenMP threads (omp_set_num_threads); threads <= 0 keeps the
// OpenMP default (OMP_NUM_THREADS or one per core). bf16_taken_as_slower: bf16 GEMMs count as
// slower than fp32 here whatever they measure, so set_matmul_precision(kBF16) falls back to
// fp32 (tests of that fallback on processors where bf16 is faster).
std::unique_ptr<Ops> make_cpu_ops(int threads, bool bf16_taken_as_slower = false);

}  // namespace trident
