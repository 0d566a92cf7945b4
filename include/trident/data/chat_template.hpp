// Chat templates as models define them: the Jinja `chat_template` of a Hugging Face tokenizer
// directory, rendered by trident's own interpreter of the Jinja subset that published templates
// use (src/data/jinja/), as transformers' apply_chat_template(..., tokenize=False) renders it
// (jinja2 with trim_blocks and lstrip_blocks; variables messages, add_generation_prompt, tools
// and documents (none), the special tokens; globals raise_exception, strftime_now (a fixed
// date: methods.hpp), namespace, range, dict). What is supported: src/data/jinja/parser.hpp;
// anything else is a ConfigError naming the template's file and line, at load time for syntax,
// unknown tags, filters and tests, at render time for type errors and undefined values.
// Known differences: integers are 64-bit, case mapping covers Latin, Greek and Cyrillic,
// `is sameas` compares by value, and JSON numbers with an integral value are ints.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trident/data/prep_record.hpp"

namespace trident {
class Json;
}

namespace trident::data {

class ChatTemplate {
 public:
  // Parses `source`; `name` (the file it came from) names it in every error:
  // "chat template NAME line L: what". `special_tokens`: (bos_token, "<s>"), ... that every
  // rendering sees as variables.
  ChatTemplate(std::string_view source, std::string name,
               std::vector<std::pair<std::string, std::string>> special_tokens);

  // Renders with the variables of `context` (a JSON object: messages, add_generation_prompt,
  // any others a template reads); tools and documents are none and the special tokens are set
  // unless the context sets them.
  std::string render(const Json& context) const;
  // Renders [{"role", "content"}, ...].
  std::string render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const;

  // A training document: prompt = the messages before the last assistant one rendered with
  // add_generation_prompt, answer = the rest of all messages rendered without it. ConfigError
  // when there is no assistant message, when it is the first message, or when the whole does
  // not begin with the prompt (the template cannot be split at the last assistant turn).
  RenderedDocument render_document(const std::vector<ChatMessage>& messages) const;

  const std::string& name() const { return name_; }
  // The text of a special token variable ("bos_token", ...); empty when the tokenizer has none.
  std::string special_token(std::string_view variable) const;

 private:
  struct Program;
  std::string name_;
  std::vector<std::pair<std::string, std::string>> special_tokens_;
  std::shared_ptr<const Program> program_;  // immutable: copies share it, renders may run in parallel
};

// The chat template of the Hugging Face tokenizer at `path`: a directory, or a file in it
// (tokenizer.json, tokenizer_config.json, chat_template.jinja). Like transformers, it takes
// chat_template.jinja when the directory has one, else tokenizer_config.json's "chat_template"
// (a string, or a list of {"name", "template"} of which "default" is used); the special tokens
// (bos_token, eos_token, unk_token, sep_token, pad_token, cls_token, mask_token: strings or
// {"content": ...}) come from tokenizer_config.json. ConfigError naming the file and what is
// missing ("byte" has no chat template).
ChatTemplate load_chat_template(const std::string& path);

}  // namespace trident::data
