// Template values: construction, Python truthiness, str() and repr(), equality and ordering,
// and the conversion of JSON context values.
#include "value.hpp"

#include <charconv>
#include <cmath>
#include <cstdio>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident::data::jinja {

Value Value::list(List items) {
  Value v(nullptr);
  v.kind_ = Kind::kList;
  v.data_ = std::make_shared<const List>(std::move(items));
  return v;
}

Value Value::tuple(List items) {
  Value v = list(std::move(items));
  v.kind_ = Kind::kTuple;
  return v;
}

Value Value::dict(Dict items) {
  Value v(nullptr);
  v.kind_ = Kind::kDict;
  v.data_ = std::make_shared<const Dict>(std::move(items));
  return v;
}

Value Value::namespace_of(Dict attrs) {
  Value v(nullptr);
  v.kind_ = Kind::kNamespace;
  v.data_ = std::make_shared<Namespace>(Namespace{std::move(attrs)});
  return v;
}

Value Value::callable(std::shared_ptr<const Callable> c) {
  Value v(nullptr);
  v.kind_ = Kind::kCallable;
  v.data_ = std::move(c);
  return v;
}

int64_t Value::as_int() const { return kind_ == Kind::kBool ? int64_t(as_bool()) : std::get<int64_t>(data_); }

double Value::as_float() const {
  return kind_ == Kind::kFloat ? std::get<double>(data_) : static_cast<double>(as_int());
}

bool Value::truthy() const {
  switch (kind_) {
    case Kind::kUndefined:
    case Kind::kNone: return false;
    case Kind::kBool: return as_bool();
    case Kind::kInt: return as_int() != 0;
    case Kind::kFloat: return as_float() != 0.0;
    case Kind::kString: return !as_string().empty();
    case Kind::kList:
    case Kind::kTuple: return !as_list().empty();
    case Kind::kDict: return !as_dict().empty();
    case Kind::kNamespace:
    case Kind::kCallable: return true;
  }
  return false;
}

const char* Value::type_name() const {
  switch (kind_) {
    case Kind::kUndefined: return "Undefined";
    case Kind::kNone: return "NoneType";
    case Kind::kBool: return "bool";
    case Kind::kInt: return "int";
    case Kind::kFloat: return "float";
    case Kind::kString: return "str";
    case Kind::kList: return "list";
    case Kind::kTuple: return "tuple";
    case Kind::kDict: return "dict";
    case Kind::kNamespace: return "Namespace";
    case Kind::kCallable: return as_callable().kind == Callable::Kind::kMacro ? "Macro" : "function";
  }
  return "object";
}

const Value* Value::find(const Value& key) const {
  for (const auto& [k, v] : as_dict())
    if (py_equal(k, key)) return &v;
  return nullptr;
}

std::string py_float_repr(double d) {
  if (std::isnan(d)) return "nan";
  if (std::isinf(d)) return d < 0 ? "-inf" : "inf";
  // Shortest round-trip digits, then Python's layout: fixed for 1e-4 <= |d| < 1e16, else
  // scientific with a two-digit exponent at least.
  char buf[64];
  const auto end = std::to_chars(buf, buf + sizeof buf, d, std::chars_format::scientific).ptr;
  std::string s(buf, end);
  const size_t e = s.find('e');
  const int exponent = std::stoi(s.substr(e + 1));
  const std::string sign = s[0] == '-' ? "-" : "";
  std::string digits;
  for (size_t i = 0; i < e; ++i)
    if (s[i] != '-' && s[i] != '.') digits += s[i];
  if (exponent >= -4 && exponent < 16) {
    std::string out;
    if (exponent < 0) {
      out = "0." + std::string(static_cast<size_t>(-exponent - 1), '0') + digits;
    } else if (static_cast<size_t>(exponent) + 1 >= digits.size()) {
      out = digits + std::string(static_cast<size_t>(exponent) + 1 - digits.size(), '0') + ".0";
    } else {
      out = digits.substr(0, static_cast<size_t>(exponent) + 1) + "." + digits.substr(static_cast<size_t>(exponent) + 1);
    }
    return sign + out;
  }
  std::string mantissa = digits.substr(0, 1);
  if (digits.size() > 1) mantissa.append(".").append(digits, 1);
  char exp[16];
  std::snprintf(exp, sizeof exp, "e%c%02d", exponent < 0 ? '-' : '+', std::abs(exponent));
  return sign + mantissa + exp;
}

namespace {

std::string repr_string(const std::string& s) {
  // Python prefers single quotes, and double quotes when the text has a ' but no ".
  const char quote = s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == quote || c == '\\') {
      out += '\\';
      out += static_cast<char>(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x20 || c == 0x7f) {
      char hex[8];
      std::snprintf(hex, sizeof hex, "\\x%02x", c);
      out += hex;
    } else {
      out += static_cast<char>(c);
    }
  }
  return out + quote;
}

