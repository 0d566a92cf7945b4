// The CUDA backend: cuBLASLt GEMMs (bf16/fp16 tensor cores with fp32 accumulation, tf32 for
// fp32), own kernels for every other op (src/backend/cuda/), a caching device allocator and one
// compute stream per Ops. Built when nvcc is found (-DTRIDENT_CUDA=ON|OFF|AUTO); without it
// these functions exist and report that CUDA support was not built.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/device_collectives.hpp"
#include "trident/backend/ops.hpp"

namespace trident {

// True when this binary was built with the CUDA backend.
bool cuda_built();

// Where the backend's library, libtrident_cuda.so, is looked for, in order: the build tree's,
// then the one beside the executable (a relocated kit). Empty when CUDA is not built.
std::vector<std::string> cuda_library_candidates();

// GPUs visible to this process: 0 when the backend is not built, when there is no driver or no
// device (cudaGetDeviceCount failing counts as none). reason, when given, receives why it is 0.
int cuda_device_count(std::string* reason = nullptr);

// The identity of visible device `device` (nvidia-smi's "GPU-<uuid>"): ranks that see the
// same GPU under different indices (per-rank CUDA_VISIBLE_DEVICES) still compare equal.
std::string cuda_device_uuid(int device);

// A CUDA backend on device `device` (0-based; must be < cuda_device_count()). Throws
// trident::Error when CUDA is not built or the device cannot be used.
std::unique_ptr<Ops> make_cuda_ops(int device);

// The CUDA backend's compute stream (a cudaStream_t), so that communication (DeviceCollectives) can be
// ordered after the kernels that produce its data without a host synchronisation. Throws for
// any other backend.
void* cuda_stream(Ops& ops);

// NCCL, in the same library. A new unique id, made by one rank of a group and handed to the
// others (dist::Topology does it over MPI).
DeviceCollectives::UniqueId nccl_unique_id();
// Collective over the size ranks given id: this rank's member of the group, its operations
// ordered after ops's compute stream. Throws trident::Error when CUDA is not built or NCCL fails.
std::unique_ptr<DeviceCollectives> make_nccl_collectives(Ops& ops, const DeviceCollectives::UniqueId& id, int size,
                                                         int rank, const std::string& name);

}  // namespace trident
