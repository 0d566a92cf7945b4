// CudaOps's own methods against the CPU backend on the same inputs: GEMM (every transpose
// combination, odd sizes, fp32 in TF32, bf16/fp16 tensor cores, matmul precision, mixed dtypes,
// beta accumulation), copies with conversion, fill, bias add and its backward, add, scale, sum
// of squares, dropout (bit-identical mask), AdamW, the peak measurement, and the device checks.
// Every test skips without a usable GPU.
#include <gtest/gtest.h>

#include <cstdlib>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cuda_ops.hpp"
#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"
#include "cuda_test_support.hpp"
#ifdef TRIDENT_WITH_CUDA
#include <dlfcn.h>

#include "../../src/backend/cuda/allocator.hpp"
#endif

namespace trident {
namespace {

using cuda_test::max_err;

#ifdef TRIDENT_WITH_CUDA
constexpr bool kBuiltWithCuda = true;
#else
constexpr bool kBuiltWithCuda = false;
#endif

// fp32 GEMMs run in TF32 (10-bit mantissa inputs): about 1e-3 of the output's scale.
constexpr double kTf32Tol = 3e-3;

class CudaCoreTest : public cuda_test::CudaVsCpuTest {
 protected:
  CudaCoreTest() : CudaVsCpuTest("cuda-core") {}

  static bool same_bytes(const Tensor& a, const Tensor& b) {
    return a.bytes() == b.bytes() && std::memcmp(a.raw(), b.raw(), a.bytes()) == 0;
  }

  // gemm on both backends from the same host inputs; returns the normalised max error of c.
  double gemm_err(bool ta, bool tb, int64_t M, int64_t N, int64_t K, DType da, DType db, DType dc, double alpha,
                  double beta, uint64_t seed) {
    const Tensor a = host_randn(ta ? Shape{K, M} : Shape{M, K}, seed, da);
    const Tensor b = host_randn(tb ? Shape{N, K} : Shape{K, N}, seed + 1, db);
    const Tensor c0 = host_randn(Shape{M, N}, seed + 2, dc);
    Tensor c_cpu = clone_host(c0);
    cpu_->gemm(ta, tb, alpha, a, b, beta, c_cpu);
    Tensor c_gpu = to_gpu(c0);
    gpu_->gemm(ta, tb, alpha, to_gpu(a), to_gpu(b), beta, c_gpu);
    return max_err(values(to_host(c_gpu)), values(c_cpu));
  }
};

TEST_F(CudaCoreTest, GemmFp32AllTransposesOddSizesInTf32) {
  SKIP_WITHOUT_GPU();
  init();
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + " trans_b " + (tb ? "1" : "0"));
      EXPECT_LE(gemm_err(ta, tb, 37, 129, 65, DType::kF32, DType::kF32, DType::kF32, 1.0, 0.0, 1), kTf32Tol);
      EXPECT_LE(gemm_err(ta, tb, 37, 129, 65, DType::kF32, DType::kF32, DType::kF32, 0.5, 1.0, 2), kTf32Tol);
      EXPECT_LE(gemm_err(ta, tb, 256, 192, 320, DType::kF32, DType::kF32, DType::kF32, 1.0, 1.0, 3), kTf32Tol);
    }
}

TEST_F(CudaCoreTest, GemmBf16AndFp16Inputs) {
  SKIP_WITHOUT_GPU();
  init();
  for (bool ta : {false, true})
    for (bool tb : {false, true}) {
      SCOPED_TRACE(std::string("trans_a ") + (ta ? "1" : "0") + " trans_b " + (tb ? "1" : "0"));
      // 16-bit products are exact in fp32: only the accumulation order differs.
      EXPECT_LE(gemm_err(ta, tb, 37, 129, 65, DType::kBF16, DType::kBF16, DType::kF32, 1.0, 1.0, 4), 1e-5);
      EXPECT_LE(gemm_err(ta, tb, 64, 96, 128, DType::kBF16, DType::kBF16, DType::kF32, 1.0, 1.0, 5), 1e-5);
      EXPECT_LE(gemm_err(ta, tb, 64, 96, 128, DType::kF16, DType::kF16, DType::kF32, 1.0, 0.0, 6), 1e-5);
      // 16-bit c: rounded once at the end (1.5 units of the format's rounding).
      EXPECT_LE(gemm_err(ta, tb, 37, 129, 65, DType::kBF16, DType::kBF16, DType::kBF16, 1.0, 0.0, 7),
                cuda_test::kBf16Tol);
      EXPECT_LE(gemm_err(ta, tb, 64, 96, 128, DType::kF16, DType::kF16, DType::kF16, 1.0, 1.0, 8),
                cuda_test::kF16Tol);
      // bf16 inputs into an fp16 c (staged through fp32).
      EXPECT_LE(gemm_err(ta, tb, 37, 129, 65, DType::kBF16, DType::kBF16, DType::kF16, 1.0, 1.0, 9),
                cuda_test::kF16Tol);
    }
}

