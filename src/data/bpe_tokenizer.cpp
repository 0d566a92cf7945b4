// Byte-level BPE encoding (added tokens, normalisation, pre-tokenisation, merges) and decoding.
#include "trident/data/bpe_tokenizer.hpp"

#include <algorithm>
#include <cstdio>

#include "bpe_tables.hpp"
#include "trident/core/error.hpp"
#include "trident/data/byte_level.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data {

namespace {

constexpr uint32_t kNone = 0xFFFFFFFF;

// One symbol of a word being merged: a doubly linked list over the word's positions.
struct Symbol {
  uint32_t id;
  int32_t prev, next;  // -1 at the ends
  bool alive;
};

// A candidate merge of the symbol at `pos` with its right neighbour. Popped lowest rank first,
// then leftmost, as `tokenizers` does.
struct Candidate {
  uint32_t rank;
  int32_t pos;
  bool operator>(const Candidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

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

// Invalid UTF-8 replaced by U+FFFD, one per invalid byte (what a decoded text prints as).
void append_lossy_utf8(std::string_view bytes, std::string& out) {
  for (size_t pos = 0; pos < bytes.size();) {
    const unicode::Decoded d = unicode::decode_utf8(bytes, pos);
    if (d.cp == unicode::kInvalid) out += "\xEF\xBF\xBD";
    else out.append(bytes.substr(pos, d.length));
    pos += d.length;
  }
}

}  // namespace

// Per-call working memory, reused across the words of one encode_append.
struct BpeTokenizer::Scratch {
  std::vector<uint32_t> initial;
  std::vector<Symbol> symbols;
  std::vector<Candidate> heap;
  std::string word;        // a pre-token with its prefix space
  std::string normalized;  // a piece after NFC
};

BpeTokenizer::BpeTokenizer(BpeConfig config) : config_(std::move(config)) {
  const std::string& src = config_.source;
  vocab_size_ = config_.vocab.size();
  for (const BpeAddedToken& t : config_.added_tokens) vocab_size_ = std::max<uint64_t>(vocab_size_, uint64_t{t.id} + 1);
  TRIDENT_CONFIG_CHECK(vocab_size_ > 0, src, ": the vocabulary is empty");
  TRIDENT_CONFIG_CHECK(config_.end_of_text < vocab_size_, src, ": end-of-text id ", config_.end_of_text,
                       " is outside the vocabulary (", vocab_size_, " ids)");

  // Added tokens matched in normalised text are looked for, and decoded, in their normalised
  // form (as `tokenizers` does).
  for (const BpeAddedToken& t : config_.added_tokens)
    added_match_.push_back(t.normalized && config_.nfc ? unicode::nfc(t.content) : t.content);

  // What each id decodes to: the ByteLevel decoder maps a token's characters back to bytes,
  // and keeps a token with any character outside the alphabet as its UTF-8.
  id_bytes_.resize(vocab_size_);
  std::vector<std::string_view> spelled(vocab_size_);
  for (size_t id = 0; id < config_.vocab.size(); ++id) spelled[id] = config_.vocab[id];
  for (size_t i = 0; i < config_.added_tokens.size(); ++i) spelled[config_.added_tokens[i].id] = added_match_[i];
  for (size_t id = 0; id < vocab_size_; ++id)
    if (!byte_level_decode(spelled[id], id_bytes_[id])) id_bytes_[id] = std::string(spelled[id]);

  std::unordered_map<std::string_view, uint32_t> id_of;
  id_of.reserve(config_.vocab.size());
  for (size_t id = 0; id < config_.vocab.size(); ++id)
    if (!config_.vocab[id].empty()) id_of.emplace(config_.vocab[id], static_cast<uint32_t>(id));
  for (uint32_t b = 0; b < 256; ++b) {
    const auto it = id_of.find(byte_level_char(static_cast<uint8_t>(b)));
    byte_ids_[b] = it == id_of.end() ? kNone : it->second;
    if (it != id_of.end()) continue;
    // A byte without a symbol: its character's UTF-8 as <0xXX> tokens (byte_fallback), else
    // the unknown token, else nothing (the `tokenizers` BPE model drops it).
    std::vector<uint32_t>& fallback = missing_byte_ids_[b];
    if (config_.byte_fallback) {
      for (char c : byte_level_char(static_cast<uint8_t>(b))) {
        char name[8];
        std::snprintf(name, sizeof name, "<0x%02X>", static_cast<unsigned>(static_cast<uint8_t>(c)));
        const auto f = id_of.find(name);
        if (f == id_of.end()) {
          fallback.clear();
          break;
        }
        fallback.push_back(f->second);
      }
    }
    if (fallback.empty() && config_.unk_id) fallback.push_back(*config_.unk_id);
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

  if (config_.ignore_merges) {
    word_ids_.reserve(config_.vocab.size());
    std::string bytes;
    for (size_t id = 0; id < config_.vocab.size(); ++id) {
      bytes.clear();
      if (!config_.vocab[id].empty() && byte_level_decode(config_.vocab[id], bytes))
        word_ids_.emplace(bytes, static_cast<uint32_t>(id));
    }
  }

  for (uint32_t i = 0; i < config_.added_tokens.size(); ++i) {
    const BpeAddedToken& t = config_.added_tokens[i];
    TRIDENT_CONFIG_CHECK(!t.content.empty(), src, ": added token ", t.id, " has empty content");
    const int group = t.normalized ? 1 : 0;
    added_by_first_byte_[group][static_cast<uint8_t>(added_match_[i][0])].push_back(i);
    has_added_[group] = true;
  }
  for (auto& group : added_by_first_byte_)
    for (auto& list : group)
      std::stable_sort(list.begin(), list.end(), [&](uint32_t a, uint32_t b) {
        return added_match_[a].size() > added_match_[b].size();
      });
  cache_ = std::make_unique<detail::PretokenCache>();
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
  auto encode_text = [&](std::string_view piece) { encode_piece(piece, ids, scratch, cache); };
  // Steps 2 and 3 for a piece of raw text between added tokens.
  auto normalize_then_encode = [&](std::string_view piece) {
    std::string_view normal = piece;
    std::string normalized;
    if (config_.nfc && !unicode::is_nfc_quick(piece)) {
      normalized = unicode::nfc(piece);
      normal = normalized;
    }
    if (has_added_[1]) split_added(normal, true, encode_text, push_id);
    else encode_text(normal);
  };
  if (has_added_[0]) split_added(text, false, normalize_then_encode, push_id);
  else normalize_then_encode(text);
}

void BpeTokenizer::encode_piece(std::string_view piece, std::vector<uint32_t>& ids, Scratch& scratch,
                                detail::PretokenCache* cache) const {
  if (piece.empty()) return;
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

void BpeTokenizer::merge_short_word(const uint32_t* symbols, int32_t count, std::vector<uint32_t>& ids) const {
  // The same order as the queue below (lowest rank, then leftmost), by scanning a small array
  // of pair ranks: cheaper than a heap for the short words that make up most text.
  uint32_t ids_now[kShortWord], ranks[kShortWord], results[kShortWord];
  int32_t n = count;
  std::copy(symbols, symbols + count, ids_now);
  auto update = [&](int32_t i) {  // rank of the pair (i, i + 1)
    const detail::PairRankMap::Entry* e = merges_->find(ids_now[i], ids_now[i + 1]);
    ranks[i] = e ? e->rank : kNone;
    results[i] = e ? e->result : kNone;
  };
  for (int32_t i = 0; i + 1 < n; ++i) update(i);
  while (n > 1) {
    int32_t best = 0;
    for (int32_t i = 1; i + 1 < n; ++i)
      if (ranks[i] < ranks[best]) best = i;
    if (ranks[best] == kNone) break;
    ids_now[best] = results[best];
    for (int32_t i = best + 1; i + 1 < n; ++i) {
      ids_now[i] = ids_now[i + 1];
      ranks[i] = ranks[i + 1];
      results[i] = results[i + 1];
    }
    --n;
    if (best > 0) update(best - 1);
    if (best + 1 < n) update(best);
  }
  ids.insert(ids.end(), ids_now, ids_now + n);
}

void BpeTokenizer::merge_word(std::string_view word, std::vector<uint32_t>& ids, Scratch& scratch) const {
  std::vector<uint32_t>& initial = scratch.initial;  // one symbol per byte, or its fallback
  initial.clear();
  const bool fuse = config_.fuse_unk && config_.unk_id;
  for (char c : word) {
    const uint32_t id = byte_ids_[static_cast<uint8_t>(c)];
    if (id != kNone) {
      initial.push_back(id);
      continue;
    }
    for (uint32_t fallback : missing_byte_ids_[static_cast<uint8_t>(c)]) {
      if (fuse && fallback == *config_.unk_id && !initial.empty() && initial.back() == fallback) continue;
      initial.push_back(fallback);
    }
  }
  const auto n = static_cast<int32_t>(initial.size());
  if (n <= kShortWord) return merge_short_word(initial.data(), n, ids);
  std::vector<Symbol>& symbols = scratch.symbols;
  symbols.clear();
  for (int32_t i = 0; i < n; ++i) symbols.push_back({initial[i], i - 1, i + 1 < n ? i + 1 : -1, true});
  std::vector<Candidate>& heap = scratch.heap;
  heap.clear();
  auto consider = [&](int32_t pos) {  // queue the merge of pos with its right neighbour
    const int32_t next = symbols[pos].next;
    if (next < 0) return;
    if (const detail::PairRankMap::Entry* e = merges_->find(symbols[pos].id, symbols[next].id))
      heap.push_back({e->rank, pos}), std::push_heap(heap.begin(), heap.end(), std::greater<>{});
  };
  for (int32_t i = 0; i + 1 < n; ++i) consider(i);
  while (!heap.empty()) {
    std::pop_heap(heap.begin(), heap.end(), std::greater<>{});
    const Candidate c = heap.back();
    heap.pop_back();
    Symbol& left = symbols[c.pos];
    if (!left.alive || left.next < 0) continue;
    Symbol& right = symbols[left.next];
    const detail::PairRankMap::Entry* e = merges_->find(left.id, right.id);
    if (!e || e->rank != c.rank) continue;  // stale: one side merged since it was queued
    left.id = e->result;
    right.alive = false;
    left.next = right.next;
    if (right.next >= 0) symbols[right.next].prev = c.pos;
    if (left.prev >= 0) consider(left.prev);
    consider(c.pos);
  }
  for (int32_t i = 0; i >= 0 && i < n; i = symbols[i].next) ids.push_back(symbols[i].id);
}

std::string BpeTokenizer::decode(std::span<const uint32_t> ids) const {
  std::string bytes;
  for (uint32_t id : ids)
    if (id < id_bytes_.size()) bytes += id_bytes_[id];
  std::string text;
  text.reserve(bytes.size());
  append_lossy_utf8(bytes, text);
  return text;
}

}  // namespace trident::data
