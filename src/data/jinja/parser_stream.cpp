// The token stream under the parser: looking ahead, consuming and expecting tokens, the
// nesting bound, and error messages that name the template and line.
#include "parser.hpp"
#include "trident/core/error.hpp"

namespace trident::data::jinja {

namespace {
constexpr int kMaxDepth = 200;  // far below what would overflow the stack
}  // namespace

DepthGuard::DepthGuard(Parser& p, int line) : parser_(p) {
  if (++parser_.depth_ > kMaxDepth) {
    --parser_.depth_;
    parser_.fail(line, "nested more than " + std::to_string(kMaxDepth) + " levels deep");
  }
}

const Token& Parser::peek(size_t ahead) const { return tokens_[std::min(at_ + ahead, tokens_.size() - 1)]; }

const Token& Parser::next() {
  const Token& t = tokens_[at_];
  if (at_ + 1 < tokens_.size()) ++at_;
  return t;
}

bool Parser::is_op(std::string_view op, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.kind == Token::Kind::kOperator && t.text == op;
}

bool Parser::is_name(std::string_view name, size_t ahead) const {
  const Token& t = peek(ahead);
  return t.kind == Token::Kind::kName && t.text == name;
}

bool Parser::skip_op(std::string_view op) { return is_op(op) ? (next(), true) : false; }
bool Parser::skip_name(std::string_view name) { return is_name(name) ? (next(), true) : false; }

void Parser::expect_op(std::string_view op) {
  if (!skip_op(op)) fail(peek().line, "expected '" + std::string(op) + "', got " + describe(peek()));
}

std::string Parser::expect_name() {
  if (peek().kind != Token::Kind::kName) fail(peek().line, "expected a name, got " + describe(peek()));
  return next().text;
}

void Parser::expect_block_end() {
  if (peek().kind != Token::Kind::kBlockEnd) fail(peek().line, "expected the end of the tag '%}', got " + describe(peek()));
  next();
}

bool Parser::is_tuple_end(std::string_view extra_end) const {
  const Token& t = peek();
  if (t.kind == Token::Kind::kVariableEnd || t.kind == Token::Kind::kBlockEnd || t.kind == Token::Kind::kEnd) return true;
  if (is_op(")")) return true;
  return !extra_end.empty() && is_name(extra_end);
}

void Parser::fail(int line, const std::string& what) const {
  throw ConfigError(detail::concat(name_, " line ", line, ": ", what));
}

std::string Parser::describe(const Token& t) const {
  switch (t.kind) {
    case Token::Kind::kText: return "text";
    case Token::Kind::kVariableBegin: return "'{{'";
    case Token::Kind::kVariableEnd: return "'}}'";
    case Token::Kind::kBlockBegin: return "'{%'";
    case Token::Kind::kBlockEnd: return "'%}'";
    case Token::Kind::kString: return "a string";
    case Token::Kind::kEnd: return "the end of the template";
    default: return "'" + t.text + "'";
  }
}

}  // namespace trident::data::jinja
