// LayerNorm (biased variance, as PyTorch) and RMSNorm, forward and backward.
// x, y, dy, dx: [N, C], each fp32, bf16 or fp16 (statistics and arithmetic in fp32);
// w, b, dw, db: [C] and mean, rstd: [N] are fp32 (all fp64 in an fp64 call).
#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

struct NormShape {
  int64_t N, C;
  DType compute;  // kF32 (for fp32/bf16/fp16 activations) or kF64
};

NormShape check_norm(const char* op, const Tensor& x, const Tensor& w, const Tensor& act, const Tensor& stat) {
  const DType ct = compute_dtype(x, op, "x");
  const int64_t C = last_dim(x), N = rows_of(x);
  check_dtype(w, ct, op, "w");
  check_numel(w, C, op, "w");
  check_act(act, ct, op, "y/dy");
  TRIDENT_CHECK(act.shape() == x.shape(), op, ": ", act.shape().str(), " differs from x ", x.shape().str());
  check_dtype(stat, ct, op, "mean/rstd");
  check_numel(stat, N, op, "mean/rstd");
  return {N, C, ct};
}

// Per-thread row buffers of C elements for the 16-bit path (unused when storage is T).
template <typename T, int Slot>
T* row_buffer(const Act<T>& a, int64_t C) {
  return a.in_place() ? nullptr : thread_scratch<T, Slot>(static_cast<size_t>(C));
}

// out[c] += sum_n f(n, c) for columns in blocks of kColBlock, one block per task (race-free).
// Sums over many rows are kept in double (cheap here: the pass is memory-bound).
template <typename T, typename F>
void column_reduce(int64_t N, int64_t C, T* out, F f) {
  const int64_t blocks = (C + kColBlock - 1) / kColBlock;
#pragma omp parallel for if (N * C > kParallelElems) schedule(static)
  for (int64_t blk = 0; blk < blocks; ++blk) {
    const int64_t c0 = blk * kColBlock, width = std::min(kColBlock, C - c0);
    double acc[kColBlock] = {};
    for (int64_t n = 0; n < N; ++n) f(n, c0, width, acc);
    for (int64_t c = 0; c < width; ++c) out[c0 + c] = T(out[c0 + c] + acc[c]);
  }
}

}  // namespace

void layernorm_forward(const Tensor& x, const Tensor& w, const Tensor& b, double eps, Tensor& y, Tensor& mean,
                       Tensor& rstd) {
  constexpr const char* op = "layernorm_forward";
  const auto s = check_norm(op, x, w, y, mean);
  check_dtype(rstd, s.compute, op, "rstd");
  check_numel(rstd, s.N, op, "rstd");
  if (b.defined()) {
    check_dtype(b, s.compute, op, "b");
    check_numel(b, s.C, op, "b");
  }
  dispatch_float(s.compute, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), ya(y);
    const T* pw = w.data<T>();
    const T* pb = b.defined() ? b.data<T>() : nullptr;
    T* pmean = mean.data<T>();
    T* prstd = rstd.data<T>();
    const int64_t C = s.C;
    const T inv_c = T(1) / T(C);
#pragma omp parallel for if (s.N * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < s.N; ++n) {
      const T* xr = xa.read(n * C, C, row_buffer<T, 0>(xa, C));
      T sum = 0;
#pragma omp simd reduction(+ : sum)
      for (int64_t c = 0; c < C; ++c) sum += xr[c];
      const T m = sum * inv_c;
      T var = 0;
#pragma omp simd reduction(+ : var)
      for (int64_t c = 0; c < C; ++c) var += (xr[c] - m) * (xr[c] - m);
      const T r = T(1) / std::sqrt(var * inv_c + T(eps));
      T* yr = ya.out(n * C, row_buffer<T, 1>(ya, C));
      if (pb) {
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r * pw[c] + pb[c];
      } else {
#pragma omp simd
        for (int64_t c = 0; c < C; ++c) yr[c] = (xr[c] - m) * r * pw[c];
      }
      ya.commit(n * C, C, yr);
      pmean[n] = m;
      prstd[n] = r;
    }
  });
}

