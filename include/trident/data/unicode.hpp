// The Unicode knowledge the tokenizers need: UTF-8 decoding that never fails, the character
// classes of the pre-tokenisation regexes (\p{L}, \p{N}, \s) and NFC normalisation (Qwen2).
// Tables come from utils/gen_unicode_tables.py (Python's unicodedata).
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace trident::data::unicode {

// One code point of UTF-8 text at `s[pos]` (pos < s.size()). A byte that does not start a
// well-formed sequence decodes alone, as kInvalid, with length 1 (it then counts as "other").
inline constexpr uint32_t kInvalid = 0xFFFFFFFF;
struct Decoded {
  uint32_t cp;
  uint32_t length;  // bytes
};
Decoded decode_utf8(std::string_view s, size_t pos);

// Classes as the regexes see them: \s is White_Space, \p{L} letters, \p{N} numbers.
enum class CharClass : uint8_t { kOther, kLetter, kNumber, kSpace };
CharClass char_class(uint32_t cp);
bool is_mark(uint32_t cp);  // general category M*
// Regex word character (\w): letters, marks, numbers, connector '_'.
bool is_word_char(uint32_t cp);

// Canonical combining class (0 for starters).
uint32_t combining_class(uint32_t cp);

// NFC of `s` (invalid bytes are passed through and act as starters).
std::string nfc(std::string_view s);
// True when `s` is certainly already NFC (a cheap test: no code point at or above U+0300).
bool is_nfc_quick(std::string_view s);

}  // namespace trident::data::unicode
