// A small JSON document model for the files trident reads and writes besides its own formats:
// JSONL training examples, tokenizer.json, safetensors headers, HF config.json, prep.json.
// Parsing is strict RFC 8259 (no comments, no trailing commas), strings are unescaped to UTF-8
// (surrogate pairs joined) and object members keep their file order. Errors are ConfigError
// "line L, column C: what" so callers can prefix the file name.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace trident {

class Json {
 public:
  enum class Kind { kNull, kBool, kNumber, kString, kArray, kObject };
  using Array = std::vector<Json>;
  using Object = std::vector<std::pair<std::string, Json>>;

  Json() = default;  // null
  Json(std::nullptr_t) {}
  Json(bool b) : value_(b) {}
  Json(double d) : value_(d) {}
  Json(int v) : value_(static_cast<double>(v)) {}
  Json(int64_t v) : value_(static_cast<double>(v)) {}
  Json(uint64_t v) : value_(static_cast<double>(v)) {}
  Json(std::string s) : value_(std::move(s)) {}
  Json(std::string_view s) : value_(std::string(s)) {}
  Json(const char* s) : value_(std::string(s)) {}
  static Json array() { Json j; j.value_ = Array{}; return j; }
  static Json object() { Json j; j.value_ = Object{}; return j; }

  // Throws ConfigError "line L, column C: what" for malformed JSON (nesting limit 256).
  static Json parse(std::string_view text);

  Kind kind() const { return static_cast<Kind>(value_.index()); }
  bool is_null() const { return kind() == Kind::kNull; }
  bool is_bool() const { return kind() == Kind::kBool; }
  bool is_number() const { return kind() == Kind::kNumber; }
  bool is_string() const { return kind() == Kind::kString; }
  bool is_array() const { return kind() == Kind::kArray; }
  bool is_object() const { return kind() == Kind::kObject; }

  // Typed access; the wrong kind is a ConfigError naming the expected and actual kinds.
  bool as_bool() const;
  double as_number() const;
  int64_t as_int() const;  // a number with an exact integral value in int64 range
  const std::string& as_string() const;
  const Array& as_array() const;
  const Object& as_object() const;

  // Object member by key (first match), nullptr when absent or when this is not an object.
  const Json* find(std::string_view key) const;
  // Object member by key; ConfigError "missing key \"k\"" when absent.
  const Json& at(std::string_view key) const;

  // Building.
  void push_back(Json value);              // array
  void set(std::string key, Json value);   // object: replaces an existing key
  // Object: appends without looking for an existing key (linear-time building, e.g. a parser;
  // find() then returns the first of duplicate keys).
  void append(std::string key, Json value);
  // Compact text (no spaces); integral numbers below 2^53 print without a fraction.
  std::string dump() const;

 private:
  void dump_to(std::string& out) const;
  std::variant<std::nullptr_t, bool, double, std::string, Array, Object> value_;
};

const char* json_kind_name(Json::Kind kind);

// `s` as a JSON string literal with quotes; control characters, '"' and '\\' escaped, other
// bytes (UTF-8) passed through.
std::string json_quote(std::string_view s);

// Offset of the first byte of `s` that is not part of well-formed UTF-8 (no overlong forms,
// no surrogates, nothing above U+10FFFF), or std::string_view::npos when all of it is.
size_t invalid_utf8_at(std::string_view s);

// Appends code point `cp` (<= 0x10FFFF) to `out` as UTF-8.
void append_utf8(std::string& out, uint32_t cp);

}  // namespace trident
