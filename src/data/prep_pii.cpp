// PII scrubbing: one left-to-right pass; at each position that can start a match (a letter or
// digit after a non-word character, '+', '(') the matchers are tried in a fixed order and the
// first one that matches the whole candidate wins. Rules and exclusions: pii.hpp.
#include "trident/data/pii.hpp"

#include <cstring>

namespace trident::data {
namespace {

bool is_digit(char c) { return c >= '0' && c <= '9'; }
bool is_alpha(char c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
bool is_alnum(char c) { return is_digit(c) || is_alpha(c); }
bool is_word(char c) { return is_alnum(c) || c == '_'; }
bool is_hex(char c) { return is_digit(c) || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F'); }
bool is_email_local(char c) { return is_alnum(c) || c == '.' || c == '_' || c == '%' || c == '+' || c == '-'; }
char lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c - 'A' + 'a') : c; }

class Scanner {
 public:
  explicit Scanner(std::string_view s) : s_(s) {}

  // Length of the match starting at i (0 = none) and its kind.
  size_t match(size_t i, PiiKind& kind) const {
    const char c = s_[i];
    const char prev = i ? s_[i - 1] : ' ';
    if (is_alnum(c) && !is_email_local(prev) && has_at_)
      if (size_t n = email(i)) return kind = PiiKind::kEmail, n;
    if (c == '+' || c == '(') {
      if (is_word(prev)) return 0;
      if (size_t n = phone(i)) return kind = PiiKind::kPhone, n;
      return 0;
    }
    // After ':' only when it ends a label ("inet6:fe80::1"), never inside a colon run.
    const bool after_label = prev == ':' && i >= 2 && is_alpha(s_[i - 2]);
    if (is_hex(c) && !is_word(prev) && (prev != ':' || after_label) && prev != '.')
      if (size_t n = ipv6(i)) return kind = PiiKind::kIp, n;
    if (!is_digit(c) || is_word(prev) || prev == '.' || prev == '-' || prev == '+') return 0;
    if (size_t n = credit_card(i)) return kind = PiiKind::kCreditCard, n;
    if (size_t n = ssn(i)) return kind = PiiKind::kNationalId, n;
    if (size_t n = phone(i)) return kind = PiiKind::kPhone, n;
    if (size_t n = ipv4(i)) return kind = PiiKind::kIp, n;
    return 0;
  }

 private:
  char at(size_t i) const { return i < s_.size() ? s_[i] : '\0'; }
  size_t digits_from(size_t i) const {
    size_t j = i;
    while (is_digit(at(j))) ++j;
    return j - i;
  }
  // A number-like match must not run on into more digits, letters or a dotted/dashed digit.
  bool number_ends_at(size_t j) const {
    const char c = at(j);
    if (is_word(c)) return false;
    return !((c == '.' || c == '-') && is_digit(at(j + 1)));
  }

  size_t email(size_t i) const {
    size_t j = i;
    while (is_email_local(at(j))) ++j;
    if (at(j) != '@' || j == i) return 0;
    ++j;
    size_t labels = 0, last_label_begin = j, last_label_end = j;
    while (true) {  // domain labels: [A-Za-z0-9-]+ separated by '.'
      const size_t begin = j;
      while (is_alnum(at(j)) || at(j) == '-') ++j;
      if (j == begin) break;
      ++labels;
      last_label_begin = begin;
      last_label_end = j;
      if (at(j) == '.' && is_alnum(at(j + 1))) ++j;
      else break;
    }
    if (labels < 2 || last_label_end - last_label_begin < 2) return 0;
    std::string tld;
    for (size_t k = last_label_begin; k < last_label_end; ++k) {
      if (!is_alpha(s_[k])) return 0;
      tld += lower(s_[k]);
    }
    // "icon@2x.png", "logo@3x.webp": image and web file names, not addresses (none is a TLD).
    static constexpr const char* kFileExtensions[] = {"png", "jpg", "jpeg", "gif", "svg", "webp", "bmp", "ico",
                                                      "tif", "tiff", "css", "js", "json", "html", "htm", "txt", "pdf"};
    for (const char* ext : kFileExtensions)
      if (tld == ext) return 0;
    return last_label_end - i;
  }

  // North American number after an optional "+1"/"1" prefix, or an international "+CC ..."
  size_t phone(size_t i) const {
    if (size_t n = north_american(i)) return n;
    if (at(i) == '+' && is_digit(at(i + 1))) {
      if (phone_uri_before(i)) {  // "tel:+14155552671": E.164, digits only
        const size_t n = digits_from(i + 1);
        if (n >= 8 && n <= 15 && number_ends_at(i + 1 + n)) return 1 + n;
      }
      if (at(i + 1) == '1' && (at(i + 2) == ' ' || at(i + 2) == '-' || at(i + 2) == '.'))
        if (size_t n = north_american(i + 3)) return n + 3;
      return international(i);
    }
    if (at(i) == '1' && (at(i + 1) == '-' || at(i + 1) == ' ' || at(i + 1) == '.'))
      if (size_t n = north_american(i + 2)) return n + 2;
    return 0;
  }

