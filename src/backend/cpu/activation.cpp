// GELU (tanh approximation) and SwiGLU, forward and backward, elementwise over any shape; GELU
// also with its projection's bias in the same pass (bias, dbias: [F]).
// gelu: x, y, dy, dx: [N, F]; swiglu: gate, up, y, dy, dgate, dup: [N, F]. Each tensor may be
// fp32, bf16 or fp16 (fp32 arithmetic), or all fp64.
#include <algorithm>

#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

void check_same(const char* op, const Tensor& ref, const Tensor& t, const char* name) {
  check_act(t, compute_dtype(ref, op, "input"), op, name);
  check_numel(t, ref.numel(), op, name);
}

// gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). Since 1 + tanh(u) =
// 2 sigmoid(2u), this is x * sigmoid(2u): one exp, and no cancellation for negative x.
template <typename T>
inline T gelu(T v) {
  return v * sigmoid_t<T>(v * (T(2 * kSqrt2OverPi) + T(2 * kSqrt2OverPi * kGeluCubic) * v * v));
}
// With s = sigmoid(2u): gelu'(x) = s + 2 x s (1 - s) u'(x), u'(x) = sqrt(2/pi) (1 + 3*0.044715 x^2).
template <typename T>
inline T gelu_slope(T v) {
  const T s = sigmoid_t<T>(v * (T(2 * kSqrt2OverPi) + T(2 * kSqrt2OverPi * kGeluCubic) * v * v));
  const T du = T(kSqrt2OverPi) * (T(1) + T(3 * kGeluCubic) * v * v);
  return s + T(2) * v * s * (T(1) - s) * du;
}

// The bias vector for one of the fused kernels: fp32 (fp64 in fp64 calls), F = x's last dim.
int64_t check_bias(const char* op, const Tensor& x, const Tensor& bias, const char* name) {
  check_dtype(bias, compute_dtype(x, op, "x"), op, name);
  const int64_t F = bias.numel();
  TRIDENT_CHECK(F > 0 ? last_dim(x) == F : x.numel() == 0, op, ": x ", x.shape().str(), " does not end in ", name,
                "'s ", F);
  return F;
}

}  // namespace

void gelu_forward(const Tensor& x, Tensor& y) {
  const DType ct = compute_dtype(x, "gelu_forward", "x");
  check_same("gelu_forward", x, y, "y");
  dispatch_float(ct, "gelu_forward", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), ya(y);
    for_chunks(x.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T bx[kChunk], by[kChunk];
      const T* px = xa.read(at, len, bx);
      T* py = ya.out(at, by);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) py[i] = gelu(px[i]);
      ya.commit(at, len, py);
    });
  });
}

void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  const DType ct = compute_dtype(x, "gelu_backward", "x");
  check_same("gelu_backward", x, dy, "dy");
  check_same("gelu_backward", x, dx, "dx");
  dispatch_float(ct, "gelu_backward", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), dya(dy), dxa(dx);  // dx may alias dy
    for_chunks(x.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T bx[kChunk], bdy[kChunk], bdx[kChunk];
      const T* px = xa.stage(at, len, bx);
      const T* pdy = dya.stage(at, len, bdy);
      T* pdx = dxa.out(at, bdx);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) pdx[i] = pdy[i] * gelu_slope(px[i]);
      dxa.commit(at, len, pdx);
    });
  });
}

// One pass over rows: x += bias, then GELU of the fp32 sum (x is rounded once where it is 16-bit).
void bias_gelu_forward(Tensor& x, const Tensor& bias, Tensor& y) {
  constexpr const char* op = "bias_gelu_forward";
  const DType ct = compute_dtype(x, op, "x");
  check_same(op, x, y, "y");
  const int64_t F = check_bias(op, x, bias, "bias"), N = F == 0 ? 0 : x.numel() / F;
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), ya(y);
    const T* pb = bias.data<T>();
#pragma omp parallel for if (N * F > kParallelElems) schedule(static)
    for (int64_t n = 0; n < N; ++n)
      for (int64_t c0 = 0; c0 < F; c0 += kChunk) {
        const int64_t len = std::min(kChunk, F - c0), at = n * F + c0;
        alignas(64) T bx[kChunk], by[kChunk];
        T* px = xa.update(at, len, bx);
        T* py = ya.out(at, by);
#pragma omp simd
        for (int64_t i = 0; i < len; ++i) {
          const T v = px[i] + pb[c0 + i];
          px[i] = v;
          py[i] = gelu(v);
        }
        xa.commit(at, len, px);
        ya.commit(at, len, py);
      }
  });
}

