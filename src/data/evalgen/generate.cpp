// Generating, checking and writing evalgen cases (see generate.hpp for the line formats).
#include "trident/core/file_policy.hpp"
#include "trident/data/evalgen/generate.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "suite_util.hpp"
#include "trident/core/error.hpp"

namespace trident::data::evalgen {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool clean_edges(const std::string& s) { return !s.empty() && !is_space(s.front()) && !is_space(s.back()); }

std::string case_name(const EvalCase& c) { return c.suite + "/" + c.template_name + "/" + c.level; }

std::string names(const std::vector<std::string>& v) { return join(v, ", "); }

// K - 1 distinct near misses the checker rejects, in the suite's order of plausibility.
std::vector<std::string> wrong_choices(const Suite& suite, const EvalCase& c, const std::vector<std::string>& words,
                                       int k, EvalRng& rng) {
  std::vector<std::string> wrong;
  for (const std::string& s : suite.near_misses(c.template_name, c.params, words, rng)) {
    if (static_cast<int>(wrong.size()) == k - 1) break;
    if (clean_edges(s) && s != c.answer && !check_answer(suite, c, s) && std::find(wrong.begin(), wrong.end(), s) == wrong.end())
      wrong.push_back(s);
  }
  TRIDENT_CHECK(static_cast<int>(wrong.size()) == k - 1, case_name(c), ": only ", wrong.size(),
                " distinct wrong near misses for ", k, " choices (params ", c.params.dump(), ")");
  return wrong;
}

}  // namespace

std::vector<std::string> parse_suite_list(const std::string& spec, const std::vector<std::unique_ptr<Suite>>& suites) {
  std::vector<std::string> known;
  for (const auto& s : suites) known.push_back(s->name());
  if (spec == "all") return known;
  std::vector<std::string> out;
  for (const std::string& name : split(spec, ",")) {
    TRIDENT_CONFIG_CHECK(std::count(known.begin(), known.end(), name), "--suite: unknown suite \"", name,
                         "\" (known: ", names(known), ", or all)");
    if (!std::count(out.begin(), out.end(), name)) out.push_back(name);
  }
  return out;
}

std::vector<std::string> parse_level_list(const std::string& spec) {
  std::vector<std::string> out;
  for (const std::string& name : split(spec, ",")) {
    TRIDENT_CONFIG_CHECK(std::count(level_names().begin(), level_names().end(), name), "--levels: unknown level \"", name,
                         "\" (known: ", names(level_names()), ")");
    if (!std::count(out.begin(), out.end(), name)) out.push_back(name);
  }
  return out;
}

EvalFormat parse_format(const std::string& name) {
  if (name == "generate") return EvalFormat::kGenerate;
  TRIDENT_CONFIG_CHECK(name == "choice", "--format: unknown format \"", name, "\" (known: generate, choice)");
  return EvalFormat::kChoice;
}

std::vector<EvalCase> generate_cases(const Suite& suite, const SuiteSpec& spec, const std::string& level, int64_t n,
                                     uint64_t seed, EvalFormat format, int choices) {
  EvalRng rng(seed, std::string(suite.name()) + "/" + level);
  std::vector<EvalCase> cases;
  for (int64_t i = 0; i < n; ++i) {
    const TemplateSpec& t = spec.templates[i % spec.templates.size()];  // templates in turn, equally many
    Draw d;
    try {
      d = suite.draw(t.name, t.levels.at(level), spec.words, rng);
    } catch (const ConfigError& e) {  // parameters that make no case: name where they came from
      throw ConfigError(spec.file + ": template " + t.name + ", level " + level + ": " + e.what());
    }
    EvalCase c;
    c.suite = suite.name();
    c.template_name = t.name;
    c.level = level;
    c.params = std::move(d.params);
    c.prompt = fill_prompt(t.prompts[rng.below(t.prompts.size())], d.slots);
    c.slots = std::move(d.slots);
    std::vector<std::string> forms = suite.accepted(t.name, c.params);  // the label is the checker's
    TRIDENT_CHECK(!forms.empty(), case_name(c), ": the checker accepts no answer");
    c.answer = forms[0];
    c.other_answers.assign(forms.begin() + 1, forms.end());
    if (format == EvalFormat::kChoice) {
      c.choices = wrong_choices(suite, c, spec.words, choices, rng);
      c.gold = static_cast<int>(rng.below(choices));
      c.choices.insert(c.choices.begin() + c.gold, c.answer);
    }
    verify_case(suite, c);
    cases.push_back(std::move(c));
  }
  return cases;
}

