// Small helpers shared by tests: filling host tensors with reproducible values, reading them.
#pragma once
#include <cmath>
#include <cstdint>
#include <vector>

#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"

namespace trident::testing {

// Uniform values in [-scale, scale), reproducible from (seed, stream).
inline void fill_uniform(Tensor& t, uint64_t seed, double scale = 1.0) {
  const uint64_t key = rng_key(seed, "test");
  for (int64_t i = 0; i < t.numel(); ++i) {
    const double u = (2.0 * rng_uniform(key, static_cast<uint64_t>(i)) - 1.0) * scale;
    if (t.dtype() == DType::kF64) t.data<double>()[i] = u;
    else t.data<float>()[i] = static_cast<float>(u);
  }
}

inline double element(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kF64 ? t.data<double>()[i] : double(t.data<float>()[i]);
}

inline void set_element(Tensor& t, int64_t i, double v) {
  if (t.dtype() == DType::kF64) t.data<double>()[i] = v;
  else t.data<float>()[i] = static_cast<float>(v);
}

inline std::vector<double> to_vector(const Tensor& t) {
  std::vector<double> out(static_cast<size_t>(t.numel()));
  for (int64_t i = 0; i < t.numel(); ++i) out[i] = element(t, i);
  return out;
}

inline double dot(const Tensor& a, const Tensor& b) {
  double s = 0;
  for (int64_t i = 0; i < a.numel(); ++i) s += element(a, i) * element(b, i);
  return s;
}

// max |a - b| / max(max |b|, floor): an error relative to the tensor's scale.
inline double relative_error(const std::vector<double>& a, const std::vector<double>& b, double floor = 1e-12) {
  double diff = 0, scale = floor;
  for (size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::fabs(a[i] - b[i]));
    scale = std::max(scale, std::fabs(b[i]));
  }
  return diff / scale;
}

}  // namespace trident::testing
