// The C entry points of libtrident_cuda.so (see entry_points.hpp): errors become messages.
#include "entry_points.hpp"

#include <cstring>
#include <exception>

#include "nccl_collectives.hpp"

namespace {

void put(const std::string& text, char* out, size_t size) {
  if (!out || size == 0) return;
  const size_t n = std::min(text.size(), size - 1);
  std::memcpy(out, text.data(), n);
  out[n] = '\0';
}

}  // namespace

extern "C" int trident_cuda_device_count(char* reason, size_t size) {
  std::string why;
  const int count = trident::cuda::device_count(&why);
  put(why, reason, size);
  return count;
}

extern "C" int trident_cuda_device_uuid(int device, char* uuid, size_t size) {
  try {
    put(trident::cuda::device_uuid(device), uuid, size);
    return 0;
  } catch (const std::exception& e) {
    put(e.what(), uuid, size);
    return -1;
  }
}

extern "C" trident::Ops* trident_cuda_make_ops(int device, char* error, size_t size) {
  try {
    return trident::cuda::make_ops(device).release();
  } catch (const std::exception& e) {
    put(e.what(), error, size);
    return nullptr;
  }
}

extern "C" void* trident_cuda_stream(trident::Ops* ops, char* error, size_t size) {
  try {
    return trident::cuda::stream_of(*ops);
  } catch (const std::exception& e) {
    put(e.what(), error, size);
    return nullptr;
  }
}

extern "C" int trident_nccl_unique_id(void* id, char* error, size_t size) {
  try {
    const trident::DeviceCollectives::UniqueId made = trident::cuda::nccl_unique_id();
    std::memcpy(id, made.data(), made.size());
    return 0;
  } catch (const std::exception& e) {
    put(e.what(), error, size);
    return -1;
  }
}

extern "C" trident::DeviceCollectives* trident_nccl_make(trident::Ops* ops, const void* id, int group_size, int rank,
                                                         const char* name, char* error, size_t size) {
  try {
    trident::DeviceCollectives::UniqueId unique{};
    std::memcpy(unique.data(), id, unique.size());
    return trident::cuda::make_nccl_collectives(*ops, unique, group_size, rank, name).release();
  } catch (const std::exception& e) {
    put(e.what(), error, size);
    return nullptr;
  }
}
