// Elementwise and reduction kernels: copy (with fp32<->fp64/bf16/fp16 conversion), fill, add,
// scale, bias add and its backward, sum of squares. Shapes: y, dy [N, C]; bias, dbias [C].
#include <cstring>

#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu {
namespace {

template <typename Src, typename Dst, typename Convert>
void convert_loop(const Src* src, Dst* dst, int64_t n, Convert convert) {
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
  for (int64_t i = 0; i < n; ++i) dst[i] = convert(src[i]);
}

}  // namespace

void copy(const Tensor& src, Tensor& dst) {
  check_tensor(src, "copy", "src");
  check_tensor(dst, "copy", "dst");
  check_numel(dst, src.numel(), "copy", "dst");
  const int64_t n = src.numel();
  const DType s = src.dtype(), d = dst.dtype();
  if (s == d) {
    if (src.raw() == dst.raw() || n == 0) return;
    const size_t bytes = src.bytes();
    const int chunks = bytes > (size_t(1) << 20) ? omp_get_max_threads() : 1;
#pragma omp parallel for num_threads(chunks) schedule(static)
    for (int c = 0; c < chunks; ++c) {
      const size_t begin = bytes * c / chunks, end = bytes * (c + 1) / chunks;
      std::memmove(static_cast<char*>(dst.raw()) + begin, static_cast<const char*>(src.raw()) + begin,
                   end - begin);
    }
    return;
  }
  if (s == DType::kF32 && d == DType::kF64) {
    convert_loop(src.data<float>(), dst.data<double>(), n, [](float x) { return double(x); });
  } else if (s == DType::kF64 && d == DType::kF32) {
    convert_loop(src.data<double>(), dst.data<float>(), n, [](double x) { return float(x); });
  } else if (s == DType::kF32 && d == DType::kBF16) {
    convert_loop(src.data<float>(), static_cast<uint16_t*>(dst.raw()), n, fp32_to_bf16_bits);
  } else if (s == DType::kBF16 && d == DType::kF32) {
    convert_loop(static_cast<const uint16_t*>(src.raw()), dst.data<float>(), n, bf16_bits_to_fp32);
  } else if (s == DType::kF32 && d == DType::kF16) {
    convert_loop(src.data<float>(), static_cast<uint16_t*>(dst.raw()), n, fp32_to_fp16_bits);
  } else if (s == DType::kF16 && d == DType::kF32) {
    convert_loop(static_cast<const uint16_t*>(src.raw()), dst.data<float>(), n, fp16_bits_to_fp32);
  } else {
    TRIDENT_CHECK(false, "copy: no conversion from ", dtype_name(s), " to ", dtype_name(d),
                  " (same dtype, or fp32 <-> fp64/bf16/fp16)");
  }
}

void fill(Tensor& x, double value) {
  check_tensor(x, "fill", "x");
  const int64_t n = x.numel();
  auto fill_as = [&](auto v) {
    using T = decltype(v);
    T* p = static_cast<T*>(x.raw());
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) p[i] = v;
  };
  switch (x.dtype()) {
    case DType::kF32: fill_as(static_cast<float>(value)); break;
    case DType::kF64: fill_as(value); break;
    case DType::kI32: fill_as(static_cast<int32_t>(value)); break;
    case DType::kBF16: fill_as(fp32_to_bf16_bits(static_cast<float>(value))); break;
    case DType::kF16: fill_as(fp32_to_fp16_bits(static_cast<float>(value))); break;
  }
}

void add(const Tensor& a, const Tensor& b, Tensor& out) {
  check_tensor(a, "add", "a");
  check_dtype(b, a.dtype(), "add", "b");
  check_dtype(out, a.dtype(), "add", "out");
  check_numel(b, a.numel(), "add", "b");
  check_numel(out, a.numel(), "add", "out");
  dispatch_float(a.dtype(), "add", [&](auto tag) {
    using T = decltype(tag);
    const T* pa = a.data<T>();
    const T* pb = b.data<T>();
    T* po = out.data<T>();  // may alias a or b: same index read then written
    const int64_t n = a.numel();
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) po[i] = pa[i] + pb[i];
  });
}

void scale(Tensor& x, double s) {
  check_tensor(x, "scale", "x");
  dispatch_float(x.dtype(), "scale", [&](auto tag) {
    using T = decltype(tag);
    T* p = x.data<T>();
    const T f = static_cast<T>(s);
    const int64_t n = x.numel();
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) p[i] *= f;
  });
}

double sum_squares(const Tensor& x) {
  check_tensor(x, "sum_squares", "x");
  double total = 0.0;
  dispatch_float(x.dtype(), "sum_squares", [&](auto tag) {
    using T = decltype(tag);
    const T* p = x.data<T>();
    const int64_t n = x.numel();
    double acc = 0.0;
#pragma omp parallel for simd reduction(+ : acc) if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) acc += double(p[i]) * double(p[i]);
    total = acc;
  });
  return total;
}

// y[N, C] += bias[C]
void add_bias(Tensor& y, const Tensor& bias) {
  check_tensor(y, "add_bias", "y");
  check_dtype(bias, y.dtype(), "add_bias", "bias");
  const int64_t C = bias.numel(), N = C == 0 ? 0 : y.numel() / C;
  TRIDENT_CHECK(last_dim(y) == C, "add_bias: y ", y.shape().str(), " does not end in bias's ", C);
  dispatch_float(y.dtype(), "add_bias", [&](auto tag) {
    using T = decltype(tag);
    T* py = y.data<T>();
    const T* pb = bias.data<T>();
#pragma omp parallel for if (N * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      T* row = py + n * C;
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) row[c] += pb[c];
    }
  });
}

// dbias[C] += sum_n dy[N, C]; each thread owns column blocks (race-free, deterministic).
void bias_backward(const Tensor& dy, Tensor& dbias) {
  check_tensor(dy, "bias_backward", "dy");
  check_dtype(dbias, dy.dtype(), "bias_backward", "dbias");
  const int64_t C = dbias.numel(), N = C == 0 ? 0 : dy.numel() / C;
  TRIDENT_CHECK(last_dim(dy) == C, "bias_backward: dy ", dy.shape().str(), " does not end in dbias's ", C);
  dispatch_float(dy.dtype(), "bias_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* pdy = dy.data<T>();
    T* pdb = dbias.data<T>();
    const int64_t blocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for if (N * C > kParallelElems) schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t c0 = blk * kColBlock, width = std::min(kColBlock, C - c0);
      double acc[kColBlock] = {};  // long sums over rows in double
      for (int64_t n = 0; n < N; ++n) {
        const T* row = pdy + n * C + c0;
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) acc[c] += double(row[c]);
      }
      for (int64_t c = 0; c < width; ++c) pdb[c0 + c] = T(pdb[c0 + c] + acc[c]);
    }
  });
}

}  // namespace trident::cpu
