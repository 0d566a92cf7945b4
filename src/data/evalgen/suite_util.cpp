// Helpers shared by the evalgen suites (see suite_util.hpp).
#include "suite_util.hpp"

#include <algorithm>
#include <map>

#include "trident/core/error.hpp"

namespace trident::data::evalgen {

int64_t draw_with_digits(EvalRng& rng, int64_t digits) {
  TRIDENT_CHECK(digits >= 1 && digits <= 18, "digits=", digits);
  if (digits == 1) return rng.between(0, 9);
  int64_t lo = 1;
  for (int64_t i = 1; i < digits; ++i) lo *= 10;
  return rng.between(lo, lo * 10 - 1);
}

int digit_count(int64_t v) {
  int n = 1;
  for (uint64_t u = v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v); u >= 10; u /= 10) ++n;
  return n;
}

std::string with_commas(int64_t v) {
  const std::string d = std::to_string(v < 0 ? 0 - static_cast<uint64_t>(v) : static_cast<uint64_t>(v));
  std::string out;
  for (size_t i = 0; i < d.size(); ++i) {
    if (i > 0 && (d.size() - i) % 3 == 0) out += ',';
    out += d[i];
  }
  return v < 0 ? "-" + out : out;
}

std::string random_letters(EvalRng& rng, int64_t len) {
  std::string s;
  for (int64_t i = 0; i < len; ++i) s += static_cast<char>('a' + rng.below(26));
  return s;
}

std::vector<std::string> distinct_words(EvalRng& rng, const std::vector<std::string>& words, int64_t k) {
  TRIDENT_CHECK(k >= 0 && static_cast<size_t>(k) <= words.size(), "k=", k, " of ", words.size(), " words");
  std::vector<std::string> pool = words;  // a partial Fisher-Yates shuffle
  for (int64_t i = 0; i < k; ++i) std::swap(pool[i], pool[i + rng.below(pool.size() - i)]);
  pool.resize(k);
  return pool;
}

std::string join(const std::vector<std::string>& items, const std::string& sep) {
  std::string out;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? sep : "") + items[i];
  return out;
}

std::vector<std::string> split(const std::string& s, const std::string& sep) {
  std::vector<std::string> out;
  size_t i = 0;
  for (size_t at; (at = s.find(sep, i)) != std::string::npos; i = at + sep.size()) out.push_back(s.substr(i, at - i));
  out.push_back(s.substr(i));
  return out;
}

Json string_array(const std::vector<std::string>& items) {
  Json a = Json::array();
  for (const std::string& s : items) a.push_back(Json(s));
  return a;
}

Json int_array(const std::vector<int64_t>& items) {
  Json a = Json::array();
  for (int64_t v : items) a.push_back(Json(v));
  return a;
}

std::vector<std::string> strings_of(const Json& array) {
  std::vector<std::string> out;
  for (const Json& j : array.as_array()) out.push_back(j.as_string());
  return out;
}

std::vector<int64_t> ints_of(const Json& array) {
  std::vector<int64_t> out;
  for (const Json& j : array.as_array()) out.push_back(j.as_int());
  return out;
}

std::vector<std::string> integer_near_misses(int64_t v) {
  std::vector<std::string> out = {std::to_string(v + 1), std::to_string(v - 1)};
  const std::string d = std::to_string(v < 0 ? -v : v), sign = v < 0 ? "-" : "";
  for (size_t i = d.size(); i-- > 0;) {  // one digit off by one, from the last digit up
    for (int step : {1, -1}) {
      std::string t = d;
      const int digit = t[i] - '0' + step;
      if (digit < 0 || digit > 9 || (i == 0 && digit == 0 && d.size() > 1)) continue;
      t[i] = static_cast<char>('0' + digit);
      out.push_back(sign + t);
    }
  }
  for (size_t i = 0; i + 1 < d.size(); ++i) {  // neighbouring digits swapped
    std::string t = d;
    std::swap(t[i], t[i + 1]);
    if (t[0] != '0') out.push_back(sign + t);
  }
  for (int64_t step : {10, -10, 2, -2, 3, -3, 100, -100, 5, -5, 4, -4})
    out.push_back(std::to_string(v + step));
  return out;
}

std::vector<std::string> string_near_misses(const std::string& s) {
  std::vector<std::string> out;
  for (size_t i = 0; i + 1 < s.size(); ++i) {
    std::string t = s;
    std::swap(t[i], t[i + 1]);
    out.push_back(t);
  }
  for (size_t i = 0; i < s.size(); ++i) {
    out.push_back(s.substr(0, i) + s.substr(i + 1));
    out.push_back(s.substr(0, i + 1) + s.substr(i));
    std::string t = s;
    t[i] = t[i] == 'z' ? 'a' : t[i] == 'Z' ? 'A' : t[i] == '9' ? '0' : static_cast<char>(t[i] + 1);
    out.push_back(t);
  }
  return out;
}

std::vector<std::vector<std::string>> list_near_misses(const std::vector<std::string>& items) {
  std::vector<std::vector<std::string>> out;
  const size_t n = items.size();
  for (size_t i = 0; i + 1 < n; ++i) {
    auto t = items;
    std::swap(t[i], t[i + 1]);
    out.push_back(t);
  }
  for (size_t i = 0; i < n; ++i)
    for (size_t j = i + 2; j < n; ++j) {
      auto t = items;
      std::swap(t[i], t[j]);
      out.push_back(t);
    }
  if (n > 1) {
    auto left = items, right = items;
    std::rotate(left.begin(), left.begin() + 1, left.end());
    std::rotate(right.begin(), right.end() - 1, right.end());
    out.push_back(left);
    out.push_back(right);
  }
  for (size_t i = 0; i < n; ++i) {
    auto dropped = items, doubled = items;
    dropped.erase(dropped.begin() + i);
    doubled.insert(doubled.begin() + i, items[i]);
    out.push_back(dropped);
    out.push_back(doubled);
  }
  return out;
}

const std::vector<std::string>& operation_phrases(const std::string& op) {
  static const std::map<std::string, std::vector<std::string>> kPhrases = {
      {"add", {"+", "plus", "sum", "add", "added", "adding", "total"}},
      {"subtract", {"-", "minus", "subtract", "subtracted", "subtracting", "difference", "take away", "less than"}},
      {"multiply", {"*", "\u00d7", "times", "product", "multiply", "multiplied", "multiplying"}},
      {"divide", {"/", "\u00f7", "divide", "divided", "dividing", "quotient"}},
  };
  const auto it = kPhrases.find(op);
  TRIDENT_CHECK(it != kPhrases.end(), "no arithmetic operation ", op);
  return it->second;
}

std::vector<std::string> other_operation_phrases(const std::string& op) {
  std::vector<std::string> out;
  for (const char* other : {"add", "subtract", "multiply", "divide"})
    if (op != other)
      for (const std::string& p : operation_phrases(other)) out.push_back(p);
  return out;
}

const std::vector<std::string>& reordering_phrases() {
  static const std::vector<std::string> kPhrases = {
      "reverse",    "reversed",   "backwards", "backward",   "sort",       "sorted",    "alphabetical",
      "alphabetically", "ascending", "descending", "increasing", "decreasing", "shuffle", "shuffled"};
  return kPhrases;
}

const std::vector<std::string>& selection_phrases() {
  static const std::vector<std::string> kPhrases = {"only",      "except",     "without",  "every other", "uppercase",
                                                    "upper case", "capital",    "capitals", "capitalized", "lowercase",
                                                    "how many",   "count",      "remove",   "delete"};
  return kPhrases;
}

}  // namespace trident::data::evalgen
