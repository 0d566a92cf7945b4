// Recursive-descent JSON parser and compact writer (see json.hpp for the contract).
#include "trident/core/json.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "trident/core/error.hpp"

namespace trident {
namespace {

constexpr int kMaxDepth = 256;

class Parser {
 public:
  explicit Parser(std::string_view text) : s_(text) {}

  Json parse_document() {
    skip_space();
    Json value = parse_value(0);
    skip_space();
    if (pos_ != s_.size()) fail("unexpected text after the JSON value");
    return value;
  }

 private:
  [[noreturn]] void fail(std::string_view what) const {
    size_t line = 1, column = 1;
    for (size_t i = 0; i < pos_ && i < s_.size(); ++i) {
      if (s_[i] == '\n') ++line, column = 1;
      else ++column;
    }
    throw ConfigError(detail::concat("line ", line, ", column ", column, ": ", what));
  }
  char peek() const { return pos_ < s_.size() ? s_[pos_] : '\0'; }
  bool consume(char c) {
    if (pos_ < s_.size() && s_[pos_] == c) return ++pos_, true;
    return false;
  }
  void expect(char c, const char* what) {
    if (!consume(c)) fail(detail::concat("expected ", what));
  }
  void skip_space() {
    while (pos_ < s_.size() && (s_[pos_] == ' ' || s_[pos_] == '\t' || s_[pos_] == '\n' || s_[pos_] == '\r'))
      ++pos_;
  }
  bool consume_word(std::string_view word) {
    if (s_.substr(pos_, word.size()) != word) return false;
    pos_ += word.size();
    return true;
  }

  Json parse_value(int depth) {
    if (depth > kMaxDepth) fail("nesting deeper than 256");
    const char c = peek();
    if (c == '"') return Json(parse_string());
    if (c == '{') return parse_object(depth);
    if (c == '[') return parse_array(depth);
    if (consume_word("true")) return Json(true);
    if (consume_word("false")) return Json(false);
    if (consume_word("null")) return Json(nullptr);
    if (c == '-' || (c >= '0' && c <= '9')) return Json(parse_number());
    if (pos_ >= s_.size()) fail("unexpected end of input, expected a JSON value");
    fail("expected a JSON value");
  }

  Json parse_object(int depth) {
    ++pos_;
    Json object = Json::object();
    skip_space();
    if (consume('}')) return object;
    do {
      skip_space();
      if (peek() != '"') fail("expected a string key");
      std::string key = parse_string();
      skip_space();
      expect(':', "':' after a key");
      skip_space();
      Json value = parse_value(depth + 1);
      object.append(std::move(key), std::move(value));  // set() would make parsing quadratic
      skip_space();
    } while (consume(','));
    expect('}', "',' or '}' in an object");
    return object;
  }

  Json parse_array(int depth) {
    ++pos_;
    Json array = Json::array();
    skip_space();
    if (consume(']')) return array;
    do {
      skip_space();
      array.push_back(parse_value(depth + 1));
      skip_space();
    } while (consume(','));
    expect(']', "',' or ']' in an array");
    return array;
  }

  void skip_digits() {
    if (!(peek() >= '0' && peek() <= '9')) fail("expected a digit");
    while (peek() >= '0' && peek() <= '9') ++pos_;
  }

  double parse_number() {
    const size_t start = pos_;
    consume('-');
    if (!consume('0')) skip_digits();
    if (consume('.')) skip_digits();
    if (consume('e') || consume('E')) {
      if (!consume('+')) consume('-');
      skip_digits();
    }
    double value = 0;
    const auto [end, ec] = std::from_chars(s_.data() + start, s_.data() + pos_, value);
    if (ec == std::errc::result_out_of_range) {
      pos_ = start;
      fail("number out of range");
    }
    return value;
  }

  uint32_t parse_hex4() {
    if (s_.size() - pos_ < 4) fail("\\u needs 4 hex digits");
    uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
      const char c = s_[pos_++];
      const int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10
                      : c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
      if (digit < 0) fail("\\u needs 4 hex digits");
      v = v * 16 + static_cast<uint32_t>(digit);
    }
    return v;
  }

