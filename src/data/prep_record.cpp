// Prep records: JSONL line -> Example, Example -> prompt/answer text through a template (a
// built-in one or the model's chat template), and the normalised content hash used for dedup,
// the valid split and shard assignment.
#include "trident/data/prep_record.hpp"

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/core/rng.hpp"
#include "trident/data/chat_template.hpp"

namespace trident::data {
namespace {

constexpr std::string_view kInput = "{input}", kOutput = "{output}";

std::string unescape_template(const std::string& spec) {
  std::string out;
  for (size_t i = 0; i < spec.size(); ++i) {
    if (spec[i] == '\\' && i + 1 < spec.size() && (spec[i + 1] == 'n' || spec[i + 1] == 't')) {
      out += spec[++i] == 'n' ? '\n' : '\t';
    } else {
      out += spec[i];
    }
  }
  return out;
}

std::string preset(const std::string& spec) {
  if (spec == "plain") return "{input}{output}";
  if (spec == "alpaca") return "### Instruction:\n{input}\n\n### Response:\n{output}";
  if (spec == "chatml")
    return "<|im_start|>user\n{input}<|im_end|>\n<|im_start|>assistant\n{output}<|im_end|>\n";
  return unescape_template(spec);
}

const std::string& string_member(const Json& object, std::string_view key) {
  const Json& value = object.at(key);
  TRIDENT_CONFIG_CHECK(value.is_string(), "\"", key, "\" must be a string, not ",
                       json_kind_name(value.kind()));
  return value.as_string();
}

void append_chatml(std::string& out, const ChatMessage& m) {
  out += "<|im_start|>";
  out += m.role;
  out += '\n';
  out += m.content;
  out += "<|im_end|>\n";
}

size_t last_assistant(const std::vector<ChatMessage>& messages) {
  for (size_t k = messages.size(); k-- > 0;)
    if (messages[k].role == "assistant") return k;
  return messages.size();
}

}  // namespace

Example parse_example(const Json& line) {
  TRIDENT_CONFIG_CHECK(line.is_object(), "expected a JSON object, found ", json_kind_name(line.kind()));
  Example example;
  if (const Json* messages = line.find("messages")) {
    TRIDENT_CONFIG_CHECK(messages->is_array(), "\"messages\" must be an array of {\"role\", \"content\"}");
    example.kind = Example::Kind::kChat;
    for (const Json& m : messages->as_array()) {
      TRIDENT_CONFIG_CHECK(m.is_object(), "\"messages\" must be an array of {\"role\", \"content\"}");
      example.messages.push_back({string_member(m, "role"), string_member(m, "content")});
    }
    TRIDENT_CONFIG_CHECK(last_assistant(example.messages) < example.messages.size(),
                         "\"messages\" has no \"assistant\" message (the loss is on the last one)");
  } else if (line.find("input") || line.find("output") || !line.find("text")) {
    example.kind = Example::Kind::kPromptAnswer;
    example.input = string_member(line, "input");
    example.output = string_member(line, "output");
  } else {
    example.output = string_member(line, "text");
  }
  return example;
}

PromptTemplate::PromptTemplate(const std::string& spec) : PromptTemplate(spec, "") {}

PromptTemplate::PromptTemplate(const std::string& spec, const std::string& tokenizer) : spec_(spec) {
  if (spec == "model") {
    TRIDENT_CONFIG_CHECK(!tokenizer.empty(), "template \"model\" needs the tokenizer whose chat template it uses");
    chat_ = std::make_shared<const ChatTemplate>(load_chat_template(tokenizer));
    return;
  }
  std::string text = preset(spec);
  const size_t in = text.find(kInput);
  TRIDENT_CONFIG_CHECK(in != std::string::npos, "--template '", spec,
                       "': not plain, alpaca, chatml or model, and no {input} in it");
  size_t out = text.find(kOutput, in + kInput.size());
  if (out == std::string::npos) {
    TRIDENT_CONFIG_CHECK(text.find(kOutput) == std::string::npos, "--template '", spec,
                         "': {output} must come after {input}");
    text += kOutput;
    out = text.find(kOutput, in + kInput.size());
  }
  before_input_ = text.substr(0, in);
  between_ = text.substr(in + kInput.size(), out - in - kInput.size());
  after_output_ = text.substr(out + kOutput.size());
}

RenderedDocument PromptTemplate::render(const Example& example) const {
  RenderedDocument doc;
  if (chat_ && example.kind == Example::Kind::kChat) return chat_->render_document(example.messages);
  if (chat_ && example.kind == Example::Kind::kPromptAnswer)
    return chat_->render_document({{"user", example.input}, {"assistant", example.output}});
  switch (example.kind) {
    case Example::Kind::kText:
      doc.answer = example.output;
      break;
    case Example::Kind::kPromptAnswer:
      doc.prompt = before_input_ + example.input + between_;
      doc.answer = example.output + after_output_;
      break;
    case Example::Kind::kChat: {
      const size_t last = last_assistant(example.messages);
      for (size_t k = 0; k < example.messages.size(); ++k) {
        std::string& part = k <= last ? doc.prompt : doc.answer;
        if (k != last) {
          append_chatml(part, example.messages[k]);
          continue;
        }
        doc.prompt += "<|im_start|>assistant\n";
        doc.answer += example.messages[k].content + "<|im_end|>\n";
      }
      break;
    }
  }
  return doc;
}

std::pair<std::string, std::string> example_content(const Example& example) {
  if (example.kind != Example::Kind::kChat) return {example.input, example.output};
  std::pair<std::string, std::string> content;
  const size_t last = last_assistant(example.messages);
  for (size_t k = 0; k < example.messages.size(); ++k) {
    if (k == last) continue;
    content.first += example.messages[k].role + "\n" + example.messages[k].content + "\n";
  }
  content.second = example.messages[last].content;
  return content;
}

std::string normalize_for_dedup(std::string_view text) {
  std::string out;
  out.reserve(text.size());
  bool pending_space = false;
  for (char c : text) {
    if (c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v') {
      pending_space = !out.empty();
      continue;
    }
    if (pending_space) out += ' ';
    pending_space = false;
    out += c;
  }
  return out;
}

uint64_t document_content_hash(std::string_view first, std::string_view second) {
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix_byte = [&h](unsigned char c) { h = (h ^ c) * 0x100000001b3ull; };
  for (char c : first) mix_byte(static_cast<unsigned char>(c));
  for (int i = 0; i < 8; ++i) mix_byte(static_cast<unsigned char>(uint64_t(first.size()) >> (8 * i)));
  for (char c : second) mix_byte(static_cast<unsigned char>(c));
  return mix64(h);
}

uint64_t example_placement_hash(const Example& example) {
  const auto [first, second] = example_content(example);
  return document_content_hash(first, second);
}

uint64_t example_dedup_hash(const Example& example) {
  const auto [first, second] = example_content(example);
  return document_content_hash(normalize_for_dedup(first), normalize_for_dedup(second));
}

}  // namespace trident::data
