// GELU (tanh approximation) and SwiGLU, forward and backward, elementwise over any shape.
// gelu: x, y, dy, dx: [N, F]; swiglu: gate, up, y, dy, dgate, dup: [N, F].
#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu {
namespace {

constexpr double kSqrt2OverPi = 0.7978845608028654;
constexpr double kGeluCubic = 0.044715;

void check_same(const char* op, const Tensor& ref, const Tensor& t, const char* name) {
  check_dtype(t, ref.dtype(), op, name);
  check_numel(t, ref.numel(), op, name);
}

}  // namespace

// gelu(x) = 0.5 x (1 + tanh(u)), u = sqrt(2/pi) (x + 0.044715 x^3). Since 1 + tanh(u) =
// 2 sigmoid(2u), this is x * sigmoid(2u): one exp, and no cancellation for negative x.
void gelu_forward(const Tensor& x, Tensor& y) {
  check_tensor(x, "gelu_forward", "x");
  check_same("gelu_forward", x, y, "y");
  dispatch_float(x.dtype(), "gelu_forward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    T* py = y.data<T>();
    const int64_t n = x.numel();
    const T k2 = T(2 * kSqrt2OverPi), k2c = T(2 * kSqrt2OverPi * kGeluCubic);
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T v = px[i];
      py[i] = v * sigmoid_t<T>(v * (k2 + k2c * v * v));
    }
  });
}

// With s = sigmoid(2u): gelu'(x) = s + 2 x s (1 - s) u'(x), u'(x) = sqrt(2/pi) (1 + 3*0.044715 x^2).
void gelu_backward(const Tensor& x, const Tensor& dy, Tensor& dx) {
  check_tensor(x, "gelu_backward", "x");
  check_same("gelu_backward", x, dy, "dy");
  check_same("gelu_backward", x, dx, "dx");
  dispatch_float(x.dtype(), "gelu_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* px = x.data<T>();
    const T* pdy = dy.data<T>();
    T* pdx = dx.data<T>();  // may alias dy
    const int64_t n = x.numel();
    const T k = T(kSqrt2OverPi), k2 = T(2 * kSqrt2OverPi), k2c = T(2 * kSqrt2OverPi * kGeluCubic),
            k3c = T(3 * kGeluCubic);
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T v = px[i];
      const T s = sigmoid_t<T>(v * (k2 + k2c * v * v));
      const T du = k * (T(1) + k3c * v * v);
      pdx[i] = pdy[i] * (s + T(2) * v * s * (T(1) - s) * du);
    }
  });
}

// y = silu(gate) * up, silu(g) = g * sigmoid(g).
void swiglu_forward(const Tensor& gate, const Tensor& up, Tensor& y) {
  check_tensor(gate, "swiglu_forward", "gate");
  check_same("swiglu_forward", gate, up, "up");
  check_same("swiglu_forward", gate, y, "y");
  dispatch_float(gate.dtype(), "swiglu_forward", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = gate.data<T>();
    const T* pu = up.data<T>();
    T* py = y.data<T>();
    const int64_t n = gate.numel();
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T g = pg[i];
      py[i] = g * sigmoid_t<T>(g) * pu[i];
    }
  });
}

// dgate = dy * up * s (1 + g (1 - s)), dup = dy * g * s, s = sigmoid(g). Every input element is
// read before the outputs at the same index are written, so outputs may alias inputs.
void swiglu_backward(const Tensor& gate, const Tensor& up, const Tensor& dy, Tensor& dgate, Tensor& dup) {
  check_tensor(gate, "swiglu_backward", "gate");
  check_same("swiglu_backward", gate, up, "up");
  check_same("swiglu_backward", gate, dy, "dy");
  check_same("swiglu_backward", gate, dgate, "dgate");
  check_same("swiglu_backward", gate, dup, "dup");
  dispatch_float(gate.dtype(), "swiglu_backward", [&](auto tag) {
    using T = decltype(tag);
    const T* pg = gate.data<T>();
    const T* pu = up.data<T>();
    const T* pdy = dy.data<T>();
    T* pdg = dgate.data<T>();
    T* pdu = dup.data<T>();
    const int64_t n = gate.numel();
#pragma omp parallel for simd if (n > kParallelElems) schedule(static)
    for (int64_t i = 0; i < n; ++i) {
      const T g = pg[i], u = pu[i], d = pdy[i];
      const T s = sigmoid_t<T>(g);
      pdg[i] = d * u * s * (T(1) + g * (T(1) - s));
      pdu[i] = d * g * s;
    }
  });
}

}  // namespace trident::cpu