  // A "tel:" / "sms:" / "callto:" URI scheme (a whole word) ends right before i.
  bool phone_uri_before(size_t i) const {
    if (i < 2 || s_[i - 1] != ':' || !is_alpha(s_[i - 2])) return false;
    size_t begin = 0;
    const std::string scheme = word_before(i - 1, begin);
    return scheme == "tel" || scheme == "sms" || scheme == "callto";
  }

  size_t north_american(size_t i) const {
    auto nxx = [&](size_t k) { return digits_from(k) == 3 && at(k) >= '2' && at(k) <= '9'; };
    size_t j = i;
    char sep = 0;
    if (at(j) == '(') {
      if (!nxx(j + 1) || at(j + 4) != ')') return 0;
      j += 5;
      if (at(j) == ' ') ++j;
    } else {
      if (!nxx(j)) return 0;
      sep = at(j + 3);
      if (sep != '-' && sep != '.' && sep != ' ') return 0;
      j += 4;
    }
    if (!nxx(j)) return 0;
    const char sep2 = at(j + 3);
    if ((sep && sep2 != sep) || (!sep && sep2 != '-' && sep2 != '.' && sep2 != ' ')) return 0;
    j += 4;
    if (digits_from(j) != 4) return 0;
    j += 4;
    return number_ends_at(j) ? j - i : 0;
  }

  size_t international(size_t i) const {
    size_t j = i + 1;
    const size_t cc = digits_from(j);
    if (cc < 1 || cc > 3) return 0;
    j += cc;
    size_t digits = cc, groups = 0;
    while ((at(j) == ' ' || at(j) == '-' || at(j) == '.') && is_digit(at(j + 1))) {
      const size_t g = digits_from(j + 1);
      if (g > 8) return 0;
      digits += g;
      ++groups;
      j += 1 + g;
    }
    if (groups < 2 || digits < 8 || digits > 15) return 0;
    return is_word(at(j)) ? 0 : j - i;
  }

  static bool issuer_prefix(std::string_view d) {
    auto p = [&](size_t n) { return std::stoi(std::string(d.substr(0, n))); };
    if (d[0] == '4') return true;
    const int p2 = p(2), p3 = p(3), p4 = p(4);
    return (p2 >= 51 && p2 <= 55) || (p4 >= 2221 && p4 <= 2720) || p2 == 34 || p2 == 37 ||
           p4 == 6011 || (p3 >= 644 && p3 <= 649) || p2 == 65 || (p4 >= 3528 && p4 <= 3589) ||
           (p3 >= 300 && p3 <= 305) || p2 == 36 || p2 == 38;
  }

  size_t credit_card(size_t i) const {
    std::string digits;
    size_t j = i;
    char sep = 0;
    while (true) {
      const size_t g = digits_from(j);
      digits.append(s_.substr(j, g));
      j += g;
      const char c = at(j);
      if ((c == ' ' || c == '-') && (sep == 0 || sep == c) && is_digit(at(j + 1)) && g >= 3) {
        sep = c;
        ++j;
        continue;
      }
      break;
    }
    if (digits.size() < 13 || digits.size() > 19 || is_word(at(j))) return 0;
    if (!issuer_prefix(digits) || !luhn_valid(digits)) return 0;
    return j - i;
  }

  size_t ssn(size_t i) const {
    if (digits_from(i) != 3 || at(i + 3) != '-' || digits_from(i + 4) != 2 || at(i + 6) != '-' ||
        digits_from(i + 7) != 4 || !number_ends_at(i + 11))
      return 0;
    const std::string_view area = s_.substr(i, 3), group = s_.substr(i + 4, 2), serial = s_.substr(i + 7, 4);
    if (area == "000" || area == "666" || area[0] == '9' || group == "00" || serial == "0000") return 0;
    return 11;
  }

  // The whole word that ends before position `end`, past up to 3 separators (" : = # ( ."),
  // lowercased; empty when there is none. Whole word: "server" is never read as "ver".
  std::string word_before(size_t end, size_t& begin) const {
    size_t j = end;
    for (int k = 0; k < 3 && j > 0 && std::strchr(" \t:=#(.", s_[j - 1]); ++k) --j;
    size_t b = j;
    while (b > 0 && is_alpha(s_[b - 1])) --b;
    begin = b;
    if (b == j || (b > 0 && is_word(s_[b - 1]))) return {};
    std::string w;
    for (size_t k = b; k < j; ++k) w += lower(s_[k]);
    return w;
  }

