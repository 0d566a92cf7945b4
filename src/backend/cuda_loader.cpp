// cuda_ops.hpp: the CUDA backend lives in libtrident_cuda.so and is loaded (dlopen) the first
// time it is asked for, so that CPU runs never map the CUDA libraries (see
// cuda/entry_points.hpp). Where no NVIDIA driver is installed, the library is not even loaded.
#include <dlfcn.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <string>
#include <vector>
#include <mutex>

#include "trident/backend/cuda_ops.hpp"
#include "trident/core/error.hpp"

namespace trident {
namespace {

constexpr const char* kNotBuilt = "built without CUDA (-DTRIDENT_CUDA=OFF or nvcc not found)";

struct CudaLibrary {
  int (*device_count)(char*, size_t) = nullptr;
  int (*device_uuid)(int, char*, size_t) = nullptr;
  Ops* (*make_ops)(int, char*, size_t) = nullptr;
  void* (*stream)(Ops*, char*, size_t) = nullptr;
  int (*nccl_unique_id)(void*, char*, size_t) = nullptr;
  DeviceCollectives* (*nccl_make)(Ops*, const void*, int, int, const char*, char*, size_t) = nullptr;
  std::string error;  // why it could not be loaded
};

#ifdef TRIDENT_WITH_CUDA
void* open_library(std::string& error) {
  for (const std::string& path : cuda_library_candidates()) {
    if (void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL)) return handle;
    error += (error.empty() ? "" : "; ") + std::string(dlerror());
  }
  return nullptr;
}
#endif

const CudaLibrary& library() {
  static CudaLibrary lib;
  static std::once_flag once;
  std::call_once(once, [] {
#ifndef TRIDENT_WITH_CUDA
    lib.error = kNotBuilt;
#else
    // No driver, no GPU: say so without loading the CUDA runtime and cuBLASLt.
    void* driver = dlopen("libcuda.so.1", RTLD_LAZY | RTLD_LOCAL);
    if (!driver) {
      lib.error = std::string("no NVIDIA driver (") + dlerror() + ")";
      return;
    }
    void* handle = open_library(lib.error);
    if (!handle) {
      lib.error = "cannot load the CUDA backend: " + lib.error;
      return;
    }
    lib.device_count = reinterpret_cast<int (*)(char*, size_t)>(dlsym(handle, "trident_cuda_device_count"));
    lib.device_uuid = reinterpret_cast<int (*)(int, char*, size_t)>(dlsym(handle, "trident_cuda_device_uuid"));
    lib.make_ops = reinterpret_cast<Ops* (*)(int, char*, size_t)>(dlsym(handle, "trident_cuda_make_ops"));
    lib.stream = reinterpret_cast<void* (*)(Ops*, char*, size_t)>(dlsym(handle, "trident_cuda_stream"));
    lib.nccl_unique_id = reinterpret_cast<int (*)(void*, char*, size_t)>(dlsym(handle, "trident_nccl_unique_id"));
    lib.nccl_make = reinterpret_cast<DeviceCollectives* (*)(Ops*, const void*, int, int, const char*, char*, size_t)>(
        dlsym(handle, "trident_nccl_make"));
    if (!lib.device_count || !lib.device_uuid || !lib.make_ops || !lib.stream || !lib.nccl_unique_id ||
        !lib.nccl_make) {
      lib = CudaLibrary{.error = "the CUDA backend library lacks its entry points (a stale build?)"};
    }
#endif
  });
  return lib;
}

}  // namespace

bool cuda_built() {
#ifdef TRIDENT_WITH_CUDA
  return true;
#else
  return false;
#endif
}

int cuda_device_count(std::string* reason) {
  const CudaLibrary& lib = library();
  if (!lib.device_count) {
    if (reason) *reason = lib.error;
    return 0;
  }
  std::array<char, 512> why{};
  const int count = lib.device_count(why.data(), why.size());
  if (reason) *reason = why.data();
  return count;
}

std::string cuda_device_uuid(int device) {
  const CudaLibrary& lib = library();
  if (!lib.device_uuid) throw Error("cuda_device_uuid(" + std::to_string(device) + "): " + lib.error);
  std::array<char, 512> out{};
  if (lib.device_uuid(device, out.data(), out.size()) != 0) throw Error(out.data());
  return out.data();
}

std::unique_ptr<Ops> make_cuda_ops(int device) {
  const CudaLibrary& lib = library();
  if (!lib.make_ops) throw Error("make_cuda_ops(" + std::to_string(device) + "): " + lib.error);
  std::array<char, 1024> error{};
  Ops* ops = lib.make_ops(device, error.data(), error.size());
  if (!ops) throw Error(error.data());
  return std::unique_ptr<Ops>(ops);
}

void* cuda_stream(Ops& ops) {
  const CudaLibrary& lib = library();
  if (!lib.stream) throw Error("cuda_stream(" + ops.name() + "): " + lib.error);
  std::array<char, 1024> error{};
  void* stream = lib.stream(&ops, error.data(), error.size());
  if (!stream) throw Error(error.data());
  return stream;
}


DeviceCollectives::UniqueId nccl_unique_id() {
  const CudaLibrary& lib = library();
  if (!lib.nccl_unique_id) throw Error("nccl_unique_id: " + lib.error);
  DeviceCollectives::UniqueId id{};
  std::array<char, 1024> error{};
  if (lib.nccl_unique_id(id.data(), error.data(), error.size()) != 0) throw Error(error.data());
  return id;
}

std::unique_ptr<DeviceCollectives> make_nccl_collectives(Ops& ops, const DeviceCollectives::UniqueId& id, int size,
                                                         int rank, const std::string& name) {
  const CudaLibrary& lib = library();
  if (!lib.nccl_make) throw Error("NCCL group " + name + ": " + lib.error);
  std::array<char, 1024> error{};
  DeviceCollectives* group = lib.nccl_make(&ops, id.data(), size, rank, name.c_str(), error.data(), error.size());
  if (!group) throw Error(error.data());
  return std::unique_ptr<DeviceCollectives>(group);
}

std::vector<std::string> cuda_library_candidates() {
#ifdef TRIDENT_WITH_CUDA
  std::vector<std::string> candidates = {TRIDENT_CUDA_LIBRARY};
  std::error_code ec;
  const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
  if (!ec) candidates.push_back((exe.parent_path() / "libtrident_cuda.so").string());
  return candidates;
#else
  return {};
#endif
}

}  // namespace trident
