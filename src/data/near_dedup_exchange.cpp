// The collective half of near-dedup (near_dedup.hpp), in four exchanges:
//   1. every (band hash, key) goes to the owner rank of the band hash; the owner sorts each
//      bucket by key and pairs its first document (the head) with every other one;
//   2. each pair goes to the head's rank, which drops pairs found in several bands and sends the
//      head's minima to the other document's rank;
//   3. that rank estimates the Jaccard similarity and keeps the pair when it reaches the threshold;
//   4. the verified pairs are gathered on rank 0, joined into clusters (union-find) and every key
//      but each cluster's smallest is broadcast as dropped.
// Buckets, pairs and the clusters depend on keys and text alone: the same drops under any rank
// count. Rank 0 holds the verified pairs (16 bytes each) and the dropped keys (8 bytes each).
#include <algorithm>
#include <array>
#include <numeric>
#include <tuple>

#include "trident/data/near_dedup.hpp"

namespace trident::data {
namespace {

int owner_of_bucket(uint64_t bucket, int ranks) { return static_cast<int>((bucket >> 17) % static_cast<uint64_t>(ranks)); }

// Four 16-bit minima per word.
void pack_minima(std::span<const uint16_t> minima, std::vector<uint64_t>& out) {
  for (size_t k = 0; k < minima.size(); k += 4) {
    uint64_t w = 0;
    for (size_t j = 0; j < 4 && k + j < minima.size(); ++j) w |= static_cast<uint64_t>(minima[k + j]) << (16 * j);
    out.push_back(w);
  }
}

std::vector<uint16_t> unpack_minima(const uint64_t* words, size_t count) {
  std::vector<uint16_t> minima(count);
  for (size_t k = 0; k < count; ++k) minima[k] = static_cast<uint16_t>(words[k / 4] >> (16 * (k % 4)));
  return minima;
}

class UnionFind {
 public:
  explicit UnionFind(size_t n) : parent_(n) { std::iota(parent_.begin(), parent_.end(), size_t(0)); }
  size_t find(size_t x) {
    while (parent_[x] != x) x = parent_[x] = parent_[parent_[x]];
    return x;
  }
  void join(size_t a, size_t b) {  // the smaller index (the smaller key) becomes the root
    a = find(a), b = find(b);
    if (a != b) parent_[std::max(a, b)] = std::min(a, b);
  }

