// The accountants behind one interface: input checks, the epsilon each reports, and the search
// for the noise multiplier that reaches a target epsilon.
#include "trident/train/privacy/accountant.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>

#include "trident/core/error.hpp"

namespace trident::train::privacy {

namespace {

constexpr double kMaxNoise = 1e6;  // the search gives up above this sigma

// A number as %g prints it (0.01, 1e-05), for messages.
std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%g", v);
  return buf;
}

}  // namespace

const char* accountant_name(Accountant a) { return a == Accountant::kRdp ? "rdp" : "prv"; }

Accountant parse_accountant(const std::string& name) {
  if (name == "rdp") return Accountant::kRdp;
  if (name == "prv") return Accountant::kPrv;
  throw ConfigError("unknown accountant '" + name + "' (rdp or prv)");
}

void check_mechanism(const Mechanism& m, double delta) {
  if (!(m.sample_rate > 0 && m.sample_rate <= 1))
    throw ConfigError("sample rate " + num(m.sample_rate) + " is outside (0, 1]");
  if (!(m.noise > 0) || !std::isfinite(m.noise))
    throw ConfigError("noise multiplier " + num(m.noise) + " must be positive and finite");
  if (m.steps < 1) throw ConfigError("steps " + std::to_string(m.steps) + " must be at least 1");
  if (!(delta > 0 && delta < 1)) throw ConfigError("delta " + num(delta) + " is outside (0, 1)");
}

double epsilon(Accountant a, const Mechanism& m, double delta) {
  check_mechanism(m, delta);
  // Both bounds go negative for a large delta (a vacuous guarantee); epsilon is at least 0.
  const double eps = a == Accountant::kRdp ? rdp_epsilon(m, delta).epsilon : prv_epsilon(m, delta).upper;
  return std::max(eps, 0.0);
}

double noise_for_epsilon(Accountant a, double target_epsilon, double sample_rate, int64_t steps, double delta,
                         double tolerance) {
  if (!(target_epsilon > 0) || !std::isfinite(target_epsilon))
    throw ConfigError("target epsilon " + num(target_epsilon) + " must be positive and finite");
  check_mechanism({sample_rate, 1.0, steps}, delta);
  // Double sigma from 20 until epsilon is at most the target; then bisect [low, high] keeping
  // epsilon(high) <= target until it is within `tolerance` of the target.
  double low = 0, high = 10, eps_high = INFINITY;
  while (eps_high > target_epsilon) {
    high *= 2;
    eps_high = epsilon(a, {sample_rate, high, steps}, delta);
    if (high > kMaxNoise)
      throw ConfigError("no noise multiplier up to 1e6 reaches epsilon " + num(target_epsilon) +
                        " (q = " + num(sample_rate) + ", " + std::to_string(steps) + " steps, delta " +
                        num(delta) + ")");
  }
  for (int it = 0; target_epsilon - eps_high > tolerance; ++it) {
    if (it == 200) throw Error("noise search: no convergence after 200 bisections (a bug)");
    const double mid = (low + high) / 2;
    const double eps = epsilon(a, {sample_rate, mid, steps}, delta);
    if (eps < target_epsilon) {
      high = mid;
      eps_high = eps;
    } else {
      low = mid;
    }
  }
  return high;
}

}  // namespace trident::train::privacy
