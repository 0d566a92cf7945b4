// `trident privacy`: the (epsilon, delta) that DP-SGD spends with sample rate q, noise
// multiplier sigma and N steps, or the sigma that reaches a target epsilon (train::privacy does
// the accounting; this parses the options and prints the result).
#include <boost/program_options.hpp>
#include <cstdio>

#include "command_options.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/train/privacy/accountant.hpp"

namespace trident::cli {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: trident privacy --sample-rate Q (--noise S | --target-epsilon E) --steps N --delta D\n"
    "           [--accountant prv|rdp] [--json]\n"
    "  The epsilon of N DP-SGD steps, each a Poisson-subsampled Gaussian mechanism (every example\n"
    "  sampled with probability Q, noise of S times the clipping norm), at delta D; with\n"
    "  --target-epsilon, the noise multiplier a bisection ends at: its epsilon is at most E and\n"
    "  within 0.01 of it. prv: numerical composition of privacy loss distributions, the upper\n"
    "  bound for an epsilon error of 0.01; rdp: Renyi DP over orders 1.1..10.9 and 12..63.\n"
    "  --json prints {\"epsilon\", \"sigma\", \"delta\", \"steps\", \"sample_rate\", \"accountant\"}.";

}  // namespace

int run_privacy(int argc, char** argv) {
  namespace pv = train::privacy;
  double q = 0, noise = 0, target = 0, delta = 0;
  int64_t steps = 0;
  std::string accountant;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "print this help")
      ("sample-rate", po::value<double>(&q)->required(), "probability an example is in a step's batch, in (0, 1]")
      ("noise", po::value<double>(&noise), "noise multiplier sigma (> 0)")
      ("target-epsilon", po::value<double>(&target), "find the noise multiplier that reaches this epsilon")
      ("steps", po::value<int64_t>(&steps)->required(), "number of steps (>= 1)")
      ("delta", po::value<double>(&delta)->required(), "delta, in (0, 1)")
      ("accountant", po::value<std::string>(&accountant)->default_value("prv"), "prv or rdp")
      ("json", "print one JSON object");
  return run_reporting_errors("privacy", kUsage, [&] {
    po::variables_map vm;
    if (!parse_options(argc, argv, desc, kUsage, vm)) return 0;
    const pv::Accountant a = pv::parse_accountant(accountant);
    const bool find = vm.count("target-epsilon") > 0;
    if (find == (vm.count("noise") > 0)) throw ConfigError("give exactly one of --noise and --target-epsilon");
    if (find) noise = pv::noise_for_epsilon(a, target, q, steps, delta);
    const double eps = pv::epsilon(a, {q, noise, steps}, delta);
    if (vm.count("json")) {
      Json j = Json::object();
      j.set("epsilon", eps);
      j.set("sigma", noise);
      j.set("delta", delta);
      j.set("steps", steps);
      j.set("sample_rate", q);
      j.set("accountant", pv::accountant_name(a));
      std::printf("%s\n", j.dump().c_str());
    } else if (find) {
      std::printf("privacy: sigma %.6g reaches epsilon %.6g (target %g) at delta %g over %lld steps, q = %g (%s)\n",
                  noise, eps, target, delta, static_cast<long long>(steps), q, pv::accountant_name(a));
    } else {
      std::printf("privacy: epsilon %.6g at delta %g: %lld steps, q = %g, sigma = %g (%s)\n", eps, delta,
                  static_cast<long long>(steps), q, noise, pv::accountant_name(a));
    }
    return 0;
  });
}

}  // namespace trident::cli
