// tokenizer.json's normalizer, pre_tokenizer and decoder -> BpeConfig: the components trident
// implements, and a refusal naming any other.
#include "tokenizer_json_parts.hpp"

#include "trident/core/error.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data::tokenizer_json {

std::string type_of(const Json& j) {
  const Json* t = j.is_object() ? j.find("type") : nullptr;
  return t && t->is_string() ? t->as_string() : std::string("(no type)");
}

bool flag(const Json& j, std::string_view key, bool fallback) {
  const Json* v = j.find(key);
  return v && !v->is_null() ? v->as_bool() : fallback;
}

std::string literal_pattern(const Json& j, std::string_view what) {
  const Json& pattern = j.at("pattern");
  if (const Json* regex = pattern.find("Regex"))
    throw ConfigError(trident::detail::concat(what, " with the regex pattern ", json_quote(regex->as_string()),
                                              " is not supported (trident supports a literal {\"String\": ...})"));
  const std::string& s = pattern.at("String").as_string();
  TRIDENT_CONFIG_CHECK(!s.empty(), what, " with an empty pattern is not supported");
  return s;
}

namespace {

// A member that `tokenizers` holds as one `char` (Metaspace's replacement, Strip's content).
uint32_t single_char(const Json& j, std::string_view key, std::string_view what) {
  const std::string& s = j.at(key).as_string();
  const unicode::Decoded d = s.empty() ? unicode::Decoded{unicode::kInvalid, 0} : unicode::decode_utf8(s, 0);
  TRIDENT_CONFIG_CHECK(d.cp != unicode::kInvalid && d.length == s.size(), what, " \"", key,
                       "\" must be one character, not ", json_quote(s));
  return d.cp;
}

// The components of a Sequence (nested ones flattened), or the component itself.
void flatten(const Json& j, std::string_view list_key, std::vector<const Json*>& out) {
  if (type_of(j) != "Sequence") return out.push_back(&j);
  for (const Json& part : j.at(list_key).as_array()) flatten(part, list_key, out);
}

std::string names_of(const std::vector<const Json*>& parts) {
  std::string names;
  for (const Json* part : parts) names += (names.empty() ? "" : ", ") + type_of(*part);
  return names;
}

// Metaspace's prepend_scheme; files older than 0.19 have add_prefix_space instead.
WordSplitStep::Prepend prepend_scheme(const Json& j, std::string_view what) {
  const Json* scheme = j.find("prepend_scheme");
  if (!scheme || scheme->is_null())
    return flag(j, "add_prefix_space", true) ? WordSplitStep::Prepend::kAlways : WordSplitStep::Prepend::kNever;
  const std::string& s = scheme->as_string();
  if (s == "always") return WordSplitStep::Prepend::kAlways;
  if (s == "first") return WordSplitStep::Prepend::kFirst;
  if (s == "never") return WordSplitStep::Prepend::kNever;
  throw ConfigError(trident::detail::concat(what, " prepend_scheme ", json_quote(s),
                                            " is not one of \"always\", \"first\", \"never\""));
}

WordSplitStep metaspace_step(const Json& j) {
  WordSplitStep step;
  step.kind = WordSplitStep::Kind::kMetaspace;
  std::string replacement;
  unicode::append_utf8(single_char(j, "replacement", "pre-tokenizer Metaspace"), replacement);
  step.replacement = replacement;
  step.prepend = prepend_scheme(j, "pre-tokenizer Metaspace");
  step.split = flag(j, "split", true);
  return step;
}

WordSplitStep literal_split_step(const Json& j) {
  using B = WordSplitStep::Behavior;
  WordSplitStep step;
  step.kind = WordSplitStep::Kind::kLiteral;
  step.pattern = literal_pattern(j, "pre-tokenizer Split (with Metaspace or without ByteLevel)");
  TRIDENT_CONFIG_CHECK(!flag(j, "invert", false), "pre-tokenizer Split with invert=true is not supported");
  const std::string behavior = j.find("behavior") ? j.at("behavior").as_string() : "Isolated";
  if (behavior == "Removed") step.behavior = B::kRemoved;
  else if (behavior == "Isolated") step.behavior = B::kIsolated;
  else if (behavior == "MergedWithPrevious") step.behavior = B::kMergedWithPrevious;
  else if (behavior == "MergedWithNext") step.behavior = B::kMergedWithNext;
  else if (behavior == "Contiguous") step.behavior = B::kContiguous;
  else throw ConfigError("pre-tokenizer Split behavior " + json_quote(behavior) + " is not supported");
  return step;
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

// A Split before ByteLevel: one of the regexes trident has a matcher for.
void read_regex_split(const Json& p, BpeConfig& config) {
  const Json& pattern = p.at("pattern");
  const Json* regex = pattern.find("Regex");
  TRIDENT_CONFIG_CHECK(regex && regex->is_string(),
                       "pre-tokenizer Split with a plain string pattern before ByteLevel is not supported (only the "
                       "GPT-2, Llama-3 and Qwen2 regexes are)");
  const auto known = split_pattern_from_regex(regex->as_string());
  TRIDENT_CONFIG_CHECK(known, "pre-tokenizer Split regex ", json_quote(regex->as_string()),
                       " is not supported (trident has matchers for the GPT-2, Llama-3 and Qwen2 regexes only)");
  const Json* behavior = p.find("behavior");
  TRIDENT_CONFIG_CHECK(!behavior || behavior->as_string() == "Isolated", "pre-tokenizer Split behavior \"",
                       behavior ? behavior->as_string() : "", "\" before ByteLevel is not supported (only Isolated)");
  TRIDENT_CONFIG_CHECK(!flag(p, "invert", false), "pre-tokenizer Split with invert=true is not supported");
  config.split = *known;
}

ConfigError unsupported_pre_tokenizer(const std::string& what) {
  return ConfigError(trident::detail::concat(
      "pre-tokenizer ", what,
      " is not supported (trident supports ByteLevel, Sequence[Split(GPT-2/Llama-3/Qwen2 regex), ByteLevel], "
      "Metaspace, Split on a literal string, or none)"));
}

DecoderStep decoder_step(const Json& d) {
  const std::string type = type_of(d);
  DecoderStep step;
  if (type == "ByteLevel") {
    step.kind = DecoderStep::Kind::kByteLevel;
  } else if (type == "Metaspace") {
    step.kind = DecoderStep::Kind::kMetaspace;
    unicode::append_utf8(single_char(d, "replacement", "decoder Metaspace"), step.pattern);
    step.drop_first_replacements = prepend_scheme(d, "decoder Metaspace") != WordSplitStep::Prepend::kNever;
  } else if (type == "Replace") {
    step.kind = DecoderStep::Kind::kReplace;
    step.pattern = literal_pattern(d, "decoder Replace");
    step.content = d.at("content").as_string();
  } else if (type == "ByteFallback") {
    step.kind = DecoderStep::Kind::kByteFallback;
  } else if (type == "Fuse") {
    step.kind = DecoderStep::Kind::kFuse;
  } else if (type == "Strip") {
    step.kind = DecoderStep::Kind::kStrip;
    step.strip_char = single_char(d, "content", "decoder Strip");
    const int64_t start = d.at("start").as_int(), stop = d.at("stop").as_int();
    TRIDENT_CONFIG_CHECK(start >= 0 && stop >= 0 && start < (1 << 30) && stop < (1 << 30),
                         "decoder Strip start and stop must be counts, not ", start, " and ", stop);
    step.strip_start = static_cast<uint32_t>(start);
    step.strip_stop = static_cast<uint32_t>(stop);
  } else {
    throw ConfigError(trident::detail::concat(
        "decoder ", json_quote(type),
        " is not supported (trident supports ByteLevel, Metaspace, Replace, ByteFallback, Fuse, Strip and "
        "Sequence of those)"));
  }
  return step;
}

}  // namespace

void read_normalizer(const Json* n, BpeConfig& config) {
  if (!n || n->is_null()) return;
  std::vector<const Json*> parts;
  flatten(*n, "normalizers", parts);
  std::vector<NormalizerStep> steps;
  for (const Json* part : parts) {
    const std::string type = type_of(*part);
    NormalizerStep step;
    if (type == "NFC") {
      step.kind = NormalizerStep::Kind::kNfc;
    } else if (type == "NFKC") {
      step.kind = NormalizerStep::Kind::kNfkc;
    } else if (type == "Replace") {
      step.kind = NormalizerStep::Kind::kReplace;
      step.pattern = literal_pattern(*part, "normalizer Replace");
      step.content = part->at("content").as_string();
    } else if (type == "Prepend") {
      step.kind = NormalizerStep::Kind::kPrepend;
      step.content = part->at("prepend").as_string();
    } else {
      throw ConfigError(trident::detail::concat(
          "normalizer ", json_quote(type),
          " is not supported (trident supports NFC, NFKC, Replace, Prepend and Sequence of those, or none)"));
    }
    steps.push_back(std::move(step));
  }
  config.normalizer = Normalizer(std::move(steps));
}

void read_pre_tokenizer(const Json* p, BpeConfig& config) {
  if (!p || p->is_null()) {  // SentencePiece style (Llama 2): each piece is one word
    config.byte_level = false;
    return;
  }
  std::vector<const Json*> parts;
  flatten(*p, "pretokenizers", parts);
  bool any_byte_level = false;
  for (const Json* part : parts) any_byte_level = any_byte_level || type_of(*part) == "ByteLevel";
  if (any_byte_level) {
    config.byte_level = true;
    if (parts.size() == 1) return read_byte_level(*parts[0], config, false);
    if (parts.size() != 2 || type_of(*parts[0]) != "Split" || type_of(*parts[1]) != "ByteLevel")
      throw unsupported_pre_tokenizer("Sequence[" + names_of(parts) + "]");
    read_regex_split(*parts[0], config);
    return read_byte_level(*parts[1], config, true);
  }
  config.byte_level = false;
  for (const Json* part : parts) {
    const std::string type = type_of(*part);
    if (type == "Metaspace") config.word_splits.push_back(metaspace_step(*part));
    else if (type == "Split") config.word_splits.push_back(literal_split_step(*part));
    else throw unsupported_pre_tokenizer(parts.size() == 1 ? json_quote(type) : "Sequence[" + names_of(parts) + "]");
  }
}

void read_decoder(const Json* d, BpeConfig& config) {
  if (!d || d->is_null()) return;
  std::vector<const Json*> parts;
  flatten(*d, "decoders", parts);
  for (const Json* part : parts) config.decoder.push_back(decoder_step(*part));
  config.has_decoder = true;
}

}  // namespace trident::data::tokenizer_json
