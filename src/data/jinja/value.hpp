// The values a chat template computes with, modelled on the Python objects jinja2 hands around:
// undefined, None, bool, int, float, str, list, tuple, dict, namespace and callables.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

namespace trident {
class Json;
}

namespace trident::data::jinja {

class Value;
using List = std::vector<Value>;
using Dict = std::vector<std::pair<Value, Value>>;  // insertion order, like a Python dict
struct Namespace;
struct Callable;

// Jinja's Undefined: what a missing variable, key or attribute evaluates to. Printing it gives
// "", testing it gives false, iterating it gives nothing; most other uses are an error that
// quotes `hint` ("'x' is undefined", "'dict object' has no attribute 'y'").
struct Undefined {
  std::string hint;
};

class Value {
 public:
  enum class Kind { kUndefined, kNone, kBool, kInt, kFloat, kString, kList, kTuple, kDict, kNamespace, kCallable };

  Value() : Value(Undefined{"value is undefined"}) {}
  Value(Undefined u) : kind_(Kind::kUndefined), data_(std::move(u)) {}
  Value(std::nullptr_t) : kind_(Kind::kNone) {}
  Value(bool b) : kind_(Kind::kBool), data_(b) {}
  Value(int64_t i) : kind_(Kind::kInt), data_(i) {}
  Value(int i) : Value(static_cast<int64_t>(i)) {}
  Value(double d) : kind_(Kind::kFloat), data_(d) {}
  Value(std::string s) : kind_(Kind::kString), data_(std::move(s)) {}
  Value(std::string_view s) : Value(std::string(s)) {}
  Value(const char* s) : Value(std::string(s)) {}
  static Value list(List items);
  static Value tuple(List items);
  static Value dict(Dict items);
  static Value namespace_of(Dict attrs);
  static Value callable(std::shared_ptr<const Callable> c);

  Kind kind() const { return kind_; }
  bool is_undefined() const { return kind_ == Kind::kUndefined; }
  bool is_none() const { return kind_ == Kind::kNone; }
  bool is_string() const { return kind_ == Kind::kString; }
  bool is_sequence() const { return kind_ == Kind::kList || kind_ == Kind::kTuple; }  // list or tuple
  bool is_dict() const { return kind_ == Kind::kDict; }
  bool is_number() const { return kind_ == Kind::kBool || kind_ == Kind::kInt || kind_ == Kind::kFloat; }
  bool is_integral() const { return kind_ == Kind::kBool || kind_ == Kind::kInt; }  // Python: bool is an int

  // Typed access; the caller has checked the kind.
  bool as_bool() const { return std::get<bool>(data_); }
  int64_t as_int() const;      // bool or int
  double as_float() const;     // bool, int or float
  const std::string& as_string() const { return std::get<std::string>(data_); }
  const List& as_list() const { return *std::get<std::shared_ptr<const List>>(data_); }  // list or tuple
  const Dict& as_dict() const { return *std::get<std::shared_ptr<const Dict>>(data_); }
  Namespace& as_namespace() const { return *std::get<std::shared_ptr<Namespace>>(data_); }
  const Callable& as_callable() const { return *std::get<std::shared_ptr<const Callable>>(data_); }
  const std::string& undefined_hint() const { return std::get<Undefined>(data_).hint; }

  // Python's bool(x).
  bool truthy() const;
  // Python's type(x).__name__ as error messages quote it ("str", "dict", "NoneType", ...).
  const char* type_name() const;
  // A dict member by key (Python equality), nullptr when absent.
  const Value* find(const Value& key) const;

 private:
  Kind kind_;
  std::variant<Undefined, std::nullptr_t, bool, int64_t, double, std::string, std::shared_ptr<const List>,
               std::shared_ptr<const Dict>, std::shared_ptr<Namespace>, std::shared_ptr<const Callable>>
      data_;
};

// jinja2's namespace(): the one mutable object, changed by {% set ns.attr = value %}.
struct Namespace {
  Dict attrs;
};

// A value that can be called: a global function (range, namespace, raise_exception, ...), a
// method bound to its object ("abc".strip), or a macro of the template.
struct Callable {
  enum class Kind { kGlobal, kMethod, kMacro };
  Kind kind;
  std::string name;
  Value self;                 // kMethod: the object
  const void* macro = nullptr;  // kMacro: the template's MacroStmt (evaluator.hpp)
};

// Python's str(x) and repr(x) (what {{ x }} prints and what lists print their items as).
std::string py_str(const Value& v);
std::string py_repr(const Value& v);
// Python's repr of a float: the shortest text that reads back the same ("0.1", "1e+20", "2.0").
std::string py_float_repr(double d);
// Python's ==: numbers across int/float/bool, sequences and dicts by content.
bool py_equal(const Value& a, const Value& b);
// Python's < for numbers, strings and sequences; false with `comparable` cleared otherwise.
bool py_less(const Value& a, const Value& b, bool& comparable);

// JSON values of the context (messages, special tokens) as template values.
Value from_json(const Json& json);

}  // namespace trident::data::jinja
