// `trident evalgen`'s work: N cases per (suite, level) from the template library, each one
// checked (the label is the checker's; in multiple choice every near miss is checked wrong and
// the choices distinct), written as JSONL, one case a line:
//   generate: {"input", "output", "answers", "suite", "template", "level"} (eval.task's format)
//   choice:   {"context", "choices", "gold", "suite", "template", "level"} (lm-evaluation-harness'
//             multiple-choice shape: the scorer puts " " between context and choice)
// Same options => the same bytes: every (suite, level) draws from its own seeded stream.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "trident/data/evalgen/suite.hpp"

namespace trident::data::evalgen {

enum class EvalFormat { kGenerate, kChoice };

struct EvalgenOptions {
  std::vector<std::string> suites;  // registry names
  std::vector<std::string> levels;  // of level_names()
  int64_t n = 100;                  // cases per (suite, level)
  uint64_t seed = 1;
  EvalFormat format = EvalFormat::kGenerate;
  int choices = 4;
  std::string templates_dir = "input/eval";
};

// "all" or a comma-separated list of known names; ConfigError naming the known ones.
std::vector<std::string> parse_suite_list(const std::string& spec, const std::vector<std::unique_ptr<Suite>>& suites);
std::vector<std::string> parse_level_list(const std::string& spec);
EvalFormat parse_format(const std::string& name);

// N cases of one suite and level (Error when the checker rejects one: a bug of the suite).
std::vector<EvalCase> generate_cases(const Suite& suite, const SuiteSpec& spec, const std::string& level, int64_t n,
                                     uint64_t seed, EvalFormat format, int choices);
// Error unless the checker accepts the label and the other answers, and, with choices, the gold
// choice is accepted, every other is rejected, all are distinct and none starts or ends with
// whitespace; the prompt must not end with whitespace.
void verify_case(const Suite& suite, const EvalCase& c);

Json case_json(const EvalCase& c, EvalFormat format);               // the line's object
std::string case_json_line(const EvalCase& c, EvalFormat format);  // without the newline

struct EvalgenSummary {
  struct Part {
    std::string suite, level;
    int64_t cases = 0;
  };
  std::vector<Part> parts;
  int64_t cases = 0;
};

// The options validated (ConfigError) and the library loaded: the suites to write, in order,
// with their template files. An existing output is a ConfigError unless `overwrite`.
struct EvalgenPlan {
  std::vector<std::unique_ptr<Suite>> registry;
  std::vector<const Suite*> suites;  // of registry
  std::vector<SuiteSpec> specs;      // one per suite
};
EvalgenPlan plan_eval_suites(const EvalgenOptions& o, const std::string& output, bool overwrite);

// Writes `output` through output + ".tmp" and a rename (body writes the content), so a failure
// leaves no partial file and no .tmp.
void write_file_atomically(const std::string& output, const std::function<void(std::ostream&)>& body);

// plan_eval_suites, then every case generated and written, (suite, level) by (suite, level).
EvalgenSummary write_eval_suites(const EvalgenOptions& o, const std::string& output, bool overwrite);

}  // namespace trident::data::evalgen
