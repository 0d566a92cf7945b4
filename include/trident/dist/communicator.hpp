// Communicator: RAII over one MPI_Comm (non-copyable, movable). Every collective must be called
// in the same order on every rank of the group. Blocking and non-blocking forms; a
// non-blocking call returns a CommRequest to test or wait on. Large all-reduces go in pieces of
// at most kMaxChunkBytes: Open MPI's MPI_Allreduce slows sharply above ~32 MiB on these
// machines (its per-call scratch buffer is then mmap-ed afresh and pays the page-fault cost;
// MACHINE-NOTES.md). `trident bench allreduce` measured 2-4 MiB pieces fastest (8-10 GB/s on
// 2 ranks at 64-256 MiB against ~2 GB/s for one plain call).
// Bytes and seconds are accounted per operation kind (metrics comm_bytes, comm_s).
// GPU tensors go to the group's DeviceCollectives (NCCL, attached by Topology::attach_device):
// there every call is ordered on the GPU's streams instead of blocking the host, and a
// request's wait() makes the compute stream wait for it (trident/backend/device_collectives.hpp).
#pragma once
#include <mpi.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/device_collectives.hpp"
#include "trident/core/tensor.hpp"
#include "trident/dist/reduction_ops.hpp"
#include "trident/dist/watchdog.hpp"

namespace trident::dist {

enum class CommOp : int { kAllReduce, kReduceScatter, kAllGather, kBroadcast, kPointToPoint, kAllToAll, kCount };
const char* comm_op_name(CommOp op);

class Communicator;

// Outstanding non-blocking operation: MPI requests (possibly several, one per chunk), or a ticket
// of the group's DeviceCollectives for GPU tensors. Non-copyable, movable; the destructor waits
// for completion (local, never a new collective).
class CommRequest {
 public:
  CommRequest() = default;
  CommRequest(Communicator* owner, CommOp op, std::vector<MPI_Request> requests, std::vector<int> counts = {})
      : owner_(owner), op_(op), requests_(std::move(requests)), counts_(std::move(counts)) {}
  CommRequest(Communicator* owner, CommOp op, DeviceCollectives* device, uint64_t ticket)
      : owner_(owner), op_(op), device_(device), ticket_(ticket) {}
  ~CommRequest();
  CommRequest(CommRequest&& o) noexcept;
  CommRequest& operator=(CommRequest&& o) noexcept;
  CommRequest(const CommRequest&) = delete;
  CommRequest& operator=(const CommRequest&) = delete;

  // True when complete; also lets MPI progress the operation.
  bool test();
  // Host tensors: blocks until complete. GPU tensors: the compute stream waits for it.
  void wait();
  bool pending() const { return !requests_.empty() || device_ != nullptr; }

 private:
  Communicator* owner_ = nullptr;
  CommOp op_ = CommOp::kAllReduce;
  std::vector<MPI_Request> requests_;
  std::vector<int> counts_;  // counts/displacements MPI reads until completion
  DeviceCollectives* device_ = nullptr;
  uint64_t ticket_ = 0;
};

class Communicator {
 public:
  static constexpr size_t kMaxChunkBytes = size_t(4) << 20;

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
  // Collective: a new communicator over the same ranks in the same order (MPI_Comm_dup), for
  // traffic that must never match this one's (a checkpoint written from another thread).
  Communicator duplicate() const;

  // The session's bf16/fp16 sums (nullptr: 16-bit reductions are an error on this group).
  void set_reductions(const ReductionOps* reductions) { reductions_ = reductions; }

  // Reports this communicator's blocking waits to dog (nullptr: none), naming the group by
  // name and its members' world ranks.
  void set_watchdog(Watchdog* dog, const std::string& name);

  // GPU tensors passed to this group go to device (made collectively by Topology::attach_device).
  void attach_device(std::unique_ptr<DeviceCollectives> device);
  DeviceCollectives* device() const { return device_.get(); }
  // Collective: ends the device group (NCCL's explicit shutdown); a no-op without one.
  void shutdown_device();

  // In-place sum over the group of an fp32/fp64 tensor, chunked.
  void all_reduce_sum(Tensor& x);
  CommRequest iall_reduce_sum(Tensor& x);
  void all_reduce_sum(double* values, int count);
  void all_reduce_max(double* values, int count);

