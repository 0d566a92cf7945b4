// Expression operations on template values (ops.hpp): access, slicing, arithmetic, comparison.
#include "ops.hpp"

#include <cmath>

#include "methods.hpp"
#include "text.hpp"
#include "trident/core/error.hpp"

namespace trident::data::jinja {

namespace {

[[noreturn]] void unsupported_operands(const std::string& op, const Value& a, const Value& b) {
  throw TemplateError("unsupported operand type(s) for " + op + ": '" + a.type_name() + "' and '" + b.type_name() + "'");
}

std::string no_attribute(const Value& object, const std::string& name) {
  return detail::concat("'", object.type_name(), " object' has no attribute '", name, "'");
}

// a op b on int64 with Python's result, or an error where Python's big ints would go past 64 bits.
template <typename Op>
int64_t checked(Op op, int64_t a, int64_t b) {
  int64_t r = 0;
  if (op(a, b, &r)) throw TemplateError("integer overflow (template integers are 64-bit)");
  return r;
}
constexpr auto kAdd = [](int64_t a, int64_t b, int64_t* r) { return __builtin_add_overflow(a, b, r); };
constexpr auto kSub = [](int64_t a, int64_t b, int64_t* r) { return __builtin_sub_overflow(a, b, r); };
constexpr auto kMul = [](int64_t a, int64_t b, int64_t* r) { return __builtin_mul_overflow(a, b, r); };

// Python's slice.indices for a sequence of n items.
std::vector<int64_t> slice_indices(int64_t n, const std::optional<Value>& start, const std::optional<Value>& stop,
                                   const std::optional<Value>& step) {
  auto integer = [](const std::optional<Value>& v, int64_t absent) {
    if (!v || v->is_none()) return absent;
    if (!v->is_integral()) throw TemplateError("slice indices must be integers or None, not " + std::string(v->type_name()));
    return v->as_int();
  };
  const int64_t s = integer(step, 1);
  if (s == 0) throw TemplateError("slice step cannot be zero");
  auto adjust = [&](const std::optional<Value>& v, int64_t absent) {
    if (!v || v->is_none()) return absent;
    int64_t i = integer(v, 0);
    if (i < 0) {
      i += n;
      if (i < 0) i = s < 0 ? -1 : 0;
    } else if (i >= n) {
      i = s < 0 ? n - 1 : n;
    }
    return i;
  };
  const int64_t first = adjust(start, s < 0 ? n - 1 : 0), last = adjust(stop, s < 0 ? -1 : n);
  std::vector<int64_t> out;
  for (int64_t i = first; s > 0 ? i < last : i > last; i += s) out.push_back(i);
  return out;
}

int64_t floor_div(int64_t a, int64_t b) {
  if (a == INT64_MIN && b == -1) throw TemplateError("integer overflow (template integers are 64-bit)");
  int64_t q = a / b;
  if ((a % b != 0) && ((a < 0) != (b < 0))) --q;
  return q;
}

Value repeat(const Value& seq, int64_t times) {
  if (times <= 0 || (seq.is_string() && seq.as_string().empty())) return seq.is_string() ? Value("") : seq.kind() == Value::Kind::kTuple ? Value::tuple({}) : Value::list({});
  const size_t unit = seq.is_string() ? seq.as_string().size() : seq.as_list().size();
  if (unit != 0 && static_cast<uint64_t>(times) > kMaxStringBytes / unit)
    throw TemplateError("repetition too large (more than 64 MiB)");
  if (seq.is_string()) {  // by doubling: a long repetition is a few large copies
    const size_t target = unit * static_cast<size_t>(times);
    std::string out = seq.as_string();
    out.reserve(target);
    while (out.size() * 2 <= target) out.append(out);
    out.append(out, 0, target - out.size());
    return Value(std::move(out));
  }
  List out;
  for (int64_t i = 0; i < times; ++i) out.insert(out.end(), seq.as_list().begin(), seq.as_list().end());
  return seq.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

}  // namespace

void require_defined(const Value& v) {
  if (v.is_undefined()) throw TemplateError(v.undefined_hint());
}

Value get_attribute(const Value& object, const std::string& name) {
  require_defined(object);
  if (has_method(object, name)) return bind_method(object, name);
  if (object.is_dict()) {
    if (const Value* v = object.find(Value(name))) return *v;
  } else if (object.kind() == Value::Kind::kNamespace) {
    for (const auto& [k, v] : object.as_namespace().attrs)
      if (k.is_string() && k.as_string() == name) return v;
  }
  return Value(Undefined{no_attribute(object, name)});
}

Value get_item(const Value& object, const Value& key) {
  require_defined(object);
  if (object.is_dict()) {
    if (const Value* v = object.find(key)) return *v;
  } else if (object.kind() == Value::Kind::kNamespace && key.is_string()) {
    return get_attribute(object, key.as_string());
  } else if ((object.is_sequence() || object.is_string()) && key.is_integral()) {
    const int64_t n = length(object);
    int64_t i = key.as_int();
    if (i < 0) i += n;
    if (i >= 0 && i < n) {
      if (object.is_sequence()) return object.as_list()[static_cast<size_t>(i)];
      const std::vector<size_t> at = code_point_offsets(object.as_string());
      return Value(object.as_string().substr(at[i], at[i + 1] - at[i]));
    }
  }
  if (key.is_string() && has_method(object, key.as_string())) return bind_method(object, key.as_string());
  return Value(Undefined{detail::concat("'", object.type_name(), " object' has no element ", py_repr(key))});
}

Value get_slice(const Value& object, const std::optional<Value>& start, const std::optional<Value>& stop,
                const std::optional<Value>& step) {
  require_defined(object);
  if (object.is_string()) {
    const std::string& s = object.as_string();
    const std::vector<size_t> at = code_point_offsets(s);
    std::string out;
    for (int64_t i : slice_indices(static_cast<int64_t>(at.size()) - 1, start, stop, step)) out.append(s, at[i], at[i + 1] - at[i]);
    return Value(std::move(out));
  }
  if (!object.is_sequence()) return Value(Undefined{detail::concat("'", object.type_name(), "' object is not subscriptable")});
  List out;
  for (int64_t i : slice_indices(static_cast<int64_t>(object.as_list().size()), start, stop, step))
    out.push_back(object.as_list()[static_cast<size_t>(i)]);
  return object.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
}

Value binary_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "~") {
    std::string out = py_str(a) + py_str(b);
    if (out.size() > kMaxStringBytes) throw TemplateError("string too long (more than 64 MiB)");
    return Value(std::move(out));
  }
  require_defined(a);
  require_defined(b);
  const bool ints = a.is_integral() && b.is_integral(), numbers = a.is_number() && b.is_number();
  if (op == "+") {
    if (ints) return Value(checked(kAdd, a.as_int(), b.as_int()));
    if (numbers) return Value(a.as_float() + b.as_float());
    if (a.is_string() && b.is_string()) {
      if (a.as_string().size() + b.as_string().size() > kMaxStringBytes) throw TemplateError("string too long (more than 64 MiB)");
      return Value(a.as_string() + b.as_string());
    }
    if (a.is_sequence() && a.kind() == b.kind()) {
      List out = a.as_list();
      out.insert(out.end(), b.as_list().begin(), b.as_list().end());
      return a.kind() == Value::Kind::kTuple ? Value::tuple(std::move(out)) : Value::list(std::move(out));
    }
  } else if (op == "-") {
    if (ints) return Value(checked(kSub, a.as_int(), b.as_int()));
    if (numbers) return Value(a.as_float() - b.as_float());
  } else if (op == "*") {
    if (ints) return Value(checked(kMul, a.as_int(), b.as_int()));
    if (numbers) return Value(a.as_float() * b.as_float());
    if ((a.is_string() || a.is_sequence()) && b.is_integral()) return repeat(a, b.as_int());
    if ((b.is_string() || b.is_sequence()) && a.is_integral()) return repeat(b, a.as_int());
  } else if (op == "/") {
    if (numbers) {
      if (b.as_float() == 0.0) throw TemplateError("division by zero");
      return Value(a.as_float() / b.as_float());
    }
  } else if (op == "//" || op == "%") {
    if (numbers && b.as_float() == 0.0) throw TemplateError(op == "//" ? "integer division or modulo by zero" : "modulo by zero");
    if (ints) {
      const int64_t q = floor_div(a.as_int(), b.as_int());
      return op == "//" ? Value(q) : Value(a.as_int() - q * b.as_int());
    }
    if (numbers) {
      const double x = a.as_float(), y = b.as_float(), q = std::floor(x / y);
      if (op == "//") return Value(q);
      double m = std::fmod(x, y);
      if (m != 0 && ((m < 0) != (y < 0))) m += y;
      return Value(m);
    }
    if (op == "%" && a.is_string()) return Value(percent_format(a.as_string(), b));
  } else if (op == "**") {
    if (ints && b.as_int() >= 0) {
      int64_t result = 1, base = a.as_int();
      for (int64_t e = b.as_int(); e > 0; e >>= 1) {
        if (e & 1) result = checked(kMul, result, base);
        if (e > 1) base = checked(kMul, base, base);
      }
      return Value(result);
    }
    if (numbers) return Value(std::pow(a.as_float(), b.as_float()));
  }
  unsupported_operands(op, a, b);
}

