// BPE encoding (added tokens, normalisation, pre-tokenisation; the merges are bpe_merge.cpp's)
// and decoding.
#include "trident/data/bpe_tokenizer.hpp"

#include <algorithm>
#include <cstdio>

#include "bpe_scratch.hpp"
#include "bpe_tables.hpp"
#include "trident/core/error.hpp"
#include "trident/data/byte_level.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data {

namespace {

constexpr uint32_t kNone = 0xFFFFFFFF;

// Code point that ends `s` (an invalid byte counts as one, kInvalid).
uint32_t last_code_point(std::string_view s) {
  size_t pos = s.size() - 1;
  while (pos > 0 && s.size() - pos < 4 && (static_cast<uint8_t>(s[pos]) & 0xC0) == 0x80) --pos;
  return unicode::decode_utf8(s, pos).cp;
}

bool is_space(uint32_t cp) { return unicode::char_class(cp) == unicode::CharClass::kSpace; }

// Start of the whitespace that ends `s` (s.size() if none).
size_t trailing_space_start(std::string_view s) {
  size_t start = s.size();
  while (start > 0) {
    size_t pos = start - 1;
    while (pos > 0 && start - pos < 4 && (static_cast<uint8_t>(s[pos]) & 0xC0) == 0x80) --pos;
    if (!is_space(unicode::decode_utf8(s, pos).cp)) break;
    start = pos;
  }
  return start;
}

// Length of the whitespace that starts `s`.
size_t leading_space_length(std::string_view s) {
  size_t pos = 0;
  while (pos < s.size()) {
    const unicode::Decoded d = unicode::decode_utf8(s, pos);
    if (!is_space(d.cp)) break;
    pos += d.length;
  }
  return pos;
}

}  // namespace

BpeTokenizer::BpeTokenizer(BpeConfig config) : config_(std::move(config)) {
  const std::string& src = config_.source;
  vocab_size_ = config_.vocab.size();
  for (const BpeAddedToken& t : config_.added_tokens) vocab_size_ = std::max<uint64_t>(vocab_size_, uint64_t{t.id} + 1);
  TRIDENT_CONFIG_CHECK(vocab_size_ > 0, src, ": the vocabulary is empty");
  TRIDENT_CONFIG_CHECK(config_.end_of_text < vocab_size_, src, ": end-of-text id ", config_.end_of_text,
                       " is outside the vocabulary (", vocab_size_, " ids)");
  const SpecialTokenTemplate& sp = config_.specials;
  for (const auto* part : {&sp.prefix, &sp.suffix, &sp.pair_prefix, &sp.pair_middle, &sp.pair_suffix})
    for (uint32_t id : *part)
      TRIDENT_CONFIG_CHECK(id < vocab_size_, src, ": post_processor special token id ", id,
                           " is outside the vocabulary (", vocab_size_, " ids)");

  // Added tokens matched in normalised text are looked for, and decoded, in their normalised
  // form (as `tokenizers` does).
  for (const BpeAddedToken& t : config_.added_tokens)
    added_match_.push_back(t.normalized ? config_.normalizer.apply(t.content) : t.content);

  std::unordered_map<std::string_view, uint32_t> id_of;
  id_of.reserve(config_.vocab.size());
  for (size_t id = 0; id < config_.vocab.size(); ++id)
    if (!config_.vocab[id].empty()) id_of.emplace(config_.vocab[id], static_cast<uint32_t>(id));
  for (uint32_t b = 0; b < 256; ++b) {
    char name[8];
    std::snprintf(name, sizeof name, "<0x%02X>", b);
    const auto fallback = id_of.find(name);
    byte_token_ids_[b] = fallback == id_of.end() ? kNone : fallback->second;
    const auto it = id_of.find(byte_level_char(static_cast<uint8_t>(b)));
    byte_ids_[b] = it == id_of.end() || !config_.byte_level ? kNone : it->second;
  }

  merges_ = std::make_unique<detail::PairRankMap>(config_.merges.size());
  std::string joined;
  for (size_t rank = 0; rank < config_.merges.size(); ++rank) {
    const auto [left, right] = config_.merges[rank];
    TRIDENT_CONFIG_CHECK(left < config_.vocab.size() && right < config_.vocab.size(), src, ": merge ", rank,
                         " names an id outside the vocabulary");
    joined = config_.vocab[left] + config_.vocab[right];
    const auto it = id_of.find(joined);
    TRIDENT_CONFIG_CHECK(it != id_of.end(), src, ": merge ", rank, " (\"", config_.vocab[left], "\" \"",
                         config_.vocab[right], "\") makes \"", joined, "\", which is not in the vocabulary");
    merges_->insert(left, right, static_cast<uint32_t>(rank), it->second);
  }

  if (config_.ignore_merges || !config_.byte_level) {
    word_ids_.reserve(config_.vocab.size());
    std::string bytes;
    for (size_t id = 0; id < config_.vocab.size(); ++id) {
      if (config_.vocab[id].empty()) continue;
      bytes.clear();
      if (!config_.byte_level) word_ids_.emplace(config_.vocab[id], static_cast<uint32_t>(id));
      else if (byte_level_decode(config_.vocab[id], bytes)) word_ids_.emplace(bytes, static_cast<uint32_t>(id));
    }
  }
  build_added_tokens();
  build_decoding();
  cache_ = std::make_unique<detail::PretokenCache>();
}

