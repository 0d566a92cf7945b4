// The normalisers of a tokenizer.json trident applies before pre-tokenisation, in order: NFC,
// NFKC, Replace (a literal string, e.g. " " -> "▁") and Prepend (e.g. "▁"), as `tokenizers`
// defines them. Each piece of text between added tokens is normalised on its own.
#pragma once
#include <string>
#include <string_view>
#include <vector>

namespace trident::data {

struct NormalizerStep {
  enum class Kind { kNfc, kNfkc, kReplace, kPrepend };
  Kind kind = Kind::kNfc;
  std::string pattern;  // kReplace: the literal replaced (never empty)
  std::string content;  // kReplace: what replaces it; kPrepend: what goes before a non-empty text
};

class Normalizer {
 public:
  Normalizer() = default;
  explicit Normalizer(std::vector<NormalizerStep> steps) : steps_(std::move(steps)) {}

  bool empty() const { return steps_.empty(); }
  const std::vector<NormalizerStep>& steps() const { return steps_; }
  // The normalised `text`: a view of `text` itself when no step changes it, else of `storage`.
  std::string_view apply(std::string_view text, std::string& storage) const;
  std::string apply(std::string_view text) const {
    std::string storage;
    return std::string(apply(text, storage));
  }

 private:
  std::vector<NormalizerStep> steps_;
};

// Every non-overlapping occurrence of `pattern` (non-empty) in `text`, left to right, replaced by
// `content`.
std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content);

}  // namespace trident::data
