// The PRV accountant (Gopi, Lee, Wutschitz 2021): the privacy loss random variable of one
// Poisson-subsampled Gaussian step, truncated to [-L, L], discretised on a uniform mesh with its
// mean corrected, composed `steps` times by FFT, and (epsilon, delta) read off the composed pmf.
#include <cmath>
#include <cstdio>
#include <complex>
#include <limits>
#include <queue>
#include <utility>
#include <string>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/train/privacy/accountant.hpp"
#include "trident/train/privacy/fft.hpp"

namespace trident::train::privacy {

namespace {

// A number as %g prints it (0.01, 1e-05), for messages.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}


// CDF of the privacy loss of one step (Gopi et al., proposition B4): with
// z = log((e^t + q - 1) / q), F(t) = 1 - q/2 erfc((2 z s^2 - 1) / (2 sqrt2 s))
//                                      - (1-q)/2 erfc((2 z s^2 + 1) / (2 sqrt2 s)), 0 for t <= log(1-q).
struct SubsampledGaussianPrv {
  double q, sigma;
  double cdf(double t) const {
    if (!(t > std::log(1 - q))) return 0.0;
    const double z = std::log1p(std::expm1(t) / q);  // log((e^t + q - 1) / q), exact near t = 0
    const double s2 = sigma * sigma, d = 2 * std::sqrt(2.0) * sigma;
    return -q * std::erfc((2 * z * s2 - 1) / d) / 2 - (1 - q) * std::erfc((2 * z * s2 + 1) / d) / 2 + 1.0;
  }
};

// The PRV conditioned on [t_min, t_max).
struct TruncatedPrv {
  SubsampledGaussianPrv prv;
  double t_min, t_max, cdf_min, mass;
  TruncatedPrv(SubsampledGaussianPrv p, double lo, double hi)
      : prv(p), t_min(lo), t_max(hi), cdf_min(p.cdf(lo)), mass(p.cdf(hi) - p.cdf(lo)) {}
  double cdf(double t) const {
    if (t < t_min) return 0.0;
    if (t < t_max) return (prv.cdf(t) - cdf_min) / mass;
    return 1.0;
  }
};

// 15-point Gauss-Kronrod estimate of the integral of f on [a, b] and its error (the distance to
// the embedded 7-point Gauss estimate).
template <class F>
std::pair<double, double> gauss_kronrod(const F& f, double a, double b) {
  static constexpr double xk[8] = {0.991455371120812639206854697526329, 0.949107912342758524526189684047851,
                                   0.864864423359769072789712788640926, 0.741531185599394439863864773280788,
                                   0.586087235467691130294144845693013, 0.405845151377397166906606412076961,
                                   0.207784955007898467600689403773245, 0.0};
  static constexpr double wk[8] = {0.022935322010529224963732008058970, 0.063092092629978553290700663189204,
                                   0.104790010322250183839876322541518, 0.140653259715525918745189590510238,
                                   0.169004726639267902826583426598550, 0.190350578064785409913256402421014,
                                   0.204432940075298892414161999234649, 0.209482141084727828012999174891714};
  static constexpr double wg[4] = {0.129484966168869693270611432679082, 0.279705391489276667901467771423780,
                                   0.381830050505118944950369775488975, 0.417959183673469387755102040816327};
  const double c = (a + b) / 2, h = (b - a) / 2;
  double kron = wk[7] * f(c), gauss = wg[3] * f(c);
  for (int i = 0; i < 7; ++i) {
    const double s = f(c - h * xk[i]) + f(c + h * xk[i]);
    kron += wk[i] * s;
    if (i % 2 == 1) gauss += wg[i / 2] * s;
  }
  return {kron * h, std::fabs(kron - gauss) * h};
}

// Globally adaptive quadrature: bisect the subinterval with the largest error estimate until the
// total is within max(tol, tol |integral|) or there are kMaxIntervals of them (the integrand's
// own rounding noise bounds what any subdivision can reach, so the cap, not the tolerance, ends
// it for a very sharp CDF).
template <class F>
double integrate(const F& f, double a, double b, double tol) {
  constexpr int kMaxIntervals = 500;
  struct Piece {
    double a, b, value, error;
    bool operator<(const Piece& o) const { return error < o.error; }
  };
  std::priority_queue<Piece> pieces;
  auto [v, e] = gauss_kronrod(f, a, b);
  pieces.push({a, b, v, e});
  double total = v, error = e;
  while (error > std::max(tol, tol * std::fabs(total)) && static_cast<int>(pieces.size()) < kMaxIntervals) {
    const Piece p = pieces.top();
    pieces.pop();
    const double mid = (p.a + p.b) / 2;
    const auto [v1, e1] = gauss_kronrod(f, p.a, mid);
    const auto [v2, e2] = gauss_kronrod(f, mid, p.b);
    pieces.push({p.a, mid, v1, e1});
    pieces.push({mid, p.b, v2, e2});
    total += v1 + v2 - p.value;
    error += e1 + e2 - p.error;
  }
  double sum = 0;  // re-add, free of the running sum's cancellations
  for (; !pieces.empty(); pieces.pop()) sum += pieces.top().value;
  return sum;
}

// Mean of the truncated PRV: t_max - integral of its CDF over [t_min, t_max], the integral
// split at 0 and at logarithmically spaced points on either side (where the CDF bends).
double truncated_mean(const TruncatedPrv& p) {
  const int lo = static_cast<int>(std::log10(std::fabs(p.t_min)));
  const int hi = static_cast<int>(std::log10(p.t_max));
  std::vector<double> pts{p.t_min};
  for (int k = 0; k < 10; ++k) pts.push_back(-std::pow(10.0, lo + (-5.0 - lo) * k / 9));
  pts.push_back(0.0);
  for (int k = 0; k < 10; ++k) pts.push_back(std::pow(10.0, -5.0 + (hi + 5.0) * k / 9));
  pts.push_back(p.t_max);
  auto cdf = [&](double t) { return p.cdf(t); };
  double mean = 0;
  for (size_t k = 0; k + 1 < pts.size(); ++k) {
    const double l = pts[k], r = pts[k + 1];
    mean += r * p.cdf(r) - l * p.cdf(l) - integrate(cdf, l, r, 1e-12);
  }
  return mean;
}

inline std::complex<double> mul(std::complex<double> a, std::complex<double> b) {  // finite values
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

std::complex<double> cpow(std::complex<double> z, int64_t n) {  // z^n by repeated squaring
  std::complex<double> r = 1.0;
  for (; n > 0; n >>= 1) {
    if (n & 1) r = mul(r, z);
    z = mul(z, z);
  }
  return r;
}

// The first i with !(a[i] < v): binary search over an array increasing up to rounding.
size_t lower_bound_index(const std::vector<double>& a, double v) {
  size_t lo = 0, hi = a.size();
  while (lo < hi) {
    const size_t mid = lo + ((hi - lo) >> 1);
    if (a[mid] < v)
      lo = mid + 1;
    else
      hi = mid;
  }
  return lo;
}

}  // namespace

PrvEpsilon prv_epsilon(const Mechanism& m, double delta, double eps_error) {
  check_mechanism(m, delta);
  const double delta_error = delta / 1000;
  const double n = static_cast<double>(m.steps);
  // Domain half-width: the RDP tail bound of the composition at delta_error / 4 and of one step
  // at delta_error / (8 steps), plus 3 (Gopi et al. remark 5.6).
  double L = rdp_epsilon(m, delta_error / 4).epsilon;
  L = std::max(L, rdp_epsilon({m.sample_rate, m.noise, 1}, delta_error / (8 * n)).epsilon);
  L = std::max(L, eps_error) + 3;
  const double mesh = eps_error / std::sqrt(n * std::log(12 / delta_error) / 2);
  // The mesh aligned to multiples of dt around 0, an even number of points.
  const double t_min = std::floor(-L / mesh) * mesh;
  double t_max = std::ceil(L / mesh) * mesh;
  const double span = std::round((t_max - t_min) / mesh) + 1;
  if (!(span + 1 <= static_cast<double>(kMaxPrvPoints)))
    throw ConfigError("the PRV accountant would discretise q = " + num(m.sample_rate) + ", sigma = " +
                      num(m.noise) + ", " + std::to_string(m.steps) + " steps on more than " +
                      std::to_string(kMaxPrvPoints) + " points (its RDP epsilon at delta / 4000 is " + num(L - 3) +
                      "); use --accountant rdp");
  int64_t size = static_cast<int64_t>(span);
  if (size % 2 == 1) {
    ++size;
    t_max += mesh;
  }
  const double dt = (t_max - t_min) / static_cast<double>(size - 1);
  if (std::fabs(dt - mesh) / mesh >= 1e-8) throw Error("prv: misaligned domain (a bug)");
  if (std::numeric_limits<long double>::epsilon() * static_cast<long double>(size) > delta - delta_error)
    throw ConfigError("delta " + num(delta) + " is too small for the PRV accountant's " +
                      std::to_string(size) + "-point domain (rounding would dominate); use --accountant rdp");

  // Discretise: bin i is centred at t_min + i dt; then shift the grid so the discrete mean equals
  // the continuous one.
  const TruncatedPrv prv({m.sample_rate, m.noise}, t_min, t_max);
  const size_t N = static_cast<size_t>(size);
  std::vector<double> pmf(N);
  double mean_d = 0;
  for (size_t i = 0; i < N; ++i) {
    const double t = t_min + static_cast<double>(i) * dt;
    pmf[i] = prv.cdf(t + dt / 2) - prv.cdf(t - dt / 2);
    mean_d += t * pmf[i];
  }
  const double shift = truncated_mean(prv) - mean_d;
  if (std::fabs(shift) >= dt / 2) throw Error("prv: discrete mean differs from the continuous one by over dt / 2");

  // Compose by FFT: a circular convolution of period M >= N (a power of two). The composed
  // loss at index k (sum of the steps' indices) is steps * (t_min + shift) + k dt; the result
  // keeps the window j = k - (steps - 1) K, K = -t_min / dt, i.e. t = t_min + steps * shift + j dt.
  size_t M = 1;
  while (M < N) M <<= 1;
  pmf.resize(M, 0.0);
  std::vector<std::complex<double>> f = real_fft(pmf);
  for (auto& v : f) v = cpow(v, m.steps);
  const std::vector<double> composed = real_ifft(f);
  f = {};
  const auto K = static_cast<int64_t>(std::llround(-t_min / dt));
  const auto Mi = static_cast<int64_t>(M);
  const int64_t offset = (((m.steps - 1) % Mi) * (K % Mi)) % Mi;
  pmf.resize(N);
  for (size_t j = 0; j < N; ++j) pmf[j] = composed[static_cast<size_t>((static_cast<int64_t>(j) + offset) % Mi)];
  const double t0 = t_min + n * shift;

  // delta(eps) at grid point t_i: d1_i - e^{t_i} d2_i, with d1_i = sum_{k >= i} p_k and
  // d2_i = sum_{k >= i} p_k e^{-t_k}; ndelta = -delta increases with i.
  std::vector<double> d1(N), d2(N), ndelta(N);
  double s1 = 0, s2 = 0;
  for (size_t i = N; i-- > 0;) {
    const double t = t0 + static_cast<double>(i) * dt;
    s1 += pmf[i];
    s2 += pmf[i] == 0 ? 0.0 : pmf[i] * std::exp(-t);
    d1[i] = s1;
    d2[i] = s2;
    ndelta[i] = std::exp(t) * s2 - s1;
  }
  auto eps_at = [&](double target) {
    const size_t i = lower_bound_index(ndelta, -target);
    if (i == 0 || i >= N)
      throw ConfigError("delta " + num(delta) + " is outside what the PRV accountant's domain resolves (epsilon " +
                        (i == 0 ? "below " + num(t0) : "above " + num(t0 + static_cast<double>(N - 1) * dt)) +
                        "); use --accountant rdp");
    return std::log((d1[i] - target) / d2[i]);
  };
  PrvEpsilon r;
  r.upper = eps_at(delta - delta_error) + eps_error;
  r.lower = eps_at(delta + delta_error) - eps_error;
  r.estimate = eps_at(delta);
  r.points = size;
  return r;
}

}  // namespace trident::train::privacy
