// PrepComm over MPI: sums by MPI_Allreduce/MPI_Exscan, the exchange by two MPI_Alltoall(v)
// (counts, then data), and error agreement by a min-reduction of the failing ranks followed by
// a broadcast of the first one's message.
#include "trident/data/prep_comm.hpp"

#include <algorithm>
#include <string>

#include "trident/core/error.hpp"
#include "trident/dist/agreement.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::data {

PrepComm::PrepComm(MPI_Comm comm) : comm_(comm) {
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
}

void PrepComm::sum(std::vector<int64_t>& values) const {
  if (comm_ == MPI_COMM_NULL) return;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T,
                          MPI_SUM, comm_));
}

double PrepComm::max(double value) const {
  if (comm_ == MPI_COMM_NULL) return value;
  double result = value;
  MPI_CHECK(MPI_Allreduce(&value, &result, 1, MPI_DOUBLE, MPI_MAX, comm_));
  return result;
}

void PrepComm::exclusive_prefix_sum(std::vector<int64_t>& values) const {
  if (comm_ == MPI_COMM_NULL) return std::fill(values.begin(), values.end(), 0);
  std::vector<int64_t> out(values.size(), 0);
  MPI_CHECK(MPI_Exscan(values.data(), out.data(), static_cast<int>(values.size()), MPI_INT64_T,
                       MPI_SUM, comm_));
  if (rank_ == 0) std::fill(out.begin(), out.end(), 0);  // MPI leaves rank 0's result undefined
  values = std::move(out);
}

void PrepComm::broadcast(std::vector<int64_t>& values, int root) const {
  if (comm_ == MPI_COMM_NULL) return;
  MPI_CHECK(MPI_Bcast(values.data(), static_cast<int>(values.size()), MPI_INT64_T, root, comm_));
}

std::vector<std::vector<uint64_t>> PrepComm::exchange(const std::vector<std::vector<uint64_t>>& to_rank) const {
  TRIDENT_CHECK(static_cast<int>(to_rank.size()) == size_, "exchange wants one list per rank");
  if (comm_ == MPI_COMM_NULL) return to_rank;
  std::vector<int> send_counts(size_), recv_counts(size_), send_displs(size_), recv_displs(size_);
  std::vector<uint64_t> send;
  for (int r = 0; r < size_; ++r) {
    send_displs[r] = static_cast<int>(send.size());
    send_counts[r] = static_cast<int>(to_rank[r].size());
    send.insert(send.end(), to_rank[r].begin(), to_rank[r].end());
  }
  MPI_CHECK(MPI_Alltoall(send_counts.data(), 1, MPI_INT, recv_counts.data(), 1, MPI_INT, comm_));
  int total = 0;
  for (int r = 0; r < size_; ++r) recv_displs[r] = total, total += recv_counts[r];
  std::vector<uint64_t> recv(static_cast<size_t>(total));
  MPI_CHECK(MPI_Alltoallv(send.data(), send_counts.data(), send_displs.data(), MPI_UINT64_T,
                          recv.data(), recv_counts.data(), recv_displs.data(), MPI_UINT64_T, comm_));
  std::vector<std::vector<uint64_t>> from_rank(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r)
    from_rank[r].assign(recv.begin() + recv_displs[r], recv.begin() + recv_displs[r] + recv_counts[r]);
  return from_rank;
}

void PrepComm::barrier() const {
  if (comm_ != MPI_COMM_NULL) MPI_CHECK(MPI_Barrier(comm_));
}

void PrepComm::throw_if_any_failed(std::exception_ptr error) const {
  if (comm_ == MPI_COMM_NULL) {
    if (error) std::rethrow_exception(error);
    return;
  }
  dist::throw_if_any_failed(comm_, error);
}

}  // namespace trident::data