TEST_F(CudaCoreTest, GemmMixedInputDtypes) {
  SKIP_WITHOUT_GPU();
  init();
  // Different input types are widened to fp32 (TF32 on the GPU).
  EXPECT_LE(gemm_err(false, true, 37, 129, 65, DType::kBF16, DType::kF32, DType::kF32, 1.0, 1.0, 10), kTf32Tol);
  EXPECT_LE(gemm_err(true, false, 37, 129, 65, DType::kF32, DType::kF16, DType::kBF16, 1.0, 0.0, 11),
            cuda_test::kBf16Tol + kTf32Tol);
}

TEST_F(CudaCoreTest, GemmBf16MatmulPrecisionRoundsFp32Inputs) {
  SKIP_WITHOUT_GPU();
  init();
  EXPECT_EQ(gpu_->set_matmul_precision(DType::kBF16), DType::kBF16);
  const int64_t M = 37, N = 129, K = 65;
  const Tensor a = host_randn(Shape{M, K}, 12, DType::kF32), b = host_randn(Shape{N, K}, 13, DType::kF32);
  // Reference: the inputs rounded to bf16, multiplied exactly in fp32 on the CPU.
  Tensor a16 = Tensor::zeros(a.shape(), DType::kBF16), b16 = Tensor::zeros(b.shape(), DType::kBF16);
  cpu_->copy(a, a16);
  cpu_->copy(b, b16);
  Tensor a_r = Tensor::zeros(a.shape(), DType::kF32), b_r = Tensor::zeros(b.shape(), DType::kF32);
  cpu_->copy(a16, a_r);
  cpu_->copy(b16, b_r);
  Tensor want = Tensor::zeros(Shape{M, N}, DType::kF32);
  cpu_->gemm(false, true, 1.0, a_r, b_r, 0.0, want);
  Tensor c = gpu_->zeros(Shape{M, N}, DType::kF32);
  gpu_->gemm(false, true, 1.0, to_gpu(a), to_gpu(b), 0.0, c);
  EXPECT_LE(max_err(values(to_host(c)), values(want)), 1e-5);
  gpu_->set_matmul_precision(DType::kF32);
}

// gemm_parts with parts side by side on the device (the fused q/k/v and gate/up layout: one
// strided-batched cuBLASLt GEMM) and apart (part by part), against the CPU part by part: the
// projections' forward (shared input, bf16) and their weight gradients (shared input, fp32
// accumulated), and fp32 in TF32.
TEST_F(CudaCoreTest, GemmPartsSideBySideMatchesCpu) {
  SKIP_WITHOUT_GPU();
  init();
  const int64_t rows = 96, in = 64, out = 48;
  // Host parts, and their device copies side by side in one buffer (or apart).
  auto parts = [&](Shape shape, DType dtype, uint64_t seed, bool side_by_side, std::vector<Tensor>& host) {
    host.clear();
    std::vector<Tensor> device;
    const Tensor all = gpu_->zeros(Shape{3 * shape.numel()}, dtype);
    for (int g = 0; g < 3; ++g) {
      host.push_back(host_randn(shape, seed + g, dtype));
      Tensor d = side_by_side ? all.narrow(g * shape.numel(), (g + 1) * shape.numel()).view(shape)
                              : gpu_->zeros(shape, dtype);
      gpu_->copy(host.back(), d);
      device.push_back(d);
    }
    return device;
  };
  for (const bool side_by_side : {true, false})
    for (const DType dtype : {DType::kBF16, DType::kF32}) {
      SCOPED_TRACE(testing::Message() << (side_by_side ? "side by side " : "apart ") << dtype_name(dtype));
      const double tol = dtype == DType::kF32 ? kTf32Tol : cuda_test::kBf16Tol;
      const Tensor x = host_randn(Shape{rows, in}, 40, dtype);
      std::vector<Tensor> w, y, dy, dw;
      const std::vector<Tensor> w_d = parts(Shape{out, in}, dtype, 41, side_by_side, w);
      const std::vector<Tensor> y_d = parts(Shape{rows, out}, dtype, 44, side_by_side, y);
      gpu_->gemm_parts(false, true, 1.0, {to_gpu(x)}, w_d, 0.0, y_d);
      const std::vector<Tensor> dy_d = parts(Shape{rows, out}, dtype, 47, side_by_side, dy);
      const std::vector<Tensor> dw_d = parts(Shape{out, in}, DType::kF32, 50, side_by_side, dw);
      gpu_->gemm_parts(true, false, 1.0, dy_d, {to_gpu(x)}, 1.0, dw_d);
      for (size_t g = 0; g < 3; ++g) {
        cpu_->gemm(false, true, 1.0, x, w[g], 0.0, y[g]);
        cpu_->gemm(true, false, 1.0, dy[g], x, 1.0, dw[g]);
        EXPECT_LE(max_err(values(to_host(y_d[g])), values(y[g])), tol) << "part " << g;
        EXPECT_LE(max_err(values(to_host(dw_d[g])), values(dw[g])), tol) << "part " << g;
      }
    }
}

