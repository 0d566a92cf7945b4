// NcclComm over NCCL (built with the CUDA backend only; nccl_stub.cpp otherwise).
#include "trident/dist/nccl_comm.hpp"

#include <cuda_runtime.h>
#include <nccl.h>

#include <chrono>
#include <thread>

#include "trident/core/error.hpp"

namespace trident::dist {
namespace {

void check_nccl(ncclResult_t status, const char* call, const std::string& group) {
  if (status != ncclSuccess && status != ncclInProgress)
    throw Error(std::string(call) + " on group " + group + ": " + ncclGetErrorString(status));
}

ncclDataType_t nccl_type(const Tensor& x, const char* op) {
  switch (x.dtype()) {
    case DType::kF32: return ncclFloat32;
    case DType::kBF16: return ncclBfloat16;
    case DType::kF16: return ncclFloat16;
    case DType::kF64: return ncclFloat64;
    case DType::kI32: return ncclInt32;
  }
  throw Error(std::string("NcclComm::") + op + ": unsupported dtype");
}

void check_device(const Tensor& x, const char* op, const char* arg) {
  TRIDENT_CHECK(x.defined() && x.device() == Device::kCUDA, "NcclComm::", op, ": ", arg,
                " must be a tensor on the GPU");
}

}  // namespace

struct NcclComm::Impl {
  ncclComm_t comm = nullptr;
  bool open = false;
};

bool nccl_built() { return true; }

std::unique_ptr<NcclComm> NcclComm::create(MPI_Comm comm, std::string name, Watchdog* dog) {
  std::unique_ptr<NcclComm> c(new NcclComm());
  c->impl_ = std::make_unique<Impl>();
  c->name_ = std::move(name);
  c->dog_ = dog;
  MPI_Comm_rank(comm, &c->rank_);
  MPI_Comm_size(comm, &c->size_);
  ncclUniqueId id{};
  if (c->rank_ == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId", c->name_);
  MPI_Bcast(&id, sizeof(id), MPI_BYTE, 0, comm);
  // Non-blocking initialisation, polled under the watchdog: a rank that never joins is
  // reported by name instead of leaving the others inside ncclCommInitRank for ever.
  ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
  config.blocking = 0;
  check_nccl(ncclCommInitRankConfig(&c->impl_->comm, c->size_, id, c->rank_, &config), "ncclCommInitRankConfig",
             c->name_);
  {
    WatchdogScope watch(dog, "ncclCommInitRank", c->name_);
    ncclResult_t state = ncclInProgress;
    do {
      check_nccl(ncclCommGetAsyncError(c->impl_->comm, &state), "ncclCommInitRankConfig", c->name_);
      if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::microseconds(100));
    } while (state == ncclInProgress);
  }
  c->impl_->open = true;
  return c;
}

NcclComm::~NcclComm() = default;  // no NCCL call here (see the header); shutdown() frees

void NcclComm::all_reduce_sum(Tensor& x, void* stream) {
  check_device(x, "all_reduce_sum", "x");
  check_nccl(ncclAllReduce(x.raw(), x.raw(), size_t(x.numel()), nccl_type(x, "all_reduce_sum"), ncclSum,
                           impl_->comm, static_cast<cudaStream_t>(stream)),
             "ncclAllReduce", name_);
}

void NcclComm::reduce_scatter_sum(const Tensor& in, Tensor& out, void* stream) {
  check_device(in, "reduce_scatter_sum", "in");
  check_device(out, "reduce_scatter_sum", "out");
  TRIDENT_CHECK(in.dtype() == out.dtype() && in.numel() == out.numel() * size_,
                "NcclComm::reduce_scatter_sum: in must hold size x out's elements of out's dtype");
  check_nccl(ncclReduceScatter(in.raw(), out.raw(), size_t(out.numel()), nccl_type(out, "reduce_scatter_sum"),
                               ncclSum, impl_->comm, static_cast<cudaStream_t>(stream)),
             "ncclReduceScatter", name_);
}

void NcclComm::all_gather(const Tensor& in, Tensor& out, void* stream) {
  check_device(in, "all_gather", "in");
  check_device(out, "all_gather", "out");
  TRIDENT_CHECK(in.dtype() == out.dtype() && out.numel() == in.numel() * size_,
                "NcclComm::all_gather: out must hold size x in's elements of in's dtype");
  check_nccl(ncclAllGather(in.raw(), out.raw(), size_t(in.numel()), nccl_type(in, "all_gather"), impl_->comm,
                           static_cast<cudaStream_t>(stream)),
             "ncclAllGather", name_);
}

void NcclComm::broadcast(Tensor& x, int root, void* stream) {
  check_device(x, "broadcast", "x");
  check_nccl(ncclBroadcast(x.raw(), x.raw(), size_t(x.numel()), nccl_type(x, "broadcast"), root, impl_->comm,
                           static_cast<cudaStream_t>(stream)),
             "ncclBroadcast", name_);
}

void NcclComm::exchange(const std::vector<Transfer>& transfers, void* stream) {
  const auto s = static_cast<cudaStream_t>(stream);
  check_nccl(ncclGroupStart(), "ncclGroupStart", name_);
  for (const Transfer& t : transfers) {
    check_device(*t.tensor, "exchange", "tensor");
    TRIDENT_CHECK(t.peer >= 0 && t.peer < size_ && t.peer != rank_, "NcclComm::exchange: peer ", t.peer,
                  " is not another rank of group ", name_);
    const ncclDataType_t type = nccl_type(*t.tensor, "exchange");
    if (t.send)
      check_nccl(ncclSend(t.tensor->raw(), size_t(t.tensor->numel()), type, t.peer, impl_->comm, s), "ncclSend", name_);
    else
      check_nccl(ncclRecv(t.tensor->raw(), size_t(t.tensor->numel()), type, t.peer, impl_->comm, s), "ncclRecv", name_);
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd", name_);
}

void NcclComm::wait(void* stream, const char* what) {
  const auto s = static_cast<cudaStream_t>(stream);
  WatchdogScope watch(dog_, what, name_);
  // Poll rather than cudaStreamSynchronize: an asynchronous NCCL error (a peer died) surfaces
  // here, and the watchdog thread sees this wait while it lasts.
  for (;;) {
    const cudaError_t done = cudaStreamQuery(s);
    if (done == cudaSuccess) return;
    if (done != cudaErrorNotReady)
      throw Error(std::string("NcclComm::wait (") + what + ", group " + name_ + "): " + cudaGetErrorString(done));
    ncclResult_t state = ncclSuccess;
    check_nccl(ncclCommGetAsyncError(impl_->comm, &state), what, name_);
    check_nccl(state, what, name_);
    std::this_thread::sleep_for(std::chrono::microseconds(20));
  }
}

void NcclComm::shutdown() {
  if (!impl_ || !impl_->open) return;
  impl_->open = false;
  check_nccl(ncclCommFinalize(impl_->comm), "ncclCommFinalize", name_);
  {
    WatchdogScope watch(dog_, "ncclCommFinalize", name_);
    ncclResult_t state = ncclInProgress;
    do {
      check_nccl(ncclCommGetAsyncError(impl_->comm, &state), "ncclCommFinalize", name_);
      if (state == ncclInProgress) std::this_thread::sleep_for(std::chrono::microseconds(100));
    } while (state == ncclInProgress);
  }
  check_nccl(ncclCommDestroy(impl_->comm), "ncclCommDestroy", name_);
  impl_->comm = nullptr;
}

void NcclComm::abort() {
  if (!impl_ || !impl_->open) return;
  impl_->open = false;
  ncclCommAbort(impl_->comm);  // best effort: we are already handling an error
  impl_->comm = nullptr;
}

}  // namespace trident::dist
