// Scoring generated answers against references the way SQuAD's evaluation script does:
// both sides normalised (ASCII lower case, ASCII punctuation removed, the articles a / an / the
// dropped, whitespace collapsed), then exact match of the normalised strings and F1 of their
// whitespace tokens (bag-of-tokens overlap). With several references the best one counts.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace trident::train {

std::string normalize_answer(std::string_view text);
// 1 when the normalised texts are equal, else 0.
double exact_match(std::string_view prediction, std::string_view reference);
// Token F1 of the normalised texts; when either has no tokens, 1 if both have none, else 0.
double token_f1(std::string_view prediction, std::string_view reference);

struct AnswerScore {
  double exact_match = 0, f1 = 0;
};
// The best score over the references (at least one).
AnswerScore score_answer(std::string_view prediction, const std::vector<std::string>& references);

}  // namespace trident::train