Value negate(const Value& a) {
  require_defined(a);
  if (a.is_integral()) {
    if (a.as_int() == INT64_MIN) throw TemplateError("integer overflow (template integers are 64-bit)");
    return Value(-a.as_int());
  }
  if (a.is_number()) return Value(-a.as_float());
  throw TemplateError("bad operand type for unary -: '" + std::string(a.type_name()) + "'");
}

bool contains(const Value& container, const Value& item) {
  if (container.is_undefined()) return false;  // Undefined iterates as empty
  if (container.is_string()) {
    if (!item.is_string())
      throw TemplateError("'in <string>' requires string as left operand, not " + std::string(item.type_name()));
    return container.as_string().find(item.as_string()) != std::string::npos;
  }
  if (container.is_sequence()) {
    for (const Value& v : container.as_list())
      if (py_equal(v, item)) return true;
    return false;
  }
  if (container.is_dict()) return container.find(item) != nullptr;
  throw TemplateError("argument of type '" + std::string(container.type_name()) + "' is not iterable");
}

bool compare_op(const std::string& op, const Value& a, const Value& b) {
  if (op == "==") return py_equal(a, b);
  if (op == "!=") return !py_equal(a, b);
  if (op == "in") return contains(b, a);
  if (op == "notin") return !contains(b, a);
  require_defined(a);
  require_defined(b);
  bool comparable = true;
  bool result = false;
  if (op == "<") result = py_less(a, b, comparable);
  else if (op == ">") result = py_less(b, a, comparable);
  else if (op == "<=") result = !py_less(b, a, comparable);
  else if (op == ">=") result = !py_less(a, b, comparable);
  if (!comparable)
    throw TemplateError("'" + op + "' not supported between instances of '" + a.type_name() + "' and '" + b.type_name() + "'");
  return result;
}

