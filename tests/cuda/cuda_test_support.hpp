// What the CUDA backend's tests share: the skip line, host tensors of seeded normal values,
// copies between host and device, a tensor's values as doubles, the normalised max error, the
// 16-bit rounding tolerances, and a fixture holding a GPU backend and a CPU reference backend.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cuda_ops.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"

// At the start of every GPU test: skips it, saying why, where no GPU can be used.
#define SKIP_WITHOUT_GPU()                                                   \
  do {                                                                       \
    std::string why;                                                         \
    if (trident::cuda_device_count(&why) == 0) GTEST_SKIP() << "no GPU: " << why; \
  } while (0)

namespace trident::cuda_test {

using Vec = std::vector<double>;

// 1.5 units of a 16-bit format's rounding, relative: the two backends may round an fp32 value
// that differs in its last bits to neighbouring 16-bit values.
inline constexpr double kBf16Tol = 1.5 / 256;   // 1.5 * 2^-8
inline constexpr double kF16Tol = 1.5 / 2048;   // 1.5 * 2^-11

// The rounding tolerance of a 16-bit dtype; fp32_tol for any other.
inline double tol_for(DType dtype, double fp32_tol) {
  switch (dtype) {
    case DType::kBF16: return kBf16Tol;
    case DType::kF16: return kF16Tol;
    default: return fp32_tol;
  }
}

// A host copy of host tensor h in dtype (converted by `cpu`); clone_host keeps h's dtype.
inline Tensor converted(Ops& cpu, const Tensor& h, DType dtype) {
  Tensor c = Tensor::zeros(h.shape(), dtype);
  cpu.copy(h, c);
  return c;
}
inline Tensor clone_host(Ops& cpu, const Tensor& h) { return converted(cpu, h, h.dtype()); }

// A host tensor of dtype with standard normal values (stream `key`) times scale, rounded to
// dtype by `cpu`.
inline Tensor host_randn(Ops& cpu, Shape shape, uint64_t key, DType dtype, double scale = 1.0) {
  Tensor f = Tensor::zeros(shape, DType::kF32);
  for (int64_t i = 0; i < f.numel(); ++i) f.data<float>()[i] = float(scale * rng_normal(key, uint64_t(i)));
  return dtype == DType::kF32 ? f : converted(cpu, f, dtype);
}

// A host tensor copied to the device (an undefined tensor stays undefined), and back.
inline Tensor to_device(Ops& gpu, const Tensor& h) {
  if (!h.defined()) return h;
  Tensor d = gpu.zeros(h.shape(), h.dtype());
  gpu.copy(h, d);
  return d;
}
inline Tensor to_host(Ops& gpu, const Tensor& d) {
  Tensor h = Tensor::zeros(d.shape(), d.dtype());
  gpu.copy(d, h);
  return h;
}

// The values of a host tensor of any float dtype (through fp32).
inline Vec values(Ops& cpu, const Tensor& h) {
  const Tensor f = h.dtype() == DType::kF32 ? h : converted(cpu, h, DType::kF32);
  return Vec(f.data<float>(), f.data<float>() + f.numel());
}

// max|got - want| / max(max|want|, floor); infinite where a difference is NaN.
inline double max_err(const Vec& got, const Vec& want, double floor = 1e-6) {
  EXPECT_EQ(got.size(), want.size());
  double diff = 0, scale = floor;
  for (size_t i = 0; i < got.size() && i < want.size(); ++i) {
    const double d = std::fabs(got[i] - want[i]);
    diff = std::isnan(d) ? INFINITY : std::max(diff, d);
    scale = std::max(scale, std::fabs(want[i]));
  }
  return diff / scale;
}

// A fixture comparing a GPU backend with a one-thread CPU backend. Each test calls init() after
// its skip line; host_randn draws from rng_key(seed, rng_name) (each file its own name).
class CudaVsCpuTest : public ::testing::Test {
 protected:
  explicit CudaVsCpuTest(const char* rng_name) : rng_name_(rng_name) {}

  void init() {
    gpu_ = make_cuda_ops(0);
    cpu_ = make_cpu_ops(1);
  }

  Tensor host_randn(Shape shape, uint64_t seed, DType dtype, double scale = 1.0) {
    return cuda_test::host_randn(*cpu_, shape, rng_key(seed, rng_name_), dtype, scale);
  }
  Tensor clone_host(const Tensor& h) { return cuda_test::clone_host(*cpu_, h); }
  Tensor to_gpu(const Tensor& h) { return to_device(*gpu_, h); }
  Tensor to_host(const Tensor& d) { return cuda_test::to_host(*gpu_, d); }
  Vec values(const Tensor& h) { return cuda_test::values(*cpu_, h); }

  std::unique_ptr<Ops> gpu_, cpu_;

 private:
  const char* rng_name_;
};

}  // namespace trident::cuda_test
