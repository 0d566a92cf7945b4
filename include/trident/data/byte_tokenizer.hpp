// The built-in byte-level tokenizer: token id = byte value (0..255), and id 256 = end of text,
// appended after every document so the model learns where documents stop. Vocabulary: 257.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data {

class ByteTokenizer {
 public:
  static constexpr uint32_t kEndOfText = 256;
  static constexpr uint64_t kVocabSize = 257;
  static constexpr std::string_view kEndOfTextText = "<|endoftext|>";

  // One id per byte; no end-of-text (callers append it once per document).
  static std::vector<uint32_t> encode(std::string_view text);
  // Appends the bytes of `text` to `ids` (lets prep build input + output + end-of-text in place).
  static void encode_append(std::string_view text, std::vector<uint32_t>& ids);
  // Bytes back; ids >= 256 render as "<|endoftext|>".
  static std::string decode(std::span<const uint32_t> ids);
};

}  // namespace trident::data
