// Calls of template values: the Python methods of str, dict and list that chat templates use
// ("abc".strip(), message.get('x'), content.split('</think>')), and the globals transformers
// gives templates: range, namespace, dict, raise_exception and strftime_now.
//
// strftime_now(format) is deterministic: it formats the fixed time 2024-07-26 00:00:00 (the
// date Llama 3.1's template falls back to), so the same data renders the same on every run;
// supported directives %a %A %b %B %d %e %H %I %j %m %M %p %S %y %Y %%.
#pragma once
#include <string>
#include <utility>
#include <vector>

#include "value.hpp"

namespace trident::data::jinja {

struct CallArgs {
  List positional;
  std::vector<std::pair<std::string, Value>> keywords;

  // The argument at `index` or named `name`; nullptr when neither was given.
  const Value* get(size_t index, const std::string& name) const;
  // TemplateError when more than `positional` positional or other keywords than `names` are given.
  void check(const std::string& callee, size_t max_positional, const std::vector<std::string>& names) const;
};

// An integer argument (absent: `absent`); TemplateError naming `what` for another kind.
int64_t int_argument(const Value* v, int64_t absent, const std::string& what);

// Whether object.name is one of its methods (read-only ones work; mutating ones such as
// list.append exist and refuse to run, as jinja2's immutable sandbox does).
bool has_method(const Value& object, const std::string& name);
Value bind_method(const Value& object, const std::string& name);
Value call_method(const Callable& method, const CallArgs& args);

// The globals: names of the callables every template sees, and calling one (not macros).
bool is_global_function(const std::string& name);
Value call_global(const std::string& name, const CallArgs& args);

// strftime of the fixed time above.
std::string fixed_strftime(const std::string& format);

}  // namespace trident::data::jinja
