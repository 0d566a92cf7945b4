// `trident evalgen --paraphrase MODEL`: each template-generated case's prompt reworded by a
// language model, K samples a case; a rewrite is kept when the verifier (paraphrase_check.hpp)
// says it is the same case and it is no duplicate of an earlier kept rewrite of that case. The
// kept ones are written in case order, then sample order, as the case's line (generate.hpp)
// with the rewrite as its prompt, plus "source" (the case's 0-based line in the file the same
// options write without --paraphrase), "sample" (0..K-1) and "paraphrase_model" (MODEL as
// given). The template-generated originals are not repeated (that file holds them). The model
// is behind a callback, so this file knows nothing of it.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "trident/data/evalgen/generate.hpp"
#include "trident/data/evalgen/paraphrase_check.hpp"

namespace trident::data::evalgen {

struct RewriteRequest {
  const EvalCase* source_case;
  int64_t source;   // the case's line in the template-generated file
  int sample;       // 0..K-1
  uint64_t stream;  // its sampling stream (token_sampling.hpp: seed, suite, level, case, sample)
};
struct Rewrite {
  std::string text;
  bool too_long = false;  // the request does not fit the model's context: nothing generated
};
// The model's rewrites of the requests, one each, in order.
using Rewriter = std::function<std::vector<Rewrite>(const std::vector<RewriteRequest>&)>;

struct ParaphraseOptions {
  std::string model;  // as given on the command line (each line records it)
  int samples = 4;
  // (source, sample) -> the text that replaces the model's (a test hook: planted rewrites).
  std::map<std::pair<int64_t, int>, std::string> planted;
};

struct ParaphraseSummary {
  int64_t cases = 0, sampled = 0, kept = 0;
  int64_t too_long = 0;                              // requests the model's context could not hold
  int64_t duplicates = 0;                            // equal to an earlier kept rewrite of the same case
  std::array<int64_t, kRewriteVerdicts> verdicts{};  // by RewriteVerdict (kept and same_as_source too)
  int64_t ngrams = 0, novel_ngrams = 0;              // distinct n-grams of the kept prompts (novelty.hpp)
};

// The plan's cases generated as write_eval_suites does, rewritten by `rewrite` (one call per
// (suite, level)), checked and written to `output` through output + ".tmp" and a rename.
ParaphraseSummary write_paraphrased_suites(const EvalgenOptions& o, const EvalgenPlan& plan, const ParaphraseOptions& p,
                                           const Rewriter& rewrite, const std::string& output);

// TRIDENT_TEST_PARAPHRASE_PLANT's file: JSON lines {"source": i, "sample": k, "text": "..."}
// (ConfigError naming the line when one is not).
std::map<std::pair<int64_t, int>, std::string> read_planted_rewrites(const std::string& path);

}  // namespace trident::data::evalgen
