// Hand-written matchers for the pre-tokenisation regexes of GPT-2, Llama-3 and Qwen2. Each
// function follows its regex's alternatives in order; comments name the alternative.
#include "trident/data/pretokenizer.hpp"

#include "trident/data/unicode.hpp"

namespace trident::data {

namespace {

using unicode::CharClass;

constexpr std::string_view kGpt2Regex =
    R"('s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+)";
constexpr std::string_view kLlama3Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";
constexpr std::string_view kQwen2Regex =
    R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)";

// One decoded character: its class and its length in bytes (0 at the end of the text).
struct Char {
  uint32_t cp = 0;
  CharClass cls = CharClass::kOther;
  size_t length = 0;
  bool is(CharClass c) const { return length && cls == c; }
  bool is_line_break() const { return length && (cp == '\r' || cp == '\n'); }
};

Char char_at(std::string_view text, size_t pos) {
  if (pos >= text.size()) return {};
  const unicode::Decoded d = unicode::decode_utf8(text, pos);
  return {d.cp, unicode::char_class(d.cp), d.length};
}

// End of the run of characters of class `cls` starting at `pos` (pos itself if none).
size_t run_end(std::string_view text, size_t pos, CharClass cls) {
  for (Char c = char_at(text, pos); c.is(cls); c = char_at(text, pos)) pos += c.length;
  return pos;
}

// 's|'t|'re|'ve|'m|'ll|'d (optionally case-insensitive, where U+017F long s folds to s).
size_t contraction_end(std::string_view text, size_t pos, bool ignore_case) {
  if (text[pos] != '\'' || pos + 1 >= text.size()) return 0;
  auto lower = [&](size_t i) -> char {
    const char c = text[i];
    return (ignore_case && c >= 'A' && c <= 'Z') ? static_cast<char>(c - 'A' + 'a') : c;
  };
  const char a = lower(pos + 1);
  if (a == 's' || a == 't' || a == 'm' || a == 'd') return pos + 2;
  if (ignore_case && text.compare(pos + 1, 2, "\xC5\xBF") == 0) return pos + 3;  // U+017F
  if (pos + 2 >= text.size()) return 0;
  const char b = lower(pos + 2);
  if ((a == 'r' && b == 'e') || (a == 'v' && b == 'e') || (a == 'l' && b == 'l')) return pos + 3;
  return 0;
}

// \s+(?!\S)|\s+ at a whitespace character: the run, less its last character when a
// non-space follows and the run is longer than one character (that space then leads the next
// pre-token).
size_t space_run_end(std::string_view text, size_t pos) {
  size_t last = pos, end = pos;
  for (Char c = char_at(text, end); c.is(CharClass::kSpace); c = char_at(text, end)) {
    last = end;
    end += c.length;
  }
  if (end == text.size() || last == pos) return end;
  return last;
}

size_t gpt2_end(std::string_view text, size_t pos) {
  if (const size_t e = contraction_end(text, pos, false)) return e;
  // ` ?\p{L}+`, ` ?\p{N}+`, ` ?[^\s\p{L}\p{N}]+`: an optional space, then a run of one class.
  const size_t body = text[pos] == ' ' ? pos + 1 : pos;
  const Char first = char_at(text, body);
  if (first.length && first.cls != CharClass::kSpace) return run_end(text, body, first.cls);
  return space_run_end(text, pos);
}

size_t llama3_end(std::string_view text, size_t pos, size_t max_digits) {
  if (const size_t e = contraction_end(text, pos, true)) return e;
  const Char c = char_at(text, pos);
  // [^\r\n\p{L}\p{N}]?\p{L}+
  if (c.cls == CharClass::kLetter) return run_end(text, pos, CharClass::kLetter);
  if (c.cls != CharClass::kNumber && !c.is_line_break() && char_at(text, pos + c.length).is(CharClass::kLetter))
    return run_end(text, pos + c.length, CharClass::kLetter);
  // \p{N}{1,3} (Qwen2: \p{N})
  if (c.cls == CharClass::kNumber) {
    size_t end = pos + c.length;
    for (size_t n = 1; n < max_digits; ++n) {
      const Char d = char_at(text, end);
      if (!d.is(CharClass::kNumber)) break;
      end += d.length;
    }
    return end;
  }
  // ` ?[^\s\p{L}\p{N}]+[\r\n]*`
  const size_t body = c.cp == ' ' ? pos + 1 : pos;
  if (char_at(text, body).is(CharClass::kOther)) {
    size_t end = run_end(text, body, CharClass::kOther);
    while (end < text.size() && (text[end] == '\r' || text[end] == '\n')) ++end;
    return end;
  }
  // \s*[\r\n]+: the whitespace run up to and including its last line break.
  size_t end = pos, after_break = 0;
  for (Char s = char_at(text, end); s.is(CharClass::kSpace); s = char_at(text, end)) {
    end += s.length;
    if (s.is_line_break()) after_break = end;
  }
  if (after_break) return after_break;
  return space_run_end(text, pos);  // \s+(?!\S)|\s+
}

}  // namespace

std::string_view split_pattern_regex(SplitPattern pattern) {
  switch (pattern) {
    case SplitPattern::kGpt2: return kGpt2Regex;
    case SplitPattern::kLlama3: return kLlama3Regex;
    case SplitPattern::kQwen2: return kQwen2Regex;
  }
  return {};
}

std::optional<SplitPattern> split_pattern_from_regex(std::string_view regex) {
  for (SplitPattern p : {SplitPattern::kGpt2, SplitPattern::kLlama3, SplitPattern::kQwen2})
    if (regex == split_pattern_regex(p)) return p;
  return std::nullopt;
}

size_t pretoken_end(SplitPattern pattern, std::string_view text, size_t pos) {
  switch (pattern) {
    case SplitPattern::kGpt2: return gpt2_end(text, pos);
    case SplitPattern::kLlama3: return llama3_end(text, pos, 3);
    case SplitPattern::kQwen2: return llama3_end(text, pos, 1);
  }
  return text.size();
}

}  // namespace trident::data
