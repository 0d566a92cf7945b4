// tokenizer.json -> BpeConfig: the parts of the `tokenizers` serialisation trident implements,
// and a clear refusal of the rest.
#include "trident/data/tokenizer_json.hpp"

#include <unordered_map>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"

namespace trident::data {

namespace {

std::string type_of(const Json& j) {
  const Json* t = j.find("type");
  return t && t->is_string() ? t->as_string() : std::string("(no type)");
}

bool flag(const Json& j, std::string_view key, bool fallback) {
  const Json* v = j.find(key);
  return v && !v->is_null() ? v->as_bool() : fallback;
}

void read_normalizer(const Json* n, BpeConfig& config) {
  if (!n || n->is_null()) return;
  const std::string type = type_of(*n);
  if (type == "NFC") {
    config.nfc = true;
  } else if (type == "Sequence") {
    for (const Json& part : n->at("normalizers").as_array()) read_normalizer(&part, config);
  } else {
    throw ConfigError(trident::detail::concat("normalizer \"", type, "\" is not supported (trident supports none or NFC)"));
  }
}

// ByteLevel as a pre-tokenizer: its regex (GPT-2's) when use_regex, and the prefix space.
void read_byte_level(const Json& p, BpeConfig& config, bool after_split) {
  const bool prefix = flag(p, "add_prefix_space", true);
  if (flag(p, "use_regex", true)) {
    TRIDENT_CONFIG_CHECK(!after_split, "pre-tokenizer ByteLevel with use_regex after a Split is not supported");
    config.split = SplitPattern::kGpt2;
    config.prefix_space_before_split = prefix;
  } else {
    (after_split ? config.prefix_space_after_split : config.prefix_space_before_split) = prefix;
  }
}

void read_split(const Json& p, BpeConfig& config) {
  const Json& pattern = p.at("pattern");
  const Json* regex = pattern.find("Regex");
  TRIDENT_CONFIG_CHECK(regex && regex->is_string(),
                       "pre-tokenizer Split with a plain string pattern is not supported (only the GPT-2, "
                       "Llama-3 and Qwen2 regexes are)");
  const auto known = split_pattern_from_regex(regex->as_string());
  TRIDENT_CONFIG_CHECK(known, "pre-tokenizer Split regex ", json_quote(regex->as_string()),
                       " is not supported (trident has matchers for the GPT-2, Llama-3 and Qwen2 regexes only)");
  const Json* behavior = p.find("behavior");
  TRIDENT_CONFIG_CHECK(!behavior || behavior->as_string() == "Isolated", "pre-tokenizer Split behavior \"",
                       behavior ? behavior->as_string() : "", "\" is not supported (only Isolated)");
  TRIDENT_CONFIG_CHECK(!flag(p, "invert", false), "pre-tokenizer Split with invert=true is not supported");
  config.split = *known;
}

void read_pre_tokenizer(const Json* p, BpeConfig& config) {
  TRIDENT_CONFIG_CHECK(p && !p->is_null(),
                       "no pre_tokenizer: trident loads byte-level BPE tokenizers (pre-tokenizer ByteLevel) only");
  const std::string type = type_of(*p);
  if (type == "ByteLevel") return read_byte_level(*p, config, false);
  const auto unsupported = [](const std::string& what) {
    return ConfigError(trident::detail::concat("pre-tokenizer ", what,
                                      " is not supported (trident supports ByteLevel, or Sequence[Split, ByteLevel])"));
  };
  if (type != "Sequence") throw unsupported(json_quote(type));
  const Json::Array& parts = p->at("pretokenizers").as_array();
  if (parts.size() == 1 && type_of(parts[0]) == "ByteLevel") return read_byte_level(parts[0], config, false);
  if (parts.size() != 2 || type_of(parts[0]) != "Split" || type_of(parts[1]) != "ByteLevel") {
    std::string names;
    for (const Json& part : parts) names += (names.empty() ? "" : ", ") + type_of(part);
    throw unsupported(trident::detail::concat("Sequence[", names, "]"));
  }
  read_split(parts[0], config);
  read_byte_level(parts[1], config, true);
}

void read_model(const Json& model, BpeConfig& config) {
  const std::string type = type_of(model);
  TRIDENT_CONFIG_CHECK(type == "BPE" || !model.find("type"), "model type \"", type,
                       "\" is not supported (trident loads byte-level BPE tokenizers only)");
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

// The id appended after each document: the first of the usual end-of-text tokens present.
uint32_t find_end_of_text(const BpeConfig& config) {
  for (std::string_view name : {"<|endoftext|>", "<|end_of_text|>", "</s>", "<|im_end|>", "<eos>"}) {
    for (const BpeAddedToken& t : config.added_tokens)
      if (t.content == name) return t.id;
    for (size_t id = 0; id < config.vocab.size(); ++id)
      if (config.vocab[id] == name) return static_cast<uint32_t>(id);
  }
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
    read_normalizer(root.find("normalizer"), config);
    read_pre_tokenizer(root.find("pre_tokenizer"), config);
    if (const Json* decoder = root.find("decoder"); decoder && !decoder->is_null())
      TRIDENT_CONFIG_CHECK(type_of(*decoder) == "ByteLevel", "decoder \"", type_of(*decoder),
                           "\" is not supported (trident decodes byte-level BPE: decoder ByteLevel)");
    config.end_of_text = find_end_of_text(config);
    return config;
  } catch (const ConfigError& e) {
    throw ConfigError(trident::detail::concat("tokenizer ", path, ": ", e.what()));
  }
}

}  // namespace trident::data
