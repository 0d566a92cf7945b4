// Python str operations over UTF-8 text (see text.hpp for what is exact and what approximate).
#include "text.hpp"

#include "trident/core/json.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data::jinja {

namespace {

struct CodePoint {
  uint32_t cp;  // unicode::kInvalid for a stray byte
  size_t begin, end;
};

std::vector<CodePoint> decode_all(std::string_view s) {
  std::vector<CodePoint> out;
  for (size_t pos = 0; pos < s.size();) {
    const unicode::Decoded d = unicode::decode_utf8(s, pos);
    out.push_back({d.cp, pos, pos + d.length});
    pos += d.length;
  }
  return out;
}

bool in_set(uint32_t cp, const std::vector<CodePoint>& set) {
  for (const CodePoint& c : set)
    if (c.cp == cp) return true;
  return false;
}

// Simple one-to-one case pairs of the scripts covered (text.hpp).
uint32_t upper_cp(uint32_t c) {
  if (c >= 'a' && c <= 'z') return c - 32;
  if (c < 0x80) return c;
  if (c == 0xB5) return 0x39C;
  if (c >= 0xE0 && c <= 0xFE && c != 0xF7) return c - 32;
  if (c == 0xFF) return 0x178;
  if (c == 0x131) return 'I';
  if (c == 0x17F) return 'S';
  if ((c >= 0x100 && c <= 0x137) || (c >= 0x14A && c <= 0x177)) return c & ~1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1u) ? c : c - 1;
  if (c >= 0x3B1 && c <= 0x3C9) return c == 0x3C2 ? 0x3A3 : c - 32;
  if (c == 0x3AC) return 0x386;
  if (c >= 0x3AD && c <= 0x3AF) return c - 37;
  if (c == 0x3CC) return 0x38C;
  if (c == 0x3CD || c == 0x3CE) return c - 63;
  if (c >= 0x430 && c <= 0x44F) return c - 32;
  if (c >= 0x450 && c <= 0x45F) return c - 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return c & ~1u;
  return c;
}

uint32_t lower_cp(uint32_t c) {
  if (c >= 'A' && c <= 'Z') return c + 32;
  if (c < 0x80) return c;
  if (c >= 0xC0 && c <= 0xDE && c != 0xD7) return c + 32;
  if (c == 0x178) return 0xFF;
  if ((c >= 0x100 && c <= 0x137 && c != 0x130) || (c >= 0x14A && c <= 0x177)) return c | 1u;
  if ((c >= 0x139 && c <= 0x148) || (c >= 0x179 && c <= 0x17E)) return (c & 1u) ? c + 1 : c;
  if (c >= 0x391 && c <= 0x3A9 && c != 0x3A2) return c + 32;
  if (c == 0x386) return 0x3AC;
  if (c >= 0x388 && c <= 0x38A) return c + 37;
  if (c == 0x38C) return 0x3CC;
  if (c == 0x38E || c == 0x38F) return c + 63;
  if (c >= 0x410 && c <= 0x42F) return c + 32;
  if (c >= 0x400 && c <= 0x40F) return c + 80;
  if ((c >= 0x460 && c <= 0x481) || (c >= 0x48A && c <= 0x4BF)) return c | 1u;
  return c;
}

bool is_cased(uint32_t c) { return upper_cp(c) != c || lower_cp(c) != c || c == 0xDF; }

template <typename Map>
std::string map_case(std::string_view s, Map&& map) {
  std::string out;
  out.reserve(s.size());
  for (const CodePoint& c : decode_all(s)) {
    if (c.cp == unicode::kInvalid) {
      out.append(s.substr(c.begin, c.end - c.begin));
      continue;
    }
    map(c.cp, out);
  }
  return out;
}

void put_upper(uint32_t cp, std::string& out) {
  if (cp == 0xDF) return void(out += "SS");  // Python: "ß".upper() == "SS"
  append_utf8(out, upper_cp(cp));
}

void put_lower(uint32_t cp, std::string& out) { append_utf8(out, lower_cp(cp)); }

}  // namespace

std::vector<size_t> code_point_offsets(std::string_view s) {
  std::vector<size_t> offsets;
  for (size_t pos = 0; pos < s.size(); pos += unicode::decode_utf8(s, pos).length) offsets.push_back(pos);
  offsets.push_back(s.size());
  return offsets;
}

size_t code_point_count(std::string_view s) {
  size_t n = 0;
  for (size_t pos = 0; pos < s.size(); pos += unicode::decode_utf8(s, pos).length) ++n;
  return n;
}

std::vector<std::string> code_points(std::string_view s) {
  std::vector<std::string> out;
  for (const CodePoint& c : decode_all(s)) out.emplace_back(s.substr(c.begin, c.end - c.begin));
  return out;
}

