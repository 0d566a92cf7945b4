// Tokens -> the statement tree, with jinja2's grammar and operator precedence (lowest first):
// `x if c else y`, or, and, not, comparisons (== != < <= > >= in, not in; chained), + -, ~,
// * / // %, **, unary - +, then postfix .attr [item] [a:b:c] (call), | filter and `is` test.
// Supported tags: if/elif/else, for (tuple targets, `if` filter, else, loop.*), set (names,
// tuples, namespace attributes, block set with filters), macro, filter, with, break, continue,
// raw, and transformers' generation; anything else is a ConfigError naming its line, as are
// unknown filters and tests.
#pragma once
#include <string>
#include <string_view>
#include <vector>

#include "ast.hpp"
#include "lexer.hpp"

namespace trident::data::jinja {

// `name` prefixes every error ("chat template FILE").
Body parse_template(std::string_view source, const std::string& name);

class Parser {
 public:
  Parser(std::vector<Token> tokens, const std::string& name) : tokens_(std::move(tokens)), name_(name) {}
  Body parse_root();

 private:
  friend class DepthGuard;
  // Statements (parser.cpp).
  Body parse_body(const std::vector<std::string_view>& ends, std::string& found);
  StmtPtr parse_statement();
  StmtPtr parse_if(int line);
  StmtPtr parse_for(int line);
  StmtPtr parse_set(int line);
  StmtPtr parse_macro(int line);
  StmtPtr parse_with(int line);
  Target parse_target(bool with_namespace);
  void parse_filter_chain(std::vector<ExprPtr>& filters, bool start_inline);

  // Expressions (parser_expr.cpp).
  ExprPtr parse_tuple(bool with_condexpr, std::string_view extra_end = {}, bool explicit_parens = false);
  ExprPtr parse_expression(bool with_condexpr = true);
  ExprPtr parse_or();
  ExprPtr parse_and();
  ExprPtr parse_not();
  ExprPtr parse_compare();
  ExprPtr parse_math1();
  ExprPtr parse_concat();
  ExprPtr parse_math2();
  ExprPtr parse_pow();
  ExprPtr parse_unary(bool with_filter);
  ExprPtr parse_primary();
  ExprPtr parse_postfix(ExprPtr node);
  ExprPtr parse_filter_expr(ExprPtr node);
  ExprPtr parse_subscript(ExprPtr node);
  ExprPtr parse_subscribed();
  ExprPtr parse_filter(ExprPtr node);
  ExprPtr parse_test(ExprPtr node);
  void parse_call_args(Expr& call);

  // The token stream.
  const Token& peek(size_t ahead = 0) const;
  const Token& next();
  bool is_op(std::string_view op, size_t ahead = 0) const;
  bool is_name(std::string_view name, size_t ahead = 0) const;
  bool skip_op(std::string_view op);
  bool skip_name(std::string_view name);
  void expect_op(std::string_view op);
  std::string expect_name();
  void expect_block_end();
  bool is_tuple_end(std::string_view extra_end) const;
  [[noreturn]] void fail(int line, const std::string& what) const;
  std::string describe(const Token& t) const;

  std::vector<Token> tokens_;
  const std::string& name_;
  size_t at_ = 0;
  int depth_ = 0;       // nesting of expressions and blocks (bounded: deep input cannot overflow the stack)
  int loop_depth_ = 0;  // for loops around the statement being parsed (break/continue need one)
};

// Counts one level of nesting; ConfigError past the limit.
class DepthGuard {
 public:
  DepthGuard(Parser& p, int line);
  ~DepthGuard() { --parser_.depth_; }
  DepthGuard(const DepthGuard&) = delete;
  DepthGuard& operator=(const DepthGuard&) = delete;

 private:
  Parser& parser_;
};

}  // namespace trident::data::jinja
