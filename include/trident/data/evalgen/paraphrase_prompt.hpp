// What `trident evalgen --paraphrase` asks the model, and how its answer becomes a rewrite.
// The request is one user turn: kParaphraseInstruction, a blank line, the case's prompt. With
// a chat template (the model tokenizer's, chat_template.hpp) it is rendered as the messages
// [{"user", that}] with add_generation_prompt; without one it is plain text: that, a blank
// line, "Rewrite:" and a newline (the tokenizer's document prefix, e.g. BOS, before it).
// utils/make_paraphrase_fixture.py trains the test model on exactly these two renderings.
#pragma once
#include <string>
#include <string_view>

namespace trident::data {
class ChatTemplate;
}

namespace trident::data::evalgen {

extern const char* const kParaphraseInstruction;

// The request's text: under `chat` its rendering, else the plain form.
std::string paraphrase_request(const std::string& prompt, const ChatTemplate* chat);

// What the template writes after an assistant turn, up to its first line break ("<|im_end|>"
// for ChatML): the generation is cut there. "" without a chat template.
std::string assistant_turn_end(const ChatTemplate* chat);

// The rewrite in a generated text: cut at turn_end (when not empty), then at the first blank
// line unless the original prompt has one (the plain form's paragraph ends), trimmed.
std::string cut_rewrite(std::string_view generated, std::string_view turn_end, std::string_view original);

// Whether the Hugging Face tokenizer directory of `tokenizer_path` (a directory, or a file in
// it) has a chat template: chat_template.jinja, or a non-null "chat_template" in
// tokenizer_config.json.
bool has_chat_template(const std::string& tokenizer_path);

}  // namespace trident::data::evalgen