bool is_py_space(uint32_t cp) {
  return (cp >= 0x09 && cp <= 0x0D) || (cp >= 0x1C && cp <= 0x20) || cp == 0x85 || cp == 0xA0 || cp == 0x1680 ||
         (cp >= 0x2000 && cp <= 0x200A) || cp == 0x2028 || cp == 0x2029 || cp == 0x202F || cp == 0x205F ||
         cp == 0x3000;
}

std::string py_strip(std::string_view s, const std::optional<std::string>& chars, StripSide side) {
  const std::vector<CodePoint> cps = decode_all(s);
  const std::vector<CodePoint> set = chars ? decode_all(*chars) : std::vector<CodePoint>{};
  auto strips = [&](const CodePoint& c) { return chars ? in_set(c.cp, set) : is_py_space(c.cp); };
  size_t first = 0, last = cps.size();
  if (side != StripSide::kRight)
    while (first < last && strips(cps[first])) ++first;
  if (side != StripSide::kLeft)
    while (last > first && strips(cps[last - 1])) --last;
  if (first == last) return "";
  return std::string(s.substr(cps[first].begin, cps[last - 1].end - cps[first].begin));
}

namespace {

// Whitespace-separated words with their byte ranges.
std::vector<std::pair<size_t, size_t>> words(std::string_view s) {
  std::vector<std::pair<size_t, size_t>> out;
  size_t begin = std::string_view::npos;
  for (const CodePoint& c : decode_all(s)) {
    const bool space = is_py_space(c.cp);
    if (!space && begin == std::string_view::npos) begin = c.begin;
    if (space && begin != std::string_view::npos) {
      out.emplace_back(begin, c.begin);
      begin = std::string_view::npos;
    }
  }
  if (begin != std::string_view::npos) out.emplace_back(begin, s.size());
  return out;
}

}  // namespace

std::vector<std::string> py_split(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    const auto w = words(s);
    for (size_t i = 0; i < w.size(); ++i) {
      if (maxsplit >= 0 && static_cast<int64_t>(i) == maxsplit) {
        out.emplace_back(s.substr(w[i].first));  // the rest, its trailing whitespace kept
        break;
      }
      out.emplace_back(s.substr(w[i].first, w[i].second - w[i].first));
    }
    return out;
  }
  size_t pos = 0;
  for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
    const size_t at = s.find(*sep, pos);
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(pos, at - pos));
    pos = at + sep->size();
  }
  out.emplace_back(s.substr(pos));
  return out;
}

std::vector<std::string> py_rsplit(std::string_view s, const std::optional<std::string>& sep, int64_t maxsplit) {
  std::vector<std::string> out;
  if (!sep) {
    const auto w = words(s);
    for (size_t k = w.size(); k-- > 0;) {
      if (maxsplit >= 0 && static_cast<int64_t>(w.size() - 1 - k) == maxsplit) {
        out.emplace_back(s.substr(0, w[k].second));  // the rest, its leading whitespace kept
        break;
      }
      out.emplace_back(s.substr(w[k].first, w[k].second - w[k].first));
    }
    return {out.rbegin(), out.rend()};
  }
  size_t end = s.size();
  for (int64_t n = 0; maxsplit < 0 || n < maxsplit; ++n) {
    if (end < sep->size()) break;
    const size_t at = s.rfind(*sep, end - sep->size());
    if (at == std::string_view::npos) break;
    out.emplace_back(s.substr(at + sep->size(), end - at - sep->size()));
    end = at;
  }
  out.emplace_back(s.substr(0, end));
  return {out.rbegin(), out.rend()};
}

std::string py_replace(std::string_view s, std::string_view old_text, std::string_view new_text, int64_t count) {
  std::string out;
  if (old_text.empty()) {
    // Python inserts `new` before every code point and at the end.
    const std::vector<CodePoint> cps = decode_all(s);
    int64_t done = 0;
    for (const CodePoint& c : cps) {
      if (count < 0 || done++ < count) out += new_text;
      out.append(s.substr(c.begin, c.end - c.begin));
    }
    if (count < 0 || done < count) out += new_text;
    return out;
  }
  size_t pos = 0;
  for (int64_t n = 0; count < 0 || n < count; ++n) {
    const size_t at = s.find(old_text, pos);
    if (at == std::string_view::npos) break;
    out.append(s.substr(pos, at - pos));
    out += new_text;
    pos = at + old_text.size();
  }
  out.append(s.substr(pos));
  return out;
}

std::string py_upper(std::string_view s) { return map_case(s, put_upper); }
std::string py_lower(std::string_view s) { return map_case(s, put_lower); }

std::string py_capitalize(std::string_view s) {
  bool first = true;
  return map_case(s, [&](uint32_t cp, std::string& out) {
    first ? put_upper(cp, out) : put_lower(cp, out);
    first = false;
  });
}

std::string py_title(std::string_view s) {
  bool previous_cased = false;
  return map_case(s, [&](uint32_t cp, std::string& out) {
    previous_cased ? put_lower(cp, out) : put_upper(cp, out);
    previous_cased = is_cased(cp);
  });
}

}  // namespace trident::data::jinja