  // A dotted number right after a word that numbers things ("version 1.2.3.4", "Release:
  // 4.3.2.1", "version number 1.2.3.4", "section 10.1.2.3", "OID 2.5.4.3", "§ 4.2.1.3").
  bool numbering_context(size_t i) const {
    static constexpr const char* kNumbering[] = {
        "v", "ver", "version", "versions", "release", "rel", "build", "revision", "rev", "firmware",
        "fw", "section", "sec", "chapter", "clause", "paragraph", "para", "figure", "fig", "table",
        "equation", "eq", "appendix", "article", "item", "step", "rule", "oid"};
    static constexpr const char* kLinking[] = {"is", "was", "number", "no", "nr", "num"};
    auto in = [](const std::string& w, auto& list) {
      for (const char* x : list)
        if (w == x) return true;
      return false;
    };
    size_t j = i;
    while (j > 0 && (s_[j - 1] == ' ' || s_[j - 1] == '\t')) --j;
    if (j >= 2 && s_[j - 2] == '\xC2' && s_[j - 1] == '\xA7') return true;  // "§" in UTF-8
    size_t begin = 0;
    std::string w = word_before(i, begin);
    if (in(w, kLinking)) w = word_before(begin, begin);
    return in(w, kNumbering);
  }

  size_t ipv4(size_t i) const {
    size_t j = i;
    for (int octet = 0; octet < 4; ++octet) {
      if (octet && at(j++) != '.') return 0;
      const size_t n = digits_from(j);
      if (n < 1 || n > 3 || (n > 1 && at(j) == '0')) return 0;
      if (std::stoi(std::string(s_.substr(j, n))) > 255) return 0;
      j += n;
    }
    if (!number_ends_at(j) || numbering_context(i)) return 0;
    return j - i;
  }

  size_t ipv6(size_t i) const {
    size_t j = i, groups = 0;
    bool compressed = false, has_digit = false, has_full_group = false, all_decimal = true;
    while (true) {
      size_t n = 0;
      while (is_hex(at(j + n))) {
        has_digit |= is_digit(at(j + n));
        all_decimal &= is_digit(at(j + n));
        ++n;
      }
      if (n == 0 || n > 4) return 0;
      has_full_group |= n == 4;
      ++groups;
      j += n;
      if (at(j) != ':') break;
      if (at(j + 1) == ':') {
        if (compressed) return 0;
        compressed = true;
        j += 2;
        if (!is_hex(at(j))) break;  // "fe80::" ends with the compression
      } else if (is_hex(at(j + 1))) {
        ++j;
      } else {
        break;
      }
    }
    if (is_word(at(j)) || at(j) == ':' || groups > 8) return 0;
    if (!compressed) return groups == 8 ? j - i : 0;
    // "::" forms: slices like x[10::20] and C++ scopes like Foo::bar are not addresses.
    if (groups < 2 || !has_digit || !has_full_group || (all_decimal && groups == 2)) return 0;
    return j - i;
  }

  std::string_view s_;
  bool has_at_ = s_.find('@') != std::string_view::npos;
};

}  // namespace

const char* pii_placeholder(PiiKind kind) {
  static constexpr const char* kNames[] = {"<EMAIL>", "<PHONE>", "<IP>", "<CREDIT_CARD>", "<NATIONAL_ID>"};
  return kNames[static_cast<int>(kind)];
}

const char* pii_name(PiiKind kind) {
  static constexpr const char* kNames[] = {"email", "phone", "ip", "credit_card", "national_id"};
  return kNames[static_cast<int>(kind)];
}

int64_t PiiCounts::total() const {
  int64_t t = 0;
  for (int64_t c : count) t += c;
  return t;
}

bool luhn_valid(std::string_view digits) {
  int sum = 0;
  bool twice = false;
  for (size_t k = digits.size(); k-- > 0; twice = !twice) {
    int d = digits[k] - '0';
    if (twice && (d *= 2) > 9) d -= 9;
    sum += d;
  }
  return !digits.empty() && sum % 10 == 0;
}

std::string scrub_pii(std::string_view text, PiiCounts& counts) {
  const Scanner scanner(text);
  std::string out;
  out.reserve(text.size());
  size_t copied = 0;
  for (size_t i = 0; i < text.size();) {
    PiiKind kind{};
    const size_t n = scanner.match(i, kind);
    if (n == 0) {
      ++i;
      continue;
    }
    out.append(text.substr(copied, i - copied));
    out.append(pii_placeholder(kind));
    ++counts[kind];
    i += n;
    copied = i;
  }
  out.append(text.substr(copied));
  return out;
}

}  // namespace trident::data
