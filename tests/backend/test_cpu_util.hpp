// Helpers of the CPU backend tests: seeded random tensors, conversion to double vectors for
// naive reference loops, and the normalised max error max|got - want| / max|want|.
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"

namespace trident::test {

using Vec = std::vector<double>;

// Tolerance on the normalised max error for each scalar type.
template <typename T> constexpr double kTol = 0;
template <> constexpr double kTol<float> = 1e-5;
template <> constexpr double kTol<double> = 1e-12;

template <typename T>
Tensor from_vec(const Vec& v, Shape shape) {
  Tensor t = Tensor::zeros(shape, DTypeOf<T>::value);
  EXPECT_EQ(t.numel(), static_cast<int64_t>(v.size()));
  T* p = t.data<T>();
  for (size_t i = 0; i < v.size(); ++i) p[i] = static_cast<T>(v[i]);
  return t;
}

// The values as held in the tensor (after rounding to its dtype), in double.
inline Vec to_vec(const Tensor& t) {
  Vec v(static_cast<size_t>(t.numel()));
  for (size_t i = 0; i < v.size(); ++i)
    v[i] = t.dtype() == DType::kF32 ? double(t.data<float>()[i]) : t.data<double>()[i];
  return v;
}

// Standard normal values times scale, keyed by seed (Philox; independent of call order).
inline Vec randn_vec(int64_t n, uint64_t seed, double scale = 1.0) {
  Vec v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[i] = scale * rng_normal(seed, static_cast<uint64_t>(i));
  return v;
}

template <typename T>
Tensor randn(Shape shape, uint64_t seed, double scale = 1.0) {
  return from_vec<T>(randn_vec(shape.numel(), seed, scale), shape);
}

// Positions of rows packed with documents: each row b cut into documents of lengths[0],
// lengths[1], ... (cycled across rows), positions restarting at 0 in each. [B*T].
template <size_t N>
std::vector<int32_t> document_positions(int64_t B, int64_t T, const int (&lengths)[N]) {
  std::vector<int32_t> pos(static_cast<size_t>(B * T));
  size_t next = 0;
  for (int64_t b = 0; b < B; ++b)
    for (int64_t t = 0, left = 0, p = 0; t < T; ++t, ++p, --left) {
      if (left == 0) left = lengths[next++ % N], p = 0;
      pos[b * T + t] = static_cast<int32_t>(p);
    }
  return pos;
}

inline Tensor i32_tensor(const std::vector<int32_t>& v) {
  Tensor t = Tensor::zeros(Shape{static_cast<int64_t>(v.size())}, DType::kI32);
  std::copy(v.begin(), v.end(), t.data<int32_t>());
  return t;
}

// max|got - want| / max(max|want|, floor): the floor keeps outputs that should be ~0 (the
// gradients of a one-token softmax) from turning rounding noise into a huge relative error.
inline double max_err(const Vec& got, const Vec& want, double floor = 1e-300) {
  EXPECT_EQ(got.size(), want.size());
  double err = 0, scale = floor;
  for (size_t i = 0; i < want.size(); ++i) {
    if (std::isnan(got[i]) != std::isnan(want[i])) return INFINITY;
    err = std::max(err, std::abs(got[i] - want[i]));
    scale = std::max(scale, std::abs(want[i]));
  }
  return err / scale;
}

inline double max_err(const Tensor& got, const Vec& want, double floor = 1e-300) {
  return max_err(to_vec(got), want, floor);
}

// EXPECT that got matches want to the type's tolerance (times slack).
#define EXPECT_CLOSE(got, want, T, slack) \
  EXPECT_LE(::trident::test::max_err((got), (want)), ::trident::test::kTol<T> * (slack)) << #got
#define EXPECT_CLOSE_FLOOR(got, want, T, slack, floor) \
  EXPECT_LE(::trident::test::max_err((got), (want), (floor)), ::trident::test::kTol<T> * (slack)) << #got

class CpuOpsTest : public ::testing::Test {
 protected:
  std::unique_ptr<Ops> ops_ = make_cpu_ops(0);
};

template <typename T>
class CpuOpsTyped : public CpuOpsTest {};
using FloatTypes = ::testing::Types<float, double>;

}  // namespace trident::test
