// The Unicode knowledge the tokenizers need: UTF-8 decoding that never fails, the character
// classes of the pre-tokenisation regexes (\p{L}, \p{N}, \s), the word characters of added
// tokens' single_word test (\w), NFC (Qwen2) and NFKC normalisation, and lossy UTF-8 as Rust
// prints it. Tables come from utils/gen_unicode_tables.py (Python's unicodedata).
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
// Word character as the Rust regex crate's \w (what `tokenizers` tests single_word with):
// Alphabetic, marks, decimal digits, connector punctuation and ZWNJ/ZWJ; so "Ⅻ", "_", "‿" and
// "Ⓐ" are word characters and "²", "½" are not.
bool is_word_char(uint32_t cp);

// Canonical combining class (0 for starters).
uint32_t combining_class(uint32_t cp);

// NFC of `s` (invalid bytes are passed through and act as starters).
std::string nfc(std::string_view s);
// True when `s` is certainly already NFC (a cheap test: no code point at or above U+0300).
bool is_nfc_quick(std::string_view s);
// NFKC of `s`: compatibility decomposition ("ﬁ" -> "fi", "①" -> "1", U+00A0 -> " "), then
// canonical composition. Invalid bytes as for nfc().
std::string nfkc(std::string_view s);

// UTF-8 of code point `cp` appended to `out`.
void append_utf8(uint32_t cp, std::string& out);
// `bytes` with each maximal ill-formed subsequence replaced by one U+FFFD, appended to `out`
// (Rust's String::from_utf8_lossy: "\xE4\xB8" is one U+FFFD, "\xFF\xFE" two).
void append_lossy_utf8(std::string_view bytes, std::string& out);

}  // namespace trident::data::unicode