  // A code point from \uXXXX, joining a UTF-16 surrogate pair (\uD83D\uDE00 -> U+1F600).
  uint32_t parse_unicode_escape() {
    const uint32_t hi = parse_hex4();
    if (hi >= 0xDC00 && hi <= 0xDFFF) fail("lone low surrogate in \\u escape");
    if (hi < 0xD800 || hi > 0xDBFF) return hi;
    if (!(consume('\\') && consume('u'))) fail("high surrogate \\u escape without its low half");
    const uint32_t lo = parse_hex4();
    if (lo < 0xDC00 || lo > 0xDFFF) fail("high surrogate \\u escape without its low half");
    return 0x10000 + ((hi - 0xD800) << 10) + (lo - 0xDC00);
  }

  std::string parse_string() {
    expect('"', "a string");
    std::string out;
    while (true) {
      // Copy the run of plain bytes in one go: most of a string needs no unescaping.
      size_t run = pos_;
      while (run < s_.size() && s_[run] != '"' && s_[run] != '\\' && static_cast<unsigned char>(s_[run]) >= 0x20)
        ++run;
      out.append(s_.substr(pos_, run - pos_));
      pos_ = run;
      if (pos_ >= s_.size()) fail("unterminated string");
      const char c = s_[pos_++];
      if (c == '"') return out;
      if (c != '\\') {
        --pos_;
        fail("unescaped control character in a string");
      }
      if (pos_ >= s_.size()) fail("unterminated string");
      switch (const char e = s_[pos_++]; e) {
        case '"': case '\\': case '/': out += e; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'u': append_utf8(out, parse_unicode_escape()); break;
        default: --pos_; fail(detail::concat("invalid escape \\", e));
      }
    }
  }

  std::string_view s_;
  size_t pos_ = 0;
};

[[noreturn]] void wrong_kind(Json::Kind expected, Json::Kind actual) {
  throw ConfigError(detail::concat("expected a JSON ", json_kind_name(expected), ", found ",
                                   json_kind_name(actual)));
}

}  // namespace

Json Json::parse(std::string_view text) { return Parser(text).parse_document(); }

const char* json_kind_name(Json::Kind kind) {
  switch (kind) {
    case Json::Kind::kNull: return "null";
    case Json::Kind::kBool: return "boolean";
    case Json::Kind::kNumber: return "number";
    case Json::Kind::kString: return "string";
    case Json::Kind::kArray: return "array";
    case Json::Kind::kObject: return "object";
  }
  return "?";
}

bool Json::as_bool() const {
  if (!is_bool()) wrong_kind(Kind::kBool, kind());
  return std::get<bool>(value_);
}

double Json::as_number() const {
  if (!is_number()) wrong_kind(Kind::kNumber, kind());
  return std::get<double>(value_);
}

int64_t Json::as_int() const {
  const double d = as_number();
  // 2^63 is exactly representable; anything at or above it does not fit.
  if (!(d >= -9223372036854775808.0 && d < 9223372036854775808.0) || std::trunc(d) != d)
    throw ConfigError(detail::concat("expected an integer, found ", d));
  return static_cast<int64_t>(d);
}

const std::string& Json::as_string() const {
  if (!is_string()) wrong_kind(Kind::kString, kind());
  return std::get<std::string>(value_);
}

const Json::Array& Json::as_array() const {
  if (!is_array()) wrong_kind(Kind::kArray, kind());
  return std::get<Array>(value_);
}

const Json::Object& Json::as_object() const {
  if (!is_object()) wrong_kind(Kind::kObject, kind());
  return std::get<Object>(value_);
}

const Json* Json::find(std::string_view key) const {
  if (!is_object()) return nullptr;
  for (const auto& [k, v] : std::get<Object>(value_))
    if (k == key) return &v;
  return nullptr;
}

const Json& Json::at(std::string_view key) const {
  if (!is_object()) wrong_kind(Kind::kObject, kind());
  const Json* value = find(key);
  if (!value) throw ConfigError(detail::concat("missing key \"", key, "\""));
  return *value;
}

void Json::push_back(Json value) {
  if (!is_array()) wrong_kind(Kind::kArray, kind());
  std::get<Array>(value_).push_back(std::move(value));
}

