// The template lexer: text and tags with jinja2's whitespace rules (lexer.hpp), then the tokens
// inside tags: names, numbers, strings with Python's escapes, and operators.
#include "lexer.hpp"

#include <cstdlib>

#include "text.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data::jinja {

namespace {

std::string normalize_newlines(std::string_view source) {
  std::string out;
  out.reserve(source.size());
  for (size_t i = 0; i < source.size(); ++i) {
    if (source[i] == '\r') {
      out += '\n';
      if (i + 1 < source.size() && source[i + 1] == '\n') ++i;
    } else {
      out += source[i];
    }
  }
  if (!out.empty() && out.back() == '\n') out.pop_back();  // keep_trailing_newline=False
  return out;
}

bool is_tag_space(char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'; }
bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_name_start(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || c == '_'; }
bool is_name_char(char c) { return is_name_start(c) || is_digit(c); }

// Python's str.rstrip() and "only whitespace" over UTF-8.
std::string_view rstrip_space(std::string_view s) {
  const std::string stripped = py_strip(s, std::nullopt, StripSide::kRight);
  return s.substr(0, stripped.size());
}
bool all_space(std::string_view s) { return !s.empty() && py_strip(s, std::nullopt, StripSide::kBoth).empty(); }

class Lexer {
 public:
  Lexer(std::string_view source, const std::string& name) : s_(normalize_newlines(source)), name_(name) {}

  std::vector<Token> run() {
    while (pos_ < s_.size()) root();
    tokens_.push_back({Token::Kind::kEnd, "", 0, 0, line_at(s_.size())});
    return std::move(tokens_);
  }

 private:
  [[noreturn]] void fail(size_t at, const std::string& what) {
    throw ConfigError(detail::concat(name_, " line ", line_at(at), ": ", what));
  }

  int line_at(size_t pos) {  // positions are asked in increasing order
    for (; counted_ < pos && counted_ < s_.size(); ++counted_) line_ += s_[counted_] == '\n';
    return line_;
  }

  // The text before a tag, after the tag's own whitespace rule (sign: '-', '+' or 0).
  void emit_text(size_t begin, size_t end, char sign, bool lstrip_applies) {
    std::string_view text(s_.data() + begin, end - begin);
    if (sign == '-') {
      text = rstrip_space(text);
    } else if (sign != '+' && lstrip_applies) {
      const size_t nl = text.rfind('\n');
      const size_t l_pos = nl == std::string_view::npos ? 0 : nl + 1;
      if ((l_pos > 0 || line_starting_) && all_space(text.substr(l_pos))) text = text.substr(0, l_pos);
    }
    if (!text.empty()) tokens_.push_back({Token::Kind::kText, std::string(text), 0, 0, line_at(begin)});
  }

  // At s_[p] == '{' and s_[p+1] == '%': the length of "{% raw %}" (with its sign and end) or 0.
  size_t raw_begin_length(size_t p, char& end_sign) {
    size_t q = p + 2;
    if (q < s_.size() && (s_[q] == '-' || s_[q] == '+')) ++q;
    while (q < s_.size() && is_tag_space(s_[q])) ++q;
    if (s_.compare(q, 3, "raw") != 0) return 0;
    q += 3;
    if (q < s_.size() && is_name_char(s_[q])) return 0;
    while (q < s_.size() && is_tag_space(s_[q])) ++q;
    end_sign = 0;
    if (s_.compare(q, 3, "-%}") == 0) {
      end_sign = '-';
      q += 3;
      while (q < s_.size() && is_tag_space(s_[q])) ++q;
      return q - p;
    }
    return s_.compare(q, 2, "%}") == 0 ? q + 2 - p : 0;
  }

  void root() {
    size_t p = pos_;
    while (true) {
      p = s_.find('{', p);
      if (p == std::string::npos || p + 1 >= s_.size()) {
        emit_text(pos_, s_.size(), 0, false);
        pos_ = s_.size();
        return;
      }
      const char kind = s_[p + 1];
      if (kind == '{' || kind == '%' || kind == '#') break;
      ++p;
    }
    const char kind = s_[p + 1];
    const char sign = p + 2 < s_.size() && (s_[p + 2] == '-' || s_[p + 2] == '+') ? s_[p + 2] : 0;
    char raw_sign = 0;
    if (kind == '%') {
      if (const size_t raw = raw_begin_length(p, raw_sign)) {
        emit_text(pos_, p, sign, true);
        raw_block(p, p + raw);
        return;
      }
    }
    emit_text(pos_, p, sign, kind != '{');
    const size_t after = p + 2 + (sign ? 1 : 0);
    line_starting_ = false;
    if (kind == '#') return comment(p, after);
    tokens_.push_back({kind == '{' ? Token::Kind::kVariableBegin : Token::Kind::kBlockBegin, "", 0, 0, line_at(p)});
    pos_ = after;
    tag(kind == '{');
  }

  // After the end "}" of a tag: '-' eats all whitespace, '+' nothing, else trim_blocks one \n.
  void after_tag_end(size_t q, char sign, bool trims) {
    if (sign == '-') {
      while (q < s_.size() && is_tag_space(s_[q])) ++q;
    } else if (sign != '+' && trims && q < s_.size() && s_[q] == '\n') {
      ++q;
    }
    line_starting_ = q > 0 && s_[q - 1] == '\n';
    pos_ = q;
  }

  void comment(size_t start, size_t p) {
    const size_t j = s_.find("#}", p);
    if (j == std::string::npos) fail(start, "missing end of comment tag '#}'");
    const char sign = j > p && (s_[j - 1] == '-' || s_[j - 1] == '+') ? s_[j - 1] : 0;
    after_tag_end(j + 2, sign, true);
  }

  void raw_block(size_t start, size_t content) {
    for (size_t j = s_.find("{%", content); j != std::string::npos; j = s_.find("{%", j + 1)) {
      size_t q = j + 2;
      const char sign = q < s_.size() && (s_[q] == '-' || s_[q] == '+') ? s_[q] : 0;
      if (sign) ++q;
      while (q < s_.size() && is_tag_space(s_[q])) ++q;
      if (s_.compare(q, 6, "endraw") != 0 || (q + 6 < s_.size() && is_name_char(s_[q + 6]))) continue;
      q += 6;
      while (q < s_.size() && is_tag_space(s_[q])) ++q;
      const char end_sign = s_.compare(q, 3, "-%}") == 0 ? '-' : s_.compare(q, 3, "+%}") == 0 ? '+' : 0;
      if (!end_sign && s_.compare(q, 2, "%}") != 0) continue;
      pos_ = content;
      line_starting_ = false;
      emit_text(content, j, sign, true);
      return after_tag_end(q + (end_sign ? 3 : 2), end_sign, true);
    }
    fail(start, "missing {% endraw %}");
  }

  void tag(bool variable) {
    const size_t start = pos_;
    std::vector<char> open;  // brackets that must close before the tag can
    while (true) {
      if (pos_ >= s_.size()) fail(start, variable ? "unexpected end of template, expected '}}'" : "unexpected end of template, expected '%}'");
      if (open.empty() && tag_end(variable)) return;
      const char c = s_[pos_];
      if (is_tag_space(c)) {
        ++pos_;
      } else if (is_digit(c)) {
        number();
      } else if (is_name_start(c)) {
        const size_t b = pos_;
        while (pos_ < s_.size() && is_name_char(s_[pos_])) ++pos_;
        tokens_.push_back({Token::Kind::kName, s_.substr(b, pos_ - b), 0, 0, line_at(b)});
      } else if (c == '\'' || c == '"') {
        string_literal();
      } else {
        operator_token(open);
      }
    }
  }

  bool tag_end(bool variable) {
    const char close = variable ? '}' : '%';
    char sign = 0;
    size_t q = pos_;
    if (s_[q] == '-' || (!variable && s_[q] == '+')) sign = s_[q++];
    if (q + 1 >= s_.size() || s_[q] != close || s_[q + 1] != '}') return false;
    tokens_.push_back({variable ? Token::Kind::kVariableEnd : Token::Kind::kBlockEnd, "", 0, 0, line_at(pos_)});
    after_tag_end(q + 2, sign, !variable);
    return true;
  }

  void number() {
    const size_t b = pos_;
    const int line = line_at(b);
    auto digits = [&](auto ok) {
      while (pos_ < s_.size() && (ok(s_[pos_]) || (s_[pos_] == '_' && pos_ + 1 < s_.size() && ok(s_[pos_ + 1])))) ++pos_;
    };
    auto strip = [](std::string t) {
      std::string out;
      for (char c : t) if (c != '_') out += c;
      return out;
    };
    if (s_[b] == '0' && b + 1 < s_.size() && std::string_view("xXoObB").find(s_[b + 1]) != std::string_view::npos) {
      const char base_char = static_cast<char>(s_[b + 1] | 0x20);
      const int base = base_char == 'x' ? 16 : base_char == 'o' ? 8 : 2;
      pos_ += 2;
      const size_t first = pos_;
      digits([&](char c) { return base == 16 ? std::isxdigit(static_cast<unsigned char>(c)) != 0 : c >= '0' && c < '0' + base; });
      if (pos_ == first) fail(b, "malformed number literal");
      return push_int(strip(s_.substr(first, pos_ - first)), base, line, b);
    }
    digits(is_digit);
    bool is_float = false;
    const bool after_dot = b > 0 && s_[b - 1] == '.';  // x.0.1: attribute indexes, not a float
    if (!after_dot && pos_ + 1 < s_.size() && s_[pos_] == '.' && is_digit(s_[pos_ + 1])) {
      ++pos_;
      digits(is_digit);
      is_float = true;
    }
    if (!after_dot && pos_ < s_.size() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
      size_t q = pos_ + 1;
      if (q < s_.size() && (s_[q] == '+' || s_[q] == '-')) ++q;
      if (q < s_.size() && is_digit(s_[q])) {
        pos_ = q;
        digits(is_digit);
        is_float = true;
      }
    }
    const std::string text = strip(s_.substr(b, pos_ - b));
    if (!is_float) return push_int(text, 10, line, b);
    Token t{Token::Kind::kFloat, text, 0, std::strtod(text.c_str(), nullptr), line};
    tokens_.push_back(t);
  }

  void push_int(const std::string& digits, int base, int line, size_t at) {
    errno = 0;
    char* end = nullptr;
    const long long v = std::strtoll(digits.c_str(), &end, base);
    if (errno == ERANGE) fail(at, "integer literal " + digits + " does not fit in 64 bits");
    tokens_.push_back({Token::Kind::kInt, digits, static_cast<int64_t>(v), 0, line});
  }

  void string_literal() {
    const size_t b = pos_;
    const char quote = s_[pos_++];
    std::string raw;
    while (pos_ < s_.size() && s_[pos_] != quote) {
      if (s_[pos_] == '\\' && pos_ + 1 < s_.size()) raw += s_[pos_++];
      raw += s_[pos_++];
    }
    if (pos_ >= s_.size()) fail(b, "unterminated string literal");
    ++pos_;
    tokens_.push_back({Token::Kind::kString, unescape(raw, b), 0, 0, line_at(b)});
  }

  // Python's "unicode-escape" decoding, which jinja2 applies to string literals.
  std::string unescape(const std::string& raw, size_t at) {
    std::string out;
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\' || i + 1 >= raw.size()) {
        out += raw[i];
        continue;
      }
      const char c = raw[++i];
      switch (c) {
        case '\n': break;  // a line continuation
        case '\\': out += '\\'; break;
        case '\'': out += '\''; break;
        case '"': out += '"'; break;
        case 'a': out += '\a'; break;
        case 'b': out += '\b'; break;
        case 'f': out += '\f'; break;
        case 'n': out += '\n'; break;
        case 'r': out += '\r'; break;
        case 't': out += '\t'; break;
        case 'v': out += '\v'; break;
        case 'x': case 'u': case 'U': {
          const size_t n = c == 'x' ? 2 : c == 'u' ? 4 : 8;
          uint32_t cp = 0;
          for (size_t k = 1; k <= n; ++k) {
            const char h = i + k < raw.size() ? raw[i + k] : 0;
            if (!std::isxdigit(static_cast<unsigned char>(h))) fail(at, std::string("truncated \\") + c + " escape in a string literal");
            cp = cp * 16 + static_cast<uint32_t>(h <= '9' ? h - '0' : (h | 0x20) - 'a' + 10);
          }
          if (cp > 0x10FFFF) fail(at, "\\U escape above U+10FFFF in a string literal");
          append_utf8(out, cp);
          i += n;
          break;
        }
        case 'N': fail(at, "\\N{...} escapes are not supported in string literals");
        default:
          if (c >= '0' && c <= '7') {
            uint32_t cp = static_cast<uint32_t>(c - '0');
            for (int k = 0; k < 2 && i + 1 < raw.size() && raw[i + 1] >= '0' && raw[i + 1] <= '7'; ++k)
              cp = cp * 8 + static_cast<uint32_t>(raw[++i] - '0');
            append_utf8(out, cp);
          } else {
            out += '\\';  // Python keeps an unknown escape as it is
            out += c;
          }
      }
    }
    return out;
  }

