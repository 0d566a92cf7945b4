// Tests of data mixtures: data.train's syntax and its errors, integer shares, the
// earliest-deadline-first order (every prefix of n rows holds each source within one row of
// n w_i, for 2 to 1000 sources and weights down to 1e-4), segments that go on from each
// source's cursor (nothing repeated, nothing skipped), and a mixed sampler's order being
// independent of dp and the micro-batch split.
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "temp_dir.hpp"
#include "trident/core/error.hpp"
#include "trident/data/mix_schedule.hpp"
#include "trident/data/feistel_permutation.hpp"
#include "trident/data/mix_spec.hpp"
#include "trident/data/sampler.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

using testing::TempDir;

MixSpec parse(const std::string& train, const std::string& alpha = "", const std::string& stages = "") {
  return parse_mix(train, alpha, stages, "", "");
}

std::string parse_error(const std::string& train, const std::string& alpha = "", const std::string& stages = "",
                        const std::string& max_repeat = "", const std::string& change = "") {
  try {
    parse_mix(train, alpha, stages, max_repeat, change);
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

TEST(MixSpec, WeightPrefixPairsNamedByFileName) {
  const MixSpec spec = parse("0.6 input/data/en 0.3 input/data/code 0.1 /abs/zh/");
  ASSERT_EQ(spec.sources.size(), 3u);
  EXPECT_EQ(spec.sources[0].name, "en");
  EXPECT_EQ(spec.sources[1].prefix, "input/data/code");
  EXPECT_EQ(spec.sources[2].name, "zh");
  EXPECT_DOUBLE_EQ(spec.sources[1].weight, 0.3);
  EXPECT_FALSE(spec.single());
  const MixSpec lone = parse("input/data/tiny");
  ASSERT_EQ(lone.sources.size(), 1u);
  EXPECT_TRUE(lone.single());
  EXPECT_EQ(lone.sources[0].weight, 1);
  const MixSpec alpha = parse("a/en a/code", "0.3");
  EXPECT_TRUE(alpha.has_alpha);
  EXPECT_EQ(alpha.sources.size(), 2u);
  const MixSpec staged = parse("1 a/x 1 a/y", "", "100: 0.2 0.8; 300: 1 0");
  ASSERT_EQ(staged.stages.size(), 2u);
  EXPECT_EQ(staged.stages[1].step, 300);
  EXPECT_EQ(staged.stages[1].weights, (std::vector<double>{1, 0}));
  EXPECT_EQ(first_prefix("0.5 a/en 0.5 a/zh"), "a/en");
  EXPECT_EQ(first_prefix("a/en"), "a/en");
}

TEST(MixSpec, BadInputNamesTheProblem) {
  EXPECT_NE(parse_error("0.6 a/en 0.4").find("3 items, an odd number: not weight, prefix pairs"), std::string::npos);
  EXPECT_NE(parse_error("0.6 a/en 0 a/zh").find("weight 0 of a/zh is not positive"), std::string::npos);
  EXPECT_NE(parse_error("0.6 a/en -1 a/zh").find("weight -1 of a/zh is not positive"), std::string::npos);
  EXPECT_NE(parse_error("0.6 a/en x a/zh").find("'x' (item 3) is not a weight"), std::string::npos);
  EXPECT_NE(parse_error("0.6 a/en 0.4 0.5").find("is a number where a shard prefix belongs"), std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 b/en").find("two sources are named 'en'"), std::string::npos);
  EXPECT_NE(parse_error("a/en a/zh").find("prefixes without weights"), std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 a/zh", "0.3").find("give data.train as prefixes without weights"),
            std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 a/zh", "", "100: 0.5").find("step 100 gives 1 weights for the 2 sources"),
            std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 a/zh", "", "100 0.5 0.5").find("is not STEP: W1 W2"), std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 a/zh", "", "200: 1 1; 100: 1 1").find("increasing order"), std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 a/zh", "", "100: 0 0").find("all zero"), std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 a/zh", "", "", "-1").find("data.max_repeat"), std::string::npos);
  EXPECT_NE(parse_error("0.5 a/en 0.5 a/zh", "", "", "", "maybe").find("data.mix_change = maybe"), std::string::npos);
  EXPECT_NE(parse_error("a/en a/zh", "x").find("data.mix_alpha = x"), std::string::npos);
}

TEST(MixShares, ExactForDecimalsElseLargestRemainder) {
  EXPECT_EQ(integer_shares({0.6, 0.3, 0.1}), (std::vector<uint32_t>{6, 3, 1}));
  EXPECT_EQ(integer_shares({0.5, 0.3, 0.2}), (std::vector<uint32_t>{5, 3, 2}));
  EXPECT_EQ(integer_shares({3, 1}), (std::vector<uint32_t>{3, 1}));
  EXPECT_EQ(integer_shares({1e-4, 0.9999}), (std::vector<uint32_t>{1, 9999}));
  EXPECT_EQ(integer_shares({2, 0, 2}), (std::vector<uint32_t>{1, 0, 1}));
  const std::vector<double> irrational{std::sqrt(2.0), std::sqrt(3.0), M_PI};
  const std::vector<uint32_t> q = integer_shares(irrational);
  EXPECT_EQ(std::accumulate(q.begin(), q.end(), uint64_t{0}), kMaxMixPeriod);
  const double total = irrational[0] + irrational[1] + irrational[2];
  for (size_t i = 0; i < q.size(); ++i) EXPECT_NEAR(q[i], irrational[i] / total * kMaxMixPeriod, 1.0);
}

// Every prefix of n rows (n up to `rows`) holds each source within one row of n q_i / P, and
// within one row (plus the share's rounding) of n w_i.
void expect_within_one_row(const std::vector<double>& weights, int64_t rows) {
  const MixSchedule schedule(weights.size(), {MixPhase{0, weights}});
  const MixTable& table = schedule.table_at(0);
  const double P = table.period(), total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<int64_t> count(weights.size(), 0);
  double worst = 0, worst_real = 0;
  for (int64_t n = 1; n <= rows; ++n) {
    const MixSchedule::Located at = schedule.locate(n - 1);
    ASSERT_EQ(at.ordinal, count[at.source]) << "row " << n - 1;  // each source's rows in order, none skipped
    ++count[at.source];
    for (size_t i = 0; i < weights.size(); ++i) {
      worst = std::max(worst, std::fabs(double(count[i]) - double(n) * table.shares()[i] / P));
      worst_real = std::max(worst_real, std::fabs(double(count[i]) - double(n) * weights[i] / total));
    }
  }
  EXPECT_LT(worst, 1.0) << weights.size() << " sources, period " << P;
  // The shares round the weights to 1/P at most: n/P more over n rows (0 for exact decimals).
  EXPECT_LT(worst_real, 1.0 + double(rows) / P * 0.5 * weights.size()) << weights.size() << " sources";
  EXPECT_EQ(schedule.cursor(rows), count);
}

TEST(MixSchedule, EveryPrefixWithinOneRow) {
  expect_within_one_row({0.5, 0.3, 0.2}, 16 * 1000);
  expect_within_one_row({0.6, 0.3, 0.1}, 8 * 1000);
  expect_within_one_row({1e-4, 0.4999, 0.5}, 30000);
  expect_within_one_row({1, 1, 1, 1, 1, 1, 1}, 7000);
  std::mt19937_64 rng(7);
  for (int m : {2, 3, 17, 120}) {
    std::vector<double> w(m);
    for (double& v : w) v = std::exp(std::uniform_real_distribution<double>(-6, 0)(rng));  // 3 decades
    expect_within_one_row(w, 20000);
  }
}

TEST(MixSchedule, ThousandSourcesStartQuickly) {
  std::vector<double> w(1000);
  for (size_t i = 0; i < w.size(); ++i) w[i] = std::pow(double(1000 + 37 * i), 0.3);  // temperature weights
  const auto start = std::chrono::steady_clock::now();
  const MixSchedule schedule(w.size(), {MixPhase{0, w}});
  const double build_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Row 1e8 and its neighbours: a lookup, no walk over the rows before them.
  const auto lookup = std::chrono::steady_clock::now();
  int64_t sum = 0;
  for (int64_t r = 100000000; r < 100000000 + 1000; ++r) sum += schedule.locate(r).ordinal;
  const double lookup_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - lookup).count();
  const std::vector<int64_t> cursor = schedule.cursor(100000000);
  const MixTable& table = schedule.table_at(0);
  for (size_t i = 0; i < w.size(); ++i)
    EXPECT_LT(std::fabs(double(cursor[i]) - 1e8 * table.shares()[i] / table.period()), 1.0) << "source " << i;
  std::printf("1000 sources: period %u, table built in %.3f s (%.1f MiB); 1000 lookups at row 1e8 in %.1f us\n",
              table.period(), build_s, table.period() * 6.0 / (1 << 20), lookup_s * 1e6);
  EXPECT_GT(sum, 0);
}

