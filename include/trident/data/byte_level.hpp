// GPT-2's byte-level alphabet: each of the 256 byte values is shown as one printable Unicode
// character ('!'..'~', '¡'..'¬', '®'..'ÿ' as themselves, the rest as U+0100 onwards, so a
// space is "Ġ"), which is how byte-level BPE vocabularies and merges spell tokens.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

namespace trident::data {

// The UTF-8 of the character that stands for byte `b`.
std::string_view byte_level_char(uint8_t b);
// `bytes` spelled in the byte-level alphabet.
std::string byte_level_encode(std::string_view bytes);
// The bytes a byte-level token spells, appended to `out`; false (out unchanged) when `token`
// holds a character outside the alphabet.
bool byte_level_decode(std::string_view token, std::string& out);

}  // namespace trident::data
