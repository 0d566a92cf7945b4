// The operations of template expressions on values, with Python's and jinja2's semantics:
// attribute and item access (a missing one is undefined, not an error), slices, arithmetic,
// comparisons, membership, iteration and len(). Errors are TemplateError; the evaluator adds the
// template's name and line.
#pragma once
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "value.hpp"

namespace trident::data::jinja {

// An error inside an expression, before the evaluator names the template and line.
class TemplateError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// The most text one string may grow to (repetition, concatenation, the output).
inline constexpr size_t kMaxStringBytes = size_t(64) << 20;

// x.name: methods of str, dict and list bound to x, else a dict key or namespace attribute.
Value get_attribute(const Value& object, const std::string& name);
// x[key]: a dict key, a list/tuple/str index (negative from the end).
Value get_item(const Value& object, const Value& key);
// x[start:stop:step] of a list, tuple or str (absent parts: Python's defaults).
Value get_slice(const Value& object, const std::optional<Value>& start, const std::optional<Value>& stop,
                const std::optional<Value>& step);

// a op b for + - * / // % ** ~.
Value binary_op(const std::string& op, const Value& a, const Value& b);
Value negate(const Value& a);
// a op b for == != < <= > >= in notin.
bool compare_op(const std::string& op, const Value& a, const Value& b);
// item in container.
bool contains(const Value& container, const Value& item);

// for x in v: list/tuple items, dict keys, str code points, nothing for undefined.
std::vector<Value> iterate(const Value& v);
// len(v).
int64_t length(const Value& v);

// Throws the undefined value's own error ("'x' is undefined") when v is undefined.
void require_defined(const Value& v);

// Python's `text % args` for %s %r %d %i %% (what chat templates use of it).
std::string percent_format(const std::string& text, const Value& args);

}  // namespace trident::data::jinja