std::string repr_items(const List& items, const char* open, const char* close, bool tuple) {
  std::string out = open;
  for (size_t i = 0; i < items.size(); ++i) out += (i ? ", " : "") + py_repr(items[i]);
  if (tuple && items.size() == 1) out += ",";
  return out + close;
}

std::string repr_dict(const Dict& d) {
  std::string out = "{";
  for (size_t i = 0; i < d.size(); ++i) out += (i ? ", " : "") + py_repr(d[i].first) + ": " + py_repr(d[i].second);
  return out + "}";
}

}  // namespace

std::string py_str(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kString: return v.as_string();
    default: return py_repr(v);
  }
}

std::string py_repr(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return "";
    case Value::Kind::kNone: return "None";
    case Value::Kind::kBool: return v.as_bool() ? "True" : "False";
    case Value::Kind::kInt: return std::to_string(v.as_int());
    case Value::Kind::kFloat: return py_float_repr(v.as_float());
    case Value::Kind::kString: return repr_string(v.as_string());
    case Value::Kind::kList: return repr_items(v.as_list(), "[", "]", false);
    case Value::Kind::kTuple: return repr_items(v.as_list(), "(", ")", true);
    case Value::Kind::kDict: return repr_dict(v.as_dict());
    case Value::Kind::kNamespace: return "<Namespace " + repr_dict(v.as_namespace().attrs) + ">";
    case Value::Kind::kCallable: return detail::concat("<", v.type_name(), " ", v.as_callable().name, ">");
  }
  return "";
}

bool py_equal(const Value& a, const Value& b) {
  using K = Value::Kind;
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() == b.as_int();
    return a.as_float() == b.as_float();
  }
  if (a.is_sequence() && b.is_sequence()) {
    if (a.kind() != b.kind() || a.as_list().size() != b.as_list().size()) return false;
    for (size_t i = 0; i < a.as_list().size(); ++i)
      if (!py_equal(a.as_list()[i], b.as_list()[i])) return false;
    return true;
  }
  if (a.kind() != b.kind()) return false;
  switch (a.kind()) {
    case K::kUndefined:
    case K::kNone: return true;
    case K::kString: return a.as_string() == b.as_string();
    case K::kDict: {
      if (a.as_dict().size() != b.as_dict().size()) return false;
      for (const auto& [k, v] : a.as_dict()) {
        const Value* other = b.find(k);
        if (!other || !py_equal(v, *other)) return false;
      }
      return true;
    }
    case K::kNamespace: return &a.as_namespace() == &b.as_namespace();
    case K::kCallable: return &a.as_callable() == &b.as_callable();
    default: return false;
  }
}

bool py_less(const Value& a, const Value& b, bool& comparable) {
  comparable = true;
  if (a.is_number() && b.is_number()) {
    if (a.is_integral() && b.is_integral()) return a.as_int() < b.as_int();
    return a.as_float() < b.as_float();
  }
  if (a.is_string() && b.is_string()) return a.as_string() < b.as_string();  // UTF-8 bytes order = code points
  if (a.is_sequence() && a.kind() == b.kind()) {
    const List &x = a.as_list(), &y = b.as_list();
    for (size_t i = 0; i < x.size() && i < y.size(); ++i) {
      if (py_equal(x[i], y[i])) continue;
      return py_less(x[i], y[i], comparable);
    }
    return x.size() < y.size();
  }
  comparable = false;
  return false;
}

Value from_json(const Json& json) {
  switch (json.kind()) {
    case Json::Kind::kNull: return Value(nullptr);
    case Json::Kind::kBool: return Value(json.as_bool());
    case Json::Kind::kNumber: {
      // JSON's 3 is Python's int 3, 3.0 and 3.5 floats; the Json model keeps only the double,
      // so integral values within 2^53 become ints.
      const double d = json.as_number();
      if (std::nearbyint(d) == d && std::fabs(d) < 9007199254740992.0) return Value(static_cast<int64_t>(d));
      return Value(d);
    }
    case Json::Kind::kString: return Value(json.as_string());
    case Json::Kind::kArray: {
      List items;
      for (const Json& item : json.as_array()) items.push_back(from_json(item));
      return Value::list(std::move(items));
    }
    case Json::Kind::kObject: {
      Dict items;
      for (const auto& [key, item] : json.as_object()) items.emplace_back(Value(key), from_json(item));
      return Value::dict(std::move(items));
    }
  }
  return Value(nullptr);
}

}  // namespace trident::data::jinja