void BpeTokenizer::build_added_tokens() {
  for (uint32_t i = 0; i < config_.added_tokens.size(); ++i) {
    const BpeAddedToken& t = config_.added_tokens[i];
    TRIDENT_CONFIG_CHECK(!t.content.empty(), config_.source, ": added token ", t.id, " has empty content");
    if (added_match_[i].empty()) continue;  // normalised to nothing: never matched
    const int group = t.normalized ? 1 : 0;
    added_by_first_byte_[group][static_cast<uint8_t>(added_match_[i][0])].push_back(i);
    has_added_[group] = true;
  }
  for (auto& group : added_by_first_byte_)
    for (auto& list : group)
      std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
        return added_match_[a].size() > added_match_[b].size();
      });
}

void BpeTokenizer::build_decoding() {
  // The token string of each id: what the model spells it, or an added token's matched form.
  id_tokens_.assign(config_.vocab.begin(), config_.vocab.end());
  id_tokens_.resize(vocab_size_);
  for (size_t i = 0; i < config_.added_tokens.size(); ++i) id_tokens_[config_.added_tokens[i].id] = added_match_[i];
  const bool byte_level_decoder =
      config_.has_decoder ? config_.decoder.size() == 1 && config_.decoder[0].kind == DecoderStep::Kind::kByteLevel
                          : config_.byte_level;
  fast_decode_ = byte_level_decoder;
  if (!fast_decode_) return;
  // The ByteLevel decoder maps a token's characters back to bytes, and keeps a token with any
  // character outside the alphabet as its UTF-8.
  id_bytes_.resize(vocab_size_);
  for (size_t id = 0; id < vocab_size_; ++id)
    if (!byte_level_decode(id_tokens_[id], id_bytes_[id])) id_bytes_[id] = id_tokens_[id];
}

BpeTokenizer::~BpeTokenizer() = default;

std::optional<uint32_t> BpeTokenizer::special_token(std::string_view content) const {
  for (const BpeAddedToken& t : config_.added_tokens)
    if (t.content == content) return t.id;
  return std::nullopt;
}

template <typename OnText, typename OnToken>
void BpeTokenizer::split_added(std::string_view text, bool normalized, OnText&& on_text, OnToken&& on_token) const {
  const auto& by_byte = added_by_first_byte_[normalized ? 1 : 0];
  size_t start_offset = 0;  // end of what has been handed out
  size_t search = 0;        // where the next leftmost-longest match is looked for
  while (search < text.size()) {
    // Leftmost-longest match at or after `search` (the lists are longest first).
    const BpeAddedToken* token = nullptr;
    size_t length = 0;
    size_t start = search;
    for (; start < text.size() && !token; ++start) {
      for (uint32_t i : by_byte[static_cast<uint8_t>(text[start])]) {
        if (text.compare(start, added_match_[i].size(), added_match_[i]) == 0) {
          token = &config_.added_tokens[i];
          length = added_match_[i].size();
          break;
        }
      }
      if (token) break;
    }
    if (!token) break;
    size_t stop = start + length;
    search = stop;
    if (token->single_word) {
      const bool space_before = start == 0 || !unicode::is_word_char(last_code_point(text.substr(0, start)));
      const bool space_after = stop == text.size() || !unicode::is_word_char(unicode::decode_utf8(text, stop).cp);
      if (!space_before || !space_after) continue;
    }
    if (token->lstrip) start = std::max(trailing_space_start(text.substr(0, start)), start_offset);
    if (token->rstrip) stop += leading_space_length(text.substr(stop));
    if (start_offset < start) on_text(text.substr(start_offset, start - start_offset));
    on_token(token->id);
    start_offset = stop;
  }
  if (start_offset < text.size()) on_text(text.substr(start_offset));
}