TEST_F(CudaCoreTest, GemmEmptyInnerDimensionScalesC) {
  SKIP_WITHOUT_GPU();
  init();
  const Tensor c0 = host_randn(Shape{5, 7}, 14, DType::kF32);
  Tensor c = to_gpu(c0);
  gpu_->gemm(false, false, 1.0, gpu_->zeros(Shape{5, 0}, DType::kF32), gpu_->zeros(Shape{0, 7}, DType::kF32), 0.5, c);
  Tensor want = clone_host(c0);
  cpu_->scale(want, 0.5);
  EXPECT_LE(max_err(values(to_host(c)), values(want)), 1e-7);
}

TEST_F(CudaCoreTest, CopyRoundTripsAndConversions) {
  SKIP_WITHOUT_GPU();
  init();
  const Shape shape{37, 129};
  const Tensor f = host_randn(shape, 20, DType::kF32, 3.0);
  // Same dtype: exact, for every dtype including fp64 and int32.
  EXPECT_TRUE(same_bytes(to_host(to_gpu(f)), f));
  Tensor i = Tensor::zeros(shape, DType::kI32), d = Tensor::zeros(shape, DType::kF64);
  for (int64_t k = 0; k < i.numel(); ++k) i.data<int32_t>()[k] = int32_t(k * 7919 - 100000);
  cpu_->copy(f, d);
  EXPECT_TRUE(same_bytes(to_host(to_gpu(i)), i));
  EXPECT_TRUE(same_bytes(to_host(to_gpu(d)), d));
  // Conversions (normal values: the CPU's vectorised rounding differs only on subnormals).
  for (DType t : {DType::kBF16, DType::kF16}) {
    SCOPED_TRACE(std::string(dtype_name(t)));
    Tensor want = Tensor::zeros(shape, t);
    cpu_->copy(f, want);
    Tensor dev = gpu_->zeros(shape, t);
    gpu_->copy(f, dev);  // host fp32 -> device 16-bit (staged, converted on the device)
    EXPECT_TRUE(same_bytes(to_host(dev), want));
    Tensor back = Tensor::zeros(shape, DType::kF32), back_want = Tensor::zeros(shape, DType::kF32);
    gpu_->copy(dev, back);  // device 16-bit -> host fp32
    cpu_->copy(want, back_want);
    EXPECT_TRUE(same_bytes(back, back_want));
    Tensor dev32 = gpu_->zeros(shape, DType::kF32);  // device -> device
    gpu_->copy(dev, dev32);
    EXPECT_TRUE(same_bytes(to_host(dev32), back_want));
  }
  Tensor bf = Tensor::zeros(shape, DType::kBF16), hf_want = Tensor::zeros(shape, DType::kF16);
  cpu_->copy(f, bf);
  cpu_->copy(bf, hf_want);
  Tensor hf = gpu_->zeros(shape, DType::kF16);
  gpu_->copy(to_gpu(bf), hf);
  EXPECT_TRUE(same_bytes(to_host(hf), hf_want));
  // fp64 <-> float converts on the host side (fp64 parameter init, fp64 loss sums).
  Tensor dev16 = gpu_->zeros(shape, DType::kBF16), want16 = Tensor::zeros(shape, DType::kBF16);
  gpu_->copy(d, dev16);  // host fp64 -> device bf16
  cpu_->copy(f, want16);  // d holds f's values exactly
  EXPECT_TRUE(same_bytes(to_host(dev16), want16));
  Tensor d_back = Tensor::zeros(shape, DType::kF64);
  gpu_->copy(to_gpu(f), d_back);  // device fp32 -> host fp64
  EXPECT_TRUE(same_bytes(d_back, d));
  // Not converted: fp64 between device tensors, int32 to float.
  Tensor dev32 = gpu_->zeros(shape, DType::kF32);
  EXPECT_THROW(gpu_->copy(to_gpu(d), dev32), Error);
  EXPECT_THROW(gpu_->copy(i, dev32), Error);
}

