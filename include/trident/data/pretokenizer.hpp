// Pre-tokenisation of byte-level BPE tokenizers: the text is cut into pieces ("pre-tokens")
// by one of the known regexes before BPE runs on each piece. Each known regex has a
// hand-written matcher that gives the same pieces as the regex engine of `tokenizers`
// (leftmost-first alternation, greedy quantifiers, backtracking lookahead).
#pragma once
#include <cstddef>
#include <optional>
#include <string_view>

namespace trident::data {

enum class SplitPattern {
  kGpt2,    // 's|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+
  kLlama3,  // Llama-3 / cl100k: case-insensitive contractions, digits in groups of 1-3, ...
  kQwen2,   // as kLlama3 but digits one by one
};

// The exact regex string a tokenizer.json holds for each pattern.
std::string_view split_pattern_regex(SplitPattern pattern);
// The pattern whose regex is exactly `regex`, if trident has a matcher for it.
std::optional<SplitPattern> split_pattern_from_regex(std::string_view regex);

// End of the pre-token that starts at `pos` (< text.size()); always > pos. The known regexes
// match at every position, so consecutive calls cut the whole text.
size_t pretoken_end(SplitPattern pattern, std::string_view text, size_t pos);

// Calls emit(piece) for each pre-token of `text`, in order.
template <typename Emit>
void for_each_pretoken(SplitPattern pattern, std::string_view text, Emit&& emit) {
  for (size_t pos = 0; pos < text.size();) {
    const size_t end = pretoken_end(pattern, text, pos);
    emit(text.substr(pos, end - pos));
    pos = end;
  }
}

}  // namespace trident::data
