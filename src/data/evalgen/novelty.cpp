// Distinct n-grams of kept rewrites against the template wordings (novelty.hpp).
#include "trident/data/evalgen/novelty.hpp"

#include <vector>

#include "trident/data/evalgen/paraphrase_check.hpp"

namespace trident::data::evalgen {

namespace {
constexpr char kPlaceholder[] = "\x01";  // its own word under word_tokens
}

void NgramNovelty::add_ngrams(const std::string& text, std::set<std::string>& to) {
  const std::vector<std::string> words = word_tokens(text);
  for (size_t n = 1; n <= 3; ++n)
    for (size_t i = 0; i + n <= words.size(); ++i) {
      std::string key = std::to_string(n);
      for (size_t k = i; k < i + n; ++k) key += "\x1f" + words[k];
      to.insert(std::move(key));
    }
}

void NgramNovelty::add_wording(const std::string& wording) {
  std::string text;
  for (size_t i = 0; i < wording.size(); ++i) {
    const size_t close = wording[i] == '{' ? wording.find('}', i) : std::string::npos;
    if (close == std::string::npos) {
      text += wording[i];
      continue;
    }
    text += kPlaceholder;
    i = close;
  }
  add_ngrams(text, wordings_);
}

void NgramNovelty::add_prompt(const std::string& prompt, const std::map<std::string, std::string>& slots) {
  add_ngrams(mask_slots(prompt, slots, kPlaceholder), prompts_);
}

int64_t NgramNovelty::novel() const {
  int64_t n = 0;
  for (const std::string& g : prompts_) n += !wordings_.count(g);
  return n;
}

}  // namespace trident::data::evalgen
