// Normaliser steps (NFC, NFKC, Replace, Prepend) applied in order, copying only when a step
// changes the text.
#include "trident/data/normalizer.hpp"

#include "trident/data/unicode.hpp"

namespace trident::data {

std::string replace_all(std::string_view text, std::string_view pattern, std::string_view content) {
  std::string out;
  out.reserve(text.size());
  size_t done = 0;
  for (size_t at = text.find(pattern); at != std::string_view::npos; at = text.find(pattern, done)) {
    out.append(text.substr(done, at - done));
    out.append(content);
    done = at + pattern.size();
  }
  out.append(text.substr(done));
  return out;
}

std::string_view Normalizer::apply(std::string_view text, std::string& storage) const {
  std::string_view current = text;
  std::string next;
  for (const NormalizerStep& step : steps_) {
    switch (step.kind) {
      case NormalizerStep::Kind::kNfc:
        if (unicode::is_nfc_quick(current)) continue;
        next = unicode::nfc(current);
        break;
      case NormalizerStep::Kind::kNfkc:
        next = unicode::nfkc(current);
        break;
      case NormalizerStep::Kind::kReplace:
        if (current.find(step.pattern) == std::string_view::npos) continue;
        next = replace_all(current, step.pattern, step.content);
        break;
      case NormalizerStep::Kind::kPrepend:
        if (current.empty()) continue;  // `tokenizers` prepends to non-empty text only
        next = step.content;
        next.append(current);
        break;
    }
    // `current` may view `storage`: build the next text apart, then move it in.
    storage = std::move(next);
    current = storage;
  }
  return current;
}

}  // namespace trident::data
