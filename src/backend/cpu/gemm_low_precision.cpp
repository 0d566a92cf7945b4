// Mixed-precision GEMM: picks bf16 matmul (oneDNN) or widening to fp32 sgemm per the rules in
// gemm_low_precision.hpp, converting operands into reusable scratch buffers.
#include "gemm_low_precision.hpp"

#include <map>
#include <oneapi/dnnl/dnnl.hpp>
#include <tuple>
#include <vector>

#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {

namespace {

// An fp32 host tensor over memory owned elsewhere (scratch), for passing to cpu::gemm.
Tensor wrap_f32(float* p, Shape shape) {
  return Tensor(std::make_shared<Storage>(p, static_cast<size_t>(shape.numel()) * 4, Device::kCPU, nullptr), 0,
                shape, DType::kF32);
}

// dst = t widened to fp32 (t fp32/bf16/fp16), rounded through fp16 first when round_fp16.
void widen_into(const Tensor& t, bool round_fp16, float* dst) {
  const int64_t n = t.numel();
  if (t.dtype() == DType::kF32) {
    const float* src = t.data<float>();
    for_chunks(n, [&](int64_t at, int64_t len) {
      if (!round_fp16) {
        std::copy(src + at, src + at + len, dst + at);
        return;
      }
      alignas(64) uint16_t h[kChunk];
      f32_to_half(src + at, DType::kF16, h, len);
      half_to_f32(h, DType::kF16, dst + at, len);
    });
  } else {
    for_chunks(n, [&](int64_t at, int64_t len) { load_f32(t.raw(), t.dtype(), at, dst + at, len); });
  }
}

void narrow_into(const float* src, Tensor& t) {
  for_chunks(t.numel(), [&](int64_t at, int64_t len) { store_f32(src + at, t.dtype(), t.raw(), at, len); });
}

bool is_gemm_float(DType d) { return d == DType::kF32 || d == DType::kBF16 || d == DType::kF16; }

// Whether a product of a and b at this precision runs as a bf16 matmul (else widened to fp32).
bool bf16_path(DType precision, const Tensor& a, const Tensor& b) {
  return precision == DType::kBF16 && cpu_path_has_bf16() && onednn_has_bf16_matmul() && a.dtype() != DType::kF16 &&
         b.dtype() != DType::kF16;
}

}  // namespace

bool onednn_has_bf16_matmul() {
  static const bool has = [] {
    try {
      const dnnl::engine engine(dnnl::engine::kind::cpu, 0);
      using tag = dnnl::memory::format_tag;
      using dt = dnnl::memory::data_type;
      const dnnl::memory::desc a_md({16, 16}, dt::bf16, tag::ab), c_md({16, 16}, dt::f32, tag::ab);
      const dnnl::matmul::primitive_desc pd(dnnl::matmul::desc(a_md, a_md, c_md), engine);
      return true;
    } catch (const dnnl::error&) {
      return false;
    }
  }();
  return has;
}

struct LowPrecisionGemm::Impl {
  dnnl::engine engine{dnnl::engine::kind::cpu, 0};
  dnnl::stream stream{engine};
  // (M, N, K, trans_a, trans_b, alpha, beta, c is bf16) -> matmul primitive.
  std::map<std::tuple<int64_t, int64_t, int64_t, bool, bool, float, float, bool>, dnnl::matmul> cache;
  GrowingStorage a16, b16;  // fp32 inputs rounded to bf16, grown to the largest seen
  GrowingStorage a32, b32, c32;  // widened operands of the fp32 path, fp32 staging of c
  GrowingStorage shared32;       // a shared operand of gemm_parts, widened once

