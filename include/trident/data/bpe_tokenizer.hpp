// BPE encoding and decoding, equal to the `tokenizers` library's encode(text,
// add_special_tokens=False) and decode(ids) for byte-level (GPT-2, Llama-3, Qwen2) and
// SentencePiece-style (Llama 2, Mistral, Gemma) tokenizers:
//   1. added tokens not marked `normalized` are found in the raw text (leftmost-longest),
//   2. the pieces between them are normalised (NFC, NFKC, Replace, Prepend, if configured),
//   3. added tokens marked `normalized` are found in those pieces (in their normalised form),
//   4. the remaining pieces are cut into words: byte-level by the regex matcher (optional
//      prefix space) with each word's bytes spelled in the byte-level alphabet; otherwise by
//      Metaspace / literal Split steps (word_split.hpp), the word's characters as they are,
//   5. each word's symbols (a character, or its <0xXX> bytes under byte_fallback, or the
//      unknown token) are joined by the merges, lowest rank first.
// Results of step 5 are cached per word. A BpeTokenizer may be shared between threads
// (the cache serves one thread at a time; the others encode without it).
#pragma once
#include <cstdint>
#include <memory>
#include <mutex>
#include <span>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "trident/data/decoder.hpp"
#include "trident/data/normalizer.hpp"
#include "trident/data/pretokenizer.hpp"
#include "trident/data/tokenizer.hpp"
#include "trident/data/word_split.hpp"

namespace trident::data {

namespace detail {
class PairRankMap;    // bpe_tables.hpp
class PretokenCache;  // bpe_tables.hpp
struct StringHash {   // lets maps keyed by std::string be searched with a string_view
  using is_transparent = void;
  size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
};
}  // namespace detail

struct BpeAddedToken {
  uint32_t id = 0;
  std::string content;
  bool special = false;      // only decides `normalized`'s default (trident never skips them)
  bool single_word = false;  // only where no word character (unicode::is_word_char) touches it
  bool lstrip = false;       // swallows the whitespace before it
  bool rstrip = false;       // swallows the whitespace after it
  bool normalized = false;   // matched in the normalised text, in its normalised form
};

// Everything encoding needs; what a tokenizer.json holds (tokenizer_json.cpp reads it).
struct BpeConfig {
  std::string source;                  // the file, for messages and describe()
  std::vector<std::string> vocab;      // id -> token as the model spells it ("" for unused ids)
  std::vector<std::pair<uint32_t, uint32_t>> merges;  // (left id, right id), rank order
  std::vector<BpeAddedToken> added_tokens;
  Normalizer normalizer;
  // Pre-tokenizer ByteLevel: words are bytes spelled in the byte-level alphabet. Otherwise the
  // model sees the text's characters and word_splits cut it (none: each piece is one word).
  bool byte_level = true;
  std::optional<SplitPattern> split;   // byte-level: none: each piece is one pre-token
  // ByteLevel's add_prefix_space: " " before each piece that does not start with one; the
  // pieces are those ByteLevel receives, so before the split when ByteLevel splits itself
  // (use_regex) and per pre-token when a Split pre-tokenizer runs before it.
  bool prefix_space_before_split = false;
  bool prefix_space_after_split = false;
  std::vector<WordSplitStep> word_splits;  // !byte_level
  // The decoder chain. has_decoder false: the file has none, and a byte-level tokenizer decodes
  // as ByteLevel all the same, any other joins the tokens with " " as `tokenizers` does.
  std::vector<DecoderStep> decoder;
  bool has_decoder = false;
  SpecialTokenTemplate specials;       // the post-processor's ids
  bool byte_fallback = false;          // unknown characters as <0xXX> tokens
  bool ignore_merges = false;          // a word that is itself in the vocabulary is one id
  bool fuse_unk = false;
  std::optional<uint32_t> unk_id;
  uint32_t end_of_text = 0;
};

class BpeTokenizer final : public Tokenizer {
 public:
  // Throws ConfigError (naming config.source) for merges whose result is not in the vocabulary.
  explicit BpeTokenizer(BpeConfig config);
  ~BpeTokenizer() override;

  void encode_append(std::string_view text, std::vector<uint32_t>& ids) const override;
  std::string decode(std::span<const uint32_t> ids) const override;
  uint64_t vocab_size() const override { return vocab_size_; }
  uint32_t end_of_text() const override { return config_.end_of_text; }
  std::optional<uint32_t> special_token(std::string_view content) const override;
  std::string describe() const override { return config_.source; }
  const SpecialTokenTemplate& specials() const override { return config_.specials; }

  const BpeConfig& config() const { return config_; }

 private:
  struct Scratch;

  // Leftmost-longest matches of the added tokens with the given `normalized` flag, with the
  // pieces between them passed to on_text and the matches to on_token.
  template <typename OnText, typename OnToken>
  void split_added(std::string_view text, bool normalized, OnText&& on_text, OnToken&& on_token) const;
  void encode_piece(std::string_view piece, bool at_text_start, std::vector<uint32_t>& ids, Scratch& scratch,
                    detail::PretokenCache* cache) const;
  void encode_pretoken(std::string_view word, std::vector<uint32_t>& ids, Scratch& scratch, detail::PretokenCache* cache) const;
  // The word's first symbols: per byte (byte-level) or character, its id, else its <0xXX>
  // tokens, else the unknown token (fused), else nothing; as the `tokenizers` BPE model.
  void initial_symbols(std::string_view word, std::vector<uint32_t>& symbols) const;
  void merge_word(std::string_view word, std::vector<uint32_t>& ids, Scratch& scratch) const;  // bpe_merge.cpp
  static constexpr int32_t kShortWord = 24;  // symbols; shorter words merge without a heap
  void merge_short_word(const uint32_t* symbols, int32_t count, std::vector<uint32_t>& ids) const;
  void build_decoding();
  void build_added_tokens();

  BpeConfig config_;
  uint64_t vocab_size_ = 0;
  uint32_t byte_ids_[256];                   // byte-level: id of each byte's symbol, kNone if not in vocab
  std::unique_ptr<detail::PairRankMap> merges_;       // (left, right) -> (rank, result)
  // The word each token stands for (byte-level: its raw bytes; else its spelling) -> id: for
  // ignore_merges, and the characters of non-byte-level words.
  std::unordered_map<std::string, uint32_t, detail::StringHash, std::equal_to<>> word_ids_;
  std::vector<std::string> id_bytes_;        // byte-level with the ByteLevel decoder: id -> its bytes
  std::vector<std::string> id_tokens_;       // id -> its token string for the decoder chain ("" unused)
  bool fast_decode_ = false;                 // decode through id_bytes_ (ByteLevel alone)
  std::vector<std::string> added_match_;  // per added token: the text it matches
  // Per `normalized` flag and first byte: indexes into config_.added_tokens, longest first.
  std::vector<uint32_t> added_by_first_byte_[2][256];
  bool has_added_[2] = {false, false};
  uint32_t byte_token_ids_[256];             // id of each "<0xXX>" token (byte_fallback), kNone if absent
  mutable std::mutex cache_mutex_;
  std::unique_ptr<detail::PretokenCache> cache_;
};

}  // namespace trident::data
