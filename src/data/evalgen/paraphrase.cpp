// Rewriting, checking and writing the cases of evalgen --paraphrase (paraphrase.hpp).
#include "trident/data/evalgen/paraphrase.hpp"

#include <fstream>
#include <set>

#include "trident/core/error.hpp"
#include "trident/data/evalgen/novelty.hpp"
#include "trident/data/evalgen/token_sampling.hpp"

namespace trident::data::evalgen {

namespace {

std::string trimmed(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string::npos ? std::string() : s.substr(b, e - b + 1);
}

struct PartContext {
  const EvalgenOptions& o;
  const ParaphraseOptions& p;
  const Rewriter& rewrite;
  std::ostream& out;
  NgramNovelty& novelty;
  ParaphraseSummary& summary;
};

// One (suite, level): K requests a case, the rewrites judged in case and sample order, the kept
// ones written. first_line: the line of cases[0] in the template-generated file.
void paraphrase_part(const Suite& suite, const SuiteSpec& spec, const std::vector<EvalCase>& cases, int64_t first_line,
                     PartContext& x) {
  std::vector<RewriteRequest> requests;
  for (size_t c = 0; c < cases.size(); ++c)
    for (int k = 0; k < x.p.samples; ++k)
      requests.push_back({&cases[c], first_line + static_cast<int64_t>(c), k,
                          sample_stream(x.o.seed, suite.name(), cases[c].level, static_cast<int64_t>(c), k)});
  std::vector<Rewrite> rewrites = x.rewrite(requests);
  TRIDENT_CHECK(rewrites.size() == requests.size(), "paraphrase: ", rewrites.size(), " rewrites for ", requests.size(),
                " requests");
  std::set<std::string> seen;  // the normalised kept rewrites of the current case
  int64_t current = -1;
  for (size_t r = 0; r < requests.size(); ++r) {
    const RewriteRequest& q = requests[r];
    if (q.source != current) {
      seen.clear();
      current = q.source;
    }
    Rewrite& w = rewrites[r];
    if (const auto it = x.p.planted.find({q.source, q.sample}); it != x.p.planted.end()) w = {it->second, false};
    ++x.summary.sampled;
    if (w.too_long) {
      ++x.summary.too_long;
      continue;
    }
    const RewriteVerdict v = check_rewrite(suite, *q.source_case, w.text, spec.words);
    if (v == RewriteVerdict::kKept && !seen.insert(normalize_rewrite(w.text)).second) {
      ++x.summary.duplicates;
      continue;
    }
    ++x.summary.verdicts[static_cast<size_t>(v)];
    if (v != RewriteVerdict::kKept) continue;
    EvalCase reworded = *q.source_case;
    reworded.prompt = trimmed(w.text);
    Json j = case_json(reworded, x.o.format);
    j.append("source", Json(q.source));
    j.append("sample", Json(q.sample));
    j.append("paraphrase_model", Json(x.p.model));
    x.out << j.dump() << '\n';
    x.novelty.add_prompt(reworded.prompt, reworded.slots);
    ++x.summary.kept;
  }
}

}  // namespace

ParaphraseSummary write_paraphrased_suites(const EvalgenOptions& o, const EvalgenPlan& plan, const ParaphraseOptions& p,
                                           const Rewriter& rewrite, const std::string& output) {
  TRIDENT_CONFIG_CHECK(p.samples >= 1, "--samples ", p.samples, ": must be at least 1");
  ParaphraseSummary summary;
  NgramNovelty novelty;
  for (const SuiteSpec& spec : plan.specs)
    for (const TemplateSpec& t : spec.templates)
      for (const std::string& w : t.prompts) novelty.add_wording(w);
  write_file_atomically(output, [&](std::ostream& out) {
    PartContext x{o, p, rewrite, out, novelty, summary};
    int64_t line = 0;
    for (size_t i = 0; i < plan.suites.size(); ++i)
      for (const std::string& level : o.levels) {
        const std::vector<EvalCase> cases =
            generate_cases(*plan.suites[i], plan.specs[i], level, o.n, o.seed, o.format, o.choices);
        paraphrase_part(*plan.suites[i], plan.specs[i], cases, line, x);
        line += static_cast<int64_t>(cases.size());
        summary.cases += static_cast<int64_t>(cases.size());
      }
  });
  summary.ngrams = novelty.distinct();
  summary.novel_ngrams = novelty.novel();
  return summary;
}

std::map<std::pair<int64_t, int>, std::string> read_planted_rewrites(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in.good(), "TRIDENT_TEST_PARAPHRASE_PLANT=", path, ": cannot read");
  std::map<std::pair<int64_t, int>, std::string> out;
  std::string text;
  for (int64_t number = 1; std::getline(in, text); ++number) {
    if (text.find_first_not_of(" \t\r") == std::string::npos) continue;
    try {
      const Json j = Json::parse(text);
      TRIDENT_CONFIG_CHECK(j.is_object(), "expected a JSON object");
      const Json *source = j.find("source"), *sample = j.find("sample"), *rewrite = j.find("text");
      TRIDENT_CONFIG_CHECK(source && sample && rewrite && rewrite->is_string(),
                           R"(expected {"source": i, "sample": k, "text": "..."})");
      out[{source->as_int(), static_cast<int>(sample->as_int())}] = rewrite->as_string();
    } catch (const Error& e) {
      throw ConfigError(detail::concat("TRIDENT_TEST_PARAPHRASE_PLANT=", path, ":", number, ": ", e.what()));
    }
  }
  return out;
}

}  // namespace trident::data::evalgen
