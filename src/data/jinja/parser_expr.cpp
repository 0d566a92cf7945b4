// Expressions of the template language, parsed as jinja2's parser does (precedence in
// parser.hpp).
#include "filters.hpp"
#include "parser.hpp"
#include "trident/core/error.hpp"

namespace trident::data::jinja {

namespace {

ExprPtr make(Expr::Kind kind, int line) {
  auto e = std::make_unique<Expr>();
  e->kind = kind;
  e->line = line;
  return e;
}

ExprPtr make(Expr::Kind kind, int line, ExprPtr a, ExprPtr b = nullptr) {
  ExprPtr e = make(kind, line);
  e->args.push_back(std::move(a));
  if (b) e->args.push_back(std::move(b));
  return e;
}

}  // namespace

ExprPtr Parser::parse_tuple(bool with_condexpr, std::string_view extra_end, bool explicit_parens) {
  const int line = peek().line;
  std::vector<ExprPtr> items;
  bool is_tuple = false;
  while (true) {
    if (!items.empty()) expect_op(",");
    if (is_tuple_end(extra_end)) break;
    items.push_back(parse_expression(with_condexpr));
    if (!is_op(",")) break;
    is_tuple = true;
  }
  if (!is_tuple) {
    if (!items.empty()) return std::move(items.front());
    if (!explicit_parens) fail(peek().line, "expected an expression, got " + describe(peek()));
  }
  ExprPtr t = make(Expr::Kind::kTuple, line);
  t->args = std::move(items);
  return t;
}

ExprPtr Parser::parse_expression(bool with_condexpr) {
  const DepthGuard guard(*this, peek().line);
  if (!with_condexpr) return parse_or();
  int line = peek().line;
  ExprPtr expr = parse_or();
  while (skip_name("if")) {
    ExprPtr test = parse_or();
    ExprPtr otherwise = skip_name("else") ? parse_expression(true) : nullptr;
    ExprPtr cond = make(Expr::Kind::kCondition, line, std::move(expr), std::move(test));
    cond->args.push_back(std::move(otherwise));
    expr = std::move(cond);
    line = peek().line;
  }
  return expr;
}

ExprPtr Parser::parse_or() {
  ExprPtr left = parse_and();
  while (is_name("or")) {
    const int line = next().line;
    left = make(Expr::Kind::kOr, line, std::move(left), parse_and());
  }
  return left;
}

ExprPtr Parser::parse_and() {
  ExprPtr left = parse_not();
  while (is_name("and")) {
    const int line = next().line;
    left = make(Expr::Kind::kAnd, line, std::move(left), parse_not());
  }
  return left;
}

ExprPtr Parser::parse_not() {
  if (is_name("not")) {
    const int line = next().line;
    const DepthGuard guard(*this, line);
    return make(Expr::Kind::kNot, line, parse_not());
  }
  return parse_compare();
}

ExprPtr Parser::parse_compare() {
  const int line = peek().line;
  ExprPtr first = parse_math1();
  ExprPtr cmp;
  while (true) {
    std::string op;
    for (std::string_view o : {"==", "!=", "<", "<=", ">", ">="})
      if (is_op(o)) op = o;
    if (!op.empty()) {
      next();
    } else if (is_name("in")) {
      next();
      op = "in";
    } else if (is_name("not") && is_name("in", 1)) {
      next();
      next();
      op = "notin";
    } else {
      break;
    }
    if (!cmp) cmp = make(Expr::Kind::kCompare, line, std::move(first));
    cmp->ops.push_back(op);
    cmp->args.push_back(parse_math1());
  }
  return cmp ? std::move(cmp) : std::move(first);
}

ExprPtr Parser::parse_math1() {
  ExprPtr left = parse_concat();
  while (is_op("+") || is_op("-")) {
    const Token& op = next();
    ExprPtr e = make(Expr::Kind::kBinary, op.line, std::move(left), parse_concat());
    e->name = op.text;
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_concat() {
  ExprPtr left = parse_math2();
  while (is_op("~")) {
    const int line = next().line;
    ExprPtr e = make(Expr::Kind::kBinary, line, std::move(left), parse_math2());
    e->name = "~";
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_math2() {
  ExprPtr left = parse_pow();
  while (is_op("*") || is_op("/") || is_op("//") || is_op("%")) {
    const Token& op = next();
    ExprPtr e = make(Expr::Kind::kBinary, op.line, std::move(left), parse_pow());
    e->name = op.text;
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_pow() {
  ExprPtr left = parse_unary(true);
  while (is_op("**")) {
    const int line = next().line;
    ExprPtr e = make(Expr::Kind::kBinary, line, std::move(left), parse_unary(true));
    e->name = "**";
    left = std::move(e);
  }
  return left;
}

ExprPtr Parser::parse_unary(bool with_filter) {
  const int line = peek().line;
  const DepthGuard guard(*this, line);
  ExprPtr node;
  if (skip_op("-")) node = make(Expr::Kind::kNegate, line, parse_unary(false));
  else if (skip_op("+")) node = make(Expr::Kind::kPlus, line, parse_unary(false));
  else node = parse_primary();
  node = parse_postfix(std::move(node));
  return with_filter ? parse_filter_expr(std::move(node)) : std::move(node);
}

ExprPtr Parser::parse_primary() {
  const Token& t = peek();
  const int line = t.line;
  switch (t.kind) {
    case Token::Kind::kName: {
      const std::string name = next().text;
      ExprPtr e = make(Expr::Kind::kLiteral, line);
      if (name == "true" || name == "True") e->value = Value(true);
      else if (name == "false" || name == "False") e->value = Value(false);
      else if (name == "none" || name == "None") e->value = Value(nullptr);
      else e->kind = Expr::Kind::kName, e->name = name;
      return e;
    }
    case Token::Kind::kString: {
      std::string text;
      while (peek().kind == Token::Kind::kString) text += next().text;  // "a" "b" is "ab"
      ExprPtr e = make(Expr::Kind::kLiteral, line);
      e->value = Value(std::move(text));
      return e;
    }
    case Token::Kind::kInt:
    case Token::Kind::kFloat: {
      ExprPtr e = make(Expr::Kind::kLiteral, line);
      e->value = t.kind == Token::Kind::kInt ? Value(t.int_value) : Value(t.float_value);
      next();
      return e;
    }
    default: break;
  }
  if (skip_op("(")) {
    ExprPtr e = parse_tuple(true, {}, true);
    expect_op(")");
    return e;
  }
  if (is_op("[") || is_op("{")) {
    const bool list = next().text == "[";
    const std::string close = list ? "]" : "}";
    ExprPtr e = make(list ? Expr::Kind::kList : Expr::Kind::kDict, line);
    while (!is_op(close)) {
      if (!e->args.empty()) expect_op(",");
      if (is_op(close)) break;
      e->args.push_back(parse_expression());
      if (!list) {
        expect_op(":");
        e->args.push_back(parse_expression());
      }
    }
    expect_op(close);
    return e;
  }
  fail(line, "unexpected " + describe(t));
}

ExprPtr Parser::parse_postfix(ExprPtr node) {
  while (true) {
    if (is_op(".") || is_op("[")) {
      node = parse_subscript(std::move(node));
    } else if (is_op("(")) {
      ExprPtr call = make(Expr::Kind::kCall, peek().line, std::move(node));
      parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_filter_expr(ExprPtr node) {
  while (true) {
    if (is_op("|")) {
      node = parse_filter(std::move(node));
    } else if (is_name("is")) {
      node = parse_test(std::move(node));
    } else if (is_op("(")) {
      ExprPtr call = make(Expr::Kind::kCall, peek().line, std::move(node));
      parse_call_args(*call);
      node = std::move(call);
    } else {
      return node;
    }
  }
}

ExprPtr Parser::parse_subscript(ExprPtr node) {
  const Token& t = next();
  const int line = t.line;
  if (t.text == ".") {
    const Token& attr = next();
    if (attr.kind == Token::Kind::kName) {
      ExprPtr e = make(Expr::Kind::kAttribute, line, std::move(node));
      e->name = attr.text;
      return e;
    }
    if (attr.kind != Token::Kind::kInt) fail(attr.line, "expected a name or number after '.', got " + describe(attr));
    ExprPtr index = make(Expr::Kind::kLiteral, line);
    index->value = Value(attr.int_value);
    return make(Expr::Kind::kItem, line, std::move(node), std::move(index));
  }
  std::vector<ExprPtr> items;
  while (!is_op("]")) {
    if (!items.empty()) expect_op(",");
    items.push_back(parse_subscribed());
  }
  expect_op("]");
  if (items.empty()) fail(line, "expected a subscript inside '[]'");
  for (const ExprPtr& item : items)
    if (items.size() > 1 && item->kind == Expr::Kind::kSlice) fail(line, "a slice inside a tuple subscript is not supported");
  ExprPtr index;
  if (items.size() == 1) {
    index = std::move(items.front());
  } else {
    index = make(Expr::Kind::kTuple, line);
    index->args = std::move(items);
  }
  if (index->kind == Expr::Kind::kSlice) {  // x[a:b:c]: the slice node takes x as its first part
    index->args.insert(index->args.begin(), std::move(node));
    return index;
  }
  return make(Expr::Kind::kItem, line, std::move(node), std::move(index));
}

ExprPtr Parser::parse_subscribed() {
  const int line = peek().line;
  ExprPtr start;
  if (!is_op(":")) {
    start = parse_expression();
    if (!is_op(":")) return start;
  }
  next();  // the first ':'
  ExprPtr slice = make(Expr::Kind::kSlice, line);
  slice->args.push_back(std::move(start));
  slice->args.push_back(is_op(":") || is_op("]") || is_op(",") ? nullptr : parse_expression());
  if (skip_op(":")) slice->args.push_back(is_op("]") || is_op(",") ? nullptr : parse_expression());
  else slice->args.push_back(nullptr);
  return slice;
}

void Parser::parse_call_args(Expr& call) {
  const int line = peek().line;
  expect_op("(");
  bool first = true;
  while (!is_op(")")) {
    if (!first) {
      expect_op(",");
      if (is_op(")")) break;  // a trailing comma
    }
    first = false;
    if (is_op("*") || is_op("**")) fail(peek().line, "*args and **kwargs in calls are not supported");
    if (peek().kind == Token::Kind::kName && is_op("=", 1)) {
      std::string key = next().text;
      next();
      call.kwargs.emplace_back(std::move(key), parse_expression());
    } else {
      if (!call.kwargs.empty()) fail(line, "a positional argument after a keyword argument");
      call.args.push_back(parse_expression());
    }
  }
  expect_op(")");
}

ExprPtr Parser::parse_filter(ExprPtr node) {
  while (skip_op("|")) {
    const int line = peek().line;
    const std::string name = expect_name();
    if (!is_known_filter(name)) fail(line, "the filter '" + name + "' is not supported (" + supported_filters() + ")");
    ExprPtr f = make(Expr::Kind::kFilter, line);
    f->name = name;
    f->args.push_back(std::move(node));  // null in a block set's filter chain
    if (is_op("(")) parse_call_args(*f);
    node = std::move(f);
  }
  return node;
}

ExprPtr Parser::parse_test(ExprPtr node) {
  const int line = next().line;  // "is"
  const bool negated = skip_name("not");
  const std::string name = expect_name();
  if (!is_known_test(name)) fail(line, "the test '" + name + "' is not supported (" + supported_tests() + ")");
  ExprPtr t = make(Expr::Kind::kTest, line, std::move(node));
  t->name = name;
  t->negated = negated;
  const Token& n = peek();
  if (is_op("(")) {
    parse_call_args(*t);
  } else if ((n.kind == Token::Kind::kName || n.kind == Token::Kind::kString || n.kind == Token::Kind::kInt ||
              n.kind == Token::Kind::kFloat || is_op("[") || is_op("{")) &&
             !is_name("else") && !is_name("or") && !is_name("and")) {
    if (is_name("is")) fail(n.line, "tests cannot be chained with 'is'");
    t->args.push_back(parse_postfix(parse_primary()));
  }
  return t;
}

}  // namespace trident::data::jinja
