// Filters (x | name(args)) and tests (x is name(args)) of chat templates, with jinja2's
// semantics; tojson is transformers' (json.dumps with ensure_ascii=False, indent, separators,
// sort_keys). The parser refuses names not listed here, so an unsupported one is an error at
// load time naming its line.
#pragma once
#include <string>
#include <string_view>

#include "methods.hpp"
#include "value.hpp"

namespace trident::data::jinja {

bool is_known_filter(std::string_view name);
bool is_known_test(std::string_view name);
// "abs, attr, ..." for error messages.
std::string supported_filters();
std::string supported_tests();

Value apply_filter(const std::string& name, const Value& input, const CallArgs& args);
bool apply_test(const std::string& name, const Value& input, const CallArgs& args);

// json.dumps(value, ensure_ascii, indent, separators, sort_keys); indent "" with has_indent
// false is indent=None. TemplateError for values JSON cannot hold (undefined, namespaces).
struct JsonDumpOptions {
  bool ensure_ascii = false;
  bool has_indent = false;
  std::string indent;  // has_indent: the text of one level
  std::string item_separator, key_separator;  // empty: json.dumps' defaults
  bool sort_keys = false;
};
std::string json_dumps(const Value& value, const JsonDumpOptions& options);

}  // namespace trident::data::jinja
