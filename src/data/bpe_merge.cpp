// The BPE model on one word: its first symbols (characters or bytes, byte fallback, unknown
// token) and the merges that join them, lowest rank first, as the `tokenizers` BPE model does.
#include <algorithm>

#include "bpe_scratch.hpp"
#include "bpe_tables.hpp"
#include "trident/data/bpe_tokenizer.hpp"
#include "trident/data/byte_level.hpp"
#include "trident/data/unicode.hpp"

namespace trident::data {

namespace {

constexpr uint32_t kNone = 0xFFFFFFFF;

using detail::MergeCandidate;
using detail::MergeSymbol;

}  // namespace

void BpeTokenizer::initial_symbols(std::string_view word, std::vector<uint32_t>& symbols) const {
  symbols.clear();
  // As the `tokenizers` BPE model: an unknown character's unk waits until the next known
  // character (or the word's end), so a run of them fuses into one with fuse_unk; byte-fallback
  // tokens do not end the wait.
  bool unk_pending = false;
  auto known = [&](uint32_t id) {
    if (unk_pending) symbols.push_back(*config_.unk_id), unk_pending = false;
    symbols.push_back(id);
  };
  auto unknown = [&](std::string_view character) {
    if (config_.byte_fallback) {
      bool all = true;
      for (char c : character) all = all && byte_token_ids_[static_cast<uint8_t>(c)] != kNone;
      if (all) {
        for (char c : character) symbols.push_back(byte_token_ids_[static_cast<uint8_t>(c)]);
        return;
      }
    }
    if (!config_.unk_id) return;  // dropped, as the BPE model without an unknown token does
    if (unk_pending && !config_.fuse_unk) symbols.push_back(*config_.unk_id);
    unk_pending = true;
  };
  if (config_.byte_level) {
    for (char c : word) {
      const uint32_t id = byte_ids_[static_cast<uint8_t>(c)];
      if (id != kNone) known(id);
      else unknown(byte_level_char(static_cast<uint8_t>(c)));
    }
  } else {
    for (size_t pos = 0; pos < word.size();) {
      const uint32_t length = unicode::decode_utf8(word, pos).length;
      const std::string_view character = word.substr(pos, length);
      const auto it = word_ids_.find(character);
      if (it != word_ids_.end()) known(it->second);
      else unknown(character);
      pos += length;
    }
  }
  if (unk_pending) symbols.push_back(*config_.unk_id);
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
  std::vector<uint32_t>& initial = scratch.initial;
  initial_symbols(word, initial);
  const auto n = static_cast<int32_t>(initial.size());
  if (n <= kShortWord) return merge_short_word(initial.data(), n, ids);
  std::vector<MergeSymbol>& symbols = scratch.symbols;
  symbols.clear();
  for (int32_t i = 0; i < n; ++i) symbols.push_back({initial[i], i - 1, i + 1 < n ? i + 1 : -1, true});
  std::vector<MergeCandidate>& heap = scratch.heap;
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
    const MergeCandidate c = heap.back();
    heap.pop_back();
    MergeSymbol& left = symbols[c.pos];
    if (!left.alive || left.next < 0) continue;
    MergeSymbol& right = symbols[left.next];
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

}  // namespace trident::data
