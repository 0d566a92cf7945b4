// Pre-tokenisation of BPE without the byte-level alphabet (SentencePiece style, as Llama 2,
// Mistral and Gemma tokenizer.json files write it): the Metaspace pre-tokenizer and Split on a
// literal string, applied in order, as `tokenizers` 0.23 cuts text with them. The words that
// come out are what the BPE model merges, one at a time.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data {

struct WordSplitStep {
  enum class Kind { kMetaspace, kLiteral };
  // Where the delimiters of a literal Split go: dropped, alone, onto the piece before or after,
  // or runs of them alone.
  enum class Behavior { kRemoved, kIsolated, kMergedWithPrevious, kMergedWithNext, kContiguous };
  // Metaspace's prepend_scheme: the replacement before every piece, before the piece that
  // starts the text (not one after an added token or an earlier split), or never.
  enum class Prepend { kAlways, kFirst, kNever };

  Kind kind = Kind::kMetaspace;
  std::string replacement = "\xE2\x96\x81";  // kMetaspace: what spaces become ("▁")
  Prepend prepend = Prepend::kAlways;        // kMetaspace
  bool split = true;                         // kMetaspace: cut before each replacement
  std::string pattern;                       // kLiteral: the delimiter (never empty)
  Behavior behavior = Behavior::kIsolated;   // kLiteral
};

// Cuts `piece` (text between added tokens, normalised) by `steps` and calls emit(word) for each
// non-empty word in order. at_text_start: the piece starts at the start of the input text
// (what Metaspace's prepend_scheme "first" asks).
void split_words(const std::vector<WordSplitStep>& steps, std::string_view piece, bool at_text_start,
                 const std::function<void(std::string_view)>& emit);

}  // namespace trident::data
