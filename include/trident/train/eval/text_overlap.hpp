// Text-overlap scores of generated answers against references, as the packages people compare
// with compute them:
//   ROUGE (Google's rouge-score 0.1.2): text lowercased, every run of characters other than
//     [a-z0-9] a separator; with stem (use_stemmer=True) each token of more than 3 characters
//     replaced by its Porter stem (NLTK's, porter_stemmer.hpp), in ROUGE-Lsum's sentences too;
//     ROUGE-1/2 from clipped n-gram counts, ROUGE-L from the longest common subsequence,
//     ROUGE-Lsum from the union LCS of newline-separated sentences (each reference token
//     counted once); each the F-measure 2PR / (P + R).
//     With several references, each type's best (rouge-score's score_multi).
//   BLEU (sacrebleu 2.x corpus_bleu defaults): mteval-v13a tokens, 1-4-gram matches clipped by
//     the most any reference holds, the closest reference length (the shorter on a tie), both
//     summed over the corpus, brevity penalty, "exp" smoothing of orders without a match; 0-100.
// Text is UTF-8; characters are compared as code points, as Python's str does.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trident::train {

struct RougeScores {
  double rouge1 = 0, rouge2 = 0, rougeL = 0, rougeLsum = 0;  // F-measures in [0, 1]
};

// rouge-score's DefaultTokenizer(use_stemmer=stem).
std::vector<std::string> rouge_tokens(std::string_view text, bool stem = false);
RougeScores rouge(std::string_view prediction, std::string_view reference, bool stem = false);
RougeScores rouge(std::string_view prediction, const std::vector<std::string>& references, bool stem = false);

// sacrebleu's Tokenizer13a after rstrip(): the tokens of a segment.
std::vector<std::string> bleu_tokens_13a(std::string_view text);

// BLEU's sufficient statistics of one or more (prediction, references) pairs: clipped n-gram
// matches and n-gram counts of orders 1-4, the prediction's length and the closest reference
// length. They add over pairs (and over ranks: as kFields doubles), the corpus score from their sum.
struct BleuStats {
  static constexpr int kFields = 10;
  std::array<int64_t, 4> correct{}, total{};
  int64_t prediction_length = 0, reference_length = 0;

  static BleuStats of(std::string_view prediction, const std::vector<std::string>& references);
  BleuStats& operator+=(const BleuStats& o);
  double score() const;  // 0-100; 0 when nothing matches
  void to(double* out) const;  // kFields values
  static BleuStats from(const double* in);
};

// Corpus BLEU of predictions added one at a time, each with its references.
class CorpusBleu {
 public:
  void add(std::string_view prediction, std::string_view reference);
  void add(std::string_view prediction, const std::vector<std::string>& references);
  double score() const { return stats_.score(); }
  int64_t pairs() const { return pairs_; }

 private:
  BleuStats stats_;
  int64_t pairs_ = 0;
};

}  // namespace trident::train
