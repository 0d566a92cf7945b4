// Near-dedup: shingles as documented, MinHash estimates against the exact Jaccard of the shingle
// sets, the LSH shape, option errors, and the cluster decision (transitive, smallest key kept,
// inactive documents left out) on one process; rank invariance is tested end to end (prep.sh).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "trident/core/error.hpp"
#include "trident/data/near_dedup.hpp"

namespace trident::data {
namespace {

std::string random_words(std::mt19937_64& rng, int n) {
  std::string s;
  for (int k = 0; k < n; ++k) s += (k ? " w" : "w") + std::to_string(rng() % 5000);
  return s;
}

double exact_jaccard(const std::vector<uint64_t>& a, const std::vector<uint64_t>& b) {
  std::vector<uint64_t> common;
  std::set_intersection(a.begin(), a.end(), b.begin(), b.end(), std::back_inserter(common));
  return static_cast<double>(common.size()) / static_cast<double>(a.size() + b.size() - common.size());
}

TEST(NearDedup, ShinglesAreLowercasedWordNgrams) {
  // Punctuation and whitespace separate words; case is folded; UTF-8 letters are word bytes.
  EXPECT_EQ(shingle_hashes("The cat, sat.", 2), shingle_hashes("the CAT sat", 2));
  EXPECT_EQ(shingle_hashes("a b c d", 2).size(), 3u);
  EXPECT_EQ(shingle_hashes("a b a b a b", 2).size(), 2u);  // "a b", "b a": a set
  EXPECT_EQ(shingle_hashes("two words", 5).size(), 1u);    // fewer words than n: one shingle
  EXPECT_TRUE(shingle_hashes(" ,.;\n", 5).empty());
  EXPECT_NE(shingle_hashes("straße", 1), shingle_hashes("stra e", 1));
}

TEST(NearDedup, EstimateTracksTheExactJaccard) {
  std::mt19937_64 rng(5);
  NearDedupOptions o;
  const MinHasher hasher(o);
  const LshShape shape = lsh_shape(o);
  int outside = 0, cases = 0;
  for (int pair = 0; pair < 200; ++pair) {
    const std::string a = random_words(rng, 300);
    std::string b;
    {  // replace every k-th word: Jaccard from about 0.2 to 0.95
      std::string word;
      const int every = 2 + static_cast<int>(rng() % 60);
      int k = 0;
      for (size_t i = 0; i <= a.size(); ++i) {
        if (i < a.size() && a[i] != ' ') {
          word += a[i];
          continue;
        }
        b += (b.empty() ? "" : " ") + (++k % every == 0 ? "x" + std::to_string(rng() % 100000) : word);
        word.clear();
      }
    }
    const double exact = exact_jaccard(shingle_hashes(a, o.ngram), shingle_hashes(b, o.ngram));
    SketchTable table(shape, o.num_perm);
    table.add(hasher.signature(a));
    table.add(hasher.signature(b));
    const double estimate = estimated_jaccard(table.minima(0), table.minima(1));
    const double sd = std::sqrt(std::max(exact * (1 - exact), 0.01) / o.num_perm);
    ++cases;
    outside += std::abs(estimate - exact) > 3.5 * sd;
  }
  EXPECT_LE(outside, 2) << "of " << cases << " pairs";  // 3.5 sd: about 1 in 2000 by chance
}

TEST(NearDedup, ShapeBalancesMissesAgainstCandidates) {
  const LshShape s = optimal_lsh_shape(0.8, 128);
  EXPECT_EQ(s.bands, 14);
  EXPECT_EQ(s.rows, 9);
  EXPECT_GT(candidate_probability(0.9, s), 0.998);
  EXPECT_LT(candidate_probability(0.5, s), 0.03);
  for (double x = 0.05; x < 1; x += 0.05) EXPECT_LT(candidate_probability(x, s), candidate_probability(x + 0.05, s));
  NearDedupOptions o;
  o.bands = 16, o.rows = 8;
  EXPECT_EQ(lsh_shape(o).bands, 16);
}

TEST(NearDedup, BadOptionsAreConfigErrors) {
  auto bad = [](auto change) {
    NearDedupOptions o;
    change(o);
    EXPECT_THROW(lsh_shape(o), ConfigError);
  };
  bad([](NearDedupOptions& o) { o.jaccard = 1.0; });
  bad([](NearDedupOptions& o) { o.jaccard = 0; });
  bad([](NearDedupOptions& o) { o.ngram = 0; });
  bad([](NearDedupOptions& o) { o.num_perm = 1; });
  bad([](NearDedupOptions& o) { o.bands = 4; });                   // without --rows
  bad([](NearDedupOptions& o) { o.bands = 20, o.rows = 7; });      // 140 > 128 minima
}

TEST(NearDedup, ClustersAreTransitiveAndKeepTheFirstDocument) {
  std::mt19937_64 rng(9);
  NearDedupOptions o;
  o.num_perm = 512;  // estimates within 0.02: the pairs below are clearly on their side
  const MinHasher hasher(o);
  const LshShape shape = lsh_shape(o);
  // Windows of 360 words shifted by 25: a ~ b and b ~ c (Jaccard 0.87) but not a ~ c (0.75);
  // d unrelated; e equals d but is inactive (an exact duplicate dropped before near-dedup).
  std::vector<std::string> w;
  for (int k = 0; k < 410; ++k) w.push_back("w" + std::to_string(rng() % 100000));
  auto text = [&](int from) {
    std::string s;
    for (int k = from; k < from + 360; ++k) s += w[k] + " ";
    return s;
  };
  const std::string a = text(0), b = text(25), c = text(50), d = random_words(rng, 300);
  SketchTable table(shape, o.num_perm);
  const std::vector<std::string> docs = {c, d, a, b, d};
  const std::vector<uint64_t> keys = {30, 40, 10, 20, 5};  // input order: e(5) a(10) b(20) c(30) d(40)
  for (const std::string& t : docs) table.add(hasher.signature(t));
  NearDedupCounts counts;
  const std::vector<bool> drop =
      near_duplicates(keys, {true, true, true, true, false}, table, o.jaccard, PrepComm::single_process(), &counts);
  EXPECT_EQ(drop, (std::vector<bool>{true, false, false, true, false}));
  EXPECT_EQ(counts.verified_pairs, 2);  // a-b and b-c; never d-e: e takes no part
}

}  // namespace
}  // namespace trident::data
