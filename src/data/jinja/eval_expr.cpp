// Expressions: names through the scopes and the globals, literals, operators, filters, tests
// and calls; an error is reported with the line of the innermost expression that failed.
#include "evaluator.hpp"
#include "filters.hpp"
#include "ops.hpp"

namespace trident::data::jinja {

namespace {

std::optional<Value> optional_part(const ExprPtr& e, Renderer& r, Scope& scope) {
  if (!e) return std::nullopt;
  return r.eval(*e, scope);
}

}  // namespace

Value Renderer::lookup(const std::string& name, const Scope& scope) const {
  if (const Value* v = scope.find(name)) return *v;
  if (is_global_function(name))
    return Value::callable(std::make_shared<const Callable>(Callable{Callable::Kind::kGlobal, name, Value(nullptr), nullptr}));
  return Value(Undefined{"'" + name + "' is undefined"});
}

Value Renderer::eval(const Expr& e, Scope& scope) {
  try {
    return eval_inner(e, scope);
  } catch (const TemplateError& err) {
    fail(e.line, err.what());
  }
}

CallArgs Renderer::eval_args(const Expr& e, size_t first, Scope& scope) {
  CallArgs args;
  for (size_t i = first; i < e.args.size(); ++i) args.positional.push_back(eval(*e.args[i], scope));
  for (const auto& [k, v] : e.kwargs) args.keywords.emplace_back(k, eval(*v, scope));
  return args;
}

Value Renderer::eval_call(const Expr& e, Scope& scope) {
  const Value callee = eval(*e.args[0], scope);
  const CallArgs args = eval_args(e, 1, scope);
  if (callee.is_undefined()) throw TemplateError(callee.undefined_hint());
  if (callee.kind() != Value::Kind::kCallable) throw TemplateError("'" + std::string(callee.type_name()) + "' object is not callable");
  const Callable& c = callee.as_callable();
  switch (c.kind) {
    case Callable::Kind::kGlobal: return call_global(c.name, args);
    case Callable::Kind::kMethod: return call_method(c, args);
    case Callable::Kind::kMacro: return call_macro(*static_cast<const Stmt*>(c.macro), args, e.line);
  }
  throw TemplateError("not callable");
}

Value Renderer::eval_inner(const Expr& e, Scope& scope) {
  switch (e.kind) {
    case Expr::Kind::kLiteral: return e.value;
    case Expr::Kind::kName: return lookup(e.name, scope);
    case Expr::Kind::kList:
    case Expr::Kind::kTuple: {
      List items;
      for (const ExprPtr& a : e.args) items.push_back(eval(*a, scope));
      return e.kind == Expr::Kind::kList ? Value::list(std::move(items)) : Value::tuple(std::move(items));
    }
    case Expr::Kind::kDict: {
      Dict items;
      for (size_t i = 0; i + 1 < e.args.size(); i += 2) {
        Value key = eval(*e.args[i], scope), value = eval(*e.args[i + 1], scope);
        bool replaced = false;  // {'a': 1, 'a': 2} is {'a': 2}, at the first one's place
        for (auto& [k, v] : items)
          if (py_equal(k, key)) v = value, replaced = true;
        if (!replaced) items.emplace_back(std::move(key), std::move(value));
      }
      return Value::dict(std::move(items));
    }
    case Expr::Kind::kAttribute: return get_attribute(eval(*e.args[0], scope), e.name);
    case Expr::Kind::kItem: return get_item(eval(*e.args[0], scope), eval(*e.args[1], scope));
    case Expr::Kind::kSlice: {
      const Value object = eval(*e.args[0], scope);
      return get_slice(object, optional_part(e.args[1], *this, scope), optional_part(e.args[2], *this, scope),
                       optional_part(e.args[3], *this, scope));
    }
    case Expr::Kind::kCall: return eval_call(e, scope);
    case Expr::Kind::kFilter: {
      const Value input = eval(*e.args[0], scope);
      return apply_filter(e.name, input, eval_args(e, 1, scope));
    }
    case Expr::Kind::kTest: {
      const Value input = eval(*e.args[0], scope);
      return Value(apply_test(e.name, input, eval_args(e, 1, scope)) != e.negated);
    }
    case Expr::Kind::kNot: return Value(!eval(*e.args[0], scope).truthy());
    case Expr::Kind::kNegate: return negate(eval(*e.args[0], scope));
    case Expr::Kind::kPlus: {
      const Value v = eval(*e.args[0], scope);
      require_defined(v);
      if (!v.is_number()) throw TemplateError("bad operand type for unary +: '" + std::string(v.type_name()) + "'");
      return v.is_integral() ? Value(v.as_int()) : v;
    }
    case Expr::Kind::kBinary: {
      const Value a = eval(*e.args[0], scope);
      return binary_op(e.name, a, eval(*e.args[1], scope));
    }
    case Expr::Kind::kCompare: {
      Value left = eval(*e.args[0], scope);
      for (size_t i = 0; i < e.ops.size(); ++i) {
        Value right = eval(*e.args[i + 1], scope);
        if (!compare_op(e.ops[i], left, right)) return Value(false);
        left = std::move(right);
      }
      return Value(true);
    }
    case Expr::Kind::kAnd: {
      Value left = eval(*e.args[0], scope);
      return left.truthy() ? eval(*e.args[1], scope) : left;
    }
    case Expr::Kind::kOr: {
      Value left = eval(*e.args[0], scope);
      return left.truthy() ? left : eval(*e.args[1], scope);
    }
    case Expr::Kind::kCondition:
      if (eval(*e.args[1], scope).truthy()) return eval(*e.args[0], scope);
      if (e.args[2]) return eval(*e.args[2], scope);
      return Value(Undefined{"the inline if-expression evaluated to false and no else section was defined"});
  }
  throw TemplateError("unknown expression");
}

}  // namespace trident::data::jinja
