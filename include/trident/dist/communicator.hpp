// Communicator: RAII over one MPI_Comm (non-copyable, movable). Collectives must be called in
// the same order on every rank of the group. Large reductions go in pieces of at most
// kMaxChunkBytes: Open MPI's MPI_Allreduce slows ~20x above 64 MiB on these machines
// (a per-call scratch allocation hits the page-fault cost; see MACHINE-NOTES.md).
#pragma once
#include <mpi.h>

#include <cstddef>
#include <cstdint>

#include "trident/core/tensor.hpp"

namespace trident::dist {

class Communicator {
 public:
  static constexpr size_t kMaxChunkBytes = size_t(16) << 20;

  // Takes ownership of comm (freed in the destructor unless it is MPI_COMM_WORLD/SELF).
  explicit Communicator(MPI_Comm comm);
  ~Communicator();
  Communicator(Communicator&& o) noexcept;
  Communicator& operator=(Communicator&& o) noexcept;
  Communicator(const Communicator&) = delete;
  Communicator& operator=(const Communicator&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }
  MPI_Comm comm() const { return comm_; }

  // In-place sum over the group of a float tensor (fp32 or fp64), chunked.
  void all_reduce_sum(Tensor& x);
  void all_reduce_sum(double* values, int count);
  void all_reduce_max(double* values, int count);
  void broadcast(void* data, size_t bytes, int root);
  void barrier();

  // Bytes this rank handed to collectives and seconds spent in them, since construction.
  uint64_t bytes_moved() const { return bytes_; }
  double seconds() const { return seconds_; }

 private:
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  uint64_t bytes_ = 0;
  double seconds_ = 0;
};

}  // namespace trident::dist
