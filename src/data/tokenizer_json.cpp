// tokenizer.json -> BpeConfig: the file, its model and added tokens (the other components are
// tokenizer_json_pipeline.cpp's and tokenizer_json_post.cpp's), and a refusal of the rest.
#include "trident/data/tokenizer_json.hpp"

#include <unordered_map>

#include "tokenizer_json_parts.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident::data {

namespace {

using tokenizer_json::flag;
using tokenizer_json::type_of;

void read_model(const Json& model, BpeConfig& config) {
  const std::string type = type_of(model);
  TRIDENT_CONFIG_CHECK(type == "BPE" || !model.find("type"), "model type \"", type,
                       "\" is not supported (trident loads BPE tokenizers only, not WordPiece, Unigram or WordLevel)");
  const Json* dropout = model.find("dropout");
  TRIDENT_CONFIG_CHECK(!dropout || dropout->is_null() || dropout->as_number() == 0.0, "BPE dropout is not supported");
  for (const char* key : {"continuing_subword_prefix", "end_of_word_suffix"}) {
    const Json* v = model.find(key);
    TRIDENT_CONFIG_CHECK(!v || v->is_null() || v->as_string().empty(), "BPE ", key, " is not supported");
  }
  config.byte_fallback = flag(model, "byte_fallback", false);
  config.ignore_merges = flag(model, "ignore_merges", false);
  config.fuse_unk = flag(model, "fuse_unk", false);

  std::unordered_map<std::string_view, uint32_t> id_of;
  const Json::Object& vocab = model.at("vocab").as_object();
  id_of.reserve(vocab.size());
  // Real vocabularies number their tokens 0..n-1; a bound on the ids keeps a corrupt file from
  // sizing the id table at billions of entries (found by fuzzing).
  const int64_t id_limit = 2 * static_cast<int64_t>(vocab.size()) + 1024;
  for (const auto& [token, id_json] : vocab) {
    const int64_t id = id_json.as_int();
    TRIDENT_CONFIG_CHECK(id >= 0 && id < id_limit, "vocab token ", json_quote(token), " has id ", id,
                         " (ids of a vocabulary of ", vocab.size(), " tokens must be below ", id_limit, ")");
    if (static_cast<size_t>(id) >= config.vocab.size()) config.vocab.resize(id + 1);
    config.vocab[id] = token;
  }
  for (size_t id = 0; id < config.vocab.size(); ++id)
    if (!config.vocab[id].empty()) id_of.emplace(config.vocab[id], static_cast<uint32_t>(id));

  const Json::Array& merges = model.at("merges").as_array();
  config.merges.reserve(merges.size());
  auto lookup = [&](std::string_view token, size_t rank) {
    const auto it = id_of.find(token);
    TRIDENT_CONFIG_CHECK(it != id_of.end(), "merge ", rank, " names ", json_quote(token),
                         ", which is not in the vocabulary");
    return it->second;
  };
  for (size_t rank = 0; rank < merges.size(); ++rank) {
    std::string_view left, right;
    if (merges[rank].is_string()) {  // "left right"
      const std::string& line = merges[rank].as_string();
      const size_t space = line.find(' ');
      TRIDENT_CONFIG_CHECK(space != std::string::npos && line.find(' ', space + 1) == std::string::npos, "merge ",
                           rank, " ", json_quote(line), " is not two tokens separated by one space");
      left = std::string_view(line).substr(0, space);
      right = std::string_view(line).substr(space + 1);
    } else {  // ["left", "right"]
      const Json::Array& pair = merges[rank].as_array();
      TRIDENT_CONFIG_CHECK(pair.size() == 2, "merge ", rank, " is not a pair of tokens");
      left = pair[0].as_string();
      right = pair[1].as_string();
    }
    config.merges.emplace_back(lookup(left, rank), lookup(right, rank));
  }
  if (const Json* unk = model.find("unk_token"); unk && !unk->is_null()) {
    const auto it = id_of.find(unk->as_string());
    if (it != id_of.end()) config.unk_id = it->second;
  }
}

void read_added_tokens(const Json* added, BpeConfig& config) {
  if (!added || added->is_null()) return;
  // As for the vocabulary: ids near the tokens that exist, so the id table stays that size.
  const int64_t id_limit =
      2 * static_cast<int64_t>(config.vocab.size() + added->as_array().size()) + 1024;
  for (const Json& t : added->as_array()) {
    BpeAddedToken token;
    const int64_t id = t.at("id").as_int();
    TRIDENT_CONFIG_CHECK(id >= 0 && id < id_limit, "added token id ", id, " is out of range (below ", id_limit,
                         " expected for ", config.vocab.size(), " vocabulary tokens)");
    token.id = static_cast<uint32_t>(id);
    token.content = t.at("content").as_string();
    TRIDENT_CONFIG_CHECK(!token.content.empty(), "added token ", id, " has empty content");
    token.special = flag(t, "special", false);
    token.single_word = flag(t, "single_word", false);
    token.lstrip = flag(t, "lstrip", false);
    token.rstrip = flag(t, "rstrip", false);
    token.normalized = flag(t, "normalized", !token.special);
    config.added_tokens.push_back(std::move(token));
  }
}

// The id appended after each document: the first of the usual end-of-text tokens among the
// added tokens, else among the vocabulary (a SentencePiece vocabulary may have learnt
// "<|endoftext|>" as an ordinary token while its end of text is the added "</s>").
uint32_t find_end_of_text(const BpeConfig& config) {
  constexpr std::string_view kNames[] = {"<|endoftext|>", "<|end_of_text|>", "</s>", "<|im_end|>", "<eos>"};
  for (std::string_view name : kNames)
    for (const BpeAddedToken& t : config.added_tokens)
      if (t.content == name) return t.id;
  for (std::string_view name : kNames)
    for (size_t id = 0; id < config.vocab.size(); ++id)
      if (config.vocab[id] == name) return static_cast<uint32_t>(id);
  throw ConfigError(
      "no end-of-text token (looked for <|endoftext|>, <|end_of_text|>, </s>, <|im_end|>, <eos> among the tokens)");
}

}  // namespace

BpeConfig parse_tokenizer_json(std::string_view text, const std::string& path) {
  try {
    const Json root = Json::parse(text);
    TRIDENT_CONFIG_CHECK(root.is_object(), "not a tokenizer.json (the top level is not an object)");
    BpeConfig config;
    config.source = path;
    const Json* model = root.find("model");
    TRIDENT_CONFIG_CHECK(model && model->is_object(), "no \"model\" object: not a tokenizer.json");
    read_model(*model, config);
    read_added_tokens(root.find("added_tokens"), config);
    tokenizer_json::read_normalizer(root.find("normalizer"), config);
    tokenizer_json::read_pre_tokenizer(root.find("pre_tokenizer"), config);
    tokenizer_json::read_decoder(root.find("decoder"), config);
    config.specials = tokenizer_json::read_post_processor(root.find("post_processor"));
    config.end_of_text = find_end_of_text(config);
    return config;
  } catch (const ConfigError& e) {
    throw ConfigError(trident::detail::concat("tokenizer ", path, ": ", e.what()));
  }
}

}  // namespace trident::data
