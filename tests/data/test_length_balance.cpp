// Length balance: bucket edges, quotas (no bucket above its share of what is written, the
// largest such cap), the exact selection of each quota, seeded and independent of order, and
// option errors. Rank invariance is tested end to end (prep.sh).
#include <gtest/gtest.h>

#include <numeric>
#include <random>

#include "trident/core/error.hpp"
#include "trident/data/length_balance.hpp"

namespace trident::data {
namespace {

TEST(LengthBalance, EdgesAndBuckets) {
  const std::vector<int64_t> edges = parse_length_edges("128,512,2048");
  EXPECT_EQ(edges, (std::vector<int64_t>{128, 512, 2048}));
  EXPECT_EQ(length_bucket(0, edges), 0);
  EXPECT_EQ(length_bucket(127, edges), 0);
  EXPECT_EQ(length_bucket(128, edges), 1);  // [128, 512)
  EXPECT_EQ(length_bucket(5000, edges), 3);
  for (const char* bad : {"", "0,5", "5,5", "10,5", "1,x", "3,,4", "-1"})
    EXPECT_THROW(parse_length_edges(bad), ConfigError) << bad;
  LengthBalanceOptions o;
  o.max_share = 0.5;
  EXPECT_THROW(check_length_balance(o), ConfigError);  // a share without buckets
  o.edges = {10};
  o.max_share = 1.5;
  EXPECT_THROW(check_length_balance(o), ConfigError);
}

TEST(LengthBalance, QuotasAreTheLargestCapThatHolds) {
  const std::vector<int64_t> q = bucket_quotas({82, 1546, 1461, 1873}, 0.3);
  EXPECT_EQ(q, (std::vector<int64_t>{82, 246, 246, 246}));  // 246 / 820 = 0.3 exactly
  EXPECT_EQ(bucket_quotas({100, 1}, 0.5), (std::vector<int64_t>{1, 1}));
  EXPECT_EQ(bucket_quotas({10, 20}, 1.0), (std::vector<int64_t>{10, 20}));
  EXPECT_EQ(bucket_quotas({10, 20, 30}, 0.5), (std::vector<int64_t>{10, 20, 30}));  // 30/60 holds
  EXPECT_THROW(bucket_quotas({10, 20, 30}, 0.3), ConfigError);  // 3 buckets cannot each be <= 30%
  // Any counts and share: no bucket above the share, and one more in any capped bucket breaks it.
  std::mt19937_64 rng(3);
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<int64_t> counts(2 + rng() % 6);
    for (int64_t& c : counts) c = static_cast<int64_t>(rng() % 1000);
    const double share = 0.2 + static_cast<double>(rng() % 80) / 100;
    std::vector<int64_t> quotas;
    try {
      quotas = bucket_quotas(counts, share);
    } catch (const ConfigError&) {
      continue;
    }
    const int64_t total = std::accumulate(quotas.begin(), quotas.end(), int64_t(0));
    const int64_t cap = *std::max_element(quotas.begin(), quotas.end());
    EXPECT_LE(static_cast<double>(cap), share * static_cast<double>(total) + 1e-9);
    int64_t bigger = 0;  // the cap one higher, over the same counts
    for (const int64_t c : counts) bigger += std::min(c, cap + 1);
    const bool any_capped = [&] {
      for (size_t b = 0; b < counts.size(); ++b)
        if (quotas[b] < counts[b]) return true;
      return false;
    }();
    if (any_capped) {
      EXPECT_GT(static_cast<double>(cap + 1), share * static_cast<double>(bigger));
    }
  }
}

TEST(LengthBalance, KeepsExactlyTheQuotaSeededAndOrderFree) {
  std::mt19937_64 rng(1);
  std::vector<int64_t> tokens;
  std::vector<uint64_t> hashes;
  for (int i = 0; i < 3000; ++i) {
    tokens.push_back(i < 300 ? 50 : 500);  // 300 short, 2700 long
    hashes.push_back(rng());
  }
  std::vector<bool> active(tokens.size(), true);
  active[5] = false;  // an inactive short document: neither counted nor dropped
  LengthBalanceOptions o;
  o.edges = {100};
  o.max_share = 0.75;
  LengthBalanceReport report;
  const std::vector<bool> drop = balance_lengths(tokens, hashes, active, o, PrepComm::single_process(), &report);
  EXPECT_EQ(report.before, (std::vector<int64_t>{299, 2700}));
  EXPECT_EQ(report.after, (std::vector<int64_t>{299, 897}));  // 897 / 1196 = 0.75
  EXPECT_FALSE(drop[5]);
  int64_t kept_long = 0;
  for (size_t i = 300; i < tokens.size(); ++i) kept_long += !drop[i];
  EXPECT_EQ(kept_long, 897);

  // The same documents in reverse order keep the same ones; another seed keeps others.
  std::vector<int64_t> rt(tokens.rbegin(), tokens.rend());
  std::vector<uint64_t> rh(hashes.rbegin(), hashes.rend());
  std::vector<bool> ra(active.rbegin(), active.rend());
  const std::vector<bool> rdrop = balance_lengths(rt, rh, ra, o, PrepComm::single_process(), nullptr);
  for (size_t i = 0; i < tokens.size(); ++i) ASSERT_EQ(drop[i], rdrop[tokens.size() - 1 - i]) << i;
  o.seed = 2;
  const std::vector<bool> other = balance_lengths(tokens, hashes, active, o, PrepComm::single_process(), nullptr);
  EXPECT_NE(drop, other);
}

}  // namespace
}  // namespace trident::data
