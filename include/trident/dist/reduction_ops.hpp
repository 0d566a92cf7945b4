// ReductionOps: the sums MPI has no built-in operation for: bf16 and fp16 values, which travel
// as 2-byte words and are added pairwise in fp32 and rounded once (RNE) by user operations
// (comm.grad_dtype). RAII over the two MPI_Op handles: the MpiSession creates them once after
// MPI_Init and frees them before MPI_Finalize; communicators are handed a pointer to them.
#pragma once
#include <mpi.h>

#include "trident/core/dtype.hpp"

namespace trident::dist {

class ReductionOps {
 public:
  ReductionOps();  // after MPI_Init
  ~ReductionOps();
  ReductionOps(const ReductionOps&) = delete;
  ReductionOps& operator=(const ReductionOps&) = delete;

  // The sum for 16-bit float words of dtype (kBF16 or kF16).
  MPI_Op sum_16bit(DType dtype) const;

 private:
  MPI_Op bf16_sum_ = MPI_OP_NULL, fp16_sum_ = MPI_OP_NULL;
};

}  // namespace trident::dist
