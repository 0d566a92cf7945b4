// What prep makes of one input document: a text file, a JSONL line {"text"}, a prompt/answer
// line {"input", "output"} or a chat line {"messages": [{"role", "content"}, ...]}; how it is
// rendered with a prompt or chat template into the prompt (not trained on) and the answer
// (trained on, from the loss start of docs/design.md section 8); and its content hash.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace trident {
class Json;
}

namespace trident::data {

class ChatTemplate;

struct ChatMessage {
  std::string role;
  std::string content;
};

struct Example {
  enum class Kind { kText, kPromptAnswer, kChat };
  Kind kind = Kind::kText;
  std::string input;   // kPromptAnswer: the prompt's content
  std::string output;  // kText: the text; kPromptAnswer: the answer's content
  std::vector<ChatMessage> messages;  // kChat
};

// One parsed JSONL line: {"messages": [...]} (chat), else {"input", "output"} (both strings),
// else {"text"}; other keys are ignored. ConfigError naming the missing or mistyped key; a
// chat needs at least one "assistant" message (the one the loss is on).
Example parse_example(const Json& line);

// The rendered document: tokens = prefix + encode(prompt) + encode(answer) + suffix and
// end-of-text (the tokenizer's framing, tokenizer.hpp), the loss starting after the prefix and
// encode(prompt) (at 0 when those are only the prefix). Under a model chat template the template
// is the framing: no prefix or suffix, and no end-of-text when the answer's ids already end with
// it. Prompt and answer are encoded separately so the loss start is a token boundary under any
// tokenizer.
struct RenderedDocument {
  std::string prompt;
  std::string answer;
};

// How a prompt/answer pair becomes text. spec: "plain" (input then output, nothing added),
// "alpaca" ("### Instruction:\n{input}\n\n### Response:\n{output}"), "chatml"
// ("<|im_start|>user\n{input}<|im_end|>\n<|im_start|>assistant\n{output}<|im_end|>\n"), or a
// custom string holding "{input}" and optionally "{output}" (appended at the end when absent),
// in which the two-character escapes \n and \t stand for newline and tab. Everything before
// {output} is prompt. Chat lines always use ChatML: "<|im_start|>ROLE\nCONTENT<|im_end|>\n" per
// message; the answer is the last assistant message's content and everything after it.
//
// "model": the chat template of the tokenizer (chat_template.hpp) renders chat lines and pair
// lines (as a user and an assistant message); the prompt is the rendering of the messages
// before the last assistant one with add_generation_prompt, the answer the rest of the
// rendering of all of them. Text lines stay untemplated under every spec.
class PromptTemplate {
 public:
  // ConfigError for a spec without {input}; "model" needs the two-argument form.
  explicit PromptTemplate(const std::string& spec);
  // `tokenizer`: the tokenizer's describe() (its tokenizer.json, whose directory holds the
  // chat template), used by "model" only.
  PromptTemplate(const std::string& spec, const std::string& tokenizer);
  RenderedDocument render(const Example& example) const;
  const std::string& spec() const { return spec_; }
  // The model's chat template under "model", else nullptr.
  const ChatTemplate* chat_template() const { return chat_.get(); }

 private:
  std::string spec_;
  std::string before_input_, between_, after_output_;
  std::shared_ptr<const ChatTemplate> chat_;
};

// Text the quality filters look at and the dedup hash is taken over: the contents without any
// template (so the same answer under two templates is one document), as (first, second):
// text -> ("", text); pair -> (input, output); chat -> (every message but the last assistant
// one, as "role\ncontent\n"; the last assistant message's content).
std::pair<std::string, std::string> example_content(const Example& example);

// For exact-duplicate detection: runs of whitespace become one space, leading and trailing
// whitespace is removed, case and everything else are kept.
std::string normalize_for_dedup(std::string_view text);

// FNV-1a over first, its length, second; then splitmix64's finaliser.
uint64_t document_content_hash(std::string_view first, std::string_view second);

// Where a document goes: document_content_hash of example_content as it is. Stable across
// versions: hash % 1000 decides the train/valid split, other bits the shard (prep.hpp).
uint64_t example_placement_hash(const Example& example);
// What makes two documents duplicates: document_content_hash of the normalised
// example_content; other bits pick the rank that decides its duplicates.
uint64_t example_dedup_hash(const Example& example);

}  // namespace trident::data
