// Near-duplicate removal for `trident prep --near-dedup`: MinHash signatures of word n-gram
// shingles, locality-sensitive hashing in bands, candidate pairs verified by their estimated
// Jaccard similarity, clusters joined transitively; one document per cluster is kept, the first
// in input order.
//
// Shingles: the text is cut into words, maximal runs of ASCII letters and digits and non-ASCII
// bytes (UTF-8 letters of any script), ASCII letters lowercased; a shingle is `ngram` consecutive words joined by one space (a document of fewer words:
// one shingle of them all), hashed with 64-bit FNV-1a. Permutation p maps a shingle hash x to
// (a_p * x + b_p) >> 32 (multiply-add-shift, a_p odd), a_p and b_p drawn from splitmix64 of
// `seed`: the signature depends on the text and the options alone, never on the rank count.
// Band b hashes the `rows` minima b*rows .. b*rows+rows-1 (with b), so two documents share a band
// bucket with probability s^rows per band at Jaccard s, and become candidates with probability
// 1 - (1 - s^rows)^bands. Without --bands/--rows, the shape is the (bands, rows) with
// bands * rows <= num_perm that minimises 0.1 * (area of candidate probability below the
// threshold) + 0.9 * (area of miss probability above it). Equal weights (datasketch's default)
// would miss 7% of pairs at Jaccard 0.9 with 128 permutations; here every candidate is verified,
// so a false candidate costs one message and a missed one a kept duplicate. Defaults (0.8, 128):
// 14 bands of 9 rows, candidates with probability 0.999 at s = 0.9, 0.975 at 0.85, 0.027 at 0.5.
// A candidate pair is a duplicate when its estimated Jaccard (the share of equal minima) reaches
// the threshold.
//
// Memory per document until the decision: 8 bytes per band hash, 2 bytes per permutation (the low
// 16 bits of each minimum, for the Jaccard estimate), 8 bytes of input order: 8 * bands +
// 2 * num_perm + 8 bytes (with the defaults, 128 permutations in 14 bands: 376 bytes).
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "trident/data/prep_comm.hpp"

namespace trident::data {

struct NearDedupOptions {
  bool enabled = false;
  double jaccard = 0.8;  // documents at least this similar are duplicates
  int ngram = 5;         // words per shingle
  int num_perm = 128;    // MinHash permutations
  int bands = 0, rows = 0;  // 0, 0: chosen from jaccard and num_perm
  uint64_t seed = 1;
};

struct LshShape {
  int bands = 0, rows = 0;
};

// The (bands, rows) that balances false positives below `threshold` and false negatives above.
LshShape optimal_lsh_shape(double threshold, int num_perm);
// The shape options ask for (bands/rows given, or optimal); ConfigError naming the option when
// the values are out of range.
LshShape lsh_shape(const NearDedupOptions& options);
// Probability that two documents of Jaccard similarity s become candidates under `shape`.
double candidate_probability(double s, LshShape shape);

// The shingle hashes of `text` (sorted, unique).
std::vector<uint64_t> shingle_hashes(std::string_view text, int ngram);

class MinHasher {
 public:
  explicit MinHasher(const NearDedupOptions& options);
  int num_perm() const { return static_cast<int>(a_.size()); }
  // num_perm minima (UINT32_MAX each for a text without words).
  std::vector<uint32_t> signature(std::string_view text) const;

 private:
  int ngram_;
  std::vector<uint64_t> a_, b_;
};

// What near-dedup keeps of each document, in flat arrays: its band hashes and the low 16 bits of
// its minima.
class SketchTable {
 public:
  SketchTable(LshShape shape, int num_perm) : shape_(shape), num_perm_(num_perm) {}
  void add(const std::vector<uint32_t>& signature);  // num_perm minima
  size_t size() const { return bands_.size() / static_cast<size_t>(shape_.bands); }
  int num_perm() const { return num_perm_; }
  std::span<const uint64_t> bands(size_t i) const;
  std::span<const uint16_t> minima(size_t i) const;

 private:
  LshShape shape_;
  int num_perm_;
  std::vector<uint64_t> bands_;
  std::vector<uint16_t> minima_;
};

// The share of equal minima: the Jaccard estimate.
double estimated_jaccard(std::span<const uint16_t> a, std::span<const uint16_t> b);

struct NearDedupCounts {
  int64_t candidate_pairs = 0;  // distinct pairs that shared a band bucket (all ranks)
  int64_t verified_pairs = 0;   // of those, estimated Jaccard >= threshold
};

// drop[i]: document i (input order keys[i], sketch i of the table) lies in a cluster of verified
// pairs whose smallest key is not its own; documents with active[i] false take no part (and are
// not dropped). Collective over comm; keys are unique over all ranks.
std::vector<bool> near_duplicates(const std::vector<uint64_t>& keys, const std::vector<bool>& active,
                                  const SketchTable& sketches, double jaccard, const PrepComm& comm,
                                  NearDedupCounts* counts);

}  // namespace trident::data
