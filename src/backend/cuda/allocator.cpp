#include "allocator.hpp"

#include <cuda_runtime.h>

#include <algorithm>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "trident/core/error.hpp"

namespace trident::cuda {

struct DeviceAllocator::Pool {
  int device = 0;
  std::mutex mutex;  // deleters may run on any thread
  std::unordered_map<size_t, std::vector<void*>> free_blocks;  // size class -> blocks
  size_t cached_bytes = 0;
  size_t in_use = 0, peak_in_use = 0;

  void release_locked() {
    int previous = -1;
    cudaGetDevice(&previous);
    cudaSetDevice(device);
    for (auto& [size, blocks] : free_blocks)
      for (void* p : blocks) cudaFree(p);  // errors ignored: may run at process exit
    free_blocks.clear();
    cached_bytes = 0;
    if (previous >= 0) cudaSetDevice(previous);
  }
  ~Pool() { release_locked(); }
};

size_t DeviceAllocator::round_size(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t(1) << 20;
  if (bytes == 0) bytes = 1;
  if (bytes <= kLarge) return (bytes + kSmall - 1) / kSmall * kSmall;
  size_t pow2 = kLarge;
  while (pow2 * 2 < bytes) pow2 *= 2;  // pow2 < bytes <= 2 * pow2
  const size_t quarter = pow2 / 4;
  return (bytes + quarter - 1) / quarter * quarter;
}

DeviceAllocator::DeviceAllocator(int device) : pool_(std::make_shared<Pool>()) { pool_->device = device; }

DeviceAllocator::~DeviceAllocator() = default;  // the pool lives on while any block is out

size_t DeviceAllocator::bytes_in_use() const {
  std::lock_guard<std::mutex> lock(pool_->mutex);
  return pool_->in_use;
}

size_t DeviceAllocator::peak_bytes_in_use() const {
  std::lock_guard<std::mutex> lock(pool_->mutex);
  return pool_->peak_in_use;
}

void DeviceAllocator::release_cache() {
  std::lock_guard<std::mutex> lock(pool_->mutex);
  pool_->release_locked();
}

std::shared_ptr<Storage> DeviceAllocator::allocate(size_t bytes) {
  const size_t size = round_size(bytes);
  void* p = nullptr;
  {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    auto it = pool_->free_blocks.find(size);
    if (it != pool_->free_blocks.end() && !it->second.empty()) {
      p = it->second.back();
      it->second.pop_back();
      pool_->cached_bytes -= size;
    }
  }
  if (!p) {
    cudaError_t status = cudaMalloc(&p, size);
    if (status == cudaErrorMemoryAllocation) {  // the cache may hold what is missing
      cudaGetLastError();  // clear the sticky-free error state
      release_cache();
      status = cudaMalloc(&p, size);
    }
    if (status != cudaSuccess) {
      cudaGetLastError();
      throw Error("cudaMalloc(" + std::to_string(size) + " bytes) on device " + std::to_string(pool_->device) +
                  ": " + cudaGetErrorString(status));
    }
  }
  {
    std::lock_guard<std::mutex> lock(pool_->mutex);
    pool_->in_use += size;
    pool_->peak_in_use = std::max(pool_->peak_in_use, pool_->in_use);
  }
  std::shared_ptr<Pool> pool = pool_;
  return std::make_shared<Storage>(p, bytes, Device::kCUDA, [pool, size](void* block) {
    std::lock_guard<std::mutex> lock(pool->mutex);
    pool->free_blocks[size].push_back(block);
    pool->cached_bytes += size;
    pool->in_use -= size;
  });
}

}  // namespace trident::cuda
