// `trident evalgen`: generated evaluation suites (arithmetic, dates, lookups, ...) written as an
// eval.task JSONL file or as multiple-choice lines (data::evalgen does the work; this parses the
// options and prints what was written).
#include <boost/program_options.hpp>
#include <cstdio>

#include "command_options.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/error.hpp"
#include "trident/data/evalgen/generate.hpp"

namespace trident::cli {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: trident evalgen --suite NAME[,NAME...]|all --output FILE.jsonl [--levels easy,medium,hard] [--n N]\n"
    "           [--seed S] [--format generate|choice] [--choices K] [--templates DIR] [--overwrite]\n"
    "  Writes N cases per (suite, level) from the template library (DIR/<suite>.json: prompt wordings and\n"
    "  per-level difficulty), each answer computed and checked by the suite's checker. Suites: arithmetic,\n"
    "  last_digit, copy, reverse, sort, kv_lookup, date. --format generate: {\"input\", \"output\", \"answers\",\n"
    "  \"suite\", \"template\", \"level\"} lines (eval.task reads them); choice: {\"context\", \"choices\", \"gold\",\n"
    "  \"suite\", \"template\", \"level\"} with K - 1 checked-wrong near misses. The same options write the same bytes.";

}  // namespace

int run_evalgen(int argc, char** argv) {
  data::evalgen::EvalgenOptions o;
  std::string suites, levels, format, output;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "print this help")
      ("suite", po::value<std::string>(&suites)->required(), "suites, comma-separated, or all")
      ("levels", po::value<std::string>(&levels)->default_value("easy,medium,hard"), "levels, comma-separated")
      ("n", po::value<int64_t>(&o.n)->default_value(100), "cases per suite and level")
      ("seed", po::value<uint64_t>(&o.seed)->default_value(1), "seed of the cases (each suite and level its own stream)")
      ("output", po::value<std::string>(&output)->required(), "the JSONL file to write")
      ("format", po::value<std::string>(&format)->default_value("generate"),
       "generate (eval.task: input/output/answers) or choice (context/choices/gold)")
      ("choices", po::value<int>(&o.choices)->default_value(4), "choices per case with --format choice")
      ("templates", po::value<std::string>(&o.templates_dir)->default_value("input/eval"),
       "the template library: <suite>.json and words.json")
      ("overwrite", "replace an existing --output");
  return run_reporting_errors("evalgen", kUsage, [&] {
    po::variables_map vm;
    if (!parse_options(argc, argv, desc, kUsage, vm)) return 0;
    o.suites = data::evalgen::parse_suite_list(suites, data::evalgen::make_suites());
    o.levels = data::evalgen::parse_level_list(levels);
    o.format = data::evalgen::parse_format(format);
    if (o.format == data::evalgen::EvalFormat::kGenerate && !vm["choices"].defaulted())
      throw ConfigError("--choices needs --format choice");
    const data::evalgen::EvalgenSummary s = data::evalgen::write_eval_suites(o, output, vm.count("overwrite") > 0);
    std::string last;
    for (const auto& p : s.parts) {
      if (p.suite != last) std::printf("%sevalgen: %s:", last.empty() ? "" : "\n", p.suite.c_str());
      std::printf(" %s %lld", p.level.c_str(), static_cast<long long>(p.cases));
      last = p.suite;
    }
    std::printf("\nevalgen: %lld %s cases (seed %llu) -> %s\n", static_cast<long long>(s.cases), format.c_str(),
                static_cast<unsigned long long>(o.seed), output.c_str());
    return 0;
  });
}

}  // namespace trident::cli