void verify_case(const Suite& suite, const EvalCase& c) {
  const std::string what = case_name(c) + " (params " + c.params.dump() + ")";
  TRIDENT_CHECK(!c.prompt.empty() && !is_space(c.prompt.back()), what, ": the prompt ends in whitespace");
  TRIDENT_CHECK(clean_edges(c.answer) && check_answer(suite, c, c.answer), what, ": the checker rejects the label \"",
                c.answer, "\"");
  for (const std::string& a : c.other_answers)
    TRIDENT_CHECK(a != c.answer && check_answer(suite, c, a), what, ": the checker rejects the answer \"", a, "\"");
  if (c.choices.empty()) return;
  TRIDENT_CHECK(c.choices.size() >= 2 && c.gold >= 0 && c.gold < static_cast<int>(c.choices.size()), what,
                ": gold ", c.gold, " of ", c.choices.size(), " choices");
  for (size_t i = 0; i < c.choices.size(); ++i) {
    const std::string& s = c.choices[i];
    TRIDENT_CHECK(clean_edges(s), what, ": choice \"", s, "\" is empty or has whitespace at an end");
    TRIDENT_CHECK(check_answer(suite, c, s) == (static_cast<int>(i) == c.gold), what, ": the checker ",
                  static_cast<int>(i) == c.gold ? "rejects the gold" : "accepts the wrong", " choice \"", s, "\"");
    TRIDENT_CHECK(std::count(c.choices.begin(), c.choices.end(), s) == 1, what, ": choice \"", s, "\" appears twice");
  }
}

Json case_json(const EvalCase& c, EvalFormat format) {
  Json j = Json::object();
  if (format == EvalFormat::kGenerate) {
    j.append("input", Json(c.prompt));
    j.append("output", Json(c.answer));
    j.append("answers", string_array(c.other_answers));
  } else {
    j.append("context", Json(c.prompt));
    j.append("choices", string_array(c.choices));
    j.append("gold", Json(c.gold));
  }
  j.append("suite", Json(c.suite));
  j.append("template", Json(c.template_name));
  j.append("level", Json(c.level));
  return j;
}

std::string case_json_line(const EvalCase& c, EvalFormat format) { return case_json(c, format).dump(); }

EvalgenPlan plan_eval_suites(const EvalgenOptions& o, const std::string& output, bool overwrite) {
  EvalgenPlan plan;
  plan.registry = make_suites();
  TRIDENT_CONFIG_CHECK(!o.suites.empty(), "--suite: no suite named");
  TRIDENT_CONFIG_CHECK(!o.levels.empty(), "--levels: no level named");
  TRIDENT_CONFIG_CHECK(o.n >= 1 && o.n <= 10000000, "--n ", o.n, ": must be in [1, 10000000]");
  TRIDENT_CONFIG_CHECK(!output.empty(), "--output is required");
  for (const std::string& name : o.suites) {
    const auto it =
        std::find_if(plan.registry.begin(), plan.registry.end(), [&](const auto& s) { return name == s->name(); });
    TRIDENT_CONFIG_CHECK(it != plan.registry.end(), "--suite: unknown suite \"", name, "\"");
    plan.suites.push_back(it->get());
    if (o.format == EvalFormat::kChoice)
      TRIDENT_CONFIG_CHECK(o.choices >= 2 && o.choices <= (*it)->max_choices(), "--choices ", o.choices,
                           ": must be at least 2 and at most ", (*it)->max_choices(), " for suite ", name,
                           " (the most distinct choices it can make)");
  }
  TRIDENT_CONFIG_CHECK(overwrite || !std::filesystem::exists(output), output,
                       " exists: pass --overwrite to replace it");
  // Every template file read before anything is written.
  for (const Suite* s : plan.suites) plan.specs.push_back(load_suite_spec(o.templates_dir, s->name(), s->templates()));
  return plan;
}

void write_file_atomically(const std::string& output, const std::function<void(std::ostream&)>& body) {
  const std::string tmp = output + ".tmp";
  try {
    std::ofstream out = create_file(tmp, std::ios::binary | std::ios::trunc);
    TRIDENT_CONFIG_CHECK(out.good(), tmp, ": cannot open for writing");
    body(out);
    out.close();
    TRIDENT_CHECK(!out.fail(), tmp, ": write failed");
    std::filesystem::rename(tmp, output);
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);
    throw;
  }
}

EvalgenSummary write_eval_suites(const EvalgenOptions& o, const std::string& output, bool overwrite) {
  const EvalgenPlan plan = plan_eval_suites(o, output, overwrite);
  EvalgenSummary summary;
  write_file_atomically(output, [&](std::ostream& out) {
    for (size_t i = 0; i < plan.suites.size(); ++i)
      for (const std::string& level : o.levels) {
        const std::vector<EvalCase> cases =
            generate_cases(*plan.suites[i], plan.specs[i], level, o.n, o.seed, o.format, o.choices);
        for (const EvalCase& c : cases) out << case_json_line(c, o.format) << '\n';
        summary.parts.push_back({plan.suites[i]->name(), level, static_cast<int64_t>(cases.size())});
        summary.cases += static_cast<int64_t>(cases.size());
      }
  });
  return summary;
}

}  // namespace trident::data::evalgen
