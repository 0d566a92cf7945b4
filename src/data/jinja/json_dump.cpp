// json.dumps for template values (the tojson filter): Python's separators, indentation, key
// conversion and float repr, so tool schemas and arguments print as transformers prints them.
#include <algorithm>
#include <cmath>
#include <cstdio>

#include "filters.hpp"
#include "ops.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data::jinja {

namespace {

void put_string(std::string& out, const std::string& s, bool ensure_ascii) {
  out += '"';
  for (size_t i = 0; i < s.size();) {
    const auto c = static_cast<unsigned char>(s[i]);
    char hex[16];
    if (c == '"' || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\b') {
      out += "\\b";
    } else if (c == '\f') {
      out += "\\f";
    } else if (c < 0x20 || (ensure_ascii && c == 0x7f)) {
      std::snprintf(hex, sizeof hex, "\\u%04x", c);
      out += hex;
    } else if (c >= 0x80 && ensure_ascii) {
      const unicode::Decoded d = unicode::decode_utf8(s, i);
      uint32_t cp = d.cp == unicode::kInvalid ? 0xFFFD : d.cp;
      if (cp >= 0x10000) {
        cp -= 0x10000;
        std::snprintf(hex, sizeof hex, "\\u%04x\\u%04x", 0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF));
      } else {
        std::snprintf(hex, sizeof hex, "\\u%04x", cp);
      }
      out += hex;
      i += d.length;
      continue;
    } else {
      out += static_cast<char>(c);
    }
    ++i;
  }
  out += '"';
}

std::string number_text(const Value& v) {
  if (v.kind() == Value::Kind::kBool) return v.as_bool() ? "true" : "false";
  if (v.is_integral()) return std::to_string(v.as_int());
  const double d = v.as_float();
  if (std::isnan(d)) return "NaN";
  if (std::isinf(d)) return d < 0 ? "-Infinity" : "Infinity";
  return py_float_repr(d);
}

// Python converts dict keys of these kinds to strings; others are a TypeError.
std::string key_text(const Value& k) {
  if (k.is_string()) return k.as_string();
  if (k.is_none()) return "null";
  if (k.is_number()) return number_text(k);
  throw TemplateError("keys must be str, int, float, bool or None, not " + std::string(k.type_name()));
}

class Dumper {
 public:
  explicit Dumper(const JsonDumpOptions& o) : o_(o) {
    item_sep_ = o.item_separator.empty() ? (o.has_indent ? "," : ", ") : o.item_separator;
    key_sep_ = o.key_separator.empty() ? ": " : o.key_separator;
  }

  void dump(const Value& v, int level, std::string& out) {
    if (level > 200) throw TemplateError("tojson: nested more than 200 levels deep");
    switch (v.kind()) {
      case Value::Kind::kNone: out += "null"; return;
      case Value::Kind::kBool:
      case Value::Kind::kInt:
      case Value::Kind::kFloat: out += number_text(v); return;
      case Value::Kind::kString: put_string(out, v.as_string(), o_.ensure_ascii); return;
      case Value::Kind::kList:
      case Value::Kind::kTuple: {
        const List& items = v.as_list();
        if (items.empty()) return void(out += "[]");
        out += '[';
        for (size_t i = 0; i < items.size(); ++i) {
          out += i ? item_sep_ : "";
          newline(level + 1, out);
          dump(items[i], level + 1, out);
        }
        newline(level, out);
        out += ']';
        return;
      }
      case Value::Kind::kDict: {
        std::vector<std::pair<std::string, const Value*>> items;
        for (const auto& [k, value] : v.as_dict()) items.emplace_back(key_text(k), &value);
        if (o_.sort_keys) {
          for (const auto& [k, value] : v.as_dict())
            if (!k.is_string()) throw TemplateError("tojson(sort_keys=true) needs string keys");
          std::stable_sort(items.begin(), items.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
        }
        if (items.empty()) return void(out += "{}");
        out += '{';
        for (size_t i = 0; i < items.size(); ++i) {
          out += i ? item_sep_ : "";
          newline(level + 1, out);
          put_string(out, items[i].first, o_.ensure_ascii);
          out += key_sep_;
          dump(*items[i].second, level + 1, out);
        }
        newline(level, out);
        out += '}';
        return;
      }
      default: throw TemplateError("Object of type " + std::string(v.type_name()) + " is not JSON serializable");
    }
  }

 private:
  void newline(int level, std::string& out) const {
    if (!o_.has_indent) return;
    out += '\n';
    for (int i = 0; i < level; ++i) out += o_.indent;
    if (out.size() > kMaxStringBytes) throw TemplateError("tojson: text too long (more than 64 MiB)");
  }

  const JsonDumpOptions& o_;
  std::string item_sep_, key_sep_;
};

}  // namespace

std::string json_dumps(const Value& value, const JsonDumpOptions& options) {
  std::string out;
  Dumper(options).dump(value, 0, out);
  return out;
}

}  // namespace trident::data::jinja
