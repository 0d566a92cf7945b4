// Reading a Hugging Face tokenizer.json of the byte-level BPE kind into a BpeConfig.
// Supported: model BPE (merges as "a b" strings or [a, b] pairs, byte_fallback, ignore_merges,
// unk_token, fuse_unk); normalizer none or NFC; pre-tokenizer ByteLevel (with its own regex) or
// Sequence[Split(known regex, Isolated), ByteLevel(use_regex=false)]; decoder ByteLevel (or
// none: decoded as ByteLevel all the same); added_tokens with their single_word/lstrip/rstrip/
// normalized flags. Anything else is a ConfigError naming the file and the unsupported part.
// Known approximations: the Unicode tables are those of the Python that generated them
// (utils/gen_unicode_tables.py), which may be a version behind or ahead of `tokenizers`'s regex
// engine; single_word's word characters are letters, numbers, marks and '_'.
#pragma once
#include <string>
#include <string_view>

#include "trident/data/bpe_tokenizer.hpp"

namespace trident::data {

// `text` is the file's content, `path` names it in messages and becomes config.source.
BpeConfig parse_tokenizer_json(std::string_view text, const std::string& path);

}  // namespace trident::data
