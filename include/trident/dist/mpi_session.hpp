// MpiSession: RAII over MPI_Init_thread / MPI_Finalize. Created first in main, it outlives every
// communicator. MPI errors return codes (MPI_ERRORS_RETURN) so MPI_CHECK can report them.
#pragma once
#include <mpi.h>

#include <memory>
#include <string>

#include "trident/core/error.hpp"
#include "trident/dist/reduction_ops.hpp"

namespace trident::dist {

class MpiSession {
 public:
  MpiSession(int* argc, char*** argv);
  ~MpiSession();
  MpiSession(const MpiSession&) = delete;
  MpiSession& operator=(const MpiSession&) = delete;

  int world_rank() const { return rank_; }
  int world_size() const { return size_; }
  const std::string& host() const { return host_; }
  // The bf16/fp16 sums every communicator of the run uses (Topology's reductions).
  const ReductionOps* reductions() const { return reductions_.get(); }
  // Ends every rank of the job with this exit code after printing message on this rank.
  [[noreturn]] void abort(int code, const std::string& message) const;

 private:
  int rank_ = 0;
  int size_ = 1;
  std::string host_;
  std::unique_ptr<ReductionOps> reductions_;  // freed before MPI_Finalize
};

std::string mpi_error_string(int code);

// Number of ranks of MPI_COMM_WORLD sharing this node (collective over MPI_COMM_WORLD).
int ranks_on_this_node();

}  // namespace trident::dist

#define MPI_CHECK(stmt)                                                                     \
  do {                                                                                      \
    const int mpi_check_rc_ = (stmt);                                                       \
    TRIDENT_CHECK(mpi_check_rc_ == MPI_SUCCESS, #stmt, " failed: ",                        \
                  ::trident::dist::mpi_error_string(mpi_check_rc_));                        \
  } while (0)
