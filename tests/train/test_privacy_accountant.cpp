// The DP accountants (train::privacy) against Opacus (tests/data/privacy/accountant.json, from
// utils/make_privacy_fixtures.py): RDP epsilon within 1e-3 relative and PRV within 1e-2 on the
// grid, the noise search within 1% of its target; epsilon grows with steps and q, falls with
// sigma; the FFT against a naive DFT.
#include <gtest/gtest.h>

#include <cmath>
#include <complex>
#include <fstream>
#include <sstream>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/train/privacy/accountant.hpp"
#include "trident/train/privacy/fft.hpp"

namespace pv = trident::train::privacy;

namespace {

trident::Json load_fixture() {
  std::ifstream in(std::string(TRIDENT_TEST_DATA) + "/privacy/accountant.json");
  std::stringstream ss;
  ss << in.rdbuf();
  return trident::Json::parse(ss.str());
}

pv::Mechanism mechanism_of(const trident::Json& e) {
  return {e.at("q").as_number(), e.at("sigma").as_number(), e.at("steps").as_int()};
}

}  // namespace

TEST(PrivacyFft, MatchesNaiveDft) {
  const size_t n = 64;
  std::vector<std::complex<double>> x(n);
  for (size_t i = 0; i < n; ++i) x[i] = {std::sin(0.3 * i) + 0.1 * i, std::cos(1.7 * i)};
  std::vector<std::complex<double>> y = x;
  pv::fft(y, false);
  for (size_t k = 0; k < n; ++k) {
    std::complex<double> s = 0;
    for (size_t j = 0; j < n; ++j) s += x[j] * std::polar(1.0, -2 * M_PI * double(j * k % n) / n);
    EXPECT_NEAR(std::abs(y[k] - s), 0.0, 1e-12) << k;
  }
  pv::fft(y, true);
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(std::abs(y[i] - x[i]), 0.0, 1e-13) << i;
  // The real transform: the complex one's first n/2 + 1 bins, and back.
  std::vector<double> r(n);
  for (size_t i = 0; i < n; ++i) r[i] = std::exp(-0.05 * i) * std::cos(0.9 * i);
  std::vector<std::complex<double>> rc(r.begin(), r.end());
  pv::fft(rc, false);
  const std::vector<std::complex<double>> R = pv::real_fft(r);
  ASSERT_EQ(R.size(), n / 2 + 1);
  for (size_t k = 0; k <= n / 2; ++k) EXPECT_NEAR(std::abs(R[k] - rc[k]), 0.0, 1e-12) << k;
  const std::vector<double> back = pv::real_ifft(R);
  ASSERT_EQ(back.size(), n);
  for (size_t i = 0; i < n; ++i) EXPECT_NEAR(back[i], r[i], 1e-14) << i;
  std::vector<std::complex<double>> odd(48);
  EXPECT_THROW(pv::fft(odd, false), trident::Error);
}

TEST(PrivacyAccountant, DefaultOrders) {
  const std::vector<double> o = pv::default_rdp_orders();
  ASSERT_EQ(o.size(), 151u);
  EXPECT_NEAR(o.front(), 1.1, 1e-12);
  EXPECT_NEAR(o[98], 10.9, 1e-12);  // 1 + 99 / 10.0, whatever its last bit
  EXPECT_EQ(o[99], 12.0);
  EXPECT_EQ(o.back(), 63.0);
}

TEST(PrivacyAccountant, RdpMatchesOpacus) {
  const trident::Json doc = load_fixture();
  double worst = 0;
  for (const auto& e : doc.at("grid").as_array()) {
    const double want = e.at("rdp").as_number();
    const double got = pv::rdp_epsilon(mechanism_of(e), e.at("delta").as_number()).epsilon;
    const double rel = std::fabs(got - want) / want;
    worst = std::max(worst, rel);
    EXPECT_LT(rel, 1e-3) << e.dump() << " got " << got;
  }
  std::printf("RDP: %zu grid points, max relative error %.3g (opacus %s)\n", doc.at("grid").as_array().size(),
              worst, doc.at("opacus_version").as_string().c_str());
}

