// The readers of a tokenizer.json's components (tokenizer_json.cpp reads the file and the
// model; tokenizer_json_pipeline.cpp the normaliser, pre-tokenizer and decoder;
// tokenizer_json_post.cpp the post-processor). Each throws ConfigError naming the component
// and what trident supports instead; parse_tokenizer_json adds the file.
#pragma once
#include <string>
#include <string_view>

#include "trident/core/json.hpp"
#include "trident/data/bpe_tokenizer.hpp"

namespace trident::data::tokenizer_json {

std::string type_of(const Json& j);                              // "(no type)" when absent
bool flag(const Json& j, std::string_view key, bool fallback);   // a bool member, or fallback
std::string literal_pattern(const Json& j, std::string_view what);  // {"String": s} -> s; a regex refused

void read_normalizer(const Json* n, BpeConfig& config);
void read_pre_tokenizer(const Json* p, BpeConfig& config);
void read_decoder(const Json* d, BpeConfig& config);
SpecialTokenTemplate read_post_processor(const Json* p);

}  // namespace trident::data::tokenizer_json
