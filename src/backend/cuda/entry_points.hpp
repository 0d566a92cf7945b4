// What libtrident_cuda.so offers the rest of trident. The library is loaded on first use by
// src/backend/cuda_loader.cpp (dlopen), so that a run on the CPU never maps cuBLASLt and the
// CUDA runtime (about 200 MiB of pages touched at load, ~0.5 s per process on these VMs).
// The C functions are the only symbols the loader looks up; they never throw.
#pragma once
#include <cstddef>
#include <memory>
#include <string>

#include "trident/backend/device_collectives.hpp"
#include "trident/backend/ops.hpp"

namespace trident::cuda {

int device_count(std::string* reason);  // device_select.cpp
std::string device_uuid(int device);     // device_select.cpp
std::unique_ptr<Ops> make_ops(int device);  // cuda_ops.cu
void* stream_of(Ops& ops);                  // cuda_ops.cu

}  // namespace trident::cuda

extern "C" {
// GPUs visible; on 0, why goes to reason (NUL-terminated, truncated to size).
int trident_cuda_device_count(char* reason, size_t size);
// The identity of visible device `device` ("GPU-" and its UUID) into uuid (NUL-terminated,
// truncated to size); 0 on success, else -1 with the error in uuid.
int trident_cuda_device_uuid(int device, char* uuid, size_t size);
// A new CudaOps (delete it through Ops), or nullptr with the error in error.
trident::Ops* trident_cuda_make_ops(int device, char* error, size_t size);
// The compute stream of a CudaOps, or nullptr with the error in error.
void* trident_cuda_stream(trident::Ops* ops, char* error, size_t size);
// A new ncclUniqueId into id (128 bytes); 0 on success, else -1 with the error in error.
int trident_nccl_unique_id(void* id, char* error, size_t size);
// This rank's member of an NCCL group (delete it through DeviceCollectives), or nullptr with
// the error in error. Collective over the group_size ranks given the same id.
trident::DeviceCollectives* trident_nccl_make(trident::Ops* ops, const void* id, int group_size, int rank,
                                              const char* name, char* error, size_t size);
}