TEST_F(CudaCoreTest, Fill) {
  SKIP_WITHOUT_GPU();
  init();
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16, DType::kF64, DType::kI32})
    for (double v : {0.0, -2.5, 3.0}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " " + std::to_string(v));
      Tensor want = Tensor::zeros(Shape{1001}, t);
      cpu_->fill(want, v);
      Tensor x = gpu_->zeros(Shape{1001}, t);
      gpu_->fill(x, 1.0);
      gpu_->fill(x, v);
      EXPECT_TRUE(same_bytes(to_host(x), want));
    }
}

TEST_F(CudaCoreTest, AddBiasAndBiasBackward) {
  SKIP_WITHOUT_GPU();
  init();
  for (DType t : {DType::kF32, DType::kBF16, DType::kF16})
    for (int64_t N : {int64_t(37), int64_t(3001)}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " N=" + std::to_string(N));
      const int64_t C = 129;
      const Tensor y0 = host_randn(Shape{N, C}, 30, t), bias = host_randn(Shape{C}, 31, DType::kF32);
      Tensor y_cpu = clone_host(y0), y_gpu = to_gpu(y0);
      cpu_->add_bias(y_cpu, bias);
      gpu_->add_bias(y_gpu, to_gpu(bias));
      EXPECT_TRUE(same_bytes(to_host(y_gpu), y_cpu));  // one fp32 add, rounded once: exact
      const Tensor db0 = host_randn(Shape{C}, 32, DType::kF32);
      Tensor db_cpu = clone_host(db0), db_gpu = to_gpu(db0);
      cpu_->bias_backward(y0, db_cpu);
      gpu_->bias_backward(to_gpu(y0), db_gpu);
      EXPECT_LE(max_err(values(to_host(db_gpu)), values(db_cpu)), 1e-6);  // double sums: order only
    }
}

TEST_F(CudaCoreTest, AddScaleSumSquares) {
  SKIP_WITHOUT_GPU();
  init();
  const Shape shape{33, 129};
  const Tensor a = host_randn(shape, 40, DType::kBF16), b = host_randn(shape, 41, DType::kF32);
  Tensor out_cpu = Tensor::zeros(shape, DType::kF32), out_gpu = gpu_->zeros(shape, DType::kF32);
  cpu_->add(a, b, out_cpu);
  gpu_->add(to_gpu(a), to_gpu(b), out_gpu);
  EXPECT_TRUE(same_bytes(to_host(out_gpu), out_cpu));
  Tensor a_cpu = clone_host(a), a_gpu = to_gpu(a);  // out aliasing a, 16-bit
  cpu_->add(a_cpu, b, a_cpu);
  gpu_->add(a_gpu, to_gpu(b), a_gpu);
  EXPECT_TRUE(same_bytes(to_host(a_gpu), a_cpu));
  cpu_->scale(a_cpu, -0.37);
  gpu_->scale(a_gpu, -0.37);
  EXPECT_TRUE(same_bytes(to_host(a_gpu), a_cpu));
  for (DType t : {DType::kF32, DType::kBF16}) {
    const Tensor x = host_randn(Shape{100003}, 42, t);
    const double want = cpu_->sum_squares(x), got = gpu_->sum_squares(to_gpu(x));
    EXPECT_NEAR(got, want, 1e-10 * want) << dtype_name(t);  // double sums in another order
  }
  EXPECT_EQ(gpu_->sum_squares(gpu_->zeros(Shape{0}, DType::kF32)), 0.0);
}

