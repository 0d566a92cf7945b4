// UTF-8 decoding, character classes, NFC and NFKC over the generated tables (unicode_tables.cpp),
// and lossy UTF-8.
#include "trident/data/unicode.hpp"

#include <algorithm>
#include <vector>

#include "unicode_tables.hpp"

namespace trident::data::unicode {

namespace ut = unicode_tables;

Decoded decode_utf8(std::string_view s, size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) return {b0, 1};
  uint32_t length, cp, min;
  if ((b0 & 0xE0) == 0xC0) length = 2, cp = b0 & 0x1F, min = 0x80;
  else if ((b0 & 0xF0) == 0xE0) length = 3, cp = b0 & 0x0F, min = 0x800;
  else if ((b0 & 0xF8) == 0xF0) length = 4, cp = b0 & 0x07, min = 0x10000;
  else return {kInvalid, 1};
  if (pos + length > s.size()) return {kInvalid, 1};
  for (uint32_t i = 1; i < length; ++i) {
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if ((b & 0xC0) != 0x80) return {kInvalid, 1};
    cp = (cp << 6) | (b & 0x3F);
  }
  if (cp < min || cp > 0x10FFFF || (cp >= 0xD800 && cp <= 0xDFFF)) return {kInvalid, 1};
  return {cp, length};
}

namespace {

bool in_ranges(const ut::CodeRange* table, size_t size, uint32_t cp) {
  const ut::CodeRange* end = table + size;
  const ut::CodeRange* it = std::upper_bound(table, end, cp, [](uint32_t v, const ut::CodeRange& r) { return v < r.first; });
  return it != table && cp <= (it - 1)->last;
}

// White_Space (PropList.txt): what \s matches in the regex engines `tokenizers` uses.
bool is_white_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || cp == 0x20 || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

CharClass slow_class(uint32_t cp) {
  if (cp == kInvalid) return CharClass::kOther;
  if (is_white_space(cp)) return CharClass::kSpace;
  if (in_ranges(ut::kLetters, ut::kLetters_size, cp)) return CharClass::kLetter;
  if (in_ranges(ut::kNumbers, ut::kNumbers_size, cp)) return CharClass::kNumber;
  return CharClass::kOther;
}

struct AsciiClasses {
  CharClass cls[128];
  AsciiClasses() {
    for (uint32_t c = 0; c < 128; ++c) cls[c] = slow_class(c);
  }
};
const AsciiClasses kAscii;

}  // namespace

CharClass char_class(uint32_t cp) { return cp < 128 ? kAscii.cls[cp] : slow_class(cp); }

bool is_mark(uint32_t cp) { return cp != kInvalid && in_ranges(ut::kMarks, ut::kMarks_size, cp); }

bool is_word_char(uint32_t cp) {
  return char_class(cp) == CharClass::kLetter || is_mark(cp) ||
         (cp != kInvalid && in_ranges(ut::kWordExtras, ut::kWordExtras_size, cp));
}

uint32_t combining_class(uint32_t cp) {
  if (cp < 0x300 || cp == kInvalid) return 0;
  const ut::ClassRange* begin = ut::kCombiningClasses;
  const ut::ClassRange* end = begin + ut::kCombiningClasses_size;
  const ut::ClassRange* it = std::upper_bound(begin, end, cp, [](uint32_t v, const ut::ClassRange& r) { return v < r.first; });
  return (it != begin && cp <= (it - 1)->last) ? (it - 1)->ccc : 0;
}

bool is_nfc_quick(std::string_view s) {
  // Every code point below U+0300 is a starter that no later code point below U+0300 combines with.
  for (char c : s) {
    const auto b = static_cast<uint8_t>(c);
    if (b >= 0xCC) return false;  // lead byte of U+0300 and above
  }
  return true;
}

