// Metaspace and literal Split pre-tokenizers over a list of pieces, each knowing whether it
// starts the text.
#include "trident/data/word_split.hpp"

#include "trident/data/normalizer.hpp"

namespace trident::data {

namespace {

struct Piece {
  std::string text;
  bool at_text_start;
};

// Adds the non-empty parts of `text` cut at `cuts` (ascending offsets) to `out`; only a part
// beginning at offset 0 keeps the piece's at_text_start.
void add_parts(std::string_view text, bool at_text_start, const std::vector<std::pair<size_t, size_t>>& parts,
               std::vector<Piece>& out) {
  for (const auto& [begin, end] : parts)
    if (end > begin) out.push_back({std::string(text.substr(begin, end - begin)), at_text_start && begin == 0});
}

void metaspace(const WordSplitStep& step, const Piece& piece, std::vector<Piece>& out) {
  std::string text = replace_all(piece.text, " ", step.replacement);
  const bool prepend = step.prepend == WordSplitStep::Prepend::kAlways ||
                       (step.prepend == WordSplitStep::Prepend::kFirst && piece.at_text_start);
  if (prepend && !std::string_view(text).starts_with(step.replacement)) text.insert(0, step.replacement);
  if (!step.split) return out.push_back({std::move(text), piece.at_text_start});
  // Each replacement starts a word ("▁Hey▁▁x" -> "▁Hey", "▁", "▁x").
  std::vector<std::pair<size_t, size_t>> parts;
  size_t begin = 0;
  for (size_t at = text.find(step.replacement, 1); at != std::string::npos; at = text.find(step.replacement, at + 1)) {
    parts.emplace_back(begin, at);
    begin = at;
  }
  parts.emplace_back(begin, text.size());
  add_parts(text, piece.at_text_start, parts, out);
}

void literal(const WordSplitStep& step, const Piece& piece, std::vector<Piece>& out) {
  using B = WordSplitStep::Behavior;
  const std::string& text = piece.text;
  const size_t n = step.pattern.size();
  std::vector<std::pair<size_t, size_t>> parts;
  size_t begin = 0;  // start of the part being built
  for (size_t at = text.find(step.pattern); at != std::string::npos; at = text.find(step.pattern, at + n)) {
    switch (step.behavior) {
      case B::kRemoved:
        parts.emplace_back(begin, at);
        begin = at + n;
        break;
      case B::kIsolated:
        parts.emplace_back(begin, at);
        parts.emplace_back(at, at + n);
        begin = at + n;
        break;
      case B::kMergedWithPrevious:  // cut after each delimiter
        parts.emplace_back(begin, at + n);
        begin = at + n;
        break;
      case B::kMergedWithNext:  // cut before each delimiter
        parts.emplace_back(begin, at);
        begin = at;
        break;
      case B::kContiguous:  // a run of delimiters is one part
        if (begin == at && !parts.empty() && parts.back().second == at &&
            text.compare(parts.back().first, n, step.pattern) == 0) {
          parts.back().second = at + n;
        } else {
          parts.emplace_back(begin, at);
          parts.emplace_back(at, at + n);
        }
        begin = at + n;
        break;
    }
  }
  parts.emplace_back(begin, text.size());
  add_parts(text, piece.at_text_start, parts, out);
}

}  // namespace

void split_words(const std::vector<WordSplitStep>& steps, std::string_view piece, bool at_text_start,
                 const std::function<void(std::string_view)>& emit) {
  if (steps.empty()) {
    if (!piece.empty()) emit(piece);
    return;
  }
  std::vector<Piece> pieces{{std::string(piece), at_text_start}}, next;
  for (const WordSplitStep& step : steps) {
    next.clear();
    for (const Piece& p : pieces) {
      if (step.kind == WordSplitStep::Kind::kMetaspace) metaspace(step, p, next);
      else literal(step, p, next);
    }
    pieces.swap(next);
  }
  for (const Piece& p : pieces)
    if (!p.text.empty()) emit(p.text);
}

}  // namespace trident::data
