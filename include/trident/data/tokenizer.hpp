// The tokenizer interface prep, inspect, eval and generation use. Two kinds exist: the built-in
// byte tokenizer (spec "byte", vocabulary 257) and BPE loaded from a Hugging Face tokenizer.json
// or trained by `trident prep --train-tokenizer`. encode() equals the `tokenizers` library's
// (0.23) encode(text, add_special_tokens=False): added/special tokens written in the text are
// matched first and become their ids; encode_with_specials() equals add_special_tokens=True
// (the post-processor's BOS/EOS around the sequence); decode() equals decode(ids,
// skip_special_tokens=False).
//
// Supported in a tokenizer.json (src/data/tokenizer_json*.cpp reads it; anything else is a
// ConfigError naming the component and the file):
//   model         BPE (merges as "a b" or [a, b], byte_fallback with <0xXX> tokens, unk_token,
//                 fuse_unk, ignore_merges); not WordPiece, Unigram, WordLevel or BPE dropout
//   normalizer    none, NFC, NFKC, Replace (literal string), Prepend, Sequence of those; not
//                 NFD/NFKD, Lowercase, Strip, BertNormalizer, Precompiled or a Replace regex
//   pre_tokenizer byte-level: ByteLevel (its GPT-2 regex or none), Sequence[Split(GPT-2 /
//                 Llama-3 / Qwen2 regex, Isolated), ByteLevel(use_regex=false)];
//                 SentencePiece style: none, Metaspace (prepend_scheme always/first/never,
//                 split), Split on a literal string (any behavior), Sequence of those
//   decoder       ByteLevel (also assumed when a byte-level tokenizer has none), Metaspace,
//                 Replace (literal), ByteFallback, Fuse, Strip, Sequence of those
//   post_processor none, TemplateProcessing (single and pair), RobertaProcessing,
//                 BertProcessing, ByteLevel (no ids), Sequence of those (one that adds ids)
//   added_tokens  with special, single_word, lstrip, rstrip and normalized as `tokenizers`
//                 applies them; truncation and padding are ignored (trident packs rows itself)
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data {

// The ids a post-processor puts around sequences: encode(a, add_special_tokens=True) is
// prefix + encode(a) + suffix; a pair (a, b) is pair_prefix + encode(a) + pair_middle +
// encode(b) + pair_suffix. Llama 3: prefix {<|begin_of_text|>}; Llama 2: {<s>}; RoBERTa:
// prefix {<s>}, suffix {</s>}; GPT-2 and the byte tokenizer: nothing.
struct SpecialTokenTemplate {
  std::vector<uint32_t> prefix, suffix;
  std::vector<uint32_t> pair_prefix, pair_middle, pair_suffix;
};

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Appends the ids of `text` to `ids`; no BOS/EOS is added (callers add specials() and
  // end_of_text()).
  virtual void encode_append(std::string_view text, std::vector<uint32_t>& ids) const = 0;
  // Text of `ids`; special tokens render as their content (e.g. "<|endoftext|>").
  virtual std::string decode(std::span<const uint32_t> ids) const = 0;

  // Every id is below vocab_size() (the shard's vocab and the model's minimum vocab).
  virtual uint64_t vocab_size() const = 0;
  // The id appended after each document ("<|endoftext|>", "<|end_of_text|>", "</s>", ...).
  virtual uint32_t end_of_text() const = 0;
  // Id of an added/special token by its content, if the vocabulary has it.
  virtual std::optional<uint32_t> special_token(std::string_view content) const = 0;
  // "byte" or the tokenizer.json path: what prep.json and messages name.
  virtual std::string describe() const = 0;
  // What encode(..., add_special_tokens=True) adds around sequences.
  virtual const SpecialTokenTemplate& specials() const = 0;

  std::vector<uint32_t> encode(std::string_view text) const {
    std::vector<uint32_t> ids;
    encode_append(text, ids);
    return ids;
  }
  // encode(text, add_special_tokens=True) of `tokenizers`: prefix + encode(text) + suffix.
  std::vector<uint32_t> encode_with_specials(std::string_view text) const {
    const SpecialTokenTemplate& t = specials();
    std::vector<uint32_t> ids(t.prefix);
    encode_append(text, ids);
    ids.insert(ids.end(), t.suffix.begin(), t.suffix.end());
    return ids;
  }
  // encode(a, b, add_special_tokens=True) of `tokenizers` (the pair template).
  std::vector<uint32_t> encode_pair_with_specials(std::string_view a, std::string_view b) const {
    const SpecialTokenTemplate& t = specials();
    std::vector<uint32_t> ids(t.pair_prefix);
    encode_append(a, ids);
    ids.insert(ids.end(), t.pair_middle.begin(), t.pair_middle.end());
    encode_append(b, ids);
    ids.insert(ids.end(), t.pair_suffix.begin(), t.pair_suffix.end());
    return ids;
  }
};

// How prep (and eval's prompts) frame a document, so it starts and ends as the model's own
// tokenizer frames a sequence: prefix + prompt + answer, then append_document_end adds the
// post-processor's suffix and end_of_text(), the latter only if the suffix does not already end
// with it (a "<s> $A </s>" template with end of text </s> ends the document with one </s>).
inline const std::vector<uint32_t>& document_prefix(const Tokenizer& tokenizer) { return tokenizer.specials().prefix; }
void append_document_end(const Tokenizer& tokenizer, std::vector<uint32_t>& ids);

// spec "byte": the built-in byte tokenizer; otherwise a path to a tokenizer.json (or to a
// directory holding one). Throws ConfigError naming the file and what is unsupported.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);

}  // namespace trident::data
