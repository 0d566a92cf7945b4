// NcclComm: NCCL collectives and point-to-point over the ranks of one MPI communicator, for
// tensors on the GPU (the CUDA backend). It is made from the MPI group (rank 0 creates the
// unique id, MPI_Bcast hands it to the others), so the tp, dp, pp and embedding groups of the
// Topology each get one. Every call is enqueued on the given CUDA stream and returns; wait()
// blocks until the stream is done while the Watchdog watches (a stuck collective is reported
// with its group, operation and rank, then the job ends, instead of hanging silently).
// Shutdown is explicit and collective (shutdown()); the destructor makes no NCCL call, since a
// destructor may run while other ranks have already left (an exception unwinding one rank).
// Built with the CUDA backend; elsewhere create() throws (nccl_built() says which).
#pragma once
#include <mpi.h>

#include <memory>
#include <string>
#include <vector>

#include "trident/core/tensor.hpp"
#include "trident/dist/watchdog.hpp"

namespace trident::dist {

bool nccl_built();

class NcclComm {
 public:
  // Collective over comm. The calling rank's CUDA device must already be selected.
  static std::unique_ptr<NcclComm> create(MPI_Comm comm, std::string name, Watchdog* dog = nullptr);
  ~NcclComm();
  NcclComm(const NcclComm&) = delete;
  NcclComm& operator=(const NcclComm&) = delete;

  int rank() const { return rank_; }
  int size() const { return size_; }

  // In place, fp32 / bf16 / fp16 tensors on this rank's device; stream: a cudaStream_t.
  void all_reduce_sum(Tensor& x, void* stream);
  // out (numel / size elements) = this rank's block of the sum of in over the group.
  void reduce_scatter_sum(const Tensor& in, Tensor& out, void* stream);
  // out (size * numel(in) elements) = every rank's in, in rank order.
  void all_gather(const Tensor& in, Tensor& out, void* stream);
  void broadcast(Tensor& x, int root, void* stream);

  // Pipeline activations: sends and receives issued as one NCCL group, so a stage can send
  // forward and receive from behind without either waiting for the other.
  struct Transfer {
    Tensor* tensor;
    int peer;   // rank in this group
    bool send;  // false: receive into tensor
  };
  void exchange(const std::vector<Transfer>& transfers, void* stream);

  // Blocks until the stream's work is done. what names the operation for the watchdog.
  void wait(void* stream, const char* what);

  // Collective: flushes outstanding work and frees the communicator. After it, no call is valid.
  void shutdown();
  // Local: ends the communicator at once (after an error; peers may still be waiting).
  void abort();

 private:
  NcclComm() = default;
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::string name_;
  Watchdog* dog_ = nullptr;
  int rank_ = 0, size_ = 1;
};

}  // namespace trident::dist