// With xhat = (x - mean) * rstd and g = dy * w:
// dx += rstd * (g - mean(g) - xhat * mean(g * xhat)); dw += sum_n dy * xhat; db += sum_n dy.
void layernorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& mean,
                        const Tensor& rstd, Tensor& dx, Tensor& dw, Tensor& db) {
  constexpr const char* op = "layernorm_backward";
  const auto s = check_norm(op, x, w, dy, mean);
  check_dtype(rstd, s.compute, op, "rstd");
  check_numel(rstd, s.N, op, "rstd");
  check_act(dx, s.compute, op, "dx");
  TRIDENT_CHECK(dx.shape() == x.shape(), op, ": dx ", dx.shape().str(), " differs from x ", x.shape().str());
  if (dw.defined()) {  // undefined: a frozen weight (dx only)
    check_dtype(dw, s.compute, op, "dw");
    check_numel(dw, s.C, op, "dw");
  }
  if (db.defined()) {
    check_dtype(db, s.compute, op, "db");
    check_numel(db, s.C, op, "db");
  }
  dispatch_float(s.compute, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> dya(dy), xa(x), dxa(dx);
    const T* pw = w.data<T>();
    const T* pmean = mean.data<T>();
    const T* prstd = rstd.data<T>();
    const int64_t C = s.C;
    const T inv_c = T(1) / T(C);
#pragma omp parallel for if (s.N * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < s.N; ++n) {
      const T* xr = xa.read(n * C, C, row_buffer<T, 0>(xa, C));
      const T* dyr = dya.read(n * C, C, row_buffer<T, 1>(dya, C));
      const T m = pmean[n], r = prstd[n];
      T g_sum = 0, gx_sum = 0;
#pragma omp simd reduction(+ : g_sum, gx_sum)
      for (int64_t c = 0; c < C; ++c) {
        const T g = dyr[c] * pw[c];
        g_sum += g;
        gx_sum += g * (xr[c] - m) * r;
      }
      const T g_mean = g_sum * inv_c, gx_mean = gx_sum * inv_c;
      T* dxr = dxa.update(n * C, C, row_buffer<T, 2>(dxa, C));
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dxr[c] += r * (dyr[c] * pw[c] - g_mean - (xr[c] - m) * r * gx_mean);
      dxa.commit(n * C, C, dxr);
    }
    if (dw.defined())
    column_reduce(s.N, C, dw.data<T>(), [&](int64_t n, int64_t c0, int64_t width, double* acc) {
      alignas(64) T bx[kColBlock], bdy[kColBlock];
      const T* xr = xa.read(n * C + c0, width, bx);
      const T* dyr = dya.read(n * C + c0, width, bdy);
      const T m = pmean[n], r = prstd[n];
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) acc[c] += double(dyr[c] * (xr[c] - m) * r);
    });
    if (db.defined()) {
      column_reduce(s.N, C, db.data<T>(), [&](int64_t n, int64_t c0, int64_t width, double* acc) {
        alignas(64) T bdy[kColBlock];
        const T* dyr = dya.read(n * C + c0, width, bdy);
#pragma omp simd
        for (int64_t c = 0; c < width; ++c) acc[c] += double(dyr[c]);
      });
    }
  });
}

void rmsnorm_forward(const Tensor& x, const Tensor& w, double eps, Tensor& y, Tensor& rstd) {
  constexpr const char* op = "rmsnorm_forward";
  const auto s = check_norm(op, x, w, y, rstd);
  dispatch_float(s.compute, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), ya(y);
    const T* pw = w.data<T>();
    T* prstd = rstd.data<T>();
    const int64_t C = s.C;
#pragma omp parallel for if (s.N * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < s.N; ++n) {
      const T* xr = xa.read(n * C, C, row_buffer<T, 0>(xa, C));
      T ss = 0;
#pragma omp simd reduction(+ : ss)
      for (int64_t c = 0; c < C; ++c) ss += xr[c] * xr[c];
      const T r = T(1) / std::sqrt(ss / T(C) + T(eps));
      T* yr = ya.out(n * C, row_buffer<T, 1>(ya, C));
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) yr[c] = xr[c] * r * pw[c];
      ya.commit(n * C, C, yr);
      prstd[n] = r;
    }
  });
}

// With xhat = x * rstd and g = dy * w: dx += rstd * (g - xhat * mean(g * xhat)); dw += sum_n dy * xhat.
void rmsnorm_backward(const Tensor& dy, const Tensor& x, const Tensor& w, const Tensor& rstd, Tensor& dx,
                      Tensor& dw) {
  constexpr const char* op = "rmsnorm_backward";
  const auto s = check_norm(op, x, w, dy, rstd);
  check_act(dx, s.compute, op, "dx");
  TRIDENT_CHECK(dx.shape() == x.shape(), op, ": dx ", dx.shape().str(), " differs from x ", x.shape().str());
  if (dw.defined()) {  // undefined: a frozen weight (dx only)
    check_dtype(dw, s.compute, op, "dw");
    check_numel(dw, s.C, op, "dw");
  }
  dispatch_float(s.compute, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> dya(dy), xa(x), dxa(dx);
    const T* pw = w.data<T>();
    const T* prstd = rstd.data<T>();
    const int64_t C = s.C;
#pragma omp parallel for if (s.N * C > kParallelElems) schedule(static)
    for (int64_t n = 0; n < s.N; ++n) {
      const T* xr = xa.read(n * C, C, row_buffer<T, 0>(xa, C));
      const T* dyr = dya.read(n * C, C, row_buffer<T, 1>(dya, C));
      const T r = prstd[n];
      T gx_sum = 0;
#pragma omp simd reduction(+ : gx_sum)
      for (int64_t c = 0; c < C; ++c) gx_sum += dyr[c] * pw[c] * xr[c] * r;
      const T gx_mean = gx_sum / T(C);
      T* dxr = dxa.update(n * C, C, row_buffer<T, 2>(dxa, C));
#pragma omp simd
      for (int64_t c = 0; c < C; ++c) dxr[c] += r * (dyr[c] * pw[c] - xr[c] * r * gx_mean);
      dxa.commit(n * C, C, dxr);
    }
    if (dw.defined())
    column_reduce(s.N, C, dw.data<T>(), [&](int64_t n, int64_t c0, int64_t width, double* acc) {
      alignas(64) T bx[kColBlock], bdy[kColBlock];
      const T* xr = xa.read(n * C + c0, width, bx);
      const T* dyr = dya.read(n * C + c0, width, bdy);
      const T r = prstd[n];
#pragma omp simd
      for (int64_t c = 0; c < width; ++c) acc[c] += double(dyr[c] * xr[c] * r);
    });
  });
}

}  // namespace trident::cpu
