// Reading a Hugging Face tokenizer.json of the BPE kind (byte-level or SentencePiece style) into
// a BpeConfig; tokenizer.hpp lists the components supported. Anything else is a ConfigError
// naming the file and the unsupported component.
// Known approximations: the Unicode tables are those of the Python that generated them
// (utils/gen_unicode_tables.py), which may be a version behind or ahead of `tokenizers`'s regex
// engine and normaliser; truncation and padding settings are ignored.
#pragma once
#include <string>
#include <string_view>

#include "trident/data/bpe_tokenizer.hpp"

namespace trident::data {

// `text` is the file's content, `path` names it in messages and becomes config.source.
BpeConfig parse_tokenizer_json(std::string_view text, const std::string& path);

}  // namespace trident::data
