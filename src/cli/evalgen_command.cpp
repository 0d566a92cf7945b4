// `trident evalgen`: generated evaluation suites (arithmetic, dates, lookups, ...) written as an
// eval.task JSONL file or as multiple-choice lines, or with --paraphrase their prompts reworded
// by a model and verified (data::evalgen does the work, paraphrase_model.hpp runs the model;
// this parses the options and prints what was written).
#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "command_options.hpp"
#include "paraphrase_model.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/error.hpp"
#include "trident/data/evalgen/generate.hpp"
#include "trident/data/evalgen/paraphrase.hpp"
#include "trident/dist/mpi_session.hpp"

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
    "  \"suite\", \"template\", \"level\"} with K - 1 checked-wrong near misses. The same options write the same\n"
    "  bytes.\n"
    "       trident evalgen ... --paraphrase MODEL [--samples K] [--temperature T] [--top-p P] [--threads N]\n"
    "  MODEL (a trident checkpoint or a Hugging Face directory; its chat template where it has one) rewords\n"
    "  each case's prompt K times; a rewrite is kept when the suite's rule says it is the same case (every\n"
    "  number, slot value and vocabulary word as often as before, the answer not leaked, the operation's\n"
    "  words, order and unit kept, the answer cue kept, the checker's answers unchanged) and it is no\n"
    "  duplicate. Lines: the case's, with the rewrite as prompt, plus \"source\" (the case's line in the\n"
    "  file written without --paraphrase), \"sample\" and \"paraphrase_model\". Seeded: the same options\n"
    "  write the same bytes.";

namespace eg = data::evalgen;

// TRIDENT_TEST_PARAPHRASE_PLANT=FILE: {"source", "sample", "text"} lines whose text replaces
// that model output (the tests plant rewrites the verifier must reject or keep).
std::map<std::pair<int64_t, int>, std::string> planted_rewrites() {
  const char* path = std::getenv("TRIDENT_TEST_PARAPHRASE_PLANT");
  if (!path || !*path) return {};
  return eg::read_planted_rewrites(path);
}

void print_paraphrase_summary(const eg::ParaphraseSummary& s, const eg::ParaphraseOptions& p,
                              const eg::SamplingOptions& sampling, uint64_t seed) {
  auto share = [](int64_t part, int64_t whole) { return whole > 0 ? 100.0 * double(part) / double(whole) : 0.0; };
  auto count = [&](int v) { return static_cast<long long>(s.verdicts[static_cast<size_t>(v)]); };
  std::printf("evalgen: %lld cases, %lld rewrites sampled (%d a case; temperature %g, top-p %g, seed %llu)\n",
              static_cast<long long>(s.cases), static_cast<long long>(s.sampled), p.samples, sampling.temperature,
              sampling.top_p, static_cast<unsigned long long>(seed));
  std::printf("evalgen: kept %lld of %lld (%.1f%%); same as the source %lld, duplicates %lld, too long for the "
              "model %lld\n",
              static_cast<long long>(s.kept), static_cast<long long>(s.sampled), share(s.kept, s.sampled),
              count(static_cast<int>(eg::RewriteVerdict::kSameAsSource)), static_cast<long long>(s.duplicates),
              static_cast<long long>(s.too_long));
  long long rejected = 0;
  std::string reasons;
  for (int v = static_cast<int>(eg::RewriteVerdict::kLength); v < eg::kRewriteVerdicts; ++v) {
    rejected += count(v);
    reasons += detail::concat(reasons.empty() ? "" : ", ", eg::rewrite_verdict_name(static_cast<eg::RewriteVerdict>(v)),
                              " ", count(v));
  }
  std::printf("evalgen: rejected %lld: %s\n", rejected, reasons.c_str());
  std::printf("evalgen: diversity: %lld of the %lld distinct n-grams (n = 1..3) of the kept prompts (%.1f%%) "
              "occur in no template wording\n",
              static_cast<long long>(s.novel_ngrams), static_cast<long long>(s.ngrams),
              share(s.novel_ngrams, s.ngrams));
}