  dnnl::matmul& primitive(int64_t M, int64_t N, int64_t K, bool ta, bool tb, float alpha, float beta, bool c_bf16) {
    const auto key = std::make_tuple(M, N, K, ta, tb, alpha, beta, c_bf16);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    const dnnl::memory::desc a_md({M, K}, dt::bf16, ta ? tag::ba : tag::ab);
    const dnnl::memory::desc b_md({K, N}, dt::bf16, tb ? tag::ba : tag::ab);
    const dnnl::memory::desc c_md({M, N}, c_bf16 ? dt::bf16 : dt::f32, tag::ab);
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

  // bf16 storage of an input: the tensor itself, or its fp32 values rounded into buf.
  const uint16_t* as_bf16(const Tensor& t, GrowingStorage& buf) {
    if (t.dtype() == DType::kBF16) return static_cast<const uint16_t*>(t.raw());
    const float* src = t.data<float>();
    uint16_t* dst = buf.get<uint16_t>(t.numel());
    for_chunks(t.numel(), [&](int64_t at, int64_t len) { f32_to_half(src + at, DType::kBF16, dst + at, len); });
    return dst;
  }

  void bf16_matmul(bool ta, bool tb, const GemmDims& d, double alpha, const Tensor& a, const Tensor& b, double beta,
                   Tensor& c) {
    const uint16_t* pa = as_bf16(a, a16);
    const uint16_t* pb = as_bf16(b, b16);
    // c is written in place when fp32, or when bf16 and nothing is read from it.
    const bool c_direct = c.dtype() == DType::kF32 || (c.dtype() == DType::kBF16 && beta == 0.0);
    float* c_stage = nullptr;
    if (!c_direct) {
      c_stage = c32.get<float>(c.numel());
      if (beta != 0.0) widen_into(c, false, c_stage);
    }
    const bool c_bf16 = c_direct && c.dtype() == DType::kBF16;
    dnnl::matmul& mm = primitive(d.M, d.N, d.K, ta, tb, float(alpha), float(beta), c_bf16);
    using tag = dnnl::memory::format_tag;
    using dt = dnnl::memory::data_type;
    dnnl::memory am({{d.M, d.K}, dt::bf16, ta ? tag::ba : tag::ab}, engine, const_cast<uint16_t*>(pa));
    dnnl::memory bm({{d.K, d.N}, dt::bf16, tb ? tag::ba : tag::ab}, engine, const_cast<uint16_t*>(pb));
    dnnl::memory cm({{d.M, d.N}, c_bf16 ? dt::bf16 : dt::f32, tag::ab}, engine, c_direct ? c.raw() : c_stage);
    mm.execute(stream, {{DNNL_ARG_SRC, am}, {DNNL_ARG_WEIGHTS, bm}, {DNNL_ARG_DST, cm}});
    stream.wait();
    if (!c_direct) narrow_into(c_stage, c);
  }

  void f32_gemm(DType precision, bool ta, bool tb, double alpha, const Tensor& a, const Tensor& b, double beta,
                Tensor& c) {
    const bool round_fp16 = precision == DType::kF16;
    auto as_f32 = [&](const Tensor& t, GrowingStorage& buf) {
      if (t.dtype() == DType::kF32 && !round_fp16) return t;
      float* dst = buf.get<float>(t.numel());
      widen_into(t, round_fp16, dst);
      return wrap_f32(dst, t.shape());
    };
    const Tensor af = as_f32(a, a32), bf = as_f32(b, b32);
    if (c.dtype() == DType::kF32) {
      gemm(ta, tb, alpha, af, bf, beta, c);
      return;
    }
    float* c_stage = c32.get<float>(c.numel());
    if (beta != 0.0) widen_into(c, false, c_stage);
    Tensor cf = wrap_f32(c_stage, c.shape());
    gemm(ta, tb, alpha, af, bf, beta, cf);
    narrow_into(c_stage, c);
  }
};

LowPrecisionGemm::LowPrecisionGemm() : impl_(std::make_unique<Impl>()) {}
LowPrecisionGemm::~LowPrecisionGemm() = default;

void LowPrecisionGemm::run(DType precision, bool trans_a, bool trans_b, double alpha, const Tensor& a,
                           const Tensor& b, double beta, Tensor& c) {
  run_as(bf16_path(precision, a, b), precision, trans_a, trans_b, alpha, a, b, beta, c);
}

void LowPrecisionGemm::run_as(bool bf16, DType precision, bool trans_a, bool trans_b, double alpha, const Tensor& a,
                              const Tensor& b, double beta, Tensor& c) {
  constexpr const char* op = "gemm";
  check_tensor(a, op, "a");
  check_tensor(b, op, "b");
  check_tensor(c, op, "c");
  TRIDENT_CHECK(is_gemm_float(a.dtype()) && is_gemm_float(b.dtype()) && is_gemm_float(c.dtype()),
                "gemm: a is ", dtype_name(a.dtype()), ", b is ", dtype_name(b.dtype()), ", c is ", dtype_name(c.dtype()),
                "; each may be fp32, bf16 or fp16 (or all three fp64)");
  const GemmDims d = gemm_dims(trans_a, trans_b, a, b, c);
  if (d.M == 0 || d.N == 0) return;
  if (d.K == 0) {  // empty sum: c = beta * c
    if (beta == 0.0) fill(c, 0.0);
    else scale(c, beta);
    return;
  }
  if (bf16)
    impl_->bf16_matmul(trans_a, trans_b, d, alpha, a, b, beta, c);
  else
    impl_->f32_gemm(precision, trans_a, trans_b, alpha, a, b, beta, c);
}

void LowPrecisionGemm::run_parts(DType precision, bool trans_a, bool trans_b, double alpha,
                                 const std::vector<Tensor>& a, const std::vector<Tensor>& b, double beta,
                                 const std::vector<Tensor>& c) {
  Tensor shared_a = a.size() == 1 ? a[0] : Tensor(), shared_b = b.size() == 1 ? b[0] : Tensor();
  const bool widen_a = shared_a.defined() && (shared_a.dtype() != DType::kF32 || precision == DType::kF16);
  const bool widen_b = shared_b.defined() && (shared_b.dtype() != DType::kF32 || precision == DType::kF16);
  // Only one operand is shared in the projections; widening it once pays where it would be
  // widened, and the parts then take the fp32 path they would have taken.
  auto part_bf16 = [&](size_t g) { return bf16_path(precision, a[a.size() == 1 ? 0 : g], b[b.size() == 1 ? 0 : g]); };
  bool any_bf16 = false;
  for (size_t g = 0; g < c.size(); ++g) any_bf16 = any_bf16 || part_bf16(g);
  if ((widen_a || widen_b) && !any_bf16) {
    Tensor& shared = widen_a ? shared_a : shared_b;
    float* widened = impl_->shared32.get<float>(shared.numel());
    widen_into(shared, precision == DType::kF16, widened);
    shared = wrap_f32(widened, shared.shape());
  }
  for (size_t g = 0; g < c.size(); ++g) {
    Tensor part = c[g];  // fp32 operands at fp32 precision reach the sgemm as they are
    run_as(part_bf16(g), precision, trans_a, trans_b, alpha, shared_a.defined() ? shared_a : a[g],
           shared_b.defined() ? shared_b : b[g], beta, part);
  }
}

}  // namespace trident::cpu
