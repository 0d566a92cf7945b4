// Act<T>: an activation tensor as a kernel computing in T sees it. Storage of type T is used
// in place; 16-bit storage (T = float only) is widened into a caller's buffer on read and
// rounded back on commit. Kernels are written once over T with runs of elements at a time:
//   const float* x = xa.read(at, n, buf);   // fp32 values of elements [at, at + n)
//   float* y = ya.out(at, buf);  ...  ya.commit(at, n, y);
#pragma once
#include <algorithm>
#include <type_traits>

#include "common.hpp"
#include "convert.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

template <typename T>
class Act {
 public:
  explicit Act(const Tensor& t) : base_(t.raw()), dtype_(t.dtype()) {}
  bool in_place() const { return dtype_ == DTypeOf<T>::value; }

  // T values of elements [at, at + n): the storage itself, or buf filled by widening.
  const T* read(int64_t at, int64_t n, T* buf) const {
    if (in_place()) return static_cast<const T*>(base_) + at;
    widen(at, n, buf);
    return buf;
  }
  // read() that always fills buf, fp32 storage included. GELU's backward kernels read their
  // inputs this way: reading x and dy in place, between the exp and divide of each element, their
  // loop ran at half the speed it does after a plain copy into L1 (at 2048 x 1536 in the training
  // step: gelu_bias_backward 4.3 -> 2.4 ms, gelu_backward 3.3 -> 1.9 ms a call). Measured per
  // kernel, not a rule: SwiGLU's backward is slower staged (1.1 -> 1.6 ms) and reads in place.
  const T* stage(int64_t at, int64_t n, T* buf) const {
    if (!in_place()) return read(at, n, buf);
    const T* p = static_cast<const T*>(base_) + at;
    std::copy(p, p + n, buf);
    return buf;
  }
  // Read-modify-write access to [at, at + n) ("+=" outputs, in-place kernels); commit after.
  T* update(int64_t at, int64_t n, T* buf) const {
    if (in_place()) return static_cast<T*>(base_) + at;
    widen(at, n, buf);
    return buf;
  }
  // Where to write results for elements from `at`: the storage itself, or buf (commit after).
  T* out(int64_t at, T* buf) const { return in_place() ? static_cast<T*>(base_) + at : buf; }
  // Rounds [at, at + n) from p into 16-bit storage; nothing to do when p is the storage.
  void commit(int64_t at, int64_t n, const T* p) const {
    if constexpr (std::is_same_v<T, float>) {
      if (!in_place()) store_f32(p, dtype_, base_, at, n);
    }
  }

 private:
  void widen(int64_t at, int64_t n, T* buf) const {
    if constexpr (std::is_same_v<T, float>) load_f32(base_, dtype_, at, buf, n);
    else TRIDENT_CHECK(false, "fp64 kernels take fp64 activations only");
  }
  void* base_;
  DType dtype_;
};

// Elementwise kernels walk [0, n) in chunks of this many elements: the 16-bit path widens each
// chunk into stack buffers (8 KiB of fp32 each, L1-resident).
inline constexpr int64_t kChunk = 2048;

// f(begin, len) over chunks of [0, n), in parallel when n is large.
template <typename F>
void for_chunks(int64_t n, F&& f) {
  const int64_t chunks = (n + kChunk - 1) / kChunk;
#pragma omp parallel for if (n > kParallelElems) schedule(static)
  for (int64_t i = 0; i < chunks; ++i) f(i * kChunk, std::min(kChunk, n - i * kChunk));
}

}  // namespace trident::cpu