// dx = gelu'(x) dy row by row (contiguous, as gelu_backward), dbias from the fp32 dx as it is
// made: sums of 16 rows in fp32, added in double into each fixed chunk of rows' partial sums,
// then the chunks in order (the same result for any thread count).
void gelu_bias_backward(const Tensor& x, const Tensor& dy, Tensor& dx, Tensor& dbias) {
  constexpr const char* op = "gelu_bias_backward";
  const DType ct = compute_dtype(x, op, "x");
  check_same(op, x, dy, "dy");
  check_same(op, x, dx, "dx");
  const int64_t F = check_bias(op, x, dbias, "dbias"), N = F == 0 ? 0 : x.numel() / F;
  constexpr int64_t kShortRows = 16;
  const int64_t rows_per_chunk = (std::max<int64_t>(kShortRows, (N + 255) / 256) + kShortRows - 1) / kShortRows * kShortRows;
  const int64_t chunks = (N + rows_per_chunk - 1) / rows_per_chunk;
  // The calling thread's scratch (no allocation per call once warm); each chunk zeroes its own part.
  double* partial = thread_scratch<double, 0>(static_cast<size_t>(chunks * F));
  dispatch_float(ct, op, [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), dya(dy), dxa(dx);  // dx may alias dy
#pragma omp parallel for if (N * F > kParallelElems) schedule(static)
    for (int64_t k = 0; k < chunks; ++k) {
      double* acc = partial + k * F;
      std::fill(acc, acc + F, 0.0);
      const int64_t last = std::min(N, (k + 1) * rows_per_chunk);
      for (int64_t c0 = 0; c0 < F; c0 += kChunk) {
        const int64_t len = std::min(kChunk, F - c0);
        for (int64_t r0 = k * rows_per_chunk; r0 < last; r0 += kShortRows) {
          alignas(64) T bx[kChunk], bdy[kChunk], bdx[kChunk], sum[kChunk] = {};
          for (int64_t n = r0; n < std::min(last, r0 + kShortRows); ++n) {
            const int64_t at = n * F + c0;
            const T* px = xa.stage(at, len, bx);
            const T* pdy = dya.stage(at, len, bdy);
            T* pdx = dxa.out(at, bdx);
#pragma omp simd
            for (int64_t i = 0; i < len; ++i) {
              const T d = pdy[i] * gelu_slope(px[i]);
              pdx[i] = d;
              sum[i] += d;
            }
            dxa.commit(at, len, pdx);
          }
#pragma omp simd
          for (int64_t i = 0; i < len; ++i) acc[c0 + i] += double(sum[i]);
        }
      }
    }
    T* pdb = dbias.data<T>();
#pragma omp parallel for if (chunks * F > kParallelElems) schedule(static)
    for (int64_t c = 0; c < F; ++c) {
      double total = 0;
      for (int64_t k = 0; k < chunks; ++k) total += partial[k * F + c];
      pdb[c] = T(pdb[c] + total);
    }
  });
}

// y = silu(gate) * up, silu(g) = g * sigmoid(g).
void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y) {
  const DType ct = compute_dtype(gate, "swiglu_forward", "gate");
  check_same("swiglu_forward", gate, up, "up");
  check_same("swiglu_forward", gate, y, "y");
  dispatch_float(ct, "swiglu_forward", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> ga(gate), ua(up), ya(y);
    for_chunks(gate.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T bg[kChunk], bu[kChunk], by[kChunk];
      const T* pg = ga.read(at, len, bg);
      const T* pu = ua.read(at, len, bu);
      T* py = ya.out(at, by);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) {
        const T g = pg[i];
        py[i] = g * sigmoid_t<T>(g) * pu[i];
      }
      ya.commit(at, len, py);
    });
  });
}

// dgate = dy * up * s (1 + g (1 - s)), dup = dy * g * s, s = sigmoid(g). Every input element is
// read before the outputs at the same index are written, so outputs may alias inputs.
void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup) {
  const DType ct = compute_dtype(gate, "swiglu_backward", "gate");
  check_same("swiglu_backward", gate, up, "up");
  check_same("swiglu_backward", gate, dy, "dy");
  check_same("swiglu_backward", gate, dgate, "dgate");
  check_same("swiglu_backward", gate, dup, "dup");
  dispatch_float(ct, "swiglu_backward", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> ga(gate), ua(up), dya(dy), dga(dgate), dua(dup);
    for_chunks(gate.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T bg[kChunk], bu[kChunk], bdy[kChunk], bdg[kChunk], bdu[kChunk];
      const T* pg = ga.read(at, len, bg);
      const T* pu = ua.read(at, len, bu);
      const T* pdy = dya.read(at, len, bdy);
      T* pdg = dga.out(at, bdg);
      T* pdu = dua.out(at, bdu);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) {
        const T g = pg[i], u = pu[i], d = pdy[i];
        const T s = sigmoid_t<T>(g);
        pdg[i] = d * u * s * (T(1) + g * (T(1) - s));
        pdu[i] = d * g * s;
      }
      dga.commit(at, len, pdg);
      dua.commit(at, len, pdu);
    });
  });
}

}  // namespace trident::cpu
