// ChatTemplate: a model's Jinja chat template read from its tokenizer directory, rendered with
// transformers' variables, and split into prompt and answer at the last assistant message.
#include "trident/data/chat_template.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "jinja/evaluator.hpp"
#include "jinja/parser.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident::data {

namespace fs = std::filesystem;

struct ChatTemplate::Program {
  jinja::Body body;
};

namespace {

// The variables transformers passes from the tokenizer's special tokens map.
constexpr const char* kSpecialTokens[] = {"bos_token", "eos_token", "unk_token", "sep_token",
                                          "pad_token", "cls_token", "mask_token"};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in, "cannot read ", path.string());
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

Json read_json(const fs::path& path) {
  try {
    return Json::parse(read_file(path));
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(path.string(), ": ", e.what()));
  }
}

// "chat_template": "..." or [{"name": "default", "template": "..."}, ...].
std::string template_text(const Json& config, const fs::path& path) {
  const Json* t = config.find("chat_template");
  TRIDENT_CONFIG_CHECK(t && !t->is_null(), path.string(), " has no \"chat_template\" (and there is no chat_template.jinja ",
                       "beside it): this tokenizer defines no chat template; use --template plain|alpaca|chatml|STRING");
  if (t->is_string()) return t->as_string();
  TRIDENT_CONFIG_CHECK(t->is_array(), path.string(), ": \"chat_template\" must be a string or a list of {\"name\", \"template\"}");
  std::string names;
  for (const Json& entry : t->as_array()) {
    const Json* name = entry.is_object() ? entry.find("name") : nullptr;
    const Json* text = entry.is_object() ? entry.find("template") : nullptr;
    TRIDENT_CONFIG_CHECK(name && name->is_string() && text && text->is_string(), path.string(),
                         ": each entry of \"chat_template\" must be {\"name\": ..., \"template\": ...}");
    if (name->as_string() == "default") return text->as_string();
    names += (names.empty() ? "" : ", ") + name->as_string();
  }
  throw ConfigError(detail::concat(path.string(), ": \"chat_template\" lists templates (", names,
                                   ") but none named \"default\", the one trident uses"));
}

// A special token is a string or an AddedToken object {"content": "..."}.
void add_special_tokens(const Json& config, std::vector<std::pair<std::string, std::string>>& out) {
  for (const char* key : kSpecialTokens) {
    if (std::any_of(out.begin(), out.end(), [&](const auto& kv) { return kv.first == key; })) continue;
    const Json* v = config.find(key);
    if (!v) continue;
    if (v->is_string()) out.emplace_back(key, v->as_string());
    else if (v->is_object() && v->find("content") && v->find("content")->is_string())
      out.emplace_back(key, v->find("content")->as_string());
  }
}

Json messages_json(const std::vector<ChatMessage>& messages, size_t count) {
  Json list = Json::array();
  for (size_t i = 0; i < count; ++i) {
    Json m = Json::object();
    m.set("role", Json(messages[i].role));
    m.set("content", Json(messages[i].content));
    list.push_back(std::move(m));
  }
  return list;
}

std::string excerpt(const std::string& s, size_t at) {
  std::string out = json_quote(s.substr(at, 40));
  return at + 40 < s.size() ? out + "..." : out;
}

}  // namespace

ChatTemplate::ChatTemplate(std::string_view source, std::string name,
                           std::vector<std::pair<std::string, std::string>> special_tokens)
    : name_(std::move(name)), special_tokens_(std::move(special_tokens)) {
  auto program = std::make_shared<Program>();
  program->body = jinja::parse_template(source, "chat template " + name_);
  program_ = std::move(program);
}

std::string ChatTemplate::special_token(std::string_view variable) const {
  for (const auto& [k, v] : special_tokens_)
    if (k == variable) return v;
  return "";
}

