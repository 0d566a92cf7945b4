// The working memory of one BpeTokenizer::encode_append call, reused across its words (shared
// by bpe_tokenizer.cpp, which owns it, and bpe_merge.cpp, which merges in it).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/data/bpe_tokenizer.hpp"

namespace trident::data {

namespace detail {

// One symbol of a word being merged: a doubly linked list over the word's positions.
struct MergeSymbol {
  uint32_t id;
  int32_t prev, next;  // -1 at the ends
  bool alive;
};

// A candidate merge of the symbol at `pos` with its right neighbour. Popped lowest rank first,
// then leftmost, as `tokenizers` does.
struct MergeCandidate {
  uint32_t rank;
  int32_t pos;
  bool operator>(const MergeCandidate& o) const { return rank != o.rank ? rank > o.rank : pos > o.pos; }
};

}  // namespace detail

struct BpeTokenizer::Scratch {
  std::vector<uint32_t> initial;
  std::vector<detail::MergeSymbol> symbols;
  std::vector<detail::MergeCandidate> heap;
  std::string word;  // a pre-token with its prefix space
};

}  // namespace trident::data
