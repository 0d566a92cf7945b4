// Config values from their text, each error a ConfigError naming the key: the one parser of
// integers, numbers and truth values that the config reader and the model's key table share.
#pragma once
#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "trident/core/error.hpp"

namespace trident {

inline int64_t integer_value(const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  TRIDENT_CONFIG_CHECK(!text.empty() && *end == '\0' && errno == 0, key, ": expected an integer, got '", text, "'");
  return v;
}

inline int int32_value(const std::string& key, const std::string& text) {
  const int64_t v = integer_value(key, text);
  TRIDENT_CONFIG_CHECK(v >= INT32_MIN && v <= INT32_MAX, key, ": ", v, " is out of range");
  return static_cast<int>(v);
}

inline double number_value(const std::string& key, const std::string& text) {
  char* end = nullptr;
  errno = 0;
  const double v = std::strtod(text.c_str(), &end);
  TRIDENT_CONFIG_CHECK(!text.empty() && *end == '\0' && errno == 0, key, ": expected a number, got '", text, "'");
  TRIDENT_CONFIG_CHECK(std::isfinite(v), key, ": expected a finite number, got '", text, "'");
  return v;
}

inline bool boolean_value(const std::string& key, const std::string& text) {
  std::string s = text;
  std::transform(s.begin(), s.end(), s.begin(), ::tolower);
  if (s == "true" || s == "1" || s == "yes" || s == "on") return true;
  if (s == "false" || s == "0" || s == "no" || s == "off") return false;
  throw ConfigError(key + ": expected true or false, got '" + text + "'");
}

}  // namespace trident
