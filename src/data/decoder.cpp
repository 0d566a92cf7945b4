// Decoder steps over a list of token strings, each as `tokenizers` 0.23 implements it.
#include "trident/data/decoder.hpp"

#include "trident/data/byte_level.hpp"
#include "trident/data/normalizer.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data {

namespace {

using Tokens = std::vector<std::string>;

// Every token's characters mapped back to bytes (a token with a character outside the
// alphabet stays as its UTF-8), all joined and made valid UTF-8: one token.
Tokens byte_level(const Tokens& tokens) {
  std::string bytes;
  for (const std::string& t : tokens)
    if (!byte_level_decode(t, bytes)) bytes += t;
  std::string text;
  unicode::append_lossy_utf8(bytes, text);
  return {std::move(text)};
}

// The replacement becomes a space, except in the first token (when a prefix was added), where
// every replacement is dropped.
Tokens metaspace(const DecoderStep& step, Tokens tokens) {
  for (size_t i = 0; i < tokens.size(); ++i)
    tokens[i] = replace_all(tokens[i], step.pattern, i == 0 && step.drop_first_replacements ? "" : " ");
  return tokens;
}

// The byte of a "<0xXX>" token. As Rust's u8::from_str_radix, the two characters may also be
// "+" and one digit.
bool fallback_byte(const std::string& token, uint8_t& byte) {
  if (token.size() != 6 || token.compare(0, 3, "<0x") != 0 || token[5] != '>') return false;
  auto digit = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  const int hi = token[3] == '+' ? 0 : digit(token[3]), lo = digit(token[4]);
  if (hi < 0 || lo < 0) return false;
  byte = static_cast<uint8_t>(hi * 16 + lo);
  return true;
}

bool is_valid_utf8(std::string_view s) {
  for (size_t pos = 0; pos < s.size();) {
    const unicode::Decoded d = unicode::decode_utf8(s, pos);
    if (d.cp == unicode::kInvalid) return false;
    pos += d.length;
  }
  return true;
}

// Runs of <0xXX> tokens become their bytes as one token when those are valid UTF-8, else one
// U+FFFD per byte token.
Tokens byte_fallback(const Tokens& tokens) {
  Tokens out;
  std::string run;
  size_t run_tokens = 0;
  auto flush = [&] {
    if (run_tokens == 0) return;
    if (is_valid_utf8(run)) out.push_back(run);
    else
      for (size_t i = 0; i < run_tokens; ++i) out.emplace_back("\xEF\xBF\xBD");
    run.clear();
    run_tokens = 0;
  };
  for (const std::string& t : tokens) {
    uint8_t byte;
    if (fallback_byte(t, byte)) {
      run.push_back(static_cast<char>(byte));
      ++run_tokens;
      continue;
    }
    flush();
    out.push_back(t);
  }
  flush();
  return out;
}

Tokens fuse(const Tokens& tokens) {
  std::string all;
  for (const std::string& t : tokens) all += t;
  return {std::move(all)};
}

// Up to strip_start leading and strip_stop trailing strip_char characters removed per token.
Tokens strip(const DecoderStep& step, Tokens tokens) {
  for (std::string& t : tokens) {
    std::vector<std::pair<uint32_t, size_t>> chars;  // (code point, byte offset)
    for (size_t pos = 0; pos < t.size();) {
      const unicode::Decoded d = unicode::decode_utf8(t, pos);
      chars.emplace_back(d.cp, pos);
      pos += d.length;
    }
    size_t start_cut = 0;
    for (size_t i = 0; i < chars.size() && i < step.strip_start && chars[i].first == step.strip_char; ++i)
      start_cut = i + 1;
    size_t stop_cut = chars.size();
    for (size_t i = 0; i < step.strip_stop && i < chars.size() - start_cut; ++i) {
      if (chars[chars.size() - 1 - i].first != step.strip_char) break;
      stop_cut = chars.size() - 1 - i;
    }
    const size_t begin = start_cut < chars.size() ? chars[start_cut].second : t.size();
    const size_t end = stop_cut < chars.size() ? chars[stop_cut].second : t.size();
    t = t.substr(begin, end - begin);
  }
  return tokens;
}

}  // namespace

std::string decode_tokens(const std::vector<DecoderStep>& steps, Tokens tokens) {
  for (const DecoderStep& step : steps) {
    switch (step.kind) {
      case DecoderStep::Kind::kByteLevel: tokens = byte_level(tokens); break;
      case DecoderStep::Kind::kMetaspace: tokens = metaspace(step, std::move(tokens)); break;
      case DecoderStep::Kind::kReplace:
        for (std::string& t : tokens) t = replace_all(t, step.pattern, step.content);
        break;
      case DecoderStep::Kind::kByteFallback: tokens = byte_fallback(tokens); break;
      case DecoderStep::Kind::kFuse: tokens = fuse(tokens); break;
      case DecoderStep::Kind::kStrip: tokens = strip(step, std::move(tokens)); break;
    }
  }
  return fuse(tokens).front();
}

}  // namespace trident::data
