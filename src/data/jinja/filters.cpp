// The filters of chat templates (filters.hpp), each as jinja2 3.1 defines it.
#include "filters.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>

#include "ops.hpp"
#include "text.hpp"

namespace trident::data::jinja {

namespace {

constexpr std::string_view kFilters[] = {
    "abs", "attr", "capitalize", "count", "d", "default", "dictsort", "first", "float", "format", "indent", "int",
    "items", "join", "last", "length", "list", "lower", "map", "max", "min", "reject", "rejectattr", "replace",
    "reverse", "round", "safe", "select", "selectattr", "sort", "string", "sum", "title", "tojson", "trim",
    "unique", "upper", "wordcount"};

bool flag(const Value* v) { return v && v->truthy(); }

std::string spaces(int64_t n) {
  if (n > 4096) throw TemplateError("an indent of more than 4096 spaces");
  return std::string(static_cast<size_t>(std::max<int64_t>(0, n)), ' ');
}

Value attribute_path(const Value& item, const Value& attribute) {
  // jinja's make_attrgetter: "a.b" walks attributes, a number indexes.
  if (attribute.is_integral()) return get_item(item, attribute);
  Value v = item;
  for (const std::string& part : py_split(py_str(attribute), std::string("."), -1)) {
    const bool digits = !part.empty() && std::all_of(part.begin(), part.end(), [](char c) { return c >= '0' && c <= '9'; });
    v = digits ? get_item(v, Value(static_cast<int64_t>(std::atoll(part.c_str())))) : get_item(v, Value(part));
  }
  return v;
}

// The key a sort, min, max or unique compares by: the attribute, lower-cased unless case matters.
Value sort_key(const Value& item, const Value* attribute, bool case_sensitive) {
  Value key = attribute && !attribute->is_none() ? attribute_path(item, *attribute) : item;
  if (!case_sensitive && key.is_string()) key = Value(py_lower(key.as_string()));
  return key;
}

bool less(const Value& a, const Value& b) {
  bool comparable = true;
  const bool r = py_less(a, b, comparable);
  if (!comparable)
    throw TemplateError("'<' not supported between instances of '" + std::string(a.type_name()) + "' and '" + b.type_name() + "'");
  return r;
}

CallArgs rest_of(const CallArgs& a, size_t from) {
  CallArgs rest;
  for (size_t i = from; i < a.positional.size(); ++i) rest.positional.push_back(a.positional[i]);
  rest.keywords = a.keywords;
  return rest;
}

Value select(const Value& input, const CallArgs& a, bool by_attribute, bool keep) {
  const size_t test_at = by_attribute ? 1 : 0;
  if (by_attribute && a.positional.empty()) throw TemplateError("selectattr/rejectattr need an attribute name");
  const std::string test = a.positional.size() > test_at ? py_str(a.positional[test_at]) : "";
  if (!test.empty() && !is_known_test(test)) throw TemplateError("no test named '" + test + "'");
  const CallArgs test_args = rest_of(a, test_at + 1);
  List out;
  for (const Value& item : iterate(input)) {
    const Value v = by_attribute ? attribute_path(item, a.positional[0]) : item;
    const bool passes = test.empty() ? v.truthy() : apply_test(test, v, test_args);
    if (passes == keep) out.push_back(item);
  }
  return Value::list(std::move(out));
}

Value map_filter(const Value& input, const CallArgs& a) {
  List out;
  if (const Value* attribute = a.get(99, "attribute")) {
    const Value* fallback = a.get(99, "default");
    for (const Value& item : iterate(input)) {
      Value v = attribute_path(item, *attribute);
      out.push_back(v.is_undefined() && fallback ? *fallback : v);
    }
    return Value::list(std::move(out));
  }
  if (a.positional.empty()) throw TemplateError("map needs a filter name or attribute=");
  const std::string filter = py_str(a.positional[0]);
  if (!is_known_filter(filter)) throw TemplateError("no filter named '" + filter + "'");
  const CallArgs filter_args = rest_of(a, 1);
  for (const Value& item : iterate(input)) out.push_back(apply_filter(filter, item, filter_args));
  return Value::list(std::move(out));
}

Value to_int(const Value& v, const Value* fallback, const Value* base_arg) {
  const Value otherwise = fallback ? *fallback : Value(int64_t(0));
  if (v.is_integral()) return Value(v.as_int());
  if (v.is_number()) {
    const double d = v.as_float();
    return std::isfinite(d) && std::fabs(d) < 9.2e18 ? Value(static_cast<int64_t>(d)) : otherwise;
  }
  if (!v.is_string()) return otherwise;
  const std::string s = py_strip(v.as_string(), std::nullopt, StripSide::kBoth);
  const int base = base_arg && base_arg->is_integral() ? static_cast<int>(base_arg->as_int()) : 10;
  char* end = nullptr;
  errno = 0;
  const long long i = std::strtoll(s.c_str(), &end, base);
  if (!s.empty() && end == s.c_str() + s.size() && errno == 0) return Value(static_cast<int64_t>(i));
  const double d = std::strtod(s.c_str(), &end);
  if (!s.empty() && end == s.c_str() + s.size() && std::isfinite(d) && std::fabs(d) < 9.2e18) return Value(static_cast<int64_t>(d));
  return otherwise;
}

Value to_float(const Value& v, const Value* fallback) {
  if (v.is_number()) return Value(v.as_float());
  if (v.is_string()) {
    const std::string s = py_strip(v.as_string(), std::nullopt, StripSide::kBoth);
    char* end = nullptr;
    const double d = std::strtod(s.c_str(), &end);
    if (!s.empty() && end == s.c_str() + s.size()) return Value(d);
  }
  return fallback ? *fallback : Value(0.0);
}

std::string indent(const std::string& text, const CallArgs& a) {
  const Value* width = a.get(0, "width");
  const std::string pad = width && width->is_string() ? width->as_string() : spaces(int_argument(width, 4, "indent's width"));
  const std::vector<std::string> lines = py_split(text + "\n", std::string("\n"), -1);  // s += "\n"; s.splitlines()
  std::string out;
  for (size_t i = 0; i + 1 < lines.size(); ++i) {
    if (i > 0) out += "\n";
    if (i > 0 && (flag(a.get(2, "blank")) || !lines[i].empty())) out += pad;
    out += lines[i];
  }
  return flag(a.get(1, "first")) ? pad + out : out;
}

Value tojson(const Value& v, const CallArgs& a) {
  a.check("tojson", 4, {"ensure_ascii", "indent", "separators", "sort_keys"});
  JsonDumpOptions o;
  o.ensure_ascii = flag(a.get(0, "ensure_ascii"));
  if (const Value* i = a.get(1, "indent"); i && !i->is_none()) {
    o.has_indent = true;
    o.indent = i->is_string() ? i->as_string() : spaces(int_argument(i, 0, "tojson's indent"));
  }
  if (const Value* s = a.get(2, "separators"); s && !s->is_none()) {
    if (!s->is_sequence() || s->as_list().size() != 2 || !s->as_list()[0].is_string() || !s->as_list()[1].is_string())
      throw TemplateError("tojson's separators must be a pair of strings");
    o.item_separator = s->as_list()[0].as_string();
    o.key_separator = s->as_list()[1].as_string();
  }
  o.sort_keys = flag(a.get(3, "sort_keys"));
  return Value(json_dumps(v, o));
}

Value aggregate(const Value& input, const CallArgs& a, bool maximum) {
  a.check(maximum ? "max" : "min", 2, {"case_sensitive", "attribute"});
  const bool cs = flag(a.get(0, "case_sensitive"));
  const Value* attribute = a.get(1, "attribute");
  const std::vector<Value> items = iterate(input);
  if (items.empty()) return Value(Undefined{"No aggregated item, sequence was empty."});
  size_t best = 0;
  for (size_t i = 1; i < items.size(); ++i) {
    const Value k = sort_key(items[i], attribute, cs), b = sort_key(items[best], attribute, cs);
    if (maximum ? less(b, k) : less(k, b)) best = i;
  }
  return items[best];
}

}  // namespace

bool is_known_filter(std::string_view name) {
  return std::find(std::begin(kFilters), std::end(kFilters), name) != std::end(kFilters);
}

std::string supported_filters() {
  std::string out = "supported filters:";
  for (std::string_view f : kFilters) out.append(" ").append(f);
  return out;
}

Value apply_filter(const std::string& name, const Value& input, const CallArgs& a) {
  if (name == "default" || name == "d") {
    const Value* fallback = a.get(0, "default_value");
    if (input.is_undefined() || (flag(a.get(1, "boolean")) && !input.truthy())) return fallback ? *fallback : Value("");
    return input;
  }
  if (name == "length" || name == "count") return Value(length(input));
  if (name == "string") return Value(py_str(input));
  if (name == "safe") return Value(py_str(input));
  if (name == "tojson") return tojson(input, a);
  if (name == "items") {
    if (input.is_undefined()) return Value::list({});
    if (!input.is_dict()) throw TemplateError("Can only get item pairs from a mapping.");
    List out;
    for (const auto& [k, v] : input.as_dict()) out.push_back(Value::tuple({k, v}));
    return Value::list(std::move(out));
  }
  if (name == "list") return Value::list(iterate(input));
  if (name == "first" || name == "last") {
    const std::vector<Value> items = iterate(input);
    if (items.empty()) return Value(Undefined{name == "first" ? "No first item, sequence was empty." : "No last item, sequence was empty."});
    return name == "first" ? items.front() : items.back();
  }
  if (name == "join") {
    const Value* attribute = a.get(1, "attribute");
    const std::string sep = a.get(0, "d") ? py_str(*a.get(0, "d")) : "";
    std::string out;
    bool first = true;
    for (const Value& item : iterate(input)) {
      out += (first ? "" : sep) + py_str(attribute ? attribute_path(item, *attribute) : item);
      first = false;
      if (out.size() > kMaxStringBytes) throw TemplateError("join: text too long (more than 64 MiB)");
    }
    return Value(std::move(out));
  }
  if (name == "map") return map_filter(input, a);
  if (name == "select" || name == "reject") return select(input, a, false, name == "select");
  if (name == "selectattr" || name == "rejectattr") return select(input, a, true, name == "selectattr");
  if (name == "reverse") {
    if (input.is_string()) {
      std::vector<std::string> cps = code_points(input.as_string());
      std::string out;
      for (size_t i = cps.size(); i-- > 0;) out += cps[i];
      return Value(std::move(out));
    }
    std::vector<Value> items = iterate(input);
    return Value::list(List(items.rbegin(), items.rend()));
  }
  if (name == "sort" || name == "unique" || name == "dictsort") {
    const bool cs = flag(a.get(name == "sort" ? 1 : 0, "case_sensitive"));
    std::vector<Value> items;
    if (name == "dictsort") {
      if (!input.is_dict()) throw TemplateError("dictsort needs a dict");
      for (const auto& [k, v] : input.as_dict()) items.push_back(Value::tuple({k, v}));
      const bool by_value = a.get(1, "by") && py_str(*a.get(1, "by")) == "value";
      const Value index(static_cast<int64_t>(by_value ? 1 : 0));
      std::stable_sort(items.begin(), items.end(),
                       [&](const Value& x, const Value& y) { return less(sort_key(x, &index, cs), sort_key(y, &index, cs)); });
      if (flag(a.get(2, "reverse"))) std::reverse(items.begin(), items.end());
      return Value::list(std::move(items));
    }
    items = iterate(input);
    const Value* attribute = a.get(name == "sort" ? 2 : 1, "attribute");
    if (name == "unique") {
      List out;
      std::vector<Value> seen;
      for (const Value& item : items) {
        const Value k = sort_key(item, attribute, cs);
        if (std::none_of(seen.begin(), seen.end(), [&](const Value& s) { return py_equal(s, k); })) seen.push_back(k), out.push_back(item);
      }
      return Value::list(std::move(out));
    }
    std::stable_sort(items.begin(), items.end(),
                     [&](const Value& x, const Value& y) { return less(sort_key(x, attribute, cs), sort_key(y, attribute, cs)); });
    if (flag(a.get(0, "reverse"))) std::reverse(items.begin(), items.end());
    return Value::list(std::move(items));
  }
  if (name == "max" || name == "min") return aggregate(input, a, name == "max");
  if (name == "sum") {
    const Value* attribute = a.get(0, "attribute");
    Value total = a.get(1, "start") ? *a.get(1, "start") : Value(int64_t(0));
    for (const Value& item : iterate(input)) total = binary_op("+", total, attribute ? attribute_path(item, *attribute) : item);
    return total;
  }
  if (name == "attr") {
    if (!a.get(0, "name")) throw TemplateError("attr needs an attribute name");
    return get_attribute(input, py_str(*a.get(0, "name")));
  }
  if (name == "abs") {
    require_defined(input);
    if (input.is_integral()) return input.as_int() < 0 ? negate(input) : Value(input.as_int());
    if (input.is_number()) return Value(std::fabs(input.as_float()));
    throw TemplateError("bad operand type for abs(): '" + std::string(input.type_name()) + "'");
  }
  if (name == "round") {
    require_defined(input);
    if (!input.is_number()) throw TemplateError("round needs a number");
    const double scale = std::pow(10.0, static_cast<double>(int_argument(a.get(0, "precision"), 0, "round's precision")));
    const std::string method = a.get(1, "method") ? py_str(*a.get(1, "method")) : "common";
    const double x = input.as_float() * scale;
    const double r = method == "floor" ? std::floor(x) : method == "ceil" ? std::ceil(x) : std::nearbyint(x);  // Python's round: half to even
    return Value(r / scale);
  }
  if (name == "int") return to_int(input, a.get(0, "default"), a.get(1, "base"));
  if (name == "float") return to_float(input, a.get(0, "default"));
  if (name == "format") return Value(percent_format(py_str(input), Value::tuple(a.positional)));
  if (name == "wordcount") {
    int64_t n = 0;
    bool in_word = false;
    for (const std::string& c : code_points(py_str(input))) {
      const bool word = c.size() > 1 || std::isalnum(static_cast<unsigned char>(c[0])) || c[0] == '_';
      n += word && !in_word;
      in_word = word;
    }
    return Value(n);
  }
  // The string filters.
  const std::string s = py_str(input);
  if (name == "trim") return Value(py_strip(s, a.get(0, "chars") ? std::optional<std::string>(py_str(*a.get(0, "chars"))) : std::nullopt, StripSide::kBoth));
  if (name == "upper") return Value(py_upper(s));
  if (name == "lower") return Value(py_lower(s));
  if (name == "title") return Value(py_title(s));
  if (name == "capitalize") return Value(py_capitalize(s));
  if (name == "indent") return Value(indent(s, a));
  if (name == "replace") {
    if (!a.get(0, "old") || !a.get(1, "new")) throw TemplateError("replace needs old and new");
    const Value* count_arg = a.get(2, "count");
    const int64_t count = count_arg && !count_arg->is_none() ? int_argument(count_arg, -1, "replace's count") : -1;
    return Value(py_replace(s, py_str(*a.get(0, "old")), py_str(*a.get(1, "new")), count));
  }
  throw TemplateError("the filter '" + name + "' is not supported");
}

}  // namespace trident::data::jinja
