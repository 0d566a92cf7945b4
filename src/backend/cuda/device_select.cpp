// The GPUs this process can use, as the CUDA runtime sees them.
#include <cuda_runtime.h>

#include <cstdio>
#include <stdexcept>
#include <string>

#include "entry_points.hpp"

namespace trident::cuda {

int device_count(std::string* reason) {
  int count = 0;  // cudaGetDeviceCount leaves it unset on failure
  const cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    cudaGetLastError();  // clear the error so later calls do not report it
    if (reason)
      *reason = std::string("cudaGetDeviceCount: ") + cudaGetErrorString(status) + " (error " +
                std::to_string(int(status)) + ")";
    return 0;
  }
  if (count == 0 && reason) *reason = "cudaGetDeviceCount: no CUDA device";
  return count;
}

std::string device_uuid(int device) {
  cudaDeviceProp prop{};
  const cudaError_t status = cudaGetDeviceProperties(&prop, device);
  if (status != cudaSuccess) {
    cudaGetLastError();
    throw std::runtime_error("cudaGetDeviceProperties(" + std::to_string(device) + "): " + cudaGetErrorString(status));
  }
  // nvidia-smi's spelling: GPU-xxxxxxxx-xxxx-xxxx-xxxx-xxxxxxxxxxxx
  std::string id = "GPU-";
  char hex[3];
  for (int i = 0; i < 16; ++i) {
    std::snprintf(hex, sizeof hex, "%02x", static_cast<unsigned char>(prop.uuid.bytes[i]));
    id += hex;
    if (i == 3 || i == 5 || i == 7 || i == 9) id += '-';
  }
  return id;
}

}  // namespace trident::cuda
