// NcclComm where trident is built without the CUDA backend: nothing to talk to.
#ifndef TRIDENT_WITH_NCCL
#include "trident/core/error.hpp"
#include "trident/dist/nccl_comm.hpp"

namespace trident::dist {

struct NcclComm::Impl {};

bool nccl_built() { return false; }

std::unique_ptr<NcclComm> NcclComm::create(MPI_Comm, std::string name, Watchdog*) {
  throw Error("NCCL communicator for group " + name + ": trident was built without CUDA (-DTRIDENT_CUDA=OFF or nvcc not found)");
}

NcclComm::~NcclComm() = default;
void NcclComm::all_reduce_sum(Tensor&, void*) {}
void NcclComm::reduce_scatter_sum(const Tensor&, Tensor&, void*) {}
void NcclComm::all_gather(const Tensor&, Tensor&, void*) {}
void NcclComm::broadcast(Tensor&, int, void*) {}
void NcclComm::exchange(const std::vector<Transfer>&, void*) {}
void NcclComm::wait(void*, const char*) {}
void NcclComm::shutdown() {}
void NcclComm::abort() {}

}  // namespace trident::dist
#endif
