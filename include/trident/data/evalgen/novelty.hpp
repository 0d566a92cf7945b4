// The diversity measure of `trident evalgen --paraphrase`: the distinct word n-grams (n = 1, 2
// and 3, pooled; words as paraphrase_check.hpp's word_tokens) of the kept prompts, and how many
// of them occur in no template wording of the suites written. Every slot value of a prompt, and
// every {placeholder} of a wording, is one placeholder word first, so a new number or key is
// no new wording.
#pragma once
#include <cstdint>
#include <map>
#include <set>
#include <string>

namespace trident::data::evalgen {

class NgramNovelty {
 public:
  void add_wording(const std::string& wording);  // a template's, with {placeholders}
  void add_prompt(const std::string& prompt, const std::map<std::string, std::string>& slots);
  int64_t distinct() const { return static_cast<int64_t>(prompts_.size()); }
  int64_t novel() const;

 private:
  static void add_ngrams(const std::string& text, std::set<std::string>& to);
  std::set<std::string> wordings_, prompts_;
};

}  // namespace trident::data::evalgen
