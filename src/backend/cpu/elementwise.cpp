// Elementwise and reduction kernels: copy (with fp32<->fp64/bf16/fp16 conversion), fill, add,
// scale, bias add and its backward, sum of squares. Shapes: y, dy [N, C]; bias, dbias [C].
// Activations (a, b, out, x, y, dy) may be fp32, bf16 or fp16 each; bias and dbias are fp32
// (fp64 when the call is fp64). Arithmetic is fp32, sums over rows in double.
#include <cstring>

#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
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
  } else if (s == DType::kF32 && is_half(d)) {
    const float* ps = src.data<float>();
    for_chunks(n, [&](int64_t at, int64_t len) { store_f32(ps + at, d, dst.raw(), at, len); });
  } else if (is_half(s) && d == DType::kF32) {
    float* pd = dst.data<float>();
    for_chunks(n, [&](int64_t at, int64_t len) { load_f32(src.raw(), s, at, pd + at, len); });
  } else if (is_half(s) && is_half(d)) {  // bf16 <-> fp16 through fp32
    for_chunks(n, [&](int64_t at, int64_t len) {
      alignas(64) float buf[kChunk];
      load_f32(src.raw(), s, at, buf, len);
      store_f32(buf, d, dst.raw(), at, len);
    });
  } else {
    TRIDENT_CHECK(false, "copy: no conversion from ", dtype_name(s), " to ", dtype_name(d),
                  " (same dtype, fp32 <-> fp64, or between fp32, bf16 and fp16)");
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
  constexpr const char* op = "add";
  const DType ct = compute_dtype(a, op, "a");
  check_act(b, ct, op, "b");
  check_act(out, ct, op, "out");
  check_numel(b, a.numel(), op, "b");
  check_numel(out, a.numel(), op, "out");
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(a), xb(b), xo(out);  // out may alias a or b: same index read then written
    for_chunks(a.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T ba[kChunk], bb[kChunk], bo[kChunk];
      const T* pa = xa.read(at, len, ba);
      const T* pb = xb.read(at, len, bb);
      T* po = xo.out(at, bo);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) po[i] = pa[i] + pb[i];
      xo.commit(at, len, po);
    });
  });
}

void scale(Tensor& x, double s) {
  constexpr const char* op = "scale";
  const DType ct = compute_dtype(x, op, "x");
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x);
    const T f = static_cast<T>(s);
    for_chunks(x.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T buf[kChunk];
      T* p = xa.update(at, len, buf);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) p[i] *= f;
      xa.commit(at, len, p);
    });
  });
}

double sum_squares(const Tensor& x) {
  constexpr const char* op = "sum_squares";
  const DType ct = compute_dtype(x, op, "x");
  double total = 0.0;
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x);
    const int64_t n = x.numel(), chunks = (n + kChunk - 1) / kChunk;
    double acc = 0.0;
#pragma omp parallel for reduction(+ : acc) if (n > kParallelElems) schedule(static)
    for (int64_t c = 0; c < chunks; ++c) {
      const int64_t at = c * kChunk, len = std::min(kChunk, n - at);
      alignas(64) T buf[kChunk];
      const T* p = xa.read(at, len, buf);
      // kLanes independent double accumulators (4 AVX-512 registers): one chain of adds would
      // hold the loop to one vector per add latency, half of what memory delivers.
      constexpr int64_t kLanes = 32;
      double lanes[kLanes] = {};
      int64_t i = 0;
      for (; i + kLanes <= len; i += kLanes) {
#pragma omp simd
        for (int64_t l = 0; l < kLanes; ++l) lanes[l] += double(p[i + l]) * double(p[i + l]);
      }
      for (; i < len; ++i) lanes[0] += double(p[i]) * double(p[i]);
      double part = 0.0;
      for (int64_t l = 0; l < kLanes; ++l) part += lanes[l];
      acc += part;
    }
    total = acc;
  });
  return total;
}

// y[N, C] += bias[C]
void add_bias(Tensor& y, const Tensor& bias) {
  constexpr const char* op = "add_bias";
  const DType ct = compute_dtype(y, op, "y");
  check_dtype(bias, ct, op, "bias");
  const int64_t C = bias.numel(), N = C == 0 ? 0 : y.numel() / C;
  TRIDENT_CHECK(last_dim(y) == C, "add_bias: y ", y.shape().str(), " does not end in bias's ", C);
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> ya(y);
    const T* pb = bias.data<T>();
#pragma omp parallel for if (N * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n) {
      T* buf = ya.in_place() ? nullptr : thread_scratch<T, 0>(static_cast<size_t>(C));
      T* row = ya.update(n * C, C, buf);
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) row[c] += pb[c];
      ya.commit(n * C, C, row);
    }
  });
}

// dbias[C] += sum_n dy[N, C]; each thread owns column blocks (race-free, deterministic).
void bias_backward(const Tensor& dy, Tensor& dbias) {
  constexpr const char* op = "bias_backward";
  const DType ct = compute_dtype(dy, op, "dy");
  check_dtype(dbias, ct, op, "dbias");
  const int64_t C = dbias.numel(), N = C == 0 ? 0 : dy.numel() / C;
  TRIDENT_CHECK(last_dim(dy) == C, "bias_backward: dy ", dy.shape().str(), " does not end in dbias's ", C);
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> dya(dy);
    T* pdb = dbias.data<T>();
    const int64_t blocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for if (N * C > kParallelElems) schedule(static)
    for (int64_t blk = 0; blk < blocks; ++blk) {
      const int64_t c0 = blk * kColBlock, width = std::min(kColBlock, C - c0);
      double acc[kColBlock] = {};  // long sums over rows in double
      alignas(64) T buf[kColBlock];
      for (int64_t n = 0; n < N; ++n) {
        const T* row = dya.read(n * C + c0, width, buf);
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) acc[c] += double(row[c]);
      }
      for (int64_t c = 0; c < width; ++c) pdb[c0 + c] = T(pdb[c0 + c] + acc[c]);
    }
  });
}

}  // namespace trident::cpu