  // Blocks of n elements over the group: rank r owns [begin, end), the first n % size ranks
  // one element more (equal blocks when size divides n).
  struct Block {
    int64_t begin, end;
  };
  Block block(int64_t n, int r) const;

  // Reduce-scatter: rank r receives into out the sum over the group of block(in.numel(), r) of
  // in. out must not overlap in.
  void reduce_scatter_sum(const Tensor& in, Tensor& out);
  CommRequest ireduce_scatter_sum(const Tensor& in, Tensor& out);
  // All-gather in place: block(x.numel(), rank()) of x is this rank's contribution; on return x
  // holds every rank's block.
  void all_gather_in_place(Tensor& x);
  CommRequest iall_gather_in_place(Tensor& x);

  // Raw-byte collectives for compressed payloads (int8 blocks with scales, index/value pairs):
  // `bytes` per rank, send and recv laid out rank after rank ([size() * bytes]).
  // All-to-all: segment r of send goes to rank r; segment r of recv came from rank r.
  void all_to_all_bytes(const void* send, void* recv, int64_t bytes);
  CommRequest iall_to_all_bytes(const void* send, void* recv, int64_t bytes);
  // All-gather: every rank's `bytes` of send land at segment rank of recv, on every rank.
  void all_gather_bytes(const void* send, void* recv, int64_t bytes);
  CommRequest iall_gather_bytes(const void* send, void* recv, int64_t bytes);

  void broadcast(Tensor& x, int root);
  void broadcast(void* data, size_t bytes, int root);
  void send(const Tensor& x, int peer, int tag);
  void recv(Tensor& x, int peer, int tag);
  CommRequest isend(const Tensor& x, int peer, int tag);
  CommRequest irecv(Tensor& x, int peer, int tag);
  // Sends and receives posted together and completed together, so that two ranks may each send
  // to the other in one call. On the GPU this is one NCCL group (its order of calls across ranks
  // matches the transfers, tags are not used); pipeline stages exchange activations this way.
  struct Transfer {
    Tensor* tensor;
    int peer;
    bool send;  // false: receive into tensor
    int tag;
  };
  void exchange(const std::vector<Transfer>& transfers);
  // All-to-all of rows (expert parallelism): of send [*, C], the first send_rows[0] rows go to
  // rank 0, the next send_rows[1] to rank 1, ...; recv [*, C] gets recv_rows[r] rows from rank
  // r, rank after rank. Blocking. Host tensors: MPI_Alltoallv; GPU tensors: one NCCL group of
  // sends and receives.
  void all_to_all_rows(const Tensor& send, const std::vector<int64_t>& send_rows, Tensor& recv,
                       const std::vector<int64_t>& recv_rows);
  void barrier();

  // Bytes this rank handed to communication and seconds spent waiting for it, per kind and in
  // total, since construction.
  uint64_t bytes(CommOp op) const { return bytes_[static_cast<int>(op)]; }
  double seconds(CommOp op) const { return seconds_[static_cast<int>(op)]; }
  uint64_t bytes_moved() const;
  double seconds() const;

 private:
  friend class CommRequest;
  void account(CommOp op, uint64_t bytes, double seconds);
  // GPU tensors: the device group, or an error naming op and group when none is attached.
  DeviceCollectives& device_for(const char* op);
  // A request for the device operations just enqueued (watched by the watchdog until done).
  CommRequest device_request(CommOp op, uint64_t bytes);
  CommRequest device_exchange(const std::vector<Transfer>& transfers);

  MPI_Comm comm_ = MPI_COMM_NULL;
  int rank_ = 0;
  int size_ = 1;
  Watchdog* watchdog_ = nullptr;
  const ReductionOps* reductions_ = nullptr;
  std::string description_;  // "the dp group (world ranks 0, 2)"
  std::unique_ptr<DeviceCollectives> device_;
  // "all_reduce on the dp group (world ranks 0, 2) (GPU)", per kind: what the watchdog names.
  std::array<std::shared_ptr<const std::string>, static_cast<int>(CommOp::kCount)> device_what_;
  std::array<uint64_t, static_cast<int>(CommOp::kCount)> bytes_{};
  std::array<double, static_cast<int>(CommOp::kCount)> seconds_{};
};

}  // namespace trident::dist