namespace {

// Hangul syllables decompose and compose algorithmically (Unicode 3.12).
constexpr uint32_t kSBase = 0xAC00, kLBase = 0x1100, kVBase = 0x1161, kTBase = 0x11A7;
constexpr uint32_t kLCount = 19, kVCount = 21, kTCount = 28, kNCount = kVCount * kTCount, kSCount = kLCount * kNCount;

// Invalid bytes travel through normalisation tagged above the Unicode range.
constexpr uint32_t kRawByteTag = 0x80000000u;

// Full canonical (compat: compatibility) decomposition of `cp`, appended to `out`.
void decompose(uint32_t cp, bool compat, std::vector<uint32_t>& out) {
  if (cp >= kSBase && cp < kSBase + kSCount) {
    const uint32_t s = cp - kSBase;
    out.push_back(kLBase + s / kNCount);
    out.push_back(kVBase + (s % kNCount) / kTCount);
    if (s % kTCount) out.push_back(kTBase + s % kTCount);
    return;
  }
  if (compat && cp >= 0xA0 && cp < kRawByteTag) {  // the table holds the full NFKD already
    const ut::CompatDecomposition* begin = ut::kCompatDecompositions;
    const ut::CompatDecomposition* end = begin + ut::kCompatDecompositions_size;
    const ut::CompatDecomposition* it =
        std::lower_bound(begin, end, cp, [](const ut::CompatDecomposition& d, uint32_t v) { return d.cp < v; });
    if (it != end && it->cp == cp) {
      out.insert(out.end(), ut::kCompatCodePoints + it->offset, ut::kCompatCodePoints + it->offset + it->length);
      return;
    }
  }
  if (cp >= 0xC0 && cp < kRawByteTag) {
    const ut::Decomposition* begin = ut::kDecompositions;
    const ut::Decomposition* end = begin + ut::kDecompositions_size;
    const ut::Decomposition* it =
        std::lower_bound(begin, end, cp, [](const ut::Decomposition& d, uint32_t v) { return d.cp < v; });
    if (it != end && it->cp == cp) {
      decompose(it->first, compat, out);
      if (it->second) decompose(it->second, compat, out);
      return;
    }
  }
  out.push_back(cp);
}

uint32_t compose(uint32_t a, uint32_t b) {
  if (b < 0x300) return 0;  // every second character of a composition is at U+0300 or above
  if (a >= kLBase && a < kLBase + kLCount && b >= kVBase && b < kVBase + kVCount)
    return kSBase + ((a - kLBase) * kVCount + (b - kVBase)) * kTCount;
  if (a >= kSBase && a < kSBase + kSCount && (a - kSBase) % kTCount == 0 && b > kTBase && b < kTBase + kTCount)
    return a + (b - kTBase);
  const ut::Composition* begin = ut::kCompositions;
  const ut::Composition* end = begin + ut::kCompositions_size;
  const ut::Composition* it = std::lower_bound(begin, end, std::pair{a, b}, [](const ut::Composition& c, std::pair<uint32_t, uint32_t> v) {
    return c.first != v.first ? c.first < v.first : c.second < v.second;
  });
  return (it != end && it->first == a && it->second == b) ? it->composite : 0;
}

void append_cp(std::string& out, uint32_t cp) {
  if (cp & kRawByteTag) out.push_back(static_cast<char>(cp & 0xFF));
  else append_utf8(cp, out);
}

// NFC (compat: NFKC) of a stretch that starts and ends at a starter no other character
// interacts with.
void normalize_stretch(std::string_view s, bool compat, std::string& result) {
  // 1. Full canonical (compat: compatibility) decomposition.
  std::vector<uint32_t> cps;
  cps.reserve(s.size());
  for (size_t pos = 0; pos < s.size();) {
    const Decoded d = decode_utf8(s, pos);
    decompose(d.cp == kInvalid ? (kRawByteTag | static_cast<uint8_t>(s[pos])) : d.cp, compat, cps);
    pos += d.length;
  }
  // 2. Canonical ordering: each run of non-starters stably sorted by combining class.
  for (size_t i = 0; i < cps.size();) {
    if (combining_class(cps[i]) == 0 || (cps[i] & kRawByteTag)) {
      ++i;
      continue;
    }
    size_t j = i;
    while (j < cps.size() && !(cps[j] & kRawByteTag) && combining_class(cps[j]) != 0) ++j;
    std::stable_sort(cps.begin() + i, cps.begin() + j,
                     [](uint32_t a, uint32_t b) { return combining_class(a) < combining_class(b); });
    i = j;
  }
  // 3. Canonical composition: a character joins the last starter unless a character of the
  // same or higher class (or a starter) stands between them.
  std::vector<uint32_t> out;
  out.reserve(cps.size());
  size_t starter = 0;
  bool have_starter = false;
  uint32_t last_class = 0;
  for (uint32_t cp : cps) {
    const uint32_t cls = (cp & kRawByteTag) ? 0 : combining_class(cp);
    if (have_starter && !(cp & kRawByteTag) && !(out[starter] & kRawByteTag) &&
        (out.size() - 1 == starter || (last_class != 0 && last_class < cls))) {
      if (const uint32_t composite = compose(out[starter], cp)) {
        out[starter] = composite;
        continue;
      }
    }
    if (cls == 0) {
      starter = out.size();
      have_starter = true;
    }
    last_class = cls;
    out.push_back(cp);
  }
  for (uint32_t cp : out) append_cp(result, cp);
}

// Code points the normalisation may change or join: those with a canonical (compat: or
// compatibility) decomposition (Hangul syllables aside: they are stable alone, and the jamo
// that join them are flagged), non-starters, and every second character of a composition.
// One bit per code point (136 KiB).
class Sensitive {
 public:
  explicit Sensitive(bool compat) : bits_((0x110000 + 63) / 64) {
    for (size_t i = 0; i < ut::kDecompositions_size; ++i) set(ut::kDecompositions[i].cp);
    if (compat)
      for (size_t i = 0; i < ut::kCompatDecompositions_size; ++i) set(ut::kCompatDecompositions[i].cp);
    for (size_t i = 0; i < ut::kCombiningClasses_size; ++i)
      for (uint32_t cp = ut::kCombiningClasses[i].first; cp <= ut::kCombiningClasses[i].last; ++cp) set(cp);
    for (size_t i = 0; i < ut::kCompositions_size; ++i) set(ut::kCompositions[i].second);
    for (uint32_t cp = kVBase; cp < kVBase + kVCount; ++cp) set(cp);
    for (uint32_t cp = kTBase + 1; cp < kTBase + kTCount; ++cp) set(cp);
  }
  bool operator()(uint32_t cp) const { return cp < 0x110000 && ((bits_[cp >> 6] >> (cp & 63)) & 1); }

