// Statements of the template language: the tags of parser.hpp, each ending at its end tag;
// anything else is refused with its line.
#include "parser.hpp"

#include "filters.hpp"

namespace trident::data::jinja {

namespace {

StmtPtr make_stmt(Stmt::Kind kind, int line) {
  auto s = std::make_unique<Stmt>();
  s->kind = kind;
  s->line = line;
  return s;
}

std::string quoted_list(const std::vector<std::string_view>& names) {
  std::string out;
  for (size_t i = 0; i < names.size(); ++i) out += (i ? (i + 1 == names.size() ? " or " : ", ") : "") + std::string("'") + std::string(names[i]) + "'";
  return out;
}

bool is_end_tag(std::string_view name) { return name.starts_with("end") || name == "elif" || name == "else"; }

}  // namespace

Body parse_template(std::string_view source, const std::string& name) {
  return Parser(tokenize(source, name), name).parse_root();
}

Body Parser::parse_root() {
  std::string found;
  return parse_body({}, found);
}

Body Parser::parse_body(const std::vector<std::string_view>& ends, std::string& found) {
  Body body;
  while (true) {
    const Token& t = peek();
    switch (t.kind) {
      case Token::Kind::kEnd:
        if (!ends.empty()) fail(t.line, "unexpected end of template, expected " + quoted_list(ends));
        return body;
      case Token::Kind::kText: {
        StmtPtr s = make_stmt(Stmt::Kind::kText, t.line);
        s->text = next().text;
        body.push_back(std::move(s));
        break;
      }
      case Token::Kind::kVariableBegin: {
        StmtPtr s = make_stmt(Stmt::Kind::kOutput, next().line);
        s->expr = parse_tuple(true);
        if (peek().kind != Token::Kind::kVariableEnd) fail(peek().line, "expected '}}', got " + describe(peek()));
        next();
        body.push_back(std::move(s));
        break;
      }
      case Token::Kind::kBlockBegin: {
        const Token& tag = peek(1);
        if (tag.kind == Token::Kind::kName) {
          for (std::string_view end : ends) {
            if (tag.text != end) continue;
            next();
            found = next().text;
            return body;
          }
        }
        next();
        body.push_back(parse_statement());
        break;
      }
      default: fail(t.line, "unexpected " + describe(t));
    }
  }
}

StmtPtr Parser::parse_statement() {
  const Token& t = peek();
  if (t.kind != Token::Kind::kName) fail(t.line, "expected a tag name after '{%', got " + describe(t));
  const std::string tag = next().text;
  const int line = t.line;
  const DepthGuard guard(*this, line);
  if (tag == "if") return parse_if(line);
  if (tag == "for") return parse_for(line);
  if (tag == "set") return parse_set(line);
  if (tag == "macro") return parse_macro(line);
  if (tag == "with") return parse_with(line);
  if (tag == "break" || tag == "continue") {
    if (loop_depth_ == 0) fail(line, "'{% " + tag + " %}' outside a for loop");
    expect_block_end();
    return make_stmt(tag == "break" ? Stmt::Kind::kBreak : Stmt::Kind::kContinue, line);
  }
  if (tag == "filter" || tag == "generation") {
    StmtPtr s = make_stmt(tag == "filter" ? Stmt::Kind::kFilterBlock : Stmt::Kind::kScope, line);
    if (tag == "filter") parse_filter_chain(s->filters, true);
    expect_block_end();
    std::string found;
    const std::string end = "end" + tag;
    s->body = parse_body({end}, found);
    expect_block_end();
    return s;
  }
  for (std::string_view unsupported : {"call", "include", "import", "from", "extends", "block", "do", "autoescape", "trans"})
    if (tag == unsupported)
      fail(line, "'{% " + tag + " %}' is not supported (trident renders a subset of Jinja: if, for, set, macro, "
                 "filter, with, break, continue, raw, generation)");
  if (is_end_tag(tag)) fail(line, "unexpected '{% " + tag + " %}'");
  fail(line, "unknown tag '{% " + tag + " %}'");
}

StmtPtr Parser::parse_if(int line) {
  StmtPtr s = make_stmt(Stmt::Kind::kIf, line);
  ExprPtr condition = parse_tuple(false);
  expect_block_end();
  while (true) {
    std::string found;
    Body body = parse_body({"elif", "else", "endif"}, found);
    s->branches.emplace_back(std::move(condition), std::move(body));
    if (found == "elif") {
      condition = parse_tuple(false);
      expect_block_end();
      continue;
    }
    expect_block_end();
    if (found == "else") {
      Body otherwise = parse_body({"endif"}, found);
      s->branches.emplace_back(nullptr, std::move(otherwise));
      expect_block_end();
    }
    return s;
  }
}

StmtPtr Parser::parse_for(int line) {
  StmtPtr s = make_stmt(Stmt::Kind::kFor, line);
  s->target = parse_target(false);
  if (!skip_name("in")) fail(peek().line, "expected 'in' in the for tag, got " + describe(peek()));
  s->expr = parse_tuple(false, "recursive");
  if (skip_name("if")) s->condition = parse_expression(true);
  if (is_name("recursive")) fail(peek().line, "recursive for loops are not supported");
  expect_block_end();
  std::string found;
  ++loop_depth_;
  s->body = parse_body({"endfor", "else"}, found);
  --loop_depth_;
  expect_block_end();
  if (found == "else") {
    s->else_body = parse_body({"endfor"}, found);
    expect_block_end();
  }
  return s;
}

Target Parser::parse_target(bool with_namespace) {
  Target target;
  const int line = peek().line;
  if (with_namespace && peek().kind == Token::Kind::kName && is_op(".", 1)) {
    target.names.push_back(next().text);
    next();
    target.attribute = expect_name();
    return target;
  }
  const bool parens = skip_op("(");
  do {
    if (parens && is_op(")")) break;
    const std::string name = expect_name();
    for (std::string_view constant : {"true", "false", "none", "True", "False", "None"})
      if (name == constant) fail(line, "cannot assign to '" + name + "'");
    target.names.push_back(name);
  } while (skip_op(","));
  if (parens) expect_op(")");
  if (target.names.empty()) fail(line, "expected a name to assign to");
  return target;
}

void Parser::parse_filter_chain(std::vector<ExprPtr>& filters, bool start_inline) {
  while (start_inline || skip_op("|")) {
    start_inline = false;
    const int line = peek().line;
    const std::string name = expect_name();
    if (!is_known_filter(name)) fail(line, "the filter '" + name + "' is not supported (" + supported_filters() + ")");
    auto f = std::make_unique<Expr>();
    f->kind = Expr::Kind::kFilter;
    f->line = line;
    f->name = name;
    f->args.push_back(nullptr);  // the rendered body goes here
    if (is_op("(")) parse_call_args(*f);
    filters.push_back(std::move(f));
  }
}

StmtPtr Parser::parse_set(int line) {
  Target target = parse_target(true);
  if (skip_op("=")) {
    StmtPtr s = make_stmt(Stmt::Kind::kSet, line);
    s->target = std::move(target);
    s->expr = parse_tuple(true);
    expect_block_end();
    return s;
  }
  if (target.names.size() != 1) fail(line, "a block set ({% set x %}...{% endset %}) assigns one name");
  StmtPtr s = make_stmt(Stmt::Kind::kSetBlock, line);
  s->target = std::move(target);
  parse_filter_chain(s->filters, false);
  expect_block_end();
  std::string found;
  s->body = parse_body({"endset"}, found);
  expect_block_end();
  return s;
}

StmtPtr Parser::parse_macro(int line) {
  StmtPtr s = make_stmt(Stmt::Kind::kMacro, line);
  s->text = expect_name();
  expect_op("(");
  while (!is_op(")")) {
    if (!s->params.empty()) expect_op(",");
    if (is_op(")")) break;
    std::string param = expect_name();
    s->params.emplace_back(std::move(param), skip_op("=") ? parse_expression() : nullptr);
  }
  expect_op(")");
  expect_block_end();
  const int outer_loops = loop_depth_;
  loop_depth_ = 0;  // a loop around the definition is not around the body's execution
  std::string found;
  s->body = parse_body({"endmacro"}, found);
  loop_depth_ = outer_loops;
  expect_block_end();
  return s;
}

StmtPtr Parser::parse_with(int line) {
  StmtPtr s = make_stmt(Stmt::Kind::kScope, line);
  while (peek().kind != Token::Kind::kBlockEnd) {
    if (!s->params.empty()) expect_op(",");
    std::string name = expect_name();
    expect_op("=");
    s->params.emplace_back(std::move(name), parse_expression());
  }
  expect_block_end();
  std::string found;
  s->body = parse_body({"endwith"}, found);
  expect_block_end();
  return s;
}

}  // namespace trident::data::jinja