TEST(PrivacyAccountant, PrvMatchesOpacus) {
  const trident::Json doc = load_fixture();
  double worst = 0;
  int compared = 0, refused = 0;
  for (const auto& e : doc.at("grid").as_array()) {
    const pv::Mechanism m = mechanism_of(e);
    const double delta = e.at("delta").as_number();
    if (e.at("prv").is_null()) {  // Opacus could not: trident refuses its too-large domains too
      if (e.at("prv_points").as_int() > pv::kMaxPrvPoints) {
        EXPECT_THROW(pv::prv_epsilon(m, delta), trident::ConfigError) << e.dump();
        ++refused;
      }
      continue;
    }
    const double want = e.at("prv").as_number();
    const pv::PrvEpsilon got = pv::prv_epsilon(m, delta);
    EXPECT_EQ(got.points, e.at("prv_points").as_int()) << e.dump();
    EXPECT_LE(got.lower, got.estimate);
    EXPECT_LE(got.estimate, got.upper);
    const double rel = std::fabs(got.upper - want) / want;
    worst = std::max(worst, rel);
    EXPECT_LT(rel, 1e-2) << e.dump() << " got " << got.upper;
    ++compared;
  }
  std::printf("PRV: %d grid points compared, %d refused as too large, max relative error %.3g\n", compared,
              refused, worst);
}

TEST(PrivacyAccountant, NoiseForEpsilonMatchesOpacus) {
  const trident::Json doc = load_fixture();
  for (const auto& e : doc.at("noise_multiplier").as_array()) {
    const double target = e.at("target_epsilon").as_number(), q = e.at("q").as_number();
    const double delta = e.at("delta").as_number();
    const int64_t steps = e.at("steps").as_int();
    for (const auto a : {pv::Accountant::kRdp, pv::Accountant::kPrv}) {
      const double sigma = pv::noise_for_epsilon(a, target, q, steps, delta);
      const double eps = pv::epsilon(a, {q, sigma, steps}, delta);
      EXPECT_LE(eps, target) << e.dump();
      EXPECT_GT(eps, target * 0.99) << e.dump();
      const double want = e.at(pv::accountant_name(a)).as_number();
      EXPECT_NEAR(sigma, want, 1e-2 * want) << e.dump() << " " << pv::accountant_name(a);
    }
  }
}

TEST(PrivacyAccountant, MonotoneInStepsRateAndNoise) {
  for (const auto a : {pv::Accountant::kRdp, pv::Accountant::kPrv}) {
    const double delta = 1e-5;
    double last = 0;
    for (int64_t steps : {1, 10, 100, 1000}) {
      const double eps = pv::epsilon(a, {0.01, 1.0, steps}, delta);
      EXPECT_GT(eps, last) << "steps " << steps;
      last = eps;
    }
    last = 0;
    for (double q : {0.001, 0.01, 0.1, 0.5, 1.0}) {
      const double eps = pv::epsilon(a, {q, 1.0, 10}, delta);
      EXPECT_GT(eps, last) << "q " << q;
      last = eps;
    }
    last = INFINITY;
    for (double sigma : {0.5, 0.8, 1.0, 2.0, 4.0}) {
      const double eps = pv::epsilon(a, {0.05, sigma, 100}, delta);
      EXPECT_LT(eps, last) << "sigma " << sigma;
      last = eps;
    }
  }
}

TEST(PrivacyAccountant, RdpEdgeCases) {
  // q = 1: the Gaussian mechanism, alpha / (2 sigma^2) at every order.
  EXPECT_DOUBLE_EQ(pv::rdp_step(1.0, 2.0, 5.0), 5.0 / 8.0);
  EXPECT_DOUBLE_EQ(pv::rdp_step(0.0, 2.0, 5.0), 0.0);
  EXPECT_TRUE(std::isinf(pv::rdp_step(0.1, 0.0, 5.0)));
  // Integer and fractional orders agree where they meet (the series is continuous in alpha).
  const double a = pv::rdp_step(0.05, 1.3, 3.0), b = pv::rdp_step(0.05, 1.3, 3.0 + 1e-9);
  EXPECT_NEAR(a, b, 1e-6 * a);
  // A very small q: finite and tiny.
  const double tiny = pv::rdp_epsilon({1e-7, 1.0, 1}, 1e-5).epsilon;
  EXPECT_TRUE(std::isfinite(tiny));
}

TEST(PrivacyAccountant, BadInputIsConfigError) {
  EXPECT_THROW(pv::check_mechanism({0.0, 1.0, 1}, 1e-5), trident::ConfigError);
  EXPECT_THROW(pv::check_mechanism({1.5, 1.0, 1}, 1e-5), trident::ConfigError);
  EXPECT_THROW(pv::check_mechanism({0.1, 0.0, 1}, 1e-5), trident::ConfigError);
  EXPECT_THROW(pv::check_mechanism({0.1, 1.0, 0}, 1e-5), trident::ConfigError);
  EXPECT_THROW(pv::check_mechanism({0.1, 1.0, 1}, 1.0), trident::ConfigError);
  EXPECT_THROW(pv::parse_accountant("gdp"), trident::ConfigError);
  EXPECT_THROW(pv::noise_for_epsilon(pv::Accountant::kRdp, 1e-9, 1.0, 1000, 1e-5), trident::ConfigError);
}
