// NCCL groups for the CUDA backend (nccl_collectives.cpp); reached through the C entry points.
#pragma once
#include <memory>
#include <string>

#include "trident/backend/device_collectives.hpp"
#include "trident/backend/ops.hpp"

namespace trident::cuda {

// A new ncclUniqueId (one rank makes it; the others receive it over MPI).
DeviceCollectives::UniqueId nccl_unique_id();
// Collective over the size ranks that hold id: this rank's member of the group, ordered after
// ops's compute stream. The calling thread's device must be ops's.
std::unique_ptr<DeviceCollectives> make_nccl_collectives(Ops& ops, const DeviceCollectives::UniqueId& id, int size,
                                                         int rank, const std::string& name);

}  // namespace trident::cuda
