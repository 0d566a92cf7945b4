// Peak FLOP/s of this rank, measured: register-only FMA chains (the path's widest vectors: AVX-512,
// AVX2 or NEON)
// on every OpenMP thread for ~40 ms, each thread's best burst, summed. Feeds MFU and the planner.
#include <chrono>

#include "common.hpp"
#include "kernels.hpp"

namespace trident::cpu::inline TRIDENT_CPU_PATH {
namespace {

// Enough independent chains to cover FMA latency (4 cycles) x 2 FMA pipes with room to spare.
constexpr int kChains = 12;

#if TRIDENT_CPU_AVX512
struct VecF32 {
  using V = __m512;
  static constexpr int kLanes = 16;
  static V set(float x) { return _mm512_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_ps(a, b, c); }
  static double sum(V a) {  // not _mm512_reduce_add_ps: GCC 12's header warns on it
    alignas(64) float t[16];
    _mm512_store_ps(t, a);
    double s = 0;
    for (float x : t) s += x;
    return s;
  }
};
struct VecF64 {
  using V = __m512d;
  static constexpr int kLanes = 8;
  static V set(double x) { return _mm512_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm512_fmadd_pd(a, b, c); }
  static double sum(V a) {
    alignas(64) double t[8];
    _mm512_store_pd(t, a);
    double s = 0;
    for (double x : t) s += x;
    return s;
  }
};
#elif defined(__AVX2__) && defined(__FMA__)
struct VecF32 {
  using V = __m256;
  static constexpr int kLanes = 8;
  static V set(float x) { return _mm256_set1_ps(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_ps(a, b, c); }
  static double sum(V a) {
    alignas(32) float t[8];
    _mm256_store_ps(t, a);
    double s = 0;
    for (float x : t) s += x;
    return s;
  }
};
struct VecF64 {
  using V = __m256d;
  static constexpr int kLanes = 4;
  static V set(double x) { return _mm256_set1_pd(x); }
  static V fma(V a, V b, V c) { return _mm256_fmadd_pd(a, b, c); }
  static double sum(V a) {
    alignas(32) double t[4];
    _mm256_store_pd(t, a);
    return t[0] + t[1] + t[2] + t[3];
  }
};
#elif defined(__aarch64__)  // SVE at Grace's 128 bits has NEON's FMA rate
struct VecF32 {
  using V = float32x4_t;
  static constexpr int kLanes = 4;
  static V set(float x) { return vdupq_n_f32(x); }
  static V fma(V a, V b, V c) { return vfmaq_f32(c, a, b); }
  static double sum(V a) { return vaddvq_f32(a); }
};
struct VecF64 {
  using V = float64x2_t;
  static constexpr int kLanes = 2;
  static V set(double x) { return vdupq_n_f64(x); }
  static V fma(V a, V b, V c) { return vfmaq_f64(c, a, b); }
  static double sum(V a) { return vaddvq_f64(a); }
};
#else
template <typename T>
struct VecScalar {
  using V = T;
  static constexpr int kLanes = 1;
  static V set(T x) { return x; }
  static V fma(V a, V b, V c) { return a * b + c; }
  static double sum(V a) { return a; }
};
using VecF32 = VecScalar<float>;
using VecF64 = VecScalar<double>;
#endif

// iters rounds of kChains FMAs acc = acc * a + b; returns a sum so nothing is optimised away.
// noipa: an opaque call cannot be moved out of the timed region or evaluated ahead of time.
template <typename Vec>
[[gnu::noipa]] double fma_chains(int64_t iters, double seed) {
  typename Vec::V acc[kChains];
  for (int c = 0; c < kChains; ++c) acc[c] = Vec::set(seed + 1e-3 * c);
  const auto a = Vec::set(0.9999999), b = Vec::set(1e-7);
  for (int64_t it = 0; it < iters; ++it) {
#pragma GCC unroll 12
    for (int c = 0; c < kChains; ++c) acc[c] = Vec::fma(acc[c], a, b);
  }
  double s = 0;
  for (int c = 0; c < kChains; ++c) s += Vec::sum(acc[c]);
  return s;
}

// Every OpenMP thread runs bursts of FMA chains for ~40 ms and keeps its best burst rate (its own
// clock, no barrier between bursts); the peak is the sum over threads. A preempted or late-woken
// thread (shared hosts, oversubscribed ranks) only makes some bursts slower, never faster.
template <typename Vec>
double measure() {
  const auto start = std::chrono::steady_clock::now();
  auto since = [](std::chrono::steady_clock::time_point t) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
  };
  double total = 0;
#pragma omp parallel reduction(+ : total)
  {
    double best = 0, sink = 0;
    int64_t iters = 1024;
    do {
      const auto t0 = std::chrono::steady_clock::now();
      sink += fma_chains<Vec>(iters, 1.0 + omp_get_thread_num());
      const double seconds = since(t0);
      best = std::max(best, 2.0 * kChains * Vec::kLanes * double(iters) / std::max(seconds, 1e-9));
      if (seconds < 5e-4 && iters < (int64_t(1) << 40)) iters *= 2;  // grow to ~0.5 ms bursts
    } while (since(start) < 0.04);
    volatile double keep = sink;  // the chains' results are used
    (void)keep;
    total += best;
  }
  return total;
}

}  // namespace

double measure_peak_fma_flops(DType dtype) {
  return dtype == DType::kF64 ? measure<VecF64>() : measure<VecF32>();
}

}  // namespace trident::cpu
