// Statements: output, if, for (with loop.*), set, block set, filter blocks, with, macros, break
// and continue, in the scopes of evaluator.hpp.
#include "evaluator.hpp"

#include "filters.hpp"
#include "ops.hpp"
#include "trident/core/error.hpp"

namespace trident::data::jinja {

namespace {

constexpr uint64_t kMaxSteps = 20'000'000;  // statements run plus loop iterations

void append_checked(std::string& out, const std::string& text) {
  if (out.size() + text.size() > kMaxStringBytes) throw TemplateError("the rendering is longer than 64 MiB");
  out += text;
}

}  // namespace

const Value* Scope::find(const std::string& name) const {
  for (const Scope* s = this; s; s = s->parent_)
    for (const auto& [k, v] : s->vars_)
      if (k == name) return &v;
  return nullptr;
}

void Scope::set(const std::string& name, Value value) {
  for (auto& [k, v] : vars_)
    if (k == name) return void(v = std::move(value));
  vars_.emplace_back(name, std::move(value));
}

std::string render_body(const Body& body, std::vector<std::pair<std::string, Value>> context, const std::string& name) {
  Scope root(nullptr);
  for (auto& [k, v] : context) root.set(k, std::move(v));
  Renderer renderer(name, root);
  std::string out;
  renderer.exec(body, root, out);
  return out;
}

void Renderer::fail(int line, const std::string& what) const {
  throw ConfigError(detail::concat(name_, " line ", line, ": ", what));
}

void Renderer::count_step(int line) {
  if (++steps_ > kMaxSteps) fail(line, "the template runs too long (more than 20 million steps: a runaway loop?)");
}

Renderer::Flow Renderer::exec(const Body& body, Scope& scope, std::string& out) {
  for (const StmtPtr& s : body) {
    const Flow flow = exec_stmt(*s, scope, out);
    if (flow != Flow::kNormal) return flow;
  }
  return Flow::kNormal;
}

Renderer::Flow Renderer::exec_stmt(const Stmt& s, Scope& scope, std::string& out) {
  count_step(s.line);
  try {
    switch (s.kind) {
      case Stmt::Kind::kText: append_checked(out, s.text); break;
      case Stmt::Kind::kOutput: append_checked(out, py_str(eval(*s.expr, scope))); break;
      case Stmt::Kind::kIf:
        for (const auto& [condition, body] : s.branches)
          if (!condition || eval(*condition, scope).truthy()) return exec(body, scope, out);
        break;
      case Stmt::Kind::kFor: exec_for(s, scope, out); break;
      case Stmt::Kind::kSet: assign(s.target, eval(*s.expr, scope), scope, s.line); break;
      case Stmt::Kind::kSetBlock:
      case Stmt::Kind::kFilterBlock: {
        Scope inner(&scope);
        std::string text;
        exec(s.body, inner, text);
        Value value = apply_filters(s.filters, Value(std::move(text)), scope);
        if (s.kind == Stmt::Kind::kSetBlock) assign(s.target, value, scope, s.line);
        else append_checked(out, py_str(value));
        break;
      }
      case Stmt::Kind::kScope: {
        Scope inner(&scope);
        std::vector<Value> values;  // with a = x, b = y: both evaluated outside, then bound
        for (const auto& [param, value] : s.params) values.push_back(eval(*value, scope));
        for (size_t i = 0; i < values.size(); ++i) inner.set(s.params[i].first, values[i]);
        return exec(s.body, inner, out);
      }
      case Stmt::Kind::kMacro:
        scope.set(s.text, Value::callable(std::make_shared<const Callable>(
                              Callable{Callable::Kind::kMacro, s.text, Value(nullptr), &s})));
        break;
      case Stmt::Kind::kBreak: return Flow::kBreak;
      case Stmt::Kind::kContinue: return Flow::kContinue;
    }
  } catch (const TemplateError& e) {
    fail(s.line, e.what());
  }
  return Flow::kNormal;
}

void Renderer::exec_for(const Stmt& s, Scope& scope, std::string& out) {
  std::vector<Value> items = iterate(eval(*s.expr, scope));
  if (s.condition) {  // {% for x in xs if cond %}: loop.* counts the items that pass
    std::vector<Value> kept;
    for (Value& item : items) {
      count_step(s.line);
      Scope probe(&scope);
      assign(s.target, item, probe, s.line);
      if (eval(*s.condition, probe).truthy()) kept.push_back(std::move(item));
    }
    items = std::move(kept);
  }
  const int64_t n = static_cast<int64_t>(items.size());
  for (int64_t i = 0; i < n; ++i) {
    count_step(s.line);
    Scope inner(&scope);
    assign(s.target, items[i], inner, s.line);
    Dict loop = {{Value("index"), Value(i + 1)},     {Value("index0"), Value(i)},
                 {Value("revindex"), Value(n - i)},  {Value("revindex0"), Value(n - i - 1)},
                 {Value("first"), Value(i == 0)},    {Value("last"), Value(i + 1 == n)},
                 {Value("length"), Value(n)},        {Value("depth"), Value(1)},
                 {Value("depth0"), Value(0)}};
    if (i > 0) loop.emplace_back(Value("previtem"), items[i - 1]);
    if (i + 1 < n) loop.emplace_back(Value("nextitem"), items[i + 1]);
    inner.set("loop", Value::dict(std::move(loop)));
    if (exec(s.body, inner, out) == Flow::kBreak) break;
  }
  if (n == 0 && !s.else_body.empty()) {
    Scope inner(&scope);
    exec(s.else_body, inner, out);
  }
}

void Renderer::assign(const Target& target, const Value& value, Scope& scope, int line) {
  if (!target.attribute.empty()) {
    const Value ns = lookup(target.names[0], scope);
    if (ns.kind() != Value::Kind::kNamespace)
      fail(line, "cannot assign attribute '" + target.attribute + "' of '" + target.names[0] +
                     "': it is not a namespace() (it is " + ns.type_name() + ")");
    for (auto& [k, v] : ns.as_namespace().attrs)
      if (k.is_string() && k.as_string() == target.attribute) return void(v = value);
    ns.as_namespace().attrs.emplace_back(Value(target.attribute), value);
    return;
  }
  if (target.names.size() == 1) return scope.set(target.names[0], value);
  const std::vector<Value> parts = iterate(value);
  if (parts.size() != target.names.size())
    fail(line, (parts.size() > target.names.size() ? "too many values to unpack (expected " : "not enough values to unpack (expected ") +
                   std::to_string(target.names.size()) + ", got " + std::to_string(parts.size()) + ")");
  for (size_t i = 0; i < parts.size(); ++i) scope.set(target.names[i], parts[i]);
}

Value Renderer::apply_filters(const std::vector<ExprPtr>& filters, Value value, Scope& scope) {
  for (const ExprPtr& f : filters) {
    const CallArgs args = eval_args(*f, 1, scope);
    try {
      value = apply_filter(f->name, value, args);
    } catch (const TemplateError& e) {
      fail(f->line, e.what());
    }
  }
  return value;
}

Value Renderer::call_macro(const Stmt& macro, const CallArgs& args, int line) {
  if (macro_depth_ >= 50) fail(line, "macro calls nested more than 50 deep");
  if (args.positional.size() > macro.params.size())
    fail(line, "macro '" + macro.text + "' takes not more than " + std::to_string(macro.params.size()) + " argument(s)");
  Scope inner(&root_);
  for (size_t i = 0; i < macro.params.size(); ++i) {
    const auto& [param, fallback] = macro.params[i];
    const Value* given = args.get(i, param);
    inner.set(param, given ? *given : fallback ? eval(*fallback, inner) : Value(Undefined{"'" + param + "' is undefined"}));
  }
  for (const auto& [k, v] : args.keywords) {
    bool known = false;
    for (const auto& [param, fallback] : macro.params) known = known || param == k;
    if (!known) fail(line, "macro '" + macro.text + "' takes no keyword argument '" + k + "'");
  }
  ++macro_depth_;
  std::string out;
  exec(macro.body, inner, out);
  --macro_depth_;
  return Value(std::move(out));
}

}  // namespace trident::data::jinja