  void operator_token(std::vector<char>& open) {
    static constexpr std::string_view kTwo[] = {"//", "**", "==", "!=", ">=", "<="};
    const size_t b = pos_;
    std::string op;
    for (std::string_view two : kTwo)
      if (s_.compare(pos_, 2, two) == 0) op = two;
    if (op.empty()) {
      const char c = s_[pos_];
      if (std::string_view("+-/*%~[](){}><=.:|,;").find(c) == std::string_view::npos) {
        std::string shown(1, c);
        if (static_cast<unsigned char>(c) >= 0x80) shown = code_points(std::string_view(s_).substr(pos_, 4)).front();
        fail(b, "unexpected character '" + shown + "' in a tag");
      }
      op = std::string(1, c);
      if (c == '(' || c == '[' || c == '{') open.push_back(c == '(' ? ')' : c == '[' ? ']' : '}');
      if (c == ')' || c == ']' || c == '}') {
        if (open.empty()) fail(b, "unexpected '" + op + "'");
        if (open.back() != c) fail(b, "unexpected '" + op + "', expected '" + std::string(1, open.back()) + "'");
        open.pop_back();
      }
    }
    pos_ += op.size();
    tokens_.push_back({Token::Kind::kOperator, op, 0, 0, line_at(b)});
  }

  std::string s_;
  const std::string& name_;
  size_t pos_ = 0;
  size_t counted_ = 0;
  int line_ = 1;
  bool line_starting_ = true;
  std::vector<Token> tokens_;
};

}  // namespace

std::vector<Token> tokenize(std::string_view source, const std::string& name) { return Lexer(source, name).run(); }

}  // namespace trident::data::jinja
