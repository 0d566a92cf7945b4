// LISA's draw: deterministic in (seed, step), the same within a period, `layers` distinct
// blocks, every block about equally often over many periods; embedding / head names follow
// their switches (a tied table trains with either); trained_since matches a walk over periods.
#include <gtest/gtest.h>

#include <set>

#include "trident/core/error.hpp"
#include "trident/train/optim/lisa.hpp"

namespace trident::train {
namespace {

TEST(Lisa, DrawsDistinctBlocksPerPeriodDeterministically) {
  const LisaConfig cfg{.enabled = true, .layers = 3, .interval = 5};
  const LisaSchedule a(cfg, 12, 7), b(cfg, 12, 7), other_seed(cfg, 12, 8);
  std::vector<int> counts(12, 0);
  int differ = 0;
  const int periods = 4000;
  for (int64_t p = 0; p < periods; ++p) {
    const std::vector<int> drawn = a.active_layers(p * 5);
    ASSERT_EQ(drawn.size(), 3u);
    EXPECT_EQ(std::set<int>(drawn.begin(), drawn.end()).size(), 3u);
    for (int l : drawn) {
      ASSERT_GE(l, 0);
      ASSERT_LT(l, 12);
      ++counts[size_t(l)];
    }
    EXPECT_EQ(drawn, b.active_layers(p * 5));
    EXPECT_EQ(drawn, a.active_layers(p * 5 + 4));  // the whole period
    differ += drawn != other_seed.active_layers(p * 5);
  }
  EXPECT_GT(differ, periods / 2);
  // Uniform: each block expected periods * 3 / 12 = 1000 times; 5 standard deviations ~ 137.
  for (int c : counts) EXPECT_NEAR(c, 1000, 140);
}

TEST(Lisa, EmbeddingAndHeadFollowTheirSwitches) {
  LisaConfig cfg{.enabled = true, .layers = 1, .interval = 3, .embedding = false, .head = true};
  const LisaSchedule s(cfg, 4, 1);
  EXPECT_FALSE(s.trains("embed.pos.weight", 0, true));
  EXPECT_TRUE(s.trains("embed.tok.weight", 0, /*tied=*/true));  // the head's table
  EXPECT_FALSE(s.trains("embed.tok.weight", 0, /*tied=*/false));
  EXPECT_TRUE(s.trains("head.weight", 0, false));
  EXPECT_TRUE(s.trains("final_norm.weight", 0, false));
  const int drawn = s.active_layers(0).front();
  EXPECT_TRUE(s.trains("blocks." + std::to_string(drawn) + ".attn.q.weight", 0, false));
  EXPECT_FALSE(s.trains("blocks." + std::to_string((drawn + 1) % 4) + ".mlp.up.weight", 0, false));
}

TEST(Lisa, TrainedSinceIsTheStartOfTheUnbrokenRun) {
  const LisaConfig cfg{.enabled = true, .layers = 2, .interval = 4};
  const LisaSchedule s(cfg, 3, 11);  // 2 of 3: runs of several periods are common
  for (int64_t step = 0; step < 200; ++step)
    for (int l = 0; l < 3; ++l) {
      const std::string name = "blocks." + std::to_string(l) + ".attn.o.weight";
      if (!s.trains(name, step, false)) continue;
      int64_t first = step / 4 * 4;
      while (first > 0 && s.trains(name, first - 4, false)) first -= 4;
      EXPECT_EQ(s.trained_since(name, step, false), first) << name << " at " << step;
    }
  EXPECT_EQ(s.trained_since("head.weight", 77, false), 0);
}

TEST(Lisa, RejectsImpossibleSettings) {
  EXPECT_THROW(LisaSchedule({.enabled = true, .layers = 5, .interval = 2}, 4, 1), ConfigError);
  EXPECT_THROW(LisaSchedule({.enabled = true, .layers = 0, .interval = 2}, 4, 1), ConfigError);
  EXPECT_THROW(LisaSchedule({.enabled = true, .layers = 1, .interval = 0}, 4, 1), ConfigError);
}

}  // namespace
}  // namespace trident::train
