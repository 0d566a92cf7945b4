// Renyi DP of the Poisson-subsampled Gaussian mechanism (Mironov, Talwar, Zhang 2019, section
// 3.3) and its conversion to (epsilon, delta) (Balle et al. 2020, theorem 21).
#include <cmath>
#include <limits>

#include "trident/core/error.hpp"
#include "trident/train/privacy/accountant.hpp"

namespace trident::train::privacy {

namespace {

constexpr double kInf = std::numeric_limits<double>::infinity();

// log(e^x + e^y) without overflow; -inf stands for 0.
double log_add(double x, double y) {
  const double a = std::min(x, y), b = std::max(x, y);
  if (a == -kInf) return b;
  return std::log1p(std::exp(a - b)) + b;
}

// log(e^x - e^y), x >= y.
double log_sub(double x, double y) {
  if (x < y) throw Error("rdp: log-space subtraction went negative (a bug)");
  if (y == -kInf) return x;
  if (x == y) return -kInf;
  const double d = std::expm1(x - y);
  return std::isinf(d) ? x : std::log(d) + y;
}

// log erfc(x), accurate where erfc underflows: the asymptotic series
// erfc(x) ~ e^{-x^2} / (x sqrt(pi)) (1 - 1/(2x^2) + 3/(4x^4) - 15/(8x^6)) beyond x = 20.
double log_erfc(double x) {
  if (x < 20) return std::log(std::erfc(x));
  const double r = 1 / (2 * x * x);
  return -x * x - std::log(x) - 0.5 * std::log(M_PI) + std::log1p(-r + 3 * r * r - 15 * r * r * r);
}

// A_alpha = sum_i C(alpha, i) q^i (1-q)^(alpha-i) exp((i^2 - i) / (2 sigma^2)), integer alpha.
double log_a_int(double q, double sigma, int alpha) {
  double log_a = -kInf;
  const double lq = std::log(q), l1q = std::log1p(-q);
  for (int i = 0; i <= alpha; ++i) {
    const double log_binom = std::lgamma(alpha + 1.0) - std::lgamma(i + 1.0) - std::lgamma(alpha - i + 1.0);
    const double s = log_binom + i * lq + (alpha - i) * l1q + (double(i) * i - i) / (2 * sigma * sigma);
    log_a = log_add(log_a, s);
  }
  return log_a;
}

// Fractional alpha: A_alpha = A0 + A1, each a series over i >= 0 with generalised binomial
// coefficients C(alpha, i) (signs alternate past i = alpha) and Gaussian tail factors split at
// z0 = sigma^2 log(1/q - 1) + 1/2; summed until both terms fall below e^-30.
double log_a_frac(double q, double sigma, double alpha) {
  double log_a0 = -kInf, log_a1 = -kInf;
  const double z0 = sigma * sigma * std::log(1 / q - 1) + 0.5;
  const double lq = std::log(q), l1q = std::log1p(-q), s2 = std::sqrt(2.0) * sigma;
  double log_coef = 0;  // log |C(alpha, i)|, built term by term
  bool positive = true;
  for (int i = 0;; ++i) {
    if (i > 0) {
      const double f = alpha - i + 1;
      log_coef += std::log(std::fabs(f)) - std::log(double(i));
      if (f < 0) positive = !positive;
    }
    const double j = alpha - i;
    const double log_t0 = log_coef + i * lq + j * l1q;
    const double log_t1 = log_coef + j * lq + i * l1q;
    const double log_e0 = std::log(0.5) + log_erfc((i - z0) / s2);
    const double log_e1 = std::log(0.5) + log_erfc((z0 - j) / s2);
    const double log_s0 = log_t0 + (double(i) * i - i) / (2 * sigma * sigma) + log_e0;
    const double log_s1 = log_t1 + (j * j - j) / (2 * sigma * sigma) + log_e1;
    if (positive) {
      log_a0 = log_add(log_a0, log_s0);
      log_a1 = log_add(log_a1, log_s1);
    } else {
      log_a0 = log_sub(log_a0, log_s0);
      log_a1 = log_sub(log_a1, log_s1);
    }
    if (std::max(log_s0, log_s1) < -30) break;
    // The Gaussian tail factors end the series by i ~ z0 + 40 sigma; q near 1/2 with a large
    // sigma gets there only after ~sigma terms (the coefficients fall polynomially).
    if (i > 1000000000) throw Error("rdp: the fractional-order series did not converge (a bug)");
  }
  return log_add(log_a0, log_a1);
}

}  // namespace

std::vector<double> default_rdp_orders() {
  std::vector<double> orders;
  for (int x = 1; x < 100; ++x) orders.push_back(1 + x / 10.0);
  for (int a = 12; a < 64; ++a) orders.push_back(a);
  return orders;
}

double rdp_log_a(double q, double sigma, double alpha) {
  if (alpha == std::floor(alpha)) return log_a_int(q, sigma, static_cast<int>(alpha));
  return log_a_frac(q, sigma, alpha);
}

double rdp_step(double q, double sigma, double alpha) {
  if (q == 0) return 0;
  if (sigma == 0) return kInf;
  if (q == 1) return alpha / (2 * sigma * sigma);  // the plain Gaussian mechanism
  if (std::isinf(alpha)) return kInf;
  return rdp_log_a(q, sigma, alpha) / (alpha - 1);
}

RdpEpsilon rdp_to_epsilon(const std::vector<double>& orders, const std::vector<double>& rdp, double delta) {
  if (orders.size() != rdp.size() || orders.empty()) throw Error("rdp_to_epsilon: orders and rdp differ in length");
  RdpEpsilon best{kInf, std::numeric_limits<double>::quiet_NaN()};
  bool any = false;
  for (size_t k = 0; k < orders.size(); ++k) {
    const double a = orders[k];
    const double eps = rdp[k] - (std::log(delta) + std::log(a)) / (a - 1) + std::log((a - 1) / a);
    if (std::isnan(eps)) continue;
    if (!any || eps < best.epsilon) best = {eps, a};  // the first minimum, NaNs ignored
    any = true;
  }
  return best;
}

RdpEpsilon rdp_epsilon(const Mechanism& m, double delta) {
  const std::vector<double> orders = default_rdp_orders();
  std::vector<double> rdp(orders.size());
  for (size_t k = 0; k < orders.size(); ++k)
    rdp[k] = rdp_step(m.sample_rate, m.noise, orders[k]) * static_cast<double>(m.steps);
  return rdp_to_epsilon(orders, rdp, delta);
}

}  // namespace trident::train::privacy
