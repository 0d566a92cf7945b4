// DeviceCollectives over NCCL (see trident/backend/device_collectives.hpp). Each group has its
// own communication stream: an operation first waits (on the device) for an event recorded on
// the compute stream, so it reads what the kernels before it wrote; join() makes the compute
// stream wait for an event recorded after it. All NCCL calls of one group go to that one stream,
// in issue order, which NCCL requires of a communicator.
#include "nccl_collectives.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <deque>
#include <mutex>

#include "device_access.cuh"
#include "entry_points.hpp"
#include "trident/core/error.hpp"

namespace trident::cuda {
namespace {

static_assert(sizeof(ncclUniqueId) == sizeof(DeviceCollectives::UniqueId), "ncclUniqueId size changed");

void check_nccl(ncclResult_t status, const char* call, const std::string& group) {
  if (status != ncclSuccess) throw Error(std::string(call) + " on " + group + ": " + ncclGetErrorString(status));
}

ncclDataType_t nccl_type(const Tensor& x, const char* op) {
  switch (x.dtype()) {
    case DType::kF32: return ncclFloat32;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF16: return ncclFloat16;
    case DType::kF64: return ncclFloat64;
    case DType::kI32: return ncclInt32;
  }
  throw Error(std::string("NCCL ") + op + ": unsupported dtype");
}

void check_device(const Tensor& x, const char* op, const char* arg) {
  TRIDENT_CHECK(x.defined() && x.device() == Device::kCUDA, "NCCL ", op, ": ", arg, " must be a tensor on the GPU");
}

class NcclCollectives final : public DeviceCollectives {
 public:
  NcclCollectives(cudaStream_t compute, const UniqueId& id, int size, int rank, std::string name)
      : compute_(compute), name_(std::move(name)), size_(size), rank_(rank) {
    TRIDENT_CUDA_CHECK(cudaGetDevice(&device_));
    TRIDENT_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    TRIDENT_CUDA_CHECK(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    ncclUniqueId nccl_id;
    std::memcpy(&nccl_id, id.data(), sizeof nccl_id);
    check_nccl(ncclCommInitRank(&comm_, size, nccl_id, rank), "ncclCommInitRank", name_);
  }

  ~NcclCollectives() override {
    // No NCCL call (see the header); the stream and events are this process's own.
    for (auto& pending : pending_) cudaEventDestroy(pending.event);
    for (cudaEvent_t e : spare_) cudaEventDestroy(e);
    if (ready_) cudaEventDestroy(ready_);
    if (stream_) cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }

  void all_reduce_sum(Tensor& x) override {
    check_device(x, "all_reduce_sum", "x");
    after_compute();
    check_nccl(ncclAllReduce(x.raw(), x.raw(), size_t(x.numel()), nccl_type(x, "all_reduce_sum"), ncclSum, live(),
                             stream_),
               "ncclAllReduce", name_);
  }

  void reduce_scatter_sum(const Tensor& in, Tensor& out) override {
    check_device(in, "reduce_scatter_sum", "in");
    check_device(out, "reduce_scatter_sum", "out");
    TRIDENT_CHECK(in.dtype() == out.dtype() && in.numel() == out.numel() * size_, "NCCL reduce_scatter_sum on ",
                  name_, ": in must hold ", size_, " x out's elements of out's dtype");
    after_compute();
    check_nccl(ncclReduceScatter(in.raw(), out.raw(), size_t(out.numel()), nccl_type(out, "reduce_scatter_sum"),
                                 ncclSum, live(), stream_),
               "ncclReduceScatter", name_);
  }

  void all_gather(const Tensor& in, Tensor& out) override {
    check_device(in, "all_gather", "in");
    check_device(out, "all_gather", "out");
    TRIDENT_CHECK(in.dtype() == out.dtype() && out.numel() == in.numel() * size_, "NCCL all_gather on ", name_,
                  ": out must hold ", size_, " x in's elements of in's dtype");
    after_compute();
    check_nccl(ncclAllGather(in.raw(), out.raw(), size_t(in.numel()), nccl_type(in, "all_gather"), live(), stream_),
               "ncclAllGather", name_);
  }

  void broadcast(Tensor& x, int root) override {
    check_device(x, "broadcast", "x");
    after_compute();
    check_nccl(ncclBroadcast(x.raw(), x.raw(), size_t(x.numel()), nccl_type(x, "broadcast"), root, live(), stream_),
               "ncclBroadcast", name_);
  }

  void exchange(const std::vector<Transfer>& transfers) override {
    for (const Transfer& t : transfers) {
      check_device(*t.tensor, "exchange", "tensor");
      TRIDENT_CHECK(t.peer >= 0 && t.peer < size_ && t.peer != rank_, "NCCL exchange: peer ", t.peer,
                    " is not another rank of ", name_);
    }
    after_compute();
    ncclComm_t comm = live();
    check_nccl(ncclGroupStart(), "ncclGroupStart", name_);
    for (const Transfer& t : transfers) {
      const ncclDataType_t type = nccl_type(*t.tensor, "exchange");
      const size_t n = size_t(t.tensor->numel());
      const ncclResult_t status = t.send ? ncclSend(t.tensor->raw(), n, type, t.peer, comm, stream_)
                                         : ncclRecv(t.tensor->raw(), n, type, t.peer, comm, stream_);
      if (status != ncclSuccess) {
        ncclGroupEnd();  // close the group before reporting
        check_nccl(status, t.send ? "ncclSend" : "ncclRecv", name_);
      }
    }
    check_nccl(ncclGroupEnd(), "ncclGroupEnd", name_);
  }

  uint64_t mark() override {
    std::lock_guard<std::mutex> lock(mutex_);
    cudaEvent_t event = nullptr;
    if (!spare_.empty()) {
      event = spare_.back();
      spare_.pop_back();
    } else {
      TRIDENT_CUDA_CHECK(cudaEventCreateWithFlags(&event, cudaEventDisableTiming));
    }
    TRIDENT_CUDA_CHECK(cudaEventRecord(event, stream_));
    pending_.push_back({++last_ticket_, event});
    return last_ticket_;
  }

  void join(uint64_t ticket) override {
    std::lock_guard<std::mutex> lock(mutex_);
    retire_completed();
    if (ticket <= completed_) return;
    for (const Pending& p : pending_)
      if (p.ticket >= ticket) {  // events complete in order: the first at or after it covers it
        TRIDENT_CUDA_CHECK(cudaStreamWaitEvent(compute_, p.event, 0));
        return;
      }
  }

  bool done(uint64_t ticket) override {
    std::lock_guard<std::mutex> lock(mutex_);
    TRIDENT_CUDA_CHECK(cudaSetDevice(device_));  // the watchdog's thread may ask
    retire_completed();
    if (ticket <= completed_) return true;
    if (comm_) {
      ncclResult_t state = ncclSuccess;
      check_nccl(ncclCommGetAsyncError(comm_, &state), "ncclCommGetAsyncError", name_);
      check_nccl(state, "an earlier operation", name_);
    }
    return false;
  }

  void shutdown() override {
    if (!comm_) return;
    TRIDENT_CUDA_CHECK(cudaStreamSynchronize(stream_));
    check_nccl(ncclCommFinalize(comm_), "ncclCommFinalize", name_);
    check_nccl(ncclCommDestroy(comm_), "ncclCommDestroy", name_);
    comm_ = nullptr;
  }

  void abort() override {
    if (!comm_) return;
    ncclCommAbort(comm_);  // best effort: we are already handling an error
    comm_ = nullptr;
  }

 private:
  struct Pending {
    uint64_t ticket;
    cudaEvent_t event;
  };

  ncclComm_t live() const {
    TRIDENT_CHECK(comm_, "NCCL ", name_, ": used after shutdown or abort");
    return comm_;
  }

  // The next operation reads what the compute stream has written so far.
  void after_compute() {
    TRIDENT_CUDA_CHECK(cudaEventRecord(ready_, compute_));
    TRIDENT_CUDA_CHECK(cudaStreamWaitEvent(stream_, ready_, 0));
  }

  // Caller holds mutex_. Completed events go back to the spares.
  void retire_completed() {
    while (!pending_.empty()) {
      const cudaError_t state = cudaEventQuery(pending_.front().event);
      if (state == cudaErrorNotReady) return;
      TRIDENT_CUDA_CHECK(state);
      completed_ = pending_.front().ticket;
      spare_.push_back(pending_.front().event);
      pending_.pop_front();
    }
  }

  cudaStream_t compute_;
  std::string name_;
  int size_, rank_;
  int device_ = 0;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  std::mutex mutex_;  // pending_, spare_, completed_: the watchdog thread calls done()
  std::deque<Pending> pending_;
  std::vector<cudaEvent_t> spare_;
  uint64_t last_ticket_ = 0, completed_ = 0;
};

}  // namespace

DeviceCollectives::UniqueId nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", "a new group");
  DeviceCollectives::UniqueId out{};
  std::memcpy(out.data(), &id, sizeof id);
  return out;
}

std::unique_ptr<DeviceCollectives> make_nccl_collectives(Ops& ops, const DeviceCollectives::UniqueId& id, int size,
                                                         int rank, const std::string& name) {
  return std::make_unique<NcclCollectives>(static_cast<cudaStream_t>(stream_of(ops)), id, size, rank, name);
}

}  // namespace trident::cuda
