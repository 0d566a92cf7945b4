// Rendering a parsed template. Scopes follow jinja2: the context and the template's top-level
// assignments share the root scope; each for-loop iteration, macro call, with, set-block and
// filter block has a scope of its own (so `set` inside a loop does not outlive the iteration:
// templates carry state across iterations in a namespace()); if/elif/else has none. Macros
// see their arguments and the root scope. Work is bounded (loop iterations and statements,
// the output's size, macro recursion), so no template can run without end.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ast.hpp"
#include "methods.hpp"
#include "value.hpp"

namespace trident::data::jinja {

class Scope {
 public:
  explicit Scope(const Scope* parent) : parent_(parent) {}
  const Value* find(const std::string& name) const;
  void set(const std::string& name, Value value);

 private:
  const Scope* parent_;
  std::vector<std::pair<std::string, Value>> vars_;  // few: a linear search is fastest
};

// Renders `body` with `context` as the root variables; `name` prefixes every error
// ("NAME line L: what"). ConfigError for any failure of the template (undefined values used,
// type errors, raise_exception, limits).
std::string render_body(const Body& body, std::vector<std::pair<std::string, Value>> context, const std::string& name);

class Renderer {
 public:
  Renderer(const std::string& name, Scope& root) : name_(name), root_(root) {}

  enum class Flow { kNormal, kBreak, kContinue };
  Flow exec(const Body& body, Scope& scope, std::string& out);
  Value eval(const Expr& e, Scope& scope);

 private:
  Flow exec_stmt(const Stmt& s, Scope& scope, std::string& out);
  void exec_for(const Stmt& s, Scope& scope, std::string& out);
  void assign(const Target& target, const Value& value, Scope& scope, int line);
  Value apply_filters(const std::vector<ExprPtr>& filters, Value value, Scope& scope);
  Value eval_inner(const Expr& e, Scope& scope);
  Value eval_call(const Expr& e, Scope& scope);
  Value call_macro(const Stmt& macro, const CallArgs& args, int line);
  CallArgs eval_args(const Expr& e, size_t first, Scope& scope);
  Value lookup(const std::string& name, const Scope& scope) const;
  void count_step(int line);
  [[noreturn]] void fail(int line, const std::string& what) const;

  const std::string& name_;
  Scope& root_;
  uint64_t steps_ = 0;
  int macro_depth_ = 0;
};

}  // namespace trident::data::jinja