void Json::set(std::string key, Json value) {
  if (!is_object()) wrong_kind(Kind::kObject, kind());
  Object& object = std::get<Object>(value_);
  for (auto& [k, v] : object)
    if (k == key) return void(v = std::move(value));
  object.emplace_back(std::move(key), std::move(value));
}

void Json::append(std::string key, Json value) {
  if (!is_object()) wrong_kind(Kind::kObject, kind());
  std::get<Object>(value_).emplace_back(std::move(key), std::move(value));
}

std::string Json::dump() const {
  std::string out;
  dump_to(out);
  return out;
}

void Json::dump_to(std::string& out) const {
  switch (kind()) {
    case Kind::kNull: out += "null"; break;
    case Kind::kBool: out += std::get<bool>(value_) ? "true" : "false"; break;
    case Kind::kNumber: {
      const double d = std::get<double>(value_);
      char buffer[32];
      if (!std::isfinite(d)) {
        out += "null";  // JSON has no inf/nan
      } else if (std::trunc(d) == d && std::fabs(d) < 9007199254740992.0) {
        std::snprintf(buffer, sizeof buffer, "%lld", static_cast<long long>(d));
        out += buffer;
      } else {
        const auto [end, ec] = std::to_chars(buffer, buffer + sizeof buffer, d);  // shortest round trip
        out.append(buffer, end);
      }
      break;
    }
    case Kind::kString: out += json_quote(std::get<std::string>(value_)); break;
    case Kind::kArray: {
      out += '[';
      bool first = true;
      for (const Json& v : std::get<Array>(value_)) {
        if (!first) out += ',';
        first = false;
        v.dump_to(out);
      }
      out += ']';
      break;
    }
    case Kind::kObject: {
      out += '{';
      bool first = true;
      for (const auto& [k, v] : std::get<Object>(value_)) {
        if (!first) out += ',';
        first = false;
        out += json_quote(k);
        out += ':';
        v.dump_to(out);
      }
      out += '}';
      break;
    }
  }
}

std::string json_quote(std::string_view s) {
  std::string out;
  out.reserve(s.size() + 2);
  out += '"';
  for (const char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\r': out += "\\r"; break;
      case '\t': out += "\\t"; break;
      case '\b': out += "\\b"; break;
      case '\f': out += "\\f"; break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buffer[8];
          std::snprintf(buffer, sizeof buffer, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
          out += buffer;
        } else {
          out += c;
        }
    }
  }
  out += '"';
  return out;
}

size_t invalid_utf8_at(std::string_view s) {
  for (size_t i = 0; i < s.size();) {
    const unsigned char c = static_cast<unsigned char>(s[i]);
    if (c < 0x80) {
      ++i;
      continue;
    }
    const size_t n = (c >> 5) == 0x6 ? 2 : (c >> 4) == 0xE ? 3 : (c >> 3) == 0x1E ? 4 : 0;
    if (n == 0 || (n == 2 && c < 0xC2) || i + n > s.size()) return i;
    for (size_t k = 1; k < n; ++k)
      if ((static_cast<unsigned char>(s[i + k]) & 0xC0) != 0x80) return i;
    const unsigned char c1 = static_cast<unsigned char>(s[i + 1]);
    if (n == 3 && ((c == 0xE0 && c1 < 0xA0) || (c == 0xED && c1 >= 0xA0))) return i;  // overlong, surrogate
    if (n == 4 && ((c == 0xF0 && c1 < 0x90) || c > 0xF4 || (c == 0xF4 && c1 >= 0x90))) return i;
    i += n;
  }
  return std::string_view::npos;
}

void append_utf8(std::string& out, uint32_t cp) {
  if (cp < 0x80) {
    out += static_cast<char>(cp);
  } else if (cp < 0x800) {
    out += static_cast<char>(0xC0 | (cp >> 6));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else if (cp < 0x10000) {
    out += static_cast<char>(0xE0 | (cp >> 12));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  } else {
    out += static_cast<char>(0xF0 | (cp >> 18));
    out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
    out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
    out += static_cast<char>(0x80 | (cp & 0x3F));
  }
}

}  // namespace trident
