// PrepComm: the few collectives `trident prep` needs (sums, prefix sums, an all-to-all exchange,
// agreement on success), over an MPI communicator or, without MPI, over one process where each
// is the identity. Every call is collective: call in the same order on every rank.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <exception>
#include <vector>

namespace trident::data {

class PrepComm {
 public:
  // One process, no MPI calls (unit tests, tools).
  static PrepComm single_process() { return PrepComm(); }
  // Not owned: the caller keeps `comm` alive (MPI_COMM_WORLD in the prep command).
  explicit PrepComm(MPI_Comm comm);

  int rank() const { return rank_; }
  int size() const { return size_; }

  // Element-wise sum over the ranks, in place.
  void sum(std::vector<int64_t>& values) const;
  // The largest value over the ranks.
  double max(double value) const;
  // Element-wise sum over the ranks below this one (0 on rank 0), in place.
  void exclusive_prefix_sum(std::vector<int64_t>& values) const;
  // root's values to every rank (the same size everywhere).
  void broadcast(std::vector<int64_t>& values, int root) const;
  // to_rank[r] goes to rank r; returns from_rank[r] = what rank r sent here.
  std::vector<std::vector<uint64_t>> exchange(const std::vector<std::vector<uint64_t>>& to_rank) const;
  void barrier() const;

  // Agreement on failure: when any rank passes an error, every rank throws the error of the
  // lowest such rank (a ConfigError stays a ConfigError, with its message); else returns.
  void throw_if_any_failed(std::exception_ptr error) const;

 private:
  PrepComm() = default;
  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
};

}  // namespace trident::data
