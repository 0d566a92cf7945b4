// Private helpers of the CPU backend: dtype dispatch, argument checks, parallel thresholds and
// a vectorisable fp32 exp (glibc's expf does not vectorise without -ffast-math).
//
// The dtype rule of the float kernels (see ops.hpp): a call computes in fp64 when its reference
// tensor is fp64 (then every float tensor is fp64), else in fp32. In an fp32 call each
// activation tensor may independently be fp32, bf16 or fp16 (widened on load, rounded to
// nearest even on store); parameters, parameter gradients and saved statistics are fp32.
#pragma once
#include <omp.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdint>
#include <memory>
#include <type_traits>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

// Elementwise loops smaller than this run on one thread (a parallel region costs a few us).
inline constexpr int64_t kParallelElems = int64_t(1) << 15;
// Column block of the race-free reductions over rows (dw, db, dbias, dwte): each thread owns
// whole blocks of columns and walks all rows, so results do not depend on the thread count.
inline constexpr int64_t kColBlock = 64;

// Calls f(float{}) or f(double{}) for a float dtype; anything else is an error naming op.
template <typename F>
void dispatch_float(DType dtype, const char* op, F&& f) {
  switch (dtype) {
    case DType::kF32: f(float{}); return;
    case DType::kF64: f(double{}); return;
    default:
      TRIDENT_CHECK(false, op, ": dtype ", dtype_name(dtype), " is not supported by the cpu backend (fp32, fp64)");
  }
}

inline void check_tensor(const Tensor& t, const char* op, const char* name) {
  TRIDENT_CHECK(t.defined(), op, ": ", name, " is undefined");
  TRIDENT_CHECK(t.device() == Device::kCPU, op, ": ", name, " is not on the cpu");
}

// The compute dtype of a call whose reference activation is t: kF64 for fp64, kF32 for
// fp32/bf16/fp16; anything else is an error naming op and the argument.
inline DType compute_dtype(const Tensor& t, const char* op, const char* name) {
  check_tensor(t, op, name);
  switch (t.dtype()) {
    case DType::kF32:
    case DType::kBF16:
    case DType::kF16: return DType::kF32;
    case DType::kF64: return DType::kF64;
    default:
      TRIDENT_CHECK(false, op, ": ", name, " is ", dtype_name(t.dtype()),
                    "; the cpu backend computes on fp32, bf16, fp16 (fp32 arithmetic) or fp64");
  }
  return DType::kF32;
}

// An activation argument of a call computing in `compute`: fp32/bf16/fp16 in an fp32 call,
// fp64 in an fp64 call.
inline void check_act(const Tensor& t, DType compute, const char* op, const char* name) {
  check_tensor(t, op, name);
  const DType d = t.dtype();
  const bool ok = compute == DType::kF64 ? d == DType::kF64 : (d == DType::kF32 || d == DType::kBF16 || d == DType::kF16);
  TRIDENT_CHECK(ok, op, ": ", name, " is ", dtype_name(d), ", expected ",
                compute == DType::kF64 ? "fp64 (an fp64 call takes fp64 everywhere)" : "fp32, bf16 or fp16");
}

inline void check_dtype(const Tensor& t, DType dtype, const char* op, const char* name) {
  check_tensor(t, op, name);
  TRIDENT_CHECK(t.dtype() == dtype, op, ": ", name, " is ", dtype_name(t.dtype()), ", expected ",
                dtype_name(dtype));
}

inline void check_numel(const Tensor& t, int64_t numel, const char* op, const char* name) {
  TRIDENT_CHECK(t.numel() == numel, op, ": ", name, " ", t.shape().str(), " has ", t.numel(),
                " elements, expected ", numel);
}

// Last dimension of a tensor seen as 2-D [rows, last].
inline int64_t last_dim(const Tensor& t) { return t.ndim() == 0 ? 1 : t.dim(-1); }
inline int64_t rows_of(const Tensor& t) {
  int64_t rows = 1;
  for (int i = 0; i + 1 < t.ndim(); ++i) rows *= t.dim(i);
  return rows;
}

// Checks that every id in ids (int32, n elements) lies in [0, limit). Run before a parallel
// region: an exception must not leave an OpenMP region.
void check_ids(const Tensor& ids, int64_t limit, const char* op, const char* name);

// exp(x) in fp32 to ~2 ulp (Cephes expf: 2^n * poly(r), |r| <= ln2/2); 0 below -87.3, inputs
// above 88 are clamped. Branch-free, so `#pragma omp simd` loops calling it vectorise.
// The steps shared by the scalar form and whole vectors (V = float or a GCC vector of floats),
// for clamped xc: n = round(xc / ln 2) and exp(r) of the rest r = xc - n ln 2, |r| <= ln2/2.
template <typename V>
inline V exp_round(V xc) {
  // round to nearest by adding 1.5 * 2^23 (std::floor/rint block vectorisation without -ffast-math)
  return (xc * 1.44269504088896341f + 12582912.0f) - 12582912.0f;
}
template <typename V>
inline V exp_rest(V xc, V n) {
  V r = xc - n * 0.693359375f;
  r = r - n * -2.12194440e-4f;
  V p;
  if constexpr (std::is_same_v<V, float>) p = 1.9875691500e-4f;
  else p = V{} + 1.9875691500e-4f;  // every lane
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  return p * r * r + r + 1.0f;
}
inline float exp_fast(float x) {
  const float xc = std::min(std::max(x, -87.3f), 88.0f);
  const float n = exp_round(xc);
  const float scale = std::bit_cast<float>((static_cast<int32_t>(n) + 127) << 23);
  return x < -87.3f ? 0.0f : exp_rest(xc, n) * scale;
}

template <typename T> inline T exp_t(T x) { return std::exp(x); }
template <> inline float exp_t<float>(float x) { return exp_fast(x); }

// 1 / (1 + exp(-x)), accurate in relative terms on both tails.
template <typename T> inline T sigmoid_t(T x) { return T(1) / (T(1) + exp_t<T>(-x)); }

// Host scratch that only grows, reused across calls: allocate_host gives huge pages to large
// buffers (kernels that walk them in panels or strided rows were TLB-bound on 4 KiB pages). Not a
// std::vector: resized down and up again it re-zeroes what it regains, a memset over the whole
// buffer on every call whose sizes alternate (as a step's GEMMs do).
class GrowingStorage {
 public:
  const std::shared_ptr<Storage>& at_least(size_t bytes) {
    if (!storage_ || storage_->bytes() < bytes) storage_ = allocate_host(bytes);
    return storage_;
  }
  template <typename T>
  T* get(int64_t n) {
    return static_cast<T*>(at_least(static_cast<size_t>(n) * sizeof(T))->data());
  }

 private:
  std::shared_ptr<Storage> storage_;
};

// Per-thread scratch of at least n elements, reused across calls (no allocation once warm).
// Slot tells apart buffers that are live at the same time.
template <typename T, int Slot>
T* thread_scratch(size_t n) {
  static thread_local std::vector<T> buf;
  if (buf.size() < n) buf.resize(n);
  return buf.data();
}

}  // namespace trident::cpu
