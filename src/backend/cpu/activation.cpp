// GELU (tanh approximation) and SwiGLU, forward and backward, elementwise over any shape.
// gelu: x, y, dy, dx: [N, F]; swiglu: gate, up, y, dy, dgate, dup: [N, F]. Each tensor may be
// fp32, bf16 or fp16 (fp32 arithmetic), or all fp64.
#include "act.hpp"
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

void check_same(const char* op, const Tensor& ref, const Tensor& t, const char* name) {
  check_act(t, compute_dtype(ref, op, "input"), op, name);
  check_numel(t, ref.numel(), op, name);
}

}  // namespace

// gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). Since 1 + tanh(u) =
// 2 sigmoid(2u), this is x * sigmoid(2u): one exp, and no cancellation for negative x.
void gelu_forward(const Tensor& x, Tensor& y) {
  const DType ct = compute_dtype(x, "gelu_forward", "x");
  check_same("gelu_forward", x, y, "y");
  dispatch_float(ct, "gelu_forward", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), ya(y);
    const T k2 = T(2 * kSqrt2OverPi), k2c = T(2 * kSqrt2OverPi * kGeluCubic);
    for_chunks(x.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T bx[kChunk], by[kChunk];
      const T* px = xa.read(at, len, bx);
      T* py = ya.out(at, by);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) {
        const T v = px[i];
        py[i] = v * sigmoid_t<T>(v * (k2 + k2c * v * v));
      }
      ya.commit(at, len, py);
    });
  });
}

// With s = sigmoid(2u): gelu'(x) = s + 2 x s (1 - s) u'(x), u'(x) = sqrt(2/pi) (1 + 3*0.044715 x^2).
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  const DType ct = compute_dtype(x, "gelu_backward", "x");
  check_same("gelu_backward", x, dy, "dy");
  check_same("gelu_backward", x, dx, "dx");
  dispatch_float(ct, "gelu_backward", [&](auto tag) {
    using T = decltype(tag);
    const Act<T> xa(x), dya(dy), dxa(dx);  // dx may alias dy
    const T k = T(kSqrt2OverPi), k2 = T(2 * kSqrt2OverPi), k2c = T(2 * kSqrt2OverPi * kGeluCubic),
            k3c = T(3 * kGeluCubic);
    for_chunks(x.numel(), [&](int64_t at, int64_t len) {
      alignas(64) T bx[kChunk], bdy[kChunk], bdx[kChunk];
      const T* px = xa.read(at, len, bx);
      const T* pdy = dya.read(at, len, bdy);
      T* pdx = dxa.out(at, bdx);
#pragma omp simd
      for (int64_t i = 0; i < len; ++i) {
        const T v = px[i];
        const T s = sigmoid_t<T>(v * (k2 + k2c * v * v));
        const T du = k * (T(1) + k3c * v * v);
        pdx[i] = pdy[i] * (s + T(2) * v * s * (T(1) - s) * du);
      }
      dxa.commit(at, len, pdx);
    });
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