 private:
  std::vector<size_t> parent_;
};

}  // namespace

std::vector<bool> near_duplicates(const std::vector<uint64_t>& keys, const std::vector<bool>& active,
                                  const SketchTable& sketches, double jaccard, const PrepComm& comm,
                                  NearDedupCounts* counts) {
  const int P = comm.size();
  const size_t num_perm = static_cast<size_t>(sketches.num_perm());
  const size_t minima_words = (num_perm + 3) / 4;

  // 1. Buckets to their owners: (bucket, key, index) triples.
  std::vector<std::vector<uint64_t>> to_owner(static_cast<size_t>(P));
  for (size_t i = 0; i < keys.size(); ++i)
    if (active[i]) for (const uint64_t bucket : sketches.bands(i)) {
      auto& out = to_owner[static_cast<size_t>(owner_of_bucket(bucket, P))];
      out.insert(out.end(), {bucket, keys[i], i});
    }
  std::vector<std::vector<uint64_t>> received = comm.exchange(to_owner);
  to_owner.clear();
  std::vector<std::tuple<uint64_t, uint64_t, int, uint64_t>> entries;  // bucket, key, rank, index
  for (int r = 0; r < P; ++r)
    for (size_t k = 0; k + 2 < received[r].size(); k += 3)
      entries.emplace_back(received[r][k], received[r][k + 1], r, received[r][k + 2]);
  received.clear();
  std::sort(entries.begin(), entries.end());

  // 2. Pairs (head, other) to the head's rank: (head index, head key, other key, other rank, other index).
  std::vector<std::vector<uint64_t>> to_head(static_cast<size_t>(P));
  for (size_t e = 0, end = 0; e < entries.size(); e = end) {
    end = e + 1;
    while (end < entries.size() && std::get<0>(entries[end]) == std::get<0>(entries[e])) ++end;
    const auto& [bucket, head_key, head_rank, head_index] = entries[e];
    for (size_t o = e + 1; o < end; ++o) {
      const auto& other = entries[o];
      if (std::get<1>(other) == head_key) continue;  // one document, two equal bands
      to_head[static_cast<size_t>(head_rank)].insert(
          to_head[static_cast<size_t>(head_rank)].end(),
          {head_index, head_key, std::get<1>(other), static_cast<uint64_t>(std::get<2>(other)), std::get<3>(other)});
    }
  }
  entries.clear();
  received = comm.exchange(to_head);
  to_head.clear();
  std::vector<std::array<uint64_t, 5>> pairs;
  for (int r = 0; r < P; ++r)
    for (size_t k = 0; k + 4 < received[r].size(); k += 5)
      pairs.push_back({received[r][k], received[r][k + 1], received[r][k + 2], received[r][k + 3], received[r][k + 4]});
  received.clear();
  std::sort(pairs.begin(), pairs.end());
  pairs.erase(std::unique(pairs.begin(), pairs.end()), pairs.end());

  // 3. The head's minima to the other document's rank: (other index, head key, other key, minima...).
  std::vector<std::vector<uint64_t>> to_other(static_cast<size_t>(P));
  for (const auto& [head_index, head_key, other_key, other_rank, other_index] : pairs) {
    auto& out = to_other[static_cast<size_t>(other_rank)];
    out.insert(out.end(), {other_index, head_key, other_key});
    pack_minima(sketches.minima(head_index), out);
  }
  std::vector<int64_t> totals = {static_cast<int64_t>(pairs.size()), 0};
  pairs.clear();
  received = comm.exchange(to_other);
  to_other.clear();
  std::vector<uint64_t> verified;  // (head key, other key) pairs
  const size_t stride = 3 + minima_words;
  for (int r = 0; r < P; ++r)
    for (size_t k = 0; k + stride <= received[r].size(); k += stride) {
      const uint64_t* m = received[r].data() + k;
      if (estimated_jaccard(unpack_minima(m + 3, num_perm), sketches.minima(m[0])) >= jaccard)
        verified.insert(verified.end(), {m[1], m[2]});
    }
  received.clear();
  totals[1] = static_cast<int64_t>(verified.size() / 2);
  comm.sum(totals);
  if (counts) *counts = {totals[0], totals[1]};

  // 4. Clusters on rank 0.
  std::vector<std::vector<uint64_t>> to_root(static_cast<size_t>(P));
  to_root[0] = std::move(verified);
  received = comm.exchange(to_root);
  std::vector<int64_t> dropped;
  if (comm.rank() == 0) {
    std::vector<uint64_t> ids;
    for (const auto& from : received) ids.insert(ids.end(), from.begin(), from.end());
    std::sort(ids.begin(), ids.end());
    ids.erase(std::unique(ids.begin(), ids.end()), ids.end());
    auto id = [&](uint64_t key) { return static_cast<size_t>(std::lower_bound(ids.begin(), ids.end(), key) - ids.begin()); };
    UnionFind clusters(ids.size());
    for (const auto& from : received)
      for (size_t k = 0; k + 1 < from.size(); k += 2) clusters.join(id(from[k]), id(from[k + 1]));
    for (size_t k = 0; k < ids.size(); ++k)
      if (clusters.find(k) != k) dropped.push_back(static_cast<int64_t>(ids[k]));  // sorted: ids are
  }
  std::vector<int64_t> size = {static_cast<int64_t>(dropped.size())};
  comm.broadcast(size, 0);
  dropped.resize(static_cast<size_t>(size[0]));
  comm.broadcast(dropped, 0);

  const std::vector<uint64_t> dropped_keys(dropped.begin(), dropped.end());  // in uint64 order
  std::vector<bool> drop(keys.size());
  for (size_t i = 0; i < keys.size(); ++i)
    drop[i] = active[i] && std::binary_search(dropped_keys.begin(), dropped_keys.end(), keys[i]);
  return drop;
}

}  // namespace trident::data