// Stages: every source goes on from its cursor, so over the whole run each source's ordinals
// are exactly 0, 1, 2, ... (nothing repeated, nothing skipped), and a resumed schedule with the
// origin at a later row gives the same rows from there on.
TEST(MixSchedule, StagesAndOriginsContinueEachSourceCursor) {
  const std::vector<MixPhase> phases{{0, {0.5, 0.5, 0}}, {96, {0.1, 0.2, 0.7}}, {200, {1, 0, 0}}};
  const MixSchedule schedule(3, phases);
  std::vector<int64_t> next(3, 0);
  for (int64_t r = 0; r < 400; ++r) {
    const MixSchedule::Located at = schedule.locate(r);
    ASSERT_EQ(at.ordinal, next[at.source]) << "row " << r;
    ++next[at.source];
    if (r < 96) {
      EXPECT_NE(at.source, 2u);
    }
    if (r >= 200) {
      EXPECT_EQ(at.source, 0u);
    }
  }
  EXPECT_EQ(next, schedule.cursor(400));
  // Changed mixes from row 150 on (the same stages started afresh there; other weights): the
  // sources go on from their cursors there, and the stage at row 200 still switches.
  for (const std::vector<MixPhase>& later : {phases, std::vector<MixPhase>{{0, {0.2, 0.2, 0.6}}, {200, {1, 0, 0}}}}) {
    const MixSchedule changed(3, later, 150, schedule.cursor(150));
    std::vector<int64_t> cursor = schedule.cursor(150);
    for (int64_t r = 150; r < 400; ++r) {
      const MixSchedule::Located at = changed.locate(r);
      ASSERT_EQ(at.ordinal, cursor[at.source]) << "row " << r;
      ++cursor[at.source];
      if (r >= 200) {
        EXPECT_EQ(at.source, 0u);
      }
    }
  }
  EXPECT_THROW(MixSchedule(3, phases, 150, schedule.cursor(150)).locate(149), Error);
}

