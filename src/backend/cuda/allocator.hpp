// The CUDA backend's caching device allocator. cudaMalloc/cudaFree synchronise the device and
// cost tens of microseconds, so freed blocks are kept in per-size free lists and handed out
// again. One allocator belongs to one CudaOps, whose work all runs on one stream: a block
// returned while kernels that use it are still queued can only be reused by work queued later
// on that same stream, so no event tracking is needed ("stream-less" free lists). Communication
// streams (NCCL) touch blocks only between an event after the compute work that fills them and
// the compute stream's wait for their completion (CommRequest::wait), so that still holds.
#pragma once
#include <cstddef>
#include <memory>

#include "trident/core/tensor.hpp"

namespace trident::cuda {

class DeviceAllocator {
 public:
  explicit DeviceAllocator(int device);
  ~DeviceAllocator();
  DeviceAllocator(const DeviceAllocator&) = delete;
  DeviceAllocator& operator=(const DeviceAllocator&) = delete;

  // At least `bytes` of device memory (uninitialised); the Storage's deleter returns the block
  // to the cache, which may outlive this allocator (tensors outliving their Ops).
  std::shared_ptr<Storage> allocate(size_t bytes);
  // cudaFree every cached block (after an out-of-memory miss, or to hand memory back).
  void release_cache();

  // Size class of a request: multiples of 512 B up to 1 MiB, above that four classes per
  // power of two (at most 25% waste for large tensors).
  static size_t round_size(size_t bytes);

  // Bytes held by live blocks now and at most since construction (size classes, not requests).
  size_t bytes_in_use() const;
  size_t peak_bytes_in_use() const;

  struct Pool;  // shared with the Storage deleters

 private:
  std::shared_ptr<Pool> pool_;
};

}  // namespace trident::cuda
