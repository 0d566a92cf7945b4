// The C entry points of libtrident_cuda.so (see entry_points.hpp): errors become messages.
#include "entry_points.hpp"

#include <cstring>
#include <exception>

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
