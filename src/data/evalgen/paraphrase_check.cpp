// The verifier of evalgen --paraphrase (the rule: paraphrase_check.hpp).
#include "trident/data/evalgen/paraphrase_check.hpp"

#include <algorithm>

#include "trident/core/error.hpp"
#include "trident/data/evalgen/generate.hpp"

namespace trident::data::evalgen {

namespace {

bool is_space(char c) { return c == ' ' || c == '\n' || c == '\t' || c == '\r'; }
bool is_alnum(char c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_word_byte(char c) { return is_alnum(c) || static_cast<unsigned char>(c) >= 0x80; }

std::string_view trimmed(std::string_view s) {
  while (!s.empty() && is_space(s.front())) s.remove_prefix(1);
  while (!s.empty() && is_space(s.back())) s.remove_suffix(1);
  return s;
}

std::vector<std::string> numbers_of(std::string_view s) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size();) {
    if (s[i] < '0' || s[i] > '9') {
      ++i;
      continue;
    }
    const size_t b = i;
    while (i < s.size() && s[i] >= '0' && s[i] <= '9') ++i;
    out.emplace_back(s.substr(b, i - b));
  }
  std::sort(out.begin(), out.end());
  return out;
}

// The original's answer cue: its last line when short and ending in ':' ("Answer:"), else "".
std::string_view answer_cue(std::string_view prompt) {
  const size_t nl = prompt.rfind('\n');
  if (nl == std::string_view::npos) return {};
  const std::string_view last = trimmed(prompt.substr(nl + 1));
  return !last.empty() && last.size() <= 20 && last.back() == ':' ? last : std::string_view();
}

// Whether the token sequence `phrase` occurs in `tokens` at `at`.
bool phrase_at(const std::vector<std::string>& tokens, size_t at, const std::vector<std::string>& phrase) {
  if (phrase.empty() || at + phrase.size() > tokens.size()) return false;
  return std::equal(phrase.begin(), phrase.end(), tokens.begin() + static_cast<std::ptrdiff_t>(at));
}

bool says(const std::vector<std::string>& tokens, const std::string& phrase) {
  const std::vector<std::string> p = word_tokens(phrase);
  for (size_t i = 0; i < tokens.size(); ++i)
    if (phrase_at(tokens, i, p)) return true;
  return false;
}

bool says_any(const std::vector<std::string>& tokens, const std::vector<std::string>& phrases) {
  return std::any_of(phrases.begin(), phrases.end(), [&](const std::string& p) { return says(tokens, p); });
}

// First bounded occurrence of value, npos when none.
size_t find_bounded(std::string_view text, std::string_view value, size_t from = 0) {
  if (value.empty()) return std::string_view::npos;
  for (size_t at = text.find(value, from); at != std::string_view::npos; at = text.find(value, at + 1)) {
    const bool left = at == 0 || !is_alnum(value.front()) || !is_alnum(text[at - 1]);
    const size_t end = at + value.size();
    const bool right = end == text.size() || !is_alnum(value.back()) || !is_alnum(text[end]);
    if (left && right) return at;
  }
  return std::string_view::npos;
}

// Occurrences of value followed (after spaces) by one of the unit words.
int64_t count_with_unit(std::string_view text, const RewordRule::Unit& unit) {
  int64_t n = 0;
  for (size_t at = find_bounded(text, unit.value); at != std::string_view::npos;
       at = find_bounded(text, unit.value, at + unit.value.size())) {
    const std::vector<std::string> next = word_tokens(text.substr(at + unit.value.size()));
    if (!next.empty() && std::find(unit.words.begin(), unit.words.end(), next.front()) != unit.words.end()) ++n;
  }
  return n;
}

bool keeps_operation(const RewordRule& rule, const std::vector<std::string>& tokens) {
  for (const auto& group : rule.must_say)
    if (!says_any(tokens, group)) return false;
  return !says_any(tokens, rule.must_not_say);
}

bool keeps_order(const RewordRule& rule, std::string_view text, const std::vector<std::string>& tokens) {
  for (const RewordRule::Order& o : rule.order) {
    if (o.first == o.second) continue;
    const size_t a = find_bounded(text, o.first), b = find_bounded(text, o.second);
    if (a == std::string_view::npos || b == std::string_view::npos) return false;
    if ((a < b) == says_any(tokens, o.reversed_by)) return false;
  }
  return true;
}

}  // namespace

