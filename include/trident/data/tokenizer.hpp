// The tokenizer interface prep, inspect, eval and generation use. Two kinds exist:
// the built-in byte tokenizer (spec "byte", vocabulary 257) and byte-level BPE loaded from a
// Hugging Face tokenizer.json (GPT-2, Llama-3, Qwen2 style) or trained by `trident prep
// --train-tokenizer`. Encoding equals the `tokenizers` library's
// `encode(text, add_special_tokens=False)`: added/special tokens written in the text are
// matched first and become their ids.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data {

class Tokenizer {
 public:
  virtual ~Tokenizer() = default;

  // Appends the ids of `text` to `ids`; no BOS/EOS is added (callers add end_of_text()).
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

  std::vector<uint32_t> encode(std::string_view text) const {
    std::vector<uint32_t> ids;
    encode_append(text, ids);
    return ids;
  }
};

// spec "byte": the built-in byte tokenizer; otherwise a path to a tokenizer.json (or to a
// directory holding one). Throws ConfigError naming the file and what is unsupported.
std::unique_ptr<Tokenizer> load_tokenizer(const std::string& spec);

}  // namespace trident::data
