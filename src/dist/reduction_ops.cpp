// bf16 / fp16 sums as MPI user operations.
#include "trident/dist/reduction_ops.hpp"

#include <cstdint>

#include "trident/core/error.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::dist {

namespace {

template <float (*Widen)(uint16_t), uint16_t (*Round)(float)>
void sum_words(void* in, void* inout, int* len, MPI_Datatype*) {
  const uint16_t* a = static_cast<const uint16_t*>(in);
  uint16_t* b = static_cast<uint16_t*>(inout);
  for (int i = 0; i < *len; ++i) b[i] = Round(Widen(a[i]) + Widen(b[i]));
}

}  // namespace

ReductionOps::ReductionOps() {
  MPI_CHECK(MPI_Op_create(&sum_words<bf16_bits_to_fp32, fp32_to_bf16_bits>, /*commute=*/1, &bf16_sum_));
  MPI_CHECK(MPI_Op_create(&sum_words<fp16_bits_to_fp32, fp32_to_fp16_bits>, /*commute=*/1, &fp16_sum_));
}

ReductionOps::~ReductionOps() {
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (finalized) return;
  if (bf16_sum_ != MPI_OP_NULL) MPI_Op_free(&bf16_sum_);
  if (fp16_sum_ != MPI_OP_NULL) MPI_Op_free(&fp16_sum_);
}

MPI_Op ReductionOps::sum_16bit(DType dtype) const {
  TRIDENT_CHECK(dtype == DType::kBF16 || dtype == DType::kF16, "no 16-bit sum for ", dtype_name(dtype));
  return dtype == DType::kBF16 ? bf16_sum_ : fp16_sum_;
}

}  // namespace trident::dist