constexpr int64_t kT = 8, kG = 8;

// A source of `rows` packed rows whose tokens encode (source, offset): id = base + offset.
void write_source(const std::string& prefix, int64_t rows, uint32_t base) {
  ShardWriter writer(prefix, 1 << 20);
  const uint64_t total = static_cast<uint64_t>(rows * kT + 1);
  uint64_t offset = 0;
  for (int d = 0; offset < total; ++d) {
    const uint64_t length = std::min<uint64_t>(total - offset, 3 + (d * 7) % 11);
    std::vector<uint32_t> tokens(length);
    for (uint64_t i = 0; i < length; ++i) tokens[i] = base + static_cast<uint32_t>(offset + i);
    writer.add_document(tokens, 0);
    offset += length;
  }
  writer.finish();
}

TEST(MixSampler, SameGlobalBatchesUnderAnyDpAndMicroBatch) {
  TempDir dir;
  write_source(dir / "big", 200, 0);
  write_source(dir / "small", 5, 100000);  // needed far beyond its size: repeats
  write_source(dir / "mid", 40, 200000);
  const ShardSet big(dir / "big"), small(dir / "small"), mid(dir / "mid");
  const std::vector<SamplerSource> sources{{&big, "big"}, {&small, "small"}, {&mid, "mid"}};
  const std::vector<MixPhase> phases{{0, {0.5, 0.3, 0.2}}};
  auto rows_of_step = [&](int64_t step, int64_t b, int dp) {
    std::vector<std::vector<int32_t>> rows;
    for (int r = 0; r < dp; ++r) {
      BatchSampler sampler(sources, SamplerOptions{kT, kG, b, r, dp, 42}, MixSchedule(3, phases));
      Batch batch = sampler.make_batch();
      for (int k = 0; k < sampler.micro_batches_per_step(); ++k) {
        sampler.fill(step, k, batch);
        for (int64_t i = 0; i < b; ++i)
          rows.emplace_back(batch.tokens.data<int32_t>() + i * kT, batch.tokens.data<int32_t>() + (i + 1) * kT);
      }
    }
    return rows;
  };
  BatchSampler one(sources, SamplerOptions{kT, kG, 2, 0, 1, 42}, MixSchedule(3, phases));
  std::map<int, std::set<int32_t>> small_epoch_rows;
  for (int64_t step = 0; step < 12; ++step) {
    const auto reference = rows_of_step(step, 2, 1);
    EXPECT_EQ(rows_of_step(step, 2, 2), reference) << "dp=2 step " << step;
    EXPECT_EQ(rows_of_step(step, 1, 4), reference) << "dp=4, micro_batch=1, step " << step;
    EXPECT_EQ(rows_of_step(step, 4, 1), reference) << "micro_batch=4 step " << step;
    const GlobalBatchStats stats = one.global_batch_stats(step);
    EXPECT_EQ(stats.source_rows[0] + stats.source_rows[1] + stats.source_rows[2], kG);
    EXPECT_EQ(stats.source_targets[0] + stats.source_targets[1] + stats.source_targets[2], stats.valid_targets);
    for (int64_t j = 0; j < kG; ++j) {
      const BatchSampler::RowRef at = one.locate(step * kG + j);
      const int32_t first = reference[size_t(j)][0];
      EXPECT_EQ(first / 100000, int(at.source == 0 ? 0 : at.source == 1 ? 1 : 2)) << "row's tokens from its source";
      if (at.source == 1) small_epoch_rows[int(at.ordinal / 5)].insert(first);
    }
  }
  // The small source (5 rows) repeats in epochs, each epoch every row once.
  ASSERT_GE(small_epoch_rows.size(), 4u);
  for (const auto& [epoch, rows] : small_epoch_rows)
    if (epoch + 1 < int(small_epoch_rows.size())) {
      EXPECT_EQ(rows.size(), 5u) << "epoch " << epoch;
    }
}

