// Template text -> tokens, as jinja2's lexer makes them under the settings transformers renders
// chat templates with (trim_blocks=True, lstrip_blocks=True, keep_trailing_newline=False):
// \r\n and \r become \n and one final newline is dropped; "-" on a tag strips all whitespace on
// that side, "+" keeps it; otherwise a block or comment tag alone after the indentation of its
// line takes that indentation away (lstrip_blocks) and the newline right after "%}" or "#}"
// goes (trim_blocks); {% raw %} ... {% endraw %} is text; comments leave nothing.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data::jinja {

struct Token {
  enum class Kind { kText, kVariableBegin, kVariableEnd, kBlockBegin, kBlockEnd, kName, kString, kInt, kFloat, kOperator, kEnd };
  Kind kind;
  std::string text;  // kText: the text; kName, kOperator: as written; kString: unescaped
  int64_t int_value = 0;
  double float_value = 0;
  int line = 1;      // 1-based, of the token's first character
};

// `name` is what errors are prefixed with ("chat template FILE"). ConfigError "NAME line L: what"
// for an unterminated tag, string or comment, an unknown character or unbalanced brackets.
std::vector<Token> tokenize(std::string_view source, const std::string& name);

}  // namespace trident::data::jinja