TEST_F(CudaCoreTest, DropoutMaskIsBitIdenticalToCpu) {
  SKIP_WITHOUT_GPU();
  init();
  for (DType t : {DType::kF32, DType::kBF16})
    for (int64_t first : {int64_t(0), int64_t(7), int64_t(1) << 33}) {
      SCOPED_TRACE(std::string(dtype_name(t)) + " first_index " + std::to_string(first));
      const Tensor x = host_randn(Shape{37, 129}, 50, t);
      Tensor x_cpu = clone_host(x), x_gpu = to_gpu(x);
      cpu_->dropout(x_cpu, 0.1, 0x1234567890abcdefull, 3, first);
      gpu_->dropout(x_gpu, 0.1, 0x1234567890abcdefull, 3, first);
      EXPECT_TRUE(same_bytes(to_host(x_gpu), x_cpu));
    }
}

TEST_F(CudaCoreTest, AdamWMatchesCpu) {
  SKIP_WITHOUT_GPU();
  init();
  const Shape shape{1003};
  const Tensor p = host_randn(shape, 60, DType::kF32), g = host_randn(shape, 61, DType::kF32);
  Tensor m = host_randn(shape, 62, DType::kF32, 0.1), v = host_randn(shape, 63, DType::kF32, 0.1);
  for (int64_t k = 0; k < v.numel(); ++k) v.data<float>()[k] = std::fabs(v.data<float>()[k]);
  Tensor p_cpu = clone_host(p), m_cpu = clone_host(m), v_cpu = clone_host(v);
  Tensor p_gpu = to_gpu(p), g_gpu = to_gpu(g), m_gpu = to_gpu(m), v_gpu = to_gpu(v);
  const Ops::AdamWArgs args{.lr = 1e-3, .beta1 = 0.9, .beta2 = 0.95, .eps = 1e-8, .weight_decay = 0.1, .step = 3,
                            .grad_scale = 0.5};
  for (int step = 0; step < 3; ++step) {
    cpu_->adamw(p_cpu, g, m_cpu, v_cpu, args);
    gpu_->adamw(p_gpu, g_gpu, m_gpu, v_gpu, args);
  }
  EXPECT_LE(max_err(values(to_host(p_gpu)), values(p_cpu)), 1e-6);
  EXPECT_LE(max_err(values(to_host(m_gpu)), values(m_cpu)), 1e-6);
  EXPECT_LE(max_err(values(to_host(v_gpu)), values(v_cpu)), 1e-6);
}

TEST_F(CudaCoreTest, PeakFlopsIsMeasured) {
  SKIP_WITHOUT_GPU();
  init();
  const double bf16 = gpu_->peak_flops(DType::kBF16), tf32 = gpu_->peak_flops(DType::kF32);
  EXPECT_GT(bf16, 1e12);
  EXPECT_GT(tf32, 1e12);
  EXPECT_EQ(gpu_->peak_flops(DType::kBF16), bf16);  // cached
  std::printf("peak: bf16 %.1f TFLOP/s, tf32 %.1f TFLOP/s\n", bf16 / 1e12, tf32 / 1e12);
}

// The GPU's memory figure (metrics gpu_mem_mb): the most bytes live tensors held at once, in
// allocator size classes; freeing keeps the peak, and a reused cached block adds nothing.
TEST_F(CudaCoreTest, PeakDeviceMemoryFollowsLiveTensors) {
  SKIP_WITHOUT_GPU();
  init();
  EXPECT_EQ(cpu_->peak_device_mb(), 0.0);
  const double before = gpu_->peak_device_mb();
  {
    Tensor a = gpu_->zeros(Shape{64 << 20}, DType::kF32);  // 256 MiB, above anything init() made
    EXPECT_GE(gpu_->peak_device_mb(), before + 256.0 - 1e-9);
    EXPECT_LE(gpu_->peak_device_mb(), before + 256.0 * 1.25);  // size classes waste at most 25%
  }
  const double after_free = gpu_->peak_device_mb();
  EXPECT_GE(after_free, before + 256.0 - 1e-9);
  { Tensor b = gpu_->zeros(Shape{64 << 20}, DType::kF32); }  // the cached block again: same peak
  EXPECT_EQ(gpu_->peak_device_mb(), after_free);
}

