// GPT-2's bytes_to_unicode table and its inverse.
#include "trident/data/byte_level.hpp"

#include <array>

#include "trident/data/unicode.hpp"

namespace trident::data {

namespace {

struct Alphabet {
  std::array<std::string, 256> chars;  // byte -> UTF-8 of its character
  std::array<int16_t, 512> bytes;      // code point (< 512) -> byte, -1 if none

  Alphabet() {
    bytes.fill(-1);
    uint32_t next = 256;
    for (uint32_t b = 0; b < 256; ++b) {
      const bool printable = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
      const uint32_t cp = printable ? b : next++;
      bytes[cp] = static_cast<int16_t>(b);
      std::string& s = chars[b];
      if (cp < 0x80) {
        s.push_back(static_cast<char>(cp));
      } else {  // all below U+0800: two bytes
        s.push_back(static_cast<char>(0xC0 | (cp >> 6)));
        s.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
      }
    }
  }
};

const Alphabet kAlphabet;

}  // namespace

std::string_view byte_level_char(uint8_t b) { return kAlphabet.chars[b]; }

std::string byte_level_encode(std::string_view bytes) {
  std::string out;
  out.reserve(bytes.size() * 2);
  for (char c : bytes) out += kAlphabet.chars[static_cast<uint8_t>(c)];
  return out;
}

bool byte_level_decode(std::string_view token, std::string& out) {
  const size_t old_size = out.size();
  for (size_t pos = 0; pos < token.size();) {
    const unicode::Decoded d = unicode::decode_utf8(token, pos);
    if (d.cp >= 512 || kAlphabet.bytes[d.cp] < 0) {
      out.resize(old_size);
      return false;
    }
    out.push_back(static_cast<char>(kAlphabet.bytes[d.cp]));
    pos += d.length;
  }
  return true;
}

}  // namespace trident::data
