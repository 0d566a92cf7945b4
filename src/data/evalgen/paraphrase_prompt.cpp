// The paraphrase request and the rewrite in a generation (paraphrase_prompt.hpp).
#include "trident/data/evalgen/paraphrase_prompt.hpp"

#include <filesystem>
#include <fstream>
#include <sstream>

#include "trident/core/json.hpp"
#include "trident/data/chat_template.hpp"

namespace trident::data::evalgen {

const char* const kParaphraseInstruction =
    "Rewrite the question below in other words. Keep every number, key, name and list exactly as written, ask "
    "exactly the same thing, and end with the same last line.";

namespace {

std::string_view trimmed(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? std::string_view() : s.substr(b, e - b + 1);
}

}  // namespace

std::string paraphrase_request(const std::string& prompt, const ChatTemplate* chat) {
  const std::string user = std::string(kParaphraseInstruction) + "\n\n" + prompt;
  if (chat) return chat->render({{"user", user}}, /*add_generation_prompt=*/true);
  return user + "\n\nRewrite:\n";
}

std::string assistant_turn_end(const ChatTemplate* chat) {
  if (!chat) return "";
  // A probe answer no template writes itself: what follows it, up to a line break, ends a turn.
  const std::string probe = "Q9x7Z";
  const RenderedDocument doc = chat->render_document({{"user", "A question."}, {"assistant", probe}});
  const size_t at = doc.answer.find(probe);
  if (at == std::string::npos) return "";
  const std::string rest = doc.answer.substr(at + probe.size());
  return std::string(trimmed(std::string_view(rest).substr(0, rest.find('\n'))));
}

std::string cut_rewrite(std::string_view generated, std::string_view turn_end, std::string_view original) {
  if (!turn_end.empty()) generated = generated.substr(0, generated.find(turn_end));
  if (original.find("\n\n") == std::string_view::npos) generated = generated.substr(0, generated.find("\n\n"));
  return std::string(trimmed(generated));
}

bool has_chat_template(const std::string& tokenizer_path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  const fs::path dir =
      fs::is_directory(tokenizer_path, ec) ? fs::path(tokenizer_path) : fs::path(tokenizer_path).parent_path();
  if (fs::is_regular_file(dir / "chat_template.jinja", ec)) return true;
  std::ifstream in(dir / "tokenizer_config.json", std::ios::binary);
  if (!in) return false;
  std::stringstream text;
  text << in.rdbuf();
  try {
    const Json config = Json::parse(text.str());
    const Json* t = config.is_object() ? config.find("chat_template") : nullptr;
    return t && !t->is_null();
  } catch (const std::exception&) {
    return false;  // a malformed file: the tokenizer loader names it
  }
}

}  // namespace trident::data::evalgen
