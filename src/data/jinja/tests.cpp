// The tests of chat templates (x is name(args), select/reject), each as jinja2 3.1 defines it.
#include <algorithm>

#include "filters.hpp"
#include "ops.hpp"
#include "text.hpp"

namespace trident::data::jinja {

namespace {

constexpr std::string_view kTests[] = {
    "boolean", "callable", "defined", "divisibleby", "eq", "equalto", "even", "false", "float", "ge", "greaterthan",
    "gt", "in", "integer", "iterable", "le", "lessthan", "lower", "lt", "mapping", "ne", "none", "number", "odd",
    "sameas", "sequence", "string", "true", "undefined", "upper"};

const Value& argument(const std::string& test, const CallArgs& a) {
  if (a.positional.empty()) throw TemplateError("the test '" + test + "' needs an argument");
  return a.positional[0];
}

int64_t integer(const Value& v, const std::string& test) {
  require_defined(v);
  if (!v.is_integral()) throw TemplateError("the test '" + test + "' needs an integer, not " + std::string(v.type_name()));
  return v.as_int();
}

}  // namespace

bool is_known_test(std::string_view name) {
  return std::find(std::begin(kTests), std::end(kTests), name) != std::end(kTests);
}

std::string supported_tests() {
  std::string out = "supported tests:";
  for (std::string_view t : kTests) out.append(" ").append(t);
  return out;
}

bool apply_test(const std::string& name, const Value& v, const CallArgs& a) {
  using K = Value::Kind;
  if (name == "defined") return !v.is_undefined();
  if (name == "undefined") return v.is_undefined();
  if (name == "none") return v.is_none();
  if (name == "string") return v.is_string();
  if (name == "boolean") return v.kind() == K::kBool;
  if (name == "true") return v.kind() == K::kBool && v.as_bool();
  if (name == "false") return v.kind() == K::kBool && !v.as_bool();
  if (name == "number") return v.is_number();
  if (name == "integer") return v.kind() == K::kInt;
  if (name == "float") return v.kind() == K::kFloat;
  if (name == "mapping") return v.is_dict();
  if (name == "callable") return v.kind() == K::kCallable;
  // Python's iter() works on Undefined, strings, sequences and dicts; len() and [] on the same.
  if (name == "iterable" || name == "sequence")
    return v.is_undefined() || v.is_string() || v.is_sequence() || v.is_dict();
  if (name == "lower" || name == "upper") {  // str.islower() / str.isupper(): a cased letter, none of the other case
    const std::string s = py_str(v), lower = py_lower(s), upper = py_upper(s);
    return name == "lower" ? lower == s && upper != s : upper == s && lower != s;
  }
  if (name == "odd" || name == "even") return (integer(v, name) % 2 != 0) == (name == "odd");
  if (name == "divisibleby") {
    const int64_t d = integer(argument(name, a), name);
    if (d == 0) throw TemplateError("integer division or modulo by zero");
    return integer(v, name) % d == 0;
  }
  if (name == "in") return contains(argument(name, a), v);
  if (name == "sameas") {
    // Python's `is`: None, True and False are singletons; other values compare by content here.
    const Value& other = argument(name, a);
    if (v.kind() != other.kind()) return false;
    return py_equal(v, other);
  }
  const Value& other = argument(name, a);
  if (name == "eq" || name == "equalto") return compare_op("==", v, other);
  if (name == "ne") return compare_op("!=", v, other);
  if (name == "lt" || name == "lessthan") return compare_op("<", v, other);
  if (name == "le") return compare_op("<=", v, other);
  if (name == "gt" || name == "greaterthan") return compare_op(">", v, other);
  if (name == "ge") return compare_op(">=", v, other);
  throw TemplateError("the test '" + name + "' is not supported");
}

}  // namespace trident::data::jinja