void BpeTokenizer::encode_append(std::string_view text, std::vector<uint32_t>& ids) const {
  std::unique_lock<std::mutex> lock(cache_mutex_, std::try_to_lock);
  detail::PretokenCache* cache = lock.owns_lock() ? cache_.get() : nullptr;
  Scratch scratch;
  auto push_id = [&](uint32_t id) { ids.push_back(id); };
  // Steps 2 to 5 for a piece of raw text between added tokens. A piece starts the text when
  // it starts at its first byte and (after normalisation) no normalised added token precedes
  // it: what Metaspace's prepend_scheme "first" looks at.
  auto normalize_then_encode = [&](std::string_view piece) {
    const bool raw_start = piece.data() == text.data();
    std::string storage;
    const std::string_view normal = config_.normalizer.apply(piece, storage);
    auto encode_text = [&](std::string_view part) {
      encode_piece(part, raw_start && part.data() == normal.data(), ids, scratch, cache);
    };
    if (has_added_[1]) split_added(normal, true, encode_text, push_id);
    else if (!normal.empty()) encode_text(normal);
  };
  if (has_added_[0]) split_added(text, false, normalize_then_encode, push_id);
  else if (!text.empty()) normalize_then_encode(text);
}

void BpeTokenizer::encode_piece(std::string_view piece, bool at_text_start, std::vector<uint32_t>& ids,
                                Scratch& scratch, detail::PretokenCache* cache) const {
  if (piece.empty()) return;
  if (!config_.byte_level) {
    split_words(config_.word_splits, piece, at_text_start,
                [&](std::string_view word) { encode_pretoken(word, ids, scratch, cache); });
    return;
  }
  std::string prefixed;
  if (config_.prefix_space_before_split && piece[0] != ' ') {
    prefixed.reserve(piece.size() + 1);
    prefixed.push_back(' ');
    prefixed.append(piece);
    piece = prefixed;
  }
  auto word = [&](std::string_view w) {
    if (config_.prefix_space_after_split && w[0] != ' ') {
      scratch.word.assign(1, ' ');
      scratch.word.append(w);
      encode_pretoken(scratch.word, ids, scratch, cache);
    } else {
      encode_pretoken(w, ids, scratch, cache);
    }
  };
  if (config_.split) for_each_pretoken(*config_.split, piece, word);
  else word(piece);
}

void BpeTokenizer::encode_pretoken(std::string_view word, std::vector<uint32_t>& ids, Scratch& scratch,
                                   detail::PretokenCache* cache) const {
  const size_t hash = cache ? std::hash<std::string_view>{}(word) : 0;
  if (cache && cache->find(word, hash, ids)) return;
  const size_t first = ids.size();
  const auto whole = config_.ignore_merges ? word_ids_.find(word) : word_ids_.end();
  if (whole != word_ids_.end()) ids.push_back(whole->second);
  else merge_word(word, ids, scratch);
  if (cache) cache->insert(word, hash, ids.data() + first, ids.size() - first);
}

std::string BpeTokenizer::decode(std::span<const uint32_t> ids) const {
  if (fast_decode_) {  // ByteLevel alone: bytes of each token, then valid UTF-8
    std::string bytes;
    for (uint32_t id : ids)
      if (id < id_bytes_.size()) bytes += id_bytes_[id];
    std::string text;
    text.reserve(bytes.size());
    unicode::append_lossy_utf8(bytes, text);
    return text;
  }
  // Ids without a token (outside the vocabulary, or unused) are skipped, as `tokenizers` does.
  std::vector<std::string> tokens;
  tokens.reserve(ids.size());
  for (uint32_t id : ids)
    if (id < id_tokens_.size() && !id_tokens_[id].empty()) tokens.push_back(id_tokens_[id]);
  if (config_.has_decoder) return decode_tokens(config_.decoder, std::move(tokens));
  std::string joined;  // no decoder at all: `tokenizers` joins the tokens with spaces
  for (size_t i = 0; i < tokens.size(); ++i) joined += (i ? " " : "") + tokens[i];
  return joined;
}

}  // namespace trident::data
