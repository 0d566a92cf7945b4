// The registry of evalgen suites and the checker's verdict on a candidate answer.
#include <algorithm>

#include "trident/data/evalgen/suite.hpp"

namespace trident::data::evalgen {

std::vector<std::unique_ptr<Suite>> make_suites() {
  std::vector<std::unique_ptr<Suite>> s;
  s.push_back(make_arithmetic_suite());
  s.push_back(make_last_digit_suite());
  s.push_back(make_copy_suite());
  s.push_back(make_reverse_suite());
  s.push_back(make_sort_suite());
  s.push_back(make_kv_lookup_suite());
  s.push_back(make_date_suite());
  return s;
}

bool check_answer(const Suite& suite, const EvalCase& c, std::string_view candidate) {
  const auto space = [](char ch) { return ch == ' ' || ch == '\n' || ch == '\t' || ch == '\r'; };
  while (!candidate.empty() && space(candidate.front())) candidate.remove_prefix(1);
  while (!candidate.empty() && space(candidate.back())) candidate.remove_suffix(1);
  const std::vector<std::string> forms = suite.accepted(c.template_name, c.params);
  return std::find(forms.begin(), forms.end(), candidate) != forms.end();
}

}  // namespace trident::data::evalgen
