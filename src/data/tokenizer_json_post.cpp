// tokenizer.json's post_processor -> the ids it puts around a sequence and a pair
// (TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel, Sequence of those).
#include <unordered_map>

#include "tokenizer_json_parts.hpp"
#include "trident/core/error.hpp"

namespace trident::data::tokenizer_json {

namespace {

// ["<s>", 0] as Roberta/BertProcessing write their tokens.
uint32_t token_pair_id(const Json& p, std::string_view key, std::string_view what) {
  const Json::Array& pair = p.at(key).as_array();
  TRIDENT_CONFIG_CHECK(pair.size() == 2 && pair[1].as_int() >= 0 && pair[1].as_int() <= 0xFFFFFFFFll, "post-processor ",
                       what, " \"", key, "\" must be [token, id]");
  return static_cast<uint32_t>(pair[1].as_int());
}

// TemplateProcessing's special_tokens: {"<s>": {"id": "<s>", "ids": [1], "tokens": ["<s>"]}}.
std::unordered_map<std::string, std::vector<uint32_t>> template_specials(const Json& p) {
  std::unordered_map<std::string, std::vector<uint32_t>> ids;
  const Json* specials = p.find("special_tokens");
  if (!specials || specials->is_null()) return ids;
  for (const auto& [name, entry] : specials->as_object()) {
    std::vector<uint32_t>& list = ids[name];
    for (const Json& id : entry.at("ids").as_array()) {
      TRIDENT_CONFIG_CHECK(id.as_int() >= 0 && id.as_int() <= 0xFFFFFFFFll, "post-processor TemplateProcessing ",
                           "special token ", json_quote(name), " has id ", id.as_int());
      list.push_back(static_cast<uint32_t>(id.as_int()));
    }
  }
  return ids;
}

// One template ("single" or "pair") cut at its sequences: `sequences` ("A" or "AB") must each
// appear once, in that order; the ids before, between and after them go to `segments`.
void read_template(const Json& pieces, const std::unordered_map<std::string, std::vector<uint32_t>>& specials,
                   std::string_view name, std::string_view sequences, std::vector<std::vector<uint32_t>*> segments) {
  size_t seen = 0;
  for (const Json& piece : pieces.as_array()) {
    if (const Json* special = piece.find("SpecialToken")) {
      const std::string& id = special->at("id").as_string();
      const auto it = specials.find(id);
      TRIDENT_CONFIG_CHECK(it != specials.end(), "post-processor TemplateProcessing ", name, " names the special token ",
                           json_quote(id), ", which its special_tokens lacks");
      segments[seen]->insert(segments[seen]->end(), it->second.begin(), it->second.end());
    } else if (const Json* sequence = piece.find("Sequence")) {
      const std::string& id = sequence->at("id").as_string();
      TRIDENT_CONFIG_CHECK(seen < sequences.size() && id.size() == 1 && id[0] == sequences[seen],
                           "post-processor TemplateProcessing ", name, " template with sequence $", id,
                           " here is not supported (trident supports ", sequences == "A" ? "$A once" : "$A then $B",
                           ")");
      ++seen;
    } else {
      throw ConfigError(trident::detail::concat("post-processor TemplateProcessing ", name,
                                                " has a piece that is neither SpecialToken nor Sequence"));
    }
  }
  TRIDENT_CONFIG_CHECK(seen == sequences.size(), "post-processor TemplateProcessing ", name, " template lacks $",
                       sequences.substr(seen, 1));
}

SpecialTokenTemplate template_processing(const Json& p) {
  const auto specials = template_specials(p);
  SpecialTokenTemplate t;
  read_template(p.at("single"), specials, "single", "A", {&t.prefix, &t.suffix});
  const Json* pair = p.find("pair");
  if (pair && !pair->is_null()) {
    read_template(*pair, specials, "pair", "AB", {&t.pair_prefix, &t.pair_middle, &t.pair_suffix});
  }  // else `tokenizers`' default pair template "$A $B": nothing added
  return t;
}

}  // namespace

SpecialTokenTemplate read_post_processor(const Json* p) {
  SpecialTokenTemplate result;
  if (!p || p->is_null()) return result;
  std::vector<const Json*> parts;
  if (type_of(*p) == "Sequence") {
    for (const Json& part : p->at("processors").as_array()) parts.push_back(&part);
  } else {
    parts.push_back(p);
  }
  bool adds_ids = false;
  for (const Json* part : parts) {
    const std::string type = type_of(*part);
    if (type == "ByteLevel") continue;  // trims offsets only: no ids change
    SpecialTokenTemplate t;
    if (type == "TemplateProcessing") {
      t = template_processing(*part);
    } else if (type == "RobertaProcessing") {  // <s> A </s> and <s> A </s></s> B </s>
      const uint32_t cls = token_pair_id(*part, "cls", type), sep = token_pair_id(*part, "sep", type);
      t = {{cls}, {sep}, {cls}, {sep, sep}, {sep}};
    } else if (type == "BertProcessing") {  // [CLS] A [SEP] and [CLS] A [SEP] B [SEP]
      const uint32_t cls = token_pair_id(*part, "cls", type), sep = token_pair_id(*part, "sep", type);
      t = {{cls}, {sep}, {cls}, {sep}, {sep}};
    } else {
      throw ConfigError(trident::detail::concat(
          "post-processor ", json_quote(type),
          " is not supported (trident supports TemplateProcessing, RobertaProcessing, BertProcessing, ByteLevel "
          "and Sequence of those)"));
    }
    TRIDENT_CONFIG_CHECK(!adds_ids, "post-processor Sequence with more than one processor that adds tokens is not "
                         "supported");
    adds_ids = true;
    result = std::move(t);
  }
  return result;
}

}  // namespace trident::data::tokenizer_json
