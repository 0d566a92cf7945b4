// The byte-level tokenizer: bytes are ids, so encode/decode are exact inverses on any input,
// including invalid UTF-8 (no normalisation, nothing unknown).
#include "trident/data/byte_tokenizer.hpp"

namespace trident::data {

std::vector<uint32_t> ByteTokenizer::encode(std::string_view text) {
  std::vector<uint32_t> ids;
  encode_append(text, ids);
  return ids;
}

void ByteTokenizer::encode_append(std::string_view text, std::vector<uint32_t>& ids) {
  ids.reserve(ids.size() + text.size());
  for (char c : text) ids.push_back(static_cast<unsigned char>(c));
}

std::string ByteTokenizer::decode(std::span<const uint32_t> ids) {
  std::string text;
  text.reserve(ids.size());
  for (uint32_t id : ids) {
    if (id < 256)
      text.push_back(static_cast<char>(id));
    else
      text.append(kEndOfTextText);
  }
  return text;
}

}  // namespace trident::data
