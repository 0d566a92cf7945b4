// The GPUs this process can use, as the CUDA runtime sees them.
#include <cuda_runtime.h>

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

}  // namespace trident::cuda