const char* rewrite_verdict_name(RewriteVerdict v) {
  switch (v) {
    case RewriteVerdict::kKept: return "kept";
    case RewriteVerdict::kSameAsSource: return "same_as_source";
    case RewriteVerdict::kLength: return "length";
    case RewriteVerdict::kAnswerCue: return "answer_cue";
    case RewriteVerdict::kNumbers: return "numbers";
    case RewriteVerdict::kOperands: return "operands";
    case RewriteVerdict::kAnswerLeak: return "answer_leak";
    case RewriteVerdict::kOperation: return "operation";
    case RewriteVerdict::kOrder: return "order";
    case RewriteVerdict::kUnit: return "unit";
    case RewriteVerdict::kChecker: return "checker";
  }
  return "?";
}

std::string normalize_rewrite(std::string_view text) {
  std::string out;
  bool space = false;
  for (char c : trimmed(text)) {
    if (is_space(c)) {
      space = true;
      continue;
    }
    if (space) out += ' ';
    space = false;
    out += (c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  }
  return out;
}

int64_t count_bounded(std::string_view text, std::string_view value) {
  int64_t n = 0;
  for (size_t at = find_bounded(text, value); at != std::string_view::npos;
       at = find_bounded(text, value, at + value.size()))
    ++n;
  return n;
}

std::string mask_slots(std::string_view text, const std::map<std::string, std::string>& slots,
                       std::string_view marker) {
  std::vector<std::string> values;
  for (const auto& [name, value] : slots) values.push_back(value);
  std::stable_sort(values.begin(), values.end(),
                   [](const std::string& a, const std::string& b) { return a.size() > b.size(); });
  std::string out(text);
  for (const std::string& v : values)
    for (size_t at = find_bounded(out, v); at != std::string::npos; at = find_bounded(out, v, at + marker.size()))
      out.replace(at, v.size(), marker);
  return out;
}

std::vector<std::string> word_tokens(std::string_view text) {
  std::vector<std::string> out;
  for (size_t i = 0; i < text.size();) {
    if (is_space(text[i])) {
      ++i;
    } else if (!is_word_byte(text[i])) {
      out.emplace_back(1, text[i++]);
    } else {
      std::string w;
      for (; i < text.size() && is_word_byte(text[i]); ++i)
        w += (text[i] >= 'A' && text[i] <= 'Z') ? static_cast<char>(text[i] - 'A' + 'a') : text[i];
      out.push_back(std::move(w));
    }
  }
  return out;
}

RewriteVerdict check_rewrite(const Suite& suite, const EvalCase& source, std::string_view rewrite,
                             const std::vector<std::string>& words) {
  const std::string_view text = trimmed(rewrite), original = source.prompt;
  if (normalize_rewrite(text) == normalize_rewrite(original)) return RewriteVerdict::kSameAsSource;
  if (text.size() * 2 < original.size() || text.size() > 2 * original.size() + 20) return RewriteVerdict::kLength;
  if (const std::string_view cue = answer_cue(original); !cue.empty()) {
    const size_t nl = text.rfind('\n');
    if (nl == std::string_view::npos || trimmed(text.substr(nl + 1)) != cue) return RewriteVerdict::kAnswerCue;
  }
  if (numbers_of(text) != numbers_of(original)) return RewriteVerdict::kNumbers;
  for (const auto& [name, value] : source.slots)
    if (count_bounded(text, value) != count_bounded(original, value)) return RewriteVerdict::kOperands;
  for (const std::string& w : words)
    if (count_bounded(text, w) != count_bounded(original, w)) return RewriteVerdict::kOperands;
  std::vector<std::string> answers = {source.answer};
  answers.insert(answers.end(), source.other_answers.begin(), source.other_answers.end());
  for (const std::string& a : answers)
    if (count_bounded(text, a) > count_bounded(original, a)) return RewriteVerdict::kAnswerLeak;
  const RewordRule rule = suite.reword_rule(source.template_name, source.params);
  const std::vector<std::string> tokens = word_tokens(mask_slots(text, source.slots, " "));
  if (!keeps_operation(rule, tokens)) return RewriteVerdict::kOperation;
  if (!keeps_order(rule, text, tokens)) return RewriteVerdict::kOrder;
  for (const RewordRule::Unit& u : rule.units)
    if (count_with_unit(text, u) != count_with_unit(original, u)) return RewriteVerdict::kUnit;
  EvalCase reworded = source;
  reworded.prompt = std::string(text);
  try {
    verify_case(suite, reworded);
  } catch (const Error&) {
    return RewriteVerdict::kChecker;
  }
  return RewriteVerdict::kKept;
}

}  // namespace trident::data::evalgen
