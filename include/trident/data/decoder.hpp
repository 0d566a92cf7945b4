// The decoders of a tokenizer.json: the tokens of the ids, in order, pass through each step (as
// `tokenizers` 0.23 runs decode_chain) and what comes out is joined. ByteLevel maps the
// byte-level alphabet back to bytes; Metaspace turns "▁" into spaces; Replace, ByteFallback
// (<0xXX> tokens to bytes), Fuse and Strip are the chain Llama 2, Mistral and Gemma use.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident::data {

struct DecoderStep {
  enum class Kind { kByteLevel, kMetaspace, kReplace, kByteFallback, kFuse, kStrip };
  Kind kind = Kind::kByteLevel;
  std::string pattern;  // kReplace: the literal replaced (never empty); kMetaspace: the replacement
  std::string content;  // kReplace: what replaces it
  bool drop_first_replacements = true;  // kMetaspace: prepend_scheme is not "never"
  uint32_t strip_char = ' ';            // kStrip: the code point stripped
  uint32_t strip_start = 0, strip_stop = 0;  // kStrip: at most this many from each end of a token
};

// The text `tokens` decode to: the steps' output joined. (A tokenizer.json without any decoder
// joins the tokens with " " instead; BpeTokenizer does that.) Invalid UTF-8 that a step
// produces becomes U+FFFD as `tokenizers` writes it.
std::string decode_tokens(const std::vector<DecoderStep>& steps, std::vector<std::string> tokens);

}  // namespace trident::data