 private:
  void set(uint32_t cp) { bits_[cp >> 6] |= uint64_t{1} << (cp & 63); }
  std::vector<uint64_t> bits_;
};

// Below `first_sensitive` nothing is sensitive: U+0300 for NFC, U+00A0 (no-break space) for NFKC.
std::string normalize(std::string_view s, bool compat) {
  static const Sensitive canonical(false), compatible(true);
  const Sensitive& sensitive = compat ? compatible : canonical;
  const uint32_t first_sensitive = compat ? 0xA0 : 0x300;
  // Only stretches around sensitive code points need the full algorithm: a stretch starts at
  // the (insensitive, so starter) character before the first sensitive one, which it may
  // join, and ends before the next insensitive character, which nothing joins or reorders.
  std::string result;
  result.reserve(s.size() + 16);
  size_t done = 0, pos = 0, previous = 0;  // previous: start of the character before pos
  while (pos < s.size()) {
    const Decoded d = decode_utf8(s, pos);
    if (d.cp < first_sensitive || !sensitive(d.cp)) {
      previous = pos;
      pos += d.length;
      continue;
    }
    const size_t begin = pos > done ? previous : pos;
    size_t end = pos + d.length;
    while (end < s.size()) {
      const Decoded e = decode_utf8(s, end);
      if (e.cp < first_sensitive || !sensitive(e.cp)) break;
      end += e.length;
    }
    result.append(s.substr(done, begin - done));
    normalize_stretch(s.substr(begin, end - begin), compat, result);
    done = pos = previous = end;
  }
  result.append(s.substr(done));
  return result;
}

// Length of the well-formed sequence at s[pos], or (negated) of the maximal ill-formed
// subsequence there: the lead byte and the continuation bytes that still fit it (Unicode
// Table 3-7, as Rust's from_utf8_lossy counts them).
int utf8_sequence_length(std::string_view s, size_t pos) {
  const auto b0 = static_cast<uint8_t>(s[pos]);
  if (b0 < 0x80) return 1;
  int need;
  uint8_t lo = 0x80, hi = 0xBF;  // range of the second byte
  if (b0 >= 0xC2 && b0 <= 0xDF) need = 1;
  else if (b0 >= 0xE0 && b0 <= 0xEF) need = 2, lo = b0 == 0xE0 ? 0xA0 : 0x80, hi = b0 == 0xED ? 0x9F : 0xBF;
  else if (b0 >= 0xF0 && b0 <= 0xF4) need = 3, lo = b0 == 0xF0 ? 0x90 : 0x80, hi = b0 == 0xF4 ? 0x8F : 0xBF;
  else return -1;
  for (int i = 1; i <= need; ++i) {
    if (pos + i >= s.size()) return -i;
    const auto b = static_cast<uint8_t>(s[pos + i]);
    if (b < (i == 1 ? lo : 0x80) || b > (i == 1 ? hi : 0xBF)) return -i;
  }
  return need + 1;
}

}  // namespace

void append_utf8(uint32_t cp, std::string& out) {
  if (cp < 0x80) {
    out.push_back(static_cast<char>(cp));
  } else if (cp < 0x800) {
    out.push_back(static_cast<char>(0xC0 | (cp >> 6)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else if (cp < 0x10000) {
    out.push_back(static_cast<char>(0xE0 | (cp >> 12)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  } else {
    out.push_back(static_cast<char>(0xF0 | (cp >> 18)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 12) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | ((cp >> 6) & 0x3F)));
    out.push_back(static_cast<char>(0x80 | (cp & 0x3F)));
  }
}

void append_lossy_utf8(std::string_view bytes, std::string& out) {
  size_t valid_from = 0;  // start of the well-formed run not yet copied
  for (size_t pos = 0; pos < bytes.size();) {
    const int length = utf8_sequence_length(bytes, pos);
    if (length > 0) {
      pos += length;
      continue;
    }
    out.append(bytes.substr(valid_from, pos - valid_from));
    out += "\xEF\xBF\xBD";
    pos += -length;
    valid_from = pos;
  }
  out.append(bytes.substr(valid_from));
}

std::string nfc(std::string_view s) {
  if (is_nfc_quick(s)) return std::string(s);
  return normalize(s, false);
}

std::string nfkc(std::string_view s) {
  bool ascii = true;
  for (char c : s) ascii = ascii && static_cast<uint8_t>(c) < 0x80;
  if (ascii) return std::string(s);
  return normalize(s, true);
}

}  // namespace trident::data::unicode
