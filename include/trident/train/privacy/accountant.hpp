// Differential-privacy accounting of DP-SGD's Poisson-subsampled Gaussian mechanism: the
// epsilon spent by `steps` steps at sample rate q and noise multiplier sigma for a given delta,
// by Renyi DP (Mironov, Talwar, Zhang 2019) or by numerical composition of privacy loss random
// variables (Gopi, Lee, Wutschitz 2021), and the sigma that reaches a target epsilon.
// Tested against Opacus 1.6 (tests/data/privacy/accountant.json, utils/make_privacy_fixtures.py).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace trident::train::privacy {

enum class Accountant { kRdp, kPrv };

// "rdp" / "prv"; parse_accountant throws ConfigError for anything else.
const char* accountant_name(Accountant a);
Accountant parse_accountant(const std::string& name);

// One phase of training: `steps` steps, each sampling every example with probability
// sample_rate (q in (0, 1]) and adding Gaussian noise of std noise * clipping norm (sigma > 0).
struct Mechanism {
  double sample_rate = 0;
  double noise = 0;
  int64_t steps = 0;
};

// Throws ConfigError naming the rule: q outside (0, 1], sigma <= 0 or not finite, steps < 1,
// delta outside (0, 1).
void check_mechanism(const Mechanism& m, double delta);

// --- RDP (src/train/privacy/rdp.cpp) -------------------------------------------------------
// The default orders: 1.1, 1.2, ..., 10.9 and 12, 13, ..., 63 (151 orders).
std::vector<double> default_rdp_orders();

// log A_alpha of one step (0 < q < 1, alpha > 1): the binomial expansion for integer alpha,
// the two convergent series of Mironov et al. section 3.3 for fractional alpha; log-space sums.
double rdp_log_a(double q, double sigma, double alpha);

// RDP of one step at order alpha: log A_alpha / (alpha - 1); alpha / (2 sigma^2) at q = 1.
double rdp_step(double q, double sigma, double alpha);

struct RdpEpsilon {
  double epsilon = 0;
  double order = 0;  // the order the minimum was taken at
};
// (epsilon, delta) from RDP values `rdp` (composed, one per order) by Balle et al. 2020,
// theorem 21: min over alpha of rdp - (log delta + log alpha) / (alpha - 1) + log((alpha - 1) / alpha).
RdpEpsilon rdp_to_epsilon(const std::vector<double>& orders, const std::vector<double>& rdp, double delta);

// The epsilon of m at delta over the default orders.
RdpEpsilon rdp_epsilon(const Mechanism& m, double delta);

// --- PRV (src/train/privacy/prv.cpp) -------------------------------------------------------
// The largest discretisation a PRV epsilon may use (points of the domain before padding to a
// power of two); beyond it the call throws ConfigError (the RDP accountant has no such limit).
constexpr int64_t kMaxPrvPoints = int64_t{1} << 25;

struct PrvEpsilon {
  double lower = 0, estimate = 0, upper = 0;  // upper is the guarantee reported
  int64_t points = 0;                          // the domain's size
};
// Epsilon of m at delta with eps_error = 0.01 and delta_error = delta / 1000: the PRV truncated
// to [-L, L] (L from the RDP tail bound), discretised on a mesh of
// eps_error / sqrt(steps log(12 / delta_error) / 2), mean-corrected, composed by FFT.
PrvEpsilon prv_epsilon(const Mechanism& m, double delta, double eps_error = 0.01);

// --- both (src/train/privacy/accountant.cpp) ------------------------------------------------
// The epsilon `a` reports (RDP: its minimum; PRV: the upper bound), at least 0.
double epsilon(Accountant a, const Mechanism& m, double delta);

// The noise multiplier for which `a` reports at most target_epsilon on (q, steps, delta), within
// `tolerance` below it: doubling from 20 until epsilon <= target, then bisection on [0, high].
// Throws ConfigError when no sigma up to 1e6 reaches the target.
double noise_for_epsilon(Accountant a, double target_epsilon, double sample_rate, int64_t steps, double delta,
                         double tolerance = 0.01);

}  // namespace trident::train::privacy
