// bf16 GEMM via oneDNN matmul (primitives cached per shape) and fp16-input emulation.
#include "gemm_low_precision.hpp"

#include <omp.h>

#include <oneapi/dnnl/dnnl.hpp>

#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu {

namespace {

void to_bf16(const float* src, uint16_t* dst, int64_t n) {
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = fp32_to_bf16_bits(src[i]);
}

void round_through_fp16(const float* src, float* dst, int64_t n) {
#pragma omp parallel for if (n > kParallelElems) schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = fp16_bits_to_fp32(fp32_to_fp16_bits(src[i]));
}

}  // namespace

struct LowPrecisionGemm::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // (M, N, K, trans_a, trans_b, alpha, beta) -> matmul primitive.
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool, float, float>, dnnl::matmul> cache;
  std::vector<uint16_t> a16, b16;  // inputs rounded to bf16, grown to the largest seen
  std::vector<float> a32, b32;     // inputs rounded through fp16

  dnnl::matmul& primitive(int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta) {
    const auto key = std::make_tuple(M, N, K, ta, tb, alpha, beta);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc a_md({M, K}, dt::bf16, ta ? tag::ba : tag::ab);
    const dnnl::memory::desc b_md({K, N}, dt::bf16, tb ? tag::ba : tag::ab);
    const dnnl::memory::desc c_md({M, N}, dt::f32, tag::ab);
    dnnl::primitive_attr attr;
    if (alpha != 1.0f) attr.set_output_scales(0, {alpha});
    if (beta != 0.0f) {
      dnnl::post_ops ops;
      ops.append_sum(beta);
      attr.set_post_ops(ops);
    }
    const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, b_md, c_md), attr, engine);
    return cache.emplace(key, dnnl::matmul(pd)).first->second;
  }
};

LowPrecisionGemm::LowPrecisionGemm() : impl_(std::make_unique<Impl>()) {}
LowPrecisionGemm::~LowPrecisionGemm() = default;

void LowPrecisionGemm::run(DType dtype, bool trans_a, bool trans_b, double alpha, const Tensor& a, const Tensor& b,
                           double beta, Tensor& c) {
  TRIDENT_CHECK(a.dtype() == DType::kF32 && b.dtype() == DType::kF32 && c.dtype() == DType::kF32,
                "16-bit gemm takes fp32 tensors (rounded inside)");
  const int64_t M = trans_a ? last_dim(a) : rows_of(a), K = trans_a ? rows_of(a) : last_dim(a);
  const int64_t N = trans_b ? rows_of(b) : last_dim(b);
  if (dtype == DType::kF16) {
    Impl& p = *impl_;
    p.a32.resize(static_cast<size_t>(a.numel()));
    p.b32.resize(static_cast<size_t>(b.numel()));
    round_through_fp16(a.data<float>(), p.a32.data(), a.numel());
    round_through_fp16(b.data<float>(), p.b32.data(), b.numel());
    Tensor a16 = Tensor(std::make_shared<Storage>(p.a32.data(), p.a32.size() * 4, Device::kCPU, nullptr), 0, a.shape(), DType::kF32);
    Tensor b16 = Tensor(std::make_shared<Storage>(p.b32.data(), p.b32.size() * 4, Device::kCPU, nullptr), 0, b.shape(), DType::kF32);
    gemm(trans_a, trans_b, alpha, a16, b16, beta, c);
    return;
  }
  TRIDENT_CHECK(dtype == DType::kBF16, "16-bit gemm of ", dtype_name(dtype));
  if (M == 0 || N == 0 || K == 0) {
    gemm(trans_a, trans_b, alpha, a, b, beta, c);  // the fp32 path handles the empty cases
    return;
  }
  Impl& p = *impl_;
  p.a16.resize(static_cast<size_t>(a.numel()));
  p.b16.resize(static_cast<size_t>(b.numel()));
  to_bf16(a.data<float>(), p.a16.data(), a.numel());
  to_bf16(b.data<float>(), p.b16.data(), b.numel());
  dnnl::matmul& mm = p.primitive(M, N, K, trans_a, trans_b, static_cast<float>(alpha), static_cast<float>(beta));
  using tag = dnnl::memory::format_tag;
  using dt = dnnl::memory::data_type;
  dnnl::memory am({{M, K}, dt::bf16, trans_a ? tag::ba : tag::ab}, p.engine, p.a16.data());
  dnnl::memory bm({{K, N}, dt::bf16, trans_b ? tag::ba : tag::ab}, p.engine, p.b16.data());
  dnnl::memory cm({{M, N}, dt::f32, tag::ab}, p.engine, c.data<float>());
  mm.execute(p.stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
  p.stream.wait();
}

}  // namespace trident::cpu
