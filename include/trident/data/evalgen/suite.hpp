// An evalgen suite: a family of generated tasks (arithmetic, dates, ...) with, per template, a
// generator (draws a case's parameters and the strings its prompt shows) and a checker (the
// accepted answers, computed from the parameters alone). The label of a case is the checker's,
// never the generator's, and every case is checked before it is written (generate.hpp).
#pragma once
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "trident/core/json.hpp"
#include "trident/data/evalgen/rng.hpp"
#include "trident/data/evalgen/templates.hpp"

namespace trident::data::evalgen {

// What a generator draws: the parameters (a JSON object, e.g. {"a": 12, "b": 7}) and the
// values of the prompt's placeholders (e.g. {"a": "12", "b": "7"}).
struct Draw {
  Json params;
  std::map<std::string, std::string> slots;
};

struct EvalCase {
  std::string suite, template_name, level;
  Json params;
  std::map<std::string, std::string> slots;  // the placeholder values its prompt shows (Draw::slots)
  std::string prompt;                        // no trailing whitespace
  std::string answer;                      // the label: the checker's first accepted form
  std::vector<std::string> other_answers;  // the checker's other accepted forms
  std::vector<std::string> choices;        // multiple choice only: gold and near misses
  int gold = -1;
};

// What a reworded prompt must still say to ask the same question as the template's (the rule of
// paraphrase_check.hpp, which also keeps every slot value, number and answer as the original
// has them). Phrases are whole words, matched case-insensitively (paraphrase_check.hpp).
struct RewordRule {
  // At least one phrase of each group: the operation ("sum", "+", "plus"), its direction
  // ("ascending", "smallest to largest"), what is asked ("digit", "value").
  std::vector<std::vector<std::string>> must_say;
  // None of these: the words of another operation, direction or unit.
  std::vector<std::string> must_not_say;
  // Slot values whose first occurrences must come in this order (a - b), or in the other order
  // when the rewrite says a phrase of reversed_by ("subtract b from a").
  struct Order {
    std::string first, second;
    std::vector<std::string> reversed_by;
  };
  std::vector<Order> order;
  // Slot values that every occurrence of must be followed by one of these words (a count's
  // unit: "40 days").
  struct Unit {
    std::string value;
    std::vector<std::string> words;
  };
  std::vector<Unit> units;
};

class Suite {
 public:
  virtual ~Suite() = default;
  virtual const char* name() const = 0;
  virtual std::vector<TemplateDef> templates() const = 0;
  // The most choices (the answer and distinct wrong near misses) every case of every level can have.
  virtual int max_choices() const = 0;
  // Generator: one case of template `tmpl` at a level's parameters.
  virtual Draw draw(const std::string& tmpl, const LevelParams& level, const std::vector<std::string>& words,
                    EvalRng& rng) const = 0;
  // Checker: every accepted answer, the label first, from the parameters alone. Error when the
  // parameters do not make a well-posed case (e.g. duplicate keys).
  virtual std::vector<std::string> accepted(const std::string& tmpl, const Json& params) const = 0;
  // Plausible wrong answers, most plausible first (the caller drops any the checker accepts and
  // duplicates); at least max_choices() - 1 distinct wrong ones for any case of any level.
  virtual std::vector<std::string> near_misses(const std::string& tmpl, const Json& params,
                                               const std::vector<std::string>& words, EvalRng& rng) const = 0;
  // What a rewording of a case's prompt must still say (evalgen --paraphrase).
  virtual RewordRule reword_rule(const std::string& tmpl, const Json& params) const = 0;
};

// The checker's verdict on a candidate answer (leading and trailing whitespace ignored).
bool check_answer(const Suite& suite, const EvalCase& c, std::string_view candidate);

// The registry: every suite, in the order `--suite all` writes them.
std::vector<std::unique_ptr<Suite>> make_suites();
std::unique_ptr<Suite> make_arithmetic_suite();
std::unique_ptr<Suite> make_last_digit_suite();
std::unique_ptr<Suite> make_copy_suite();
std::unique_ptr<Suite> make_reverse_suite();
std::unique_ptr<Suite> make_sort_suite();
std::unique_ptr<Suite> make_kv_lookup_suite();
std::unique_ptr<Suite> make_date_suite();

}  // namespace trident::data::evalgen