TEST(MixSampler, LargeSourcesWalkFeistelEpochs) {
  // A source above kFeistelMinRows rows takes the table-free order: its first epoch holds every
  // row once, its second is another order, and the small source beside it keeps its table.
  TempDir dir;
  const int64_t rows = int64_t(kFeistelMinRows) + 4321;
  write_source(dir / "large", rows, 0);
  write_source(dir / "tiny", 3, 900000);
  const ShardSet large(dir / "large"), tiny(dir / "tiny");
  BatchSampler sampler({{&large, "large"}, {&tiny, "tiny"}}, SamplerOptions{kT, kG, 2, 0, 1, 7},
                       MixSchedule(2, {{0, {0.999, 0.001}}}));
  std::vector<char> seen(size_t(rows), 0);
  std::vector<int64_t> first_epoch, second_epoch;
  for (int64_t g = 0; int64_t(second_epoch.size()) < 1000; ++g) {
    const BatchSampler::RowRef at = sampler.locate(g);
    if (at.source != 0) continue;
    if (at.ordinal < rows) {
      ASSERT_EQ(seen[size_t(at.row)]++, 0) << "row " << at.row << " twice in the first epoch";
      if (at.ordinal < 1000) first_epoch.push_back(at.row);
    } else {
      second_epoch.push_back(at.row);
    }
  }
  EXPECT_EQ(std::count(seen.begin(), seen.end(), 1), rows);
  EXPECT_NE(first_epoch, second_epoch);
}

}  // namespace
}  // namespace trident::data