TEST_F(CudaCoreTest, HostTensorsAndBadDtypesAreErrors) {
  SKIP_WITHOUT_GPU();
  init();
  const Tensor host = Tensor::zeros(Shape{4, 8}, DType::kF32);
  Tensor dev = gpu_->zeros(Shape{4, 8}, DType::kF32);
  try {
    gpu_->add(host, dev, dev);
    FAIL() << "a host tensor was accepted";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("add: a is a host tensor"), std::string::npos) << e.what();
  }
  Tensor d64 = gpu_->zeros(Shape{4, 8}, DType::kF64);
  EXPECT_THROW(gpu_->scale(d64, 2.0), Error);
  Tensor bias16 = gpu_->zeros(Shape{8}, DType::kBF16);
  EXPECT_THROW(gpu_->add_bias(dev, bias16), Error);
  EXPECT_THROW(make_cuda_ops(cuda_device_count()), Error);
}

TEST(CudaCore, ReportsWhyThereIsNoGpu) {
  std::string why;
  const int count = cuda_device_count(&why);
  if (count == 0) {
    EXPECT_FALSE(why.empty());
    EXPECT_THROW(make_cuda_ops(0), Error);
  }
  EXPECT_EQ(cuda_built(), kBuiltWithCuda);
}

#ifdef TRIDENT_WITH_CUDA
// The library the loader opens (cuda_loader.cpp) exists, has its entry points, and answers
// without a GPU: here the loader itself stops earlier, where no NVIDIA driver is installed.
TEST(CudaLibrary, OpensAndAnswersThroughItsEntryPoints) {
  // As the loader looks for it: the build tree's, else beside the executable (the GPU kit).
  void* handle = nullptr;
  std::string errors;
  for (const std::string& path : cuda_library_candidates()) {
    if ((handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL))) break;
    errors += std::string(dlerror()) + "; ";
  }
  ASSERT_NE(handle, nullptr) << errors;
  auto count = reinterpret_cast<int (*)(char*, size_t)>(dlsym(handle, "trident_cuda_device_count"));
  auto make = reinterpret_cast<Ops* (*)(int, char*, size_t)>(dlsym(handle, "trident_cuda_make_ops"));
  ASSERT_NE(count, nullptr);
  ASSERT_NE(make, nullptr);
  ASSERT_NE(dlsym(handle, "trident_cuda_stream"), nullptr);
  char why[256] = {};
  if (count(why, sizeof why) == 0) {
    EXPECT_NE(std::string(why).find("cudaGetDeviceCount"), std::string::npos) << why;
    char error[256] = {};
    EXPECT_EQ(make(0, error, sizeof error), nullptr);
    EXPECT_NE(std::string(error).find("no usable GPU"), std::string::npos) << error;
  }
}

// Host-only: the allocator's size classes (no GPU needed).
TEST(CudaAllocator, SizeClasses) {
  using cuda::DeviceAllocator;
  EXPECT_EQ(DeviceAllocator::round_size(0), 512u);
  EXPECT_EQ(DeviceAllocator::round_size(1), 512u);
  EXPECT_EQ(DeviceAllocator::round_size(513), 1024u);
  EXPECT_EQ(DeviceAllocator::round_size(size_t(1) << 20), size_t(1) << 20);
  EXPECT_EQ(DeviceAllocator::round_size((size_t(1) << 20) + 1), (size_t(1) << 20) + (size_t(1) << 18));
  EXPECT_EQ(DeviceAllocator::round_size(size_t(3) << 29), size_t(3) << 29);  // 1.5 GiB: a class
  for (size_t bytes : {size_t(1) << 21, size_t(5000000), size_t(123456789)}) {
    const size_t r = DeviceAllocator::round_size(bytes);
    EXPECT_GE(r, bytes);
    EXPECT_LE(double(r), 1.25 * double(bytes) + 1);
  }
}
#endif

}  // namespace
}  // namespace trident

// utils/gpu-check.sh must report a failing GPU test (tests/cli/gpu_check.sh plants this one).
TEST(GpuCheck, PlantedFailure) {
  if (!std::getenv("TRIDENT_GPU_CHECK_PLANTED_FAILURE")) GTEST_SKIP() << "planted only by tests/cli/gpu_check.sh";
  FAIL() << "the failure tests/cli/gpu_check.sh planted";
}
