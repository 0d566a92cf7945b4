// cuda_ops.hpp in a build without the CUDA backend (the CUDA build compiles
// src/backend/cuda/ instead and defines TRIDENT_WITH_CUDA for this library).
#ifndef TRIDENT_WITH_CUDA
#include "trident/backend/cuda_ops.hpp"

namespace trident {

namespace {
constexpr const char* kNotBuilt = "built without CUDA (-DTRIDENT_CUDA=OFF or nvcc not found)";
}

bool cuda_built() { return false; }

int cuda_device_count(std::string* reason) {
  if (reason) *reason = kNotBuilt;
  return 0;
}

std::unique_ptr<Ops> make_cuda_ops(int device) {
  throw Error("make_cuda_ops(" + std::to_string(device) + "): trident was " + kNotBuilt);
}

void* cuda_stream(Ops& ops) { throw Error("cuda_stream(" + ops.name() + "): trident was " + kNotBuilt); }

}  // namespace trident
#endif