// --paraphrase: the options checked and the library loaded before the model, then one process
// of its own (MPI_COMM_SELF) runs the model.
int run_paraphrase(int argc, char** argv, const eg::EvalgenOptions& o, eg::ParaphraseOptions& p,
                   const eg::SamplingOptions& sampling, int threads, const std::string& output, bool overwrite) {
  TRIDENT_CONFIG_CHECK(!p.model.empty(), "--paraphrase: no model named");
  TRIDENT_CONFIG_CHECK(p.samples >= 1 && p.samples <= 64, "--samples ", p.samples, ": must be in [1, 64]");
  TRIDENT_CONFIG_CHECK(std::isfinite(sampling.temperature) && sampling.temperature >= 0 && sampling.temperature <= 100,
                       "--temperature ", sampling.temperature, ": must be in [0, 100] (0: greedy)");
  TRIDENT_CONFIG_CHECK(sampling.top_p > 0 && sampling.top_p <= 1, "--top-p ", sampling.top_p, ": must be in (0, 1]");
  TRIDENT_CONFIG_CHECK(threads >= 0 && threads <= 1024, "--threads ", threads, ": must be in [0, 1024]");
  const eg::EvalgenPlan plan = eg::plan_eval_suites(o, output, overwrite);
  p.planted = planted_rewrites();
  dist::MpiSession mpi(&argc, &argv);
  TRIDENT_CONFIG_CHECK(mpi.world_size() == 1, "evalgen --paraphrase runs as one process (not under mpirun -np ",
                       mpi.world_size(), ")");
  Logger log(mpi.world_rank());
  ParaphraseModel model(p.model, sampling, threads, mpi.reductions(), log);
  std::printf("evalgen: paraphrasing with %s\n", model.description().c_str());
  std::fflush(stdout);
  const eg::ParaphraseSummary s = eg::write_paraphrased_suites(
      o, plan, p, [&](const std::vector<eg::RewriteRequest>& r) { return model.rewrite(r); }, output);
  print_paraphrase_summary(s, p, sampling, o.seed);
  std::printf("evalgen: %lld %s cases (seed %llu) -> %s\n", static_cast<long long>(s.kept),
              o.format == eg::EvalFormat::kChoice ? "choice" : "generate", static_cast<unsigned long long>(o.seed),
              output.c_str());
  return 0;
}

}  // namespace

int run_evalgen(int argc, char** argv) {
  data::evalgen::EvalgenOptions o;
  data::evalgen::ParaphraseOptions paraphrase;
  data::evalgen::SamplingOptions sampling;
  std::string suites, levels, format, output;
  int threads = 0;
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
      ("overwrite", "replace an existing --output")
      ("paraphrase", po::value<std::string>(&paraphrase.model), "reword every case's prompt with this model "
       "(a trident checkpoint or a Hugging Face directory) and write the verified rewrites")
      ("samples", po::value<int>(&paraphrase.samples)->default_value(4), "rewrites sampled per case (--paraphrase)")
      ("temperature", po::value<double>(&sampling.temperature)->default_value(0.8, "0.8"),
       "sampling temperature of --paraphrase (0: greedy)")
      ("top-p", po::value<double>(&sampling.top_p)->default_value(0.95, "0.95"),
       "nucleus sampling of --paraphrase: the most probable tokens whose mass reaches P, in (0, 1]")
      ("threads", po::value<int>(&threads)->default_value(0),
       "compute threads of the --paraphrase model (0: the cores of the node)");
  return run_reporting_errors("evalgen", kUsage, [&] {
    po::variables_map vm;
    if (!parse_options(argc, argv, desc, kUsage, vm)) return 0;
    o.suites = data::evalgen::parse_suite_list(suites, data::evalgen::make_suites());
    o.levels = data::evalgen::parse_level_list(levels);
    o.format = data::evalgen::parse_format(format);
    if (o.format == data::evalgen::EvalFormat::kGenerate && !vm["choices"].defaulted())
      throw ConfigError("--choices needs --format choice");
    if (vm.count("paraphrase"))
      return run_paraphrase(argc, argv, o, paraphrase, sampling, threads, output, vm.count("overwrite") > 0);
    for (const char* option : {"samples", "temperature", "top-p", "threads"})
      TRIDENT_CONFIG_CHECK(vm[option].defaulted(), "--", option, " needs --paraphrase MODEL");
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
