// SQuAD-style answer normalisation, exact match and token F1.
#include "trident/train/eval/answer_match.hpp"

#include <algorithm>
#include <map>

#include "trident/core/error.hpp"

namespace trident::train {

namespace {
bool is_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
// Python's string.punctuation.
bool is_punctuation(char c) {
  return (c >= '!' && c <= '/') || (c >= ':' && c <= '@') || (c >= '[' && c <= '`') || (c >= '{' && c <= '~');
}

std::vector<std::string> normalized_tokens(std::string_view text) {
  std::vector<std::string> tokens;
  std::string word;
  auto flush = [&] {
    if (!word.empty() && word != "a" && word != "an" && word != "the") tokens.push_back(word);
    word.clear();
  };
  for (char c : text) {
    if (is_space(c)) flush();
    else if (!is_punctuation(c)) word.push_back(c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c);
  }
  flush();
  return tokens;
}
}  // namespace

std::string normalize_answer(std::string_view text) {
  std::string out;
  for (const std::string& t : normalized_tokens(text)) {
    if (!out.empty()) out.push_back(' ');
    out += t;
  }
  return out;
}

double exact_match(std::string_view prediction, std::string_view reference) {
  return normalize_answer(prediction) == normalize_answer(reference) ? 1.0 : 0.0;
}

double token_f1(std::string_view prediction, std::string_view reference) {
  const std::vector<std::string> pred = normalized_tokens(prediction), ref = normalized_tokens(reference);
  if (pred.empty() || ref.empty()) return pred == ref ? 1.0 : 0.0;
  std::map<std::string, int> counts;
  for (const std::string& t : ref) ++counts[t];
  int common = 0;
  for (const std::string& t : pred) {
    auto it = counts.find(t);
    if (it != counts.end() && it->second > 0) --it->second, ++common;
  }
  if (common == 0) return 0.0;
  const double precision = double(common) / pred.size(), recall = double(common) / ref.size();
  return 2 * precision * recall / (precision + recall);
}

AnswerScore score_answer(std::string_view prediction, const std::vector<std::string>& references) {
  TRIDENT_CHECK(!references.empty(), "score_answer needs at least one reference");
  AnswerScore best;
  for (const std::string& r : references) {
    best.exact_match = std::max(best.exact_match, exact_match(prediction, r));
    best.f1 = std::max(best.f1, token_f1(prediction, r));
  }
  return best;
}

}  // namespace trident::train
