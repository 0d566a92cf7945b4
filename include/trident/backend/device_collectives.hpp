// DeviceCollectives: the collectives and point-to-point of one group of ranks on tensors in GPU
// memory. The CUDA backend implements it over NCCL (src/backend/cuda/nccl_collectives.cpp, in
// libtrident_cuda.so); dist::Communicator hands it every GPU tensor, so trainer code calls the
// same Communicator methods on either backend.
//
// Ordering, not host blocking: each operation runs on the group's own communication stream
// after all the work queued so far on the backend's compute stream, and every call returns at
// once. mark() names the operations enqueued so far; join() makes the compute stream wait for
// them on the device. So gradient buckets reduce while backward goes on, and the kernels that
// read a result are ordered after it without a host synchronisation.
// shutdown() is explicit and collective: no NCCL call is made from a destructor, which may run
// while other ranks have already left (an exception unwinding one rank).
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident {

class DeviceCollectives {
 public:
  // NCCL's ncclUniqueId: made by one rank, handed to the others (over MPI) to create a group.
  using UniqueId = std::array<char, 128>;

  struct Transfer {
    Tensor* tensor;
    int peer;   // rank in this group
    bool send;  // false: receive into tensor
  };

  virtual ~DeviceCollectives() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;

  // In place, fp32 / fp64 / bf16 / fp16.
  virtual void all_reduce_sum(Tensor& x) = 0;
  // out (in.numel() / size() elements) = this rank's block of the sum of in over the group.
  virtual void reduce_scatter_sum(const Tensor& in, Tensor& out) = 0;
  // out (size() * in.numel() elements) = every rank's in, in rank order; in may be out's own
  // block (in place).
  virtual void all_gather(const Tensor& in, Tensor& out) = 0;
  virtual void broadcast(Tensor& x, int root) = 0;
  // Sends and receives as one group: a stage can send forward and receive from behind without
  // either waiting for the other.
  virtual void exchange(const std::vector<Transfer>& transfers) = 0;

  // A ticket for every operation enqueued so far (tickets grow by one per mark).
  virtual uint64_t mark() = 0;
  // The compute stream waits on the device for the ticket's operations; the host does not.
  virtual void join(uint64_t ticket) = 0;
  // Whether the ticket's operations have completed. Safe from another thread (the watchdog);
  // throws on an asynchronous NCCL error (a peer died).
  virtual bool done(uint64_t ticket) = 0;

  // Collective: waits for outstanding work and frees the group. After it, no call is valid.
  virtual void shutdown() = 0;
  // Local: ends the group at once (after an error; peers may still be waiting).
  virtual void abort() = 0;
};

}  // namespace trident
