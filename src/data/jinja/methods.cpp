// Methods of str, dict and list values and the global functions of chat templates (methods.hpp).
#include "methods.hpp"

#include <cstdio>
#include <memory>

#include "ops.hpp"
#include "text.hpp"

namespace trident::data::jinja {

namespace {

constexpr std::string_view kStrMethods[] = {
    "strip", "lstrip", "rstrip", "split", "rsplit", "splitlines", "startswith", "endswith", "upper", "lower",
    "title", "capitalize", "replace", "find", "rfind", "count", "join", "isdigit", "isalpha", "isalnum",
    "isspace", "isupper", "islower", "format"};
constexpr std::string_view kDictMethods[] = {"items", "keys", "values", "get", "update", "pop", "setdefault",
                                             "clear", "popitem", "copy"};
constexpr std::string_view kListMethods[] = {"count", "index", "append", "extend", "pop", "insert", "remove",
                                             "sort", "reverse", "clear", "copy"};
constexpr std::string_view kMutating[] = {"update", "pop", "setdefault", "clear", "popitem", "append", "extend",
                                          "insert", "remove", "sort", "reverse"};
constexpr int64_t kMaxRange = 100000;  // jinja2's sandbox limit

template <size_t N>
bool listed(const std::string_view (&names)[N], const std::string& name) {
  for (std::string_view n : names)
    if (n == name) return true;
  return false;
}

const std::string& string_arg(const Value* v, const std::string& what) {
  if (!v || !v->is_string()) throw TemplateError(what + " must be a string");
  return v->as_string();
}

std::optional<std::string> optional_string(const Value* v, const std::string& what) {
  if (!v || v->is_none()) return std::nullopt;
  return string_arg(v, what);
}

Value string_list(std::vector<std::string> parts) {
  List out;
  for (std::string& p : parts) out.emplace_back(std::move(p));
  return Value::list(std::move(out));
}

bool all_code_points(const std::string& s, bool (*pred)(uint32_t)) {
  if (s.empty()) return false;
  for (const std::string& c : code_points(s))
    if (!pred(static_cast<unsigned char>(c[0]) < 0x80 ? static_cast<uint32_t>(c[0]) : 0x80)) return false;
  return true;
}

bool affix_matches(const std::string& s, const Value& affix, bool prefix, const std::string& method) {
  auto one = [&](const Value& a) {
    const std::string& t = string_arg(&a, method + "'s argument");
    return prefix ? s.starts_with(t) : s.ends_with(t);
  };
  if (affix.kind() != Value::Kind::kTuple) return one(affix);
  for (const Value& a : affix.as_list())
    if (one(a)) return true;
  return false;
}

Value str_method(const std::string& s, const std::string& name, const CallArgs& a) {
  const std::string m = "str." + name + "()";
  if (name == "strip" || name == "lstrip" || name == "rstrip") {
    a.check(m, 1, {"chars"});
    const StripSide side = name == "strip" ? StripSide::kBoth : name == "lstrip" ? StripSide::kLeft : StripSide::kRight;
    return Value(py_strip(s, optional_string(a.get(0, "chars"), m + "'s chars"), side));
  }
  if (name == "split" || name == "rsplit") {
    a.check(m, 2, {"sep", "maxsplit"});
    const std::optional<std::string> sep = optional_string(a.get(0, "sep"), m + "'s separator");
    if (sep && sep->empty()) throw TemplateError("empty separator");
    const int64_t maxsplit = int_argument(a.get(1, "maxsplit"), -1, m + "'s maxsplit");
    return string_list(name == "split" ? py_split(s, sep, maxsplit) : py_rsplit(s, sep, maxsplit));
  }
  if (name == "splitlines") {
    a.check(m, 1, {"keepends"});
    const bool keep = a.get(0, "keepends") && a.get(0, "keepends")->truthy();
    std::vector<std::string> lines;
    size_t begin = 0;
    for (size_t i = 0; i < s.size(); ++i) {
      if (s[i] != '\n' && s[i] != '\r') continue;
      const size_t end = s[i] == '\r' && i + 1 < s.size() && s[i + 1] == '\n' ? i + 2 : i + 1;
      lines.push_back(s.substr(begin, (keep ? end : i) - begin));
      begin = end;
      i = end - 1;
    }
    if (begin < s.size()) lines.push_back(s.substr(begin));
    return string_list(std::move(lines));
  }
  if (name == "startswith" || name == "endswith") {
    a.check(m, 1, {});
    if (!a.get(0, "")) throw TemplateError(m + " takes one argument");
    return Value(affix_matches(s, *a.get(0, ""), name == "startswith", m));
  }
  if (name == "upper" || name == "lower" || name == "title" || name == "capitalize") {
    a.check(m, 0, {});
    return Value(name == "upper" ? py_upper(s) : name == "lower" ? py_lower(s) : name == "title" ? py_title(s) : py_capitalize(s));
  }
  if (name == "replace") {
    a.check(m, 3, {});
    const int64_t count = int_argument(a.get(2, "count"), -1, m + "'s count");
    return Value(py_replace(s, string_arg(a.get(0, ""), m + "'s old"), string_arg(a.get(1, ""), m + "'s new"), count));
  }
  if (name == "find" || name == "rfind" || name == "count") {
    a.check(m, 1, {});
    const std::string& t = string_arg(a.get(0, ""), m + "'s argument");
    if (name == "count") {
      if (t.empty()) return Value(static_cast<int64_t>(code_point_count(s)) + 1);
      int64_t n = 0;
      for (size_t at = s.find(t); at != std::string::npos; at = s.find(t, at + t.size())) ++n;
      return Value(n);
    }
    const size_t at = name == "find" ? s.find(t) : s.rfind(t);
    return Value(at == std::string::npos ? int64_t(-1) : static_cast<int64_t>(code_point_count(s.substr(0, at))));
  }
  if (name == "join") {
    a.check(m, 1, {});
    if (!a.get(0, "")) throw TemplateError(m + " takes one argument");
    std::string out;
    bool first = true;
    for (const Value& item : iterate(*a.get(0, ""))) {
      if (!first) out += s;
      out += string_arg(&item, m + "'s items");
      first = false;
    }
    return Value(std::move(out));
  }
  if (name == "format") throw TemplateError("str.format() is not supported (use ~ or the format filter's %s)");
  a.check(m, 0, {});
  if (name == "isspace") {
    if (s.empty()) return Value(false);
    for (const std::string& c : code_points(s))
      if (py_strip(c, std::nullopt, StripSide::kBoth).size() == c.size()) return Value(false);
    return Value(true);
  }
  if (name == "isupper" || name == "islower") {
    const bool upper = name == "isupper";
    const std::string other = upper ? py_upper(s) : py_lower(s), opposite = upper ? py_lower(s) : py_upper(s);
    return Value(other == s && opposite != s);
  }
  auto digit = [](uint32_t c) { return c >= '0' && c <= '9'; };
  auto alpha = [](uint32_t c) { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  auto alnum = [](uint32_t c) { return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); };
  if (name == "isdigit") return Value(all_code_points(s, digit));
  if (name == "isalpha") return Value(all_code_points(s, alpha));
  return Value(all_code_points(s, alnum));
}

Value dict_method(const Value& d, const std::string& name, const CallArgs& a) {
  const std::string m = "dict." + name + "()";
  if (name == "get") {
    a.check(m, 2, {});
    if (!a.get(0, "")) throw TemplateError(m + " takes a key");
    const Value* v = d.find(*a.get(0, ""));
    return v ? *v : a.get(1, "") ? *a.get(1, "") : Value(nullptr);
  }
  a.check(m, 0, {});
  if (name == "copy") return d;
  List out;
  for (const auto& [k, v] : d.as_dict()) {
    if (name == "items") out.push_back(Value::tuple({k, v}));
    else out.push_back(name == "keys" ? k : v);
  }
  return Value::list(std::move(out));
}

Value list_method(const Value& l, const std::string& name, const CallArgs& a) {
  const std::string m = std::string(l.type_name()) + "." + name + "()";
  if (name == "copy") return l;
  a.check(m, 1, {});
  if (!a.get(0, "")) throw TemplateError(m + " takes one argument");
  int64_t count = 0;
  for (size_t i = 0; i < l.as_list().size(); ++i) {
    if (!py_equal(l.as_list()[i], *a.get(0, ""))) continue;
    if (name == "index") return Value(static_cast<int64_t>(i));
    ++count;
  }
  if (name == "index") throw TemplateError(py_repr(*a.get(0, "")) + " is not in list");
  return Value(count);
}

Dict keyword_dict(const std::string& callee, const CallArgs& a) {
  if (a.positional.size() > 1) throw TemplateError(callee + " takes at most one positional argument");
  Dict out;
  if (!a.positional.empty()) {
    const Value& init = a.positional[0];
    if (!init.is_dict()) throw TemplateError(callee + "'s positional argument must be a dict");
    out = init.as_dict();
  }
  for (const auto& [k, v] : a.keywords) {
    bool replaced = false;
    for (auto& [ok, ov] : out)
      if (ok.is_string() && ok.as_string() == k) ov = v, replaced = true;
    if (!replaced) out.emplace_back(Value(k), v);
  }
  return out;
}

}  // namespace

int64_t int_argument(const Value* v, int64_t absent, const std::string& what) {
  if (!v) return absent;
  if (!v->is_integral()) throw TemplateError(what + " must be an integer");
  return v->as_int();
}

const Value* CallArgs::get(size_t index, const std::string& name) const {
  if (index < positional.size()) return &positional[index];
  for (const auto& [k, v] : keywords)
    if (!name.empty() && k == name) return &v;
  return nullptr;
}

void CallArgs::check(const std::string& callee, size_t max_positional, const std::vector<std::string>& names) const {
  if (positional.size() > max_positional)
    throw TemplateError(callee + " takes at most " + std::to_string(max_positional) + " positional arguments (" +
                        std::to_string(positional.size()) + " given)");
  for (const auto& [k, v] : keywords) {
    bool known = false;
    for (const std::string& n : names) known = known || n == k;
    if (!known) throw TemplateError(callee + " got an unexpected keyword argument '" + k + "'");
  }
}

bool has_method(const Value& object, const std::string& name) {
  if (object.is_string()) return listed(kStrMethods, name);
  if (object.is_dict()) return listed(kDictMethods, name);
  if (object.is_sequence()) return listed(kListMethods, name);
  return false;
}

Value bind_method(const Value& object, const std::string& name) {
  return Value::callable(std::make_shared<const Callable>(Callable{Callable::Kind::kMethod, name, object, nullptr}));
}

Value call_method(const Callable& method, const CallArgs& args) {
  const Value& self = method.self;
  if (listed(kMutating, method.name) && !self.is_string())
    throw TemplateError("access to attribute '" + method.name + "' of '" + self.type_name() +
                        "' object is unsafe (templates cannot modify values; use set or namespace())");
  if (self.is_string()) return str_method(self.as_string(), method.name, args);
  if (self.is_dict()) return dict_method(self, method.name, args);
  return list_method(self, method.name, args);
}

bool is_global_function(const std::string& name) {
  return name == "range" || name == "namespace" || name == "dict" || name == "raise_exception" || name == "strftime_now";
}

Value call_global(const std::string& name, const CallArgs& a) {
  if (name == "namespace") return Value::namespace_of(keyword_dict("namespace()", a));
  if (name == "dict") return Value::dict(keyword_dict("dict()", a));
  if (name == "raise_exception") {
    a.check("raise_exception()", 1, {});
    throw TemplateError("the template raised an exception: " + (a.positional.empty() ? "" : py_str(a.positional[0])));
  }
  if (name == "strftime_now") {
    a.check("strftime_now()", 1, {});
    return Value(fixed_strftime(string_arg(a.get(0, ""), "strftime_now()'s format")));
  }
  // range(stop) or range(start, stop[, step]).
  a.check("range()", 3, {});
  if (a.positional.empty()) throw TemplateError("range expected at least 1 argument, got 0");
  int64_t start = 0, stop = 0, step = 1;
  if (a.positional.size() == 1) {
    stop = int_argument(&a.positional[0], 0, "range()'s argument");
  } else {
    start = int_argument(&a.positional[0], 0, "range()'s start");
    stop = int_argument(&a.positional[1], 0, "range()'s stop");
    step = int_argument(a.get(2, ""), 1, "range()'s step");
  }
  if (step == 0) throw TemplateError("range() arg 3 must not be zero");
  List out;
  for (int64_t i = start; step > 0 ? i < stop : i > stop; i += step) {
    if (static_cast<int64_t>(out.size()) == kMaxRange) throw TemplateError("range too big (more than 100000 items)");
    out.emplace_back(i);
  }
  return Value::list(std::move(out));
}

std::string fixed_strftime(const std::string& format) {
  static constexpr const char* kDay = "Friday";
  static constexpr const char* kMonth = "July";
  std::string out;
  for (size_t i = 0; i < format.size(); ++i) {
    if (format[i] != '%' || i + 1 == format.size()) {
      out += format[i];
      continue;
    }
    switch (format[++i]) {
      case 'a': out += std::string(kDay).substr(0, 3); break;
      case 'A': out += kDay; break;
      case 'b': out += std::string(kMonth).substr(0, 3); break;
      case 'B': out += kMonth; break;
      case 'd': out += "26"; break;
      case 'e': out += "26"; break;
      case 'H': case 'M': case 'S': out += "00"; break;
      case 'I': out += "12"; break;
      case 'j': out += "208"; break;
      case 'm': out += "07"; break;
      case 'p': out += "AM"; break;
      case 'y': out += "24"; break;
      case 'Y': out += "2024"; break;
      case '%': out += '%'; break;
      default: throw TemplateError(std::string("strftime_now: the directive %") + format[i] + " is not supported");
    }
  }
  return out;
}

}  // namespace trident::data::jinja