std::string ChatTemplate::render(const Json& context) const {
  TRIDENT_CONFIG_CHECK(context.is_object(), "chat template ", name_, ": the context must be a JSON object");
  std::vector<std::pair<std::string, jinja::Value>> vars;
  for (const auto& [k, v] : context.as_object()) vars.emplace_back(k, jinja::from_json(v));
  auto has = [&](std::string_view key) { return context.find(key) != nullptr; };
  for (const char* key : {"tools", "documents"})
    if (!has(key)) vars.emplace_back(key, jinja::Value(nullptr));
  if (!has("add_generation_prompt")) vars.emplace_back("add_generation_prompt", jinja::Value(false));
  for (const auto& [k, v] : special_tokens_)
    if (!has(k)) vars.emplace_back(k, jinja::Value(v));
  return jinja::render_body(program_->body, std::move(vars), "chat template " + name_);
}

std::string ChatTemplate::render(const std::vector<ChatMessage>& messages, bool add_generation_prompt) const {
  Json context = Json::object();
  context.set("messages", messages_json(messages, messages.size()));
  context.set("add_generation_prompt", Json(add_generation_prompt));
  return render(context);
}

RenderedDocument ChatTemplate::render_document(const std::vector<ChatMessage>& messages) const {
  size_t last = messages.size();
  for (size_t k = messages.size(); k-- > 0;)
    if (messages[k].role == "assistant") {
      last = k;
      break;
    }
  TRIDENT_CONFIG_CHECK(last < messages.size(), "no \"assistant\" message (the loss is on the last one)");
  TRIDENT_CONFIG_CHECK(last > 0, "the last assistant message is the first message: chat template ", name_,
                       " needs the messages before it to render the prompt");
  Json before = Json::object();
  before.set("messages", messages_json(messages, last));
  before.set("add_generation_prompt", Json(true));
  RenderedDocument doc;
  doc.prompt = render(before);
  const std::string whole = render(messages, false);
  if (!whole.starts_with(doc.prompt)) {
    size_t at = 0;
    while (at < whole.size() && at < doc.prompt.size() && whole[at] == doc.prompt[at]) ++at;
    throw ConfigError(detail::concat(
        "chat template ", name_, " cannot be split at the last assistant message: the conversation rendered whole ",
        "does not begin with its rendering up to that message (with add_generation_prompt); from byte ", at,
        " the prompt has ", excerpt(doc.prompt, at), " but the whole has ", excerpt(whole, at),
        " (the template renders earlier turns differently once a later one exists)"));
  }
  doc.answer = whole.substr(doc.prompt.size());
  return doc;
}

ChatTemplate load_chat_template(const std::string& path) {
  TRIDENT_CONFIG_CHECK(path != "byte", "the byte tokenizer has no chat template: --template model needs --tokenizer ",
                       "DIR, a Hugging Face tokenizer directory whose tokenizer_config.json has a chat_template");
  std::error_code ec;
  const fs::path dir = fs::is_directory(path, ec) ? fs::path(path) : fs::path(path).parent_path();
  const fs::path config_path = dir / "tokenizer_config.json", jinja_path = dir / "chat_template.jinja";
  const bool has_config = fs::is_regular_file(config_path, ec), has_jinja = fs::is_regular_file(jinja_path, ec);
  TRIDENT_CONFIG_CHECK(has_config || has_jinja, "no tokenizer_config.json or chat_template.jinja in ",
                       dir.empty() ? "." : dir.string(), ": the model's chat template lives there (copy it from the ",
                       "model's Hugging Face directory, next to tokenizer.json)");
  std::vector<std::pair<std::string, std::string>> special;
  std::string text, name;
  if (has_config) {
    const Json config = read_json(config_path);
    TRIDENT_CONFIG_CHECK(config.is_object(), config_path.string(), " must hold a JSON object");
    add_special_tokens(config, special);
    if (!has_jinja) text = template_text(config, config_path), name = config_path.string();
  }
  if (const fs::path legacy = dir / "special_tokens_map.json"; fs::is_regular_file(legacy, ec)) {
    const Json map = read_json(legacy);
    if (map.is_object()) add_special_tokens(map, special);  // only the keys tokenizer_config.json lacks
  }
  if (has_jinja) text = read_file(jinja_path), name = jinja_path.string();
  return ChatTemplate(text, name, std::move(special));
}

}  // namespace trident::data