std::vector<Value> iterate(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return {};
    case Value::Kind::kList:
    case Value::Kind::kTuple: return v.as_list();
    case Value::Kind::kString: {
      std::vector<Value> out;
      for (std::string& c : code_points(v.as_string())) out.emplace_back(std::move(c));
      return out;
    }
    case Value::Kind::kDict: {
      std::vector<Value> out;
      for (const auto& [k, value] : v.as_dict()) out.push_back(k);
      return out;
    }
    default: throw TemplateError("'" + std::string(v.type_name()) + "' object is not iterable");
  }
}

int64_t length(const Value& v) {
  switch (v.kind()) {
    case Value::Kind::kUndefined: return 0;
    case Value::Kind::kString: return static_cast<int64_t>(code_point_count(v.as_string()));
    case Value::Kind::kList:
    case Value::Kind::kTuple: return static_cast<int64_t>(v.as_list().size());
    case Value::Kind::kDict: return static_cast<int64_t>(v.as_dict().size());
    default: throw TemplateError("object of type '" + std::string(v.type_name()) + "' has no len()");
  }
}

std::string percent_format(const std::string& text, const Value& args) {
  const List items = args.kind() == Value::Kind::kTuple ? args.as_list() : List{args};
  size_t next = 0;
  std::string out;
  for (size_t i = 0; i < text.size(); ++i) {
    if (text[i] != '%') {
      out += text[i];
      continue;
    }
    const char c = i + 1 < text.size() ? text[++i] : 0;
    if (c == '%') {
      out += '%';
      continue;
    }
    if (c != 's' && c != 'r' && c != 'd' && c != 'i')
      throw TemplateError(std::string("'%") + c + "' formatting is not supported (only %s %r %d %i %%)");
    if (next >= items.size()) throw TemplateError("not enough arguments for format string");
    const Value& v = items[next++];
    if (c == 's') out += py_str(v);
    else if (c == 'r') out += py_repr(v);
    else if (v.is_number()) out += std::to_string(v.is_integral() ? v.as_int() : static_cast<int64_t>(v.as_float()));
    else throw TemplateError("%d format: a real number is required, not " + std::string(v.type_name()));
  }
  if (next < items.size()) throw TemplateError("not all arguments converted during string formatting");
  return out;
}

}  // namespace trident::data::jinja
