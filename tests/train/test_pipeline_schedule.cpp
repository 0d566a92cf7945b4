// Pipeline schedules on their own: on each stage every micro-batch's forward precedes its
// backward, sends match receives across stages, the whole pipeline runs to the end when
// receives block and sends do not (no deadlock), in-flight activations stay within the
// schedule's bound; and the partitioner is optimal on hand-checked costs.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <sstream>
#include <tuple>

#include "trident/core/error.hpp"
#include "trident/plan/step_model.hpp"
#include "trident/train/pipeline/pipeline_schedule.hpp"

namespace trident::train {
namespace {

struct Case {
  ScheduleKind kind;
  int pp, m, v;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (int pp : {1, 2, 3, 4})
    for (int m = 1; m <= 9; ++m) {
      out.push_back({ScheduleKind::kGPipe, pp, m, 1});
      out.push_back({ScheduleKind::kOneFOneB, pp, m, 1});
      for (int v : {2, 3})
        if (m % pp == 0) out.push_back({ScheduleKind::kInterleaved, pp, m, v});
    }
  return out;
}

std::string name(const Case& c) {
  std::ostringstream os;
  os << schedule_name(c.kind) << " pp=" << c.pp << " m=" << c.m << " v=" << c.v;
  return os.str();
}

TEST(PipelineSchedule, EveryMicroBatchRunsOnceForwardBeforeBackward) {
  for (const Case& c : cases())
    for (int stage = 0; stage < c.pp; ++stage) {
      const auto actions = build_schedule(c.kind, c.pp, stage, c.m, c.v);
      std::map<std::pair<int, int>, int> forward_at, backward_at;
      for (size_t i = 0; i < actions.size(); ++i) {
        const Action& a = actions[i];
        if (a.kind == ActionKind::kForward) {
          EXPECT_TRUE(forward_at.emplace(std::pair{a.micro_batch, a.chunk}, i).second);
        }
        if (a.kind == ActionKind::kBackward) {
          EXPECT_TRUE(backward_at.emplace(std::pair{a.micro_batch, a.chunk}, i).second);
        }
      }
      ASSERT_EQ(forward_at.size(), size_t(c.m * c.v)) << name(c);
      ASSERT_EQ(backward_at.size(), size_t(c.m * c.v)) << name(c);
      for (const auto& [key, at] : forward_at) EXPECT_LT(at, backward_at.at(key)) << name(c);
    }
}

TEST(PipelineSchedule, InFlightWithinTheScheduleBound) {
  for (const Case& c : cases())
    for (int stage = 0; stage < c.pp; ++stage) {
      const int in_flight = max_in_flight(build_schedule(c.kind, c.pp, stage, c.m, c.v), c.v);
      const int bound = c.kind == ScheduleKind::kOneFOneB ? std::min(c.m, c.pp - stage) : c.m;
      EXPECT_LE(in_flight, bound) << name(c);
      EXPECT_GE(in_flight, 1) << name(c);
    }
}

// Runs all stages' lists together: sends complete at once, a receive waits for its send,
// compute waits for nothing else. Every list must run to its end, and every message sent must
// be received by the neighbouring virtual stage.
TEST(PipelineSchedule, SendsMatchReceivesAndNothingDeadlocks) {
  for (const Case& c : cases()) {
    std::vector<std::vector<Action>> lists;
    for (int s = 0; s < c.pp; ++s) lists.push_back(build_schedule(c.kind, c.pp, s, c.m, c.v));
    // Messages in flight: (to stage, to chunk, micro-batch, is gradient).
    std::multiset<std::tuple<int, int, int, bool>> sent;
    std::vector<size_t> at(static_cast<size_t>(c.pp), 0);
    bool progress = true;
    while (progress) {
      progress = false;
      for (int s = 0; s < c.pp; ++s) {
        while (at[s] < lists[s].size()) {
          const Action& a = lists[s][at[s]];
          const int next_stage = (s + 1) % c.pp, next_chunk = s == c.pp - 1 ? a.chunk + 1 : a.chunk;
          const int prev_stage = (s + c.pp - 1) % c.pp, prev_chunk = s == 0 ? a.chunk - 1 : a.chunk;
          if (a.kind == ActionKind::kSendAct) sent.insert({next_stage, next_chunk, a.micro_batch, false});
          if (a.kind == ActionKind::kSendGrad) sent.insert({prev_stage, prev_chunk, a.micro_batch, true});
          if (a.kind == ActionKind::kRecvAct || a.kind == ActionKind::kRecvGrad) {
            auto it = sent.find({s, a.chunk, a.micro_batch, a.kind == ActionKind::kRecvGrad});
            if (it == sent.end()) break;  // blocks until the neighbour sends
            sent.erase(it);
          }
          ++at[s];
          progress = true;
        }
      }
    }
    for (int s = 0; s < c.pp; ++s) EXPECT_EQ(at[s], lists[s].size()) << name(c) << ": stage " << s << " deadlocked";
    EXPECT_TRUE(sent.empty()) << name(c) << ": " << sent.size() << " messages never received";
  }
}

// On the GPU each (sender, kind) pair has its own lane, a FIFO that NCCL matches in order
// (dist::PipelineLanes): the receiver must take a lane's messages in the order they were sent.
// With that, lanes behave as the tagged MPI messages above, which never deadlock.
TEST(PipelineSchedule, EveryLaneIsReceivedInTheOrderItIsSent) {
  for (const Case& c : cases()) {
    if (c.pp == 1) continue;  // no lanes: the GPU refuses interleaving on one stage
    // (sender stage, is gradient) -> the (micro-batch, receiving chunk) sequence, as sent / received.
    std::map<std::pair<int, bool>, std::vector<std::pair<int, int>>> sent, received;
    for (int s = 0; s < c.pp; ++s)
      for (const Action& a : build_schedule(c.kind, c.pp, s, c.m, c.v)) {
        const int next_stage = (s + 1) % c.pp, next_chunk = s == c.pp - 1 ? a.chunk + 1 : a.chunk;
        const int prev_stage = (s + c.pp - 1) % c.pp, prev_chunk = s == 0 ? a.chunk - 1 : a.chunk;
        if (a.kind == ActionKind::kSendAct) sent[{s, false}].push_back({a.micro_batch, next_chunk});
        if (a.kind == ActionKind::kSendGrad) sent[{s, true}].push_back({a.micro_batch, prev_chunk});
        if (a.kind == ActionKind::kRecvAct) received[{prev_stage, false}].push_back({a.micro_batch, a.chunk});
        if (a.kind == ActionKind::kRecvGrad) received[{next_stage, true}].push_back({a.micro_batch, a.chunk});
      }
    EXPECT_EQ(sent, received) << name(c);
  }
}

TEST(PipelineSchedule, OneFOneBShape) {
  // pp=4, stage 0, m=6: 3 warm-up forwards, then alternating, then 3 backwards.
  const auto a = build_schedule(ScheduleKind::kOneFOneB, 4, 0, 6, 1);
  std::string order;
  for (const Action& x : a)
    if (x.kind == ActionKind::kForward || x.kind == ActionKind::kBackward)
      order += (x.kind == ActionKind::kForward ? "F" : "B") + std::to_string(x.micro_batch) + " ";
  EXPECT_EQ(order, "F0 F1 F2 F3 B0 F4 B1 F5 B2 B3 B4 B5 ");
  EXPECT_NEAR(theoretical_bubble(ScheduleKind::kOneFOneB, 4, 8, 1), 3.0 / 11.0, 1e-15);
  EXPECT_NEAR(theoretical_bubble(ScheduleKind::kInterleaved, 4, 8, 2), 3.0 / 19.0, 1e-15);
}

TEST(Partition, UniformSpreadsTheRemainderOverTheFirstStages) {
  EXPECT_EQ(uniform_partition(8, 4), (std::vector<std::pair<int, int>>{{0, 2}, {2, 4}, {4, 6}, {6, 8}}));
  EXPECT_EQ(uniform_partition(7, 3), (std::vector<std::pair<int, int>>{{0, 3}, {3, 5}, {5, 7}}));
  EXPECT_THROW(uniform_partition(2, 3), Error);
}

TEST(Partition, BalancedIsOptimalOnHandCheckedCosts) {
  using P = std::vector<std::pair<int, int>>;
  // Equal layers, a heavy head on the last stage: the last stage takes fewer layers.
  // Costs 1 x 8, head 2, 4 stages: [0,3) [3,6) [6,7) [7,8) gives max 3 (3, 3, 1, 1+2).
  const P p = balanced_partition(std::vector<double>(8, 1.0), 4, 0.0, 2.0);
  double worst = 0;
  for (size_t s = 0; s < p.size(); ++s) {
    double cost = p[s].second - p[s].first + (s + 1 == p.size() ? 2.0 : 0.0);
    worst = std::max(worst, cost);
  }
  EXPECT_EQ(worst, 3.0);
  EXPECT_EQ(p.front().first, 0);
  EXPECT_EQ(p.back().second, 8);
  // Uneven layers: {5, 1, 1, 1, 5} in 3 stages: best is [5] [1 1 1] [5] with max 5.
  EXPECT_EQ(balanced_partition({5, 1, 1, 1, 5}, 3, 0, 0), (P{{0, 1}, {1, 4}, {4, 5}}));
  // {1, 2, 3, 4, 5, 6} in 2 stages: [1..4]=10 vs [5,6]=11, or [1..5]=15: best max 11.
  EXPECT_EQ(balanced_partition({1, 2, 3, 4, 5, 6}, 2, 0, 0), (P{{0, 4}, {4, 6}}));
  // An embedding cost on the first stage moves its layers onto the next one.
  EXPECT_EQ(balanced_partition({1, 1, 1, 1}, 2, 2.0, 0), (P{{0, 1}, {1, 4}}));
}

// Sub-layer units (attention, MLP halves) can only improve on block bounds, which are among
// their cuts; with a heavy head (GPT-2's 50257-token vocabulary) they do strictly better.
TEST(Partition, SublayerBalancesAtLeastAsWellAsBlocks) {
  plan::ModelShape gpt2{.arch = plan::ModelArch::kGPT2, .layers = 12, .hidden = 768, .heads = 12, .vocab = 50257,
                        .seq = 1024};
  plan::ModelShape llama{.arch = plan::ModelArch::kLlama, .layers = 32, .hidden = 4096, .heads = 32, .kv_heads = 8,
                         .ffn = 14336, .vocab = 128256, .seq = 8192, .tied = false};
  for (plan::ModelShape* m : {&gpt2, &llama}) {
    m->resolve();
    const plan::PartitionCosts c = plan::partition_costs(*m);
    ASSERT_EQ(c.sublayers.size(), 2 * c.layers.size());
    for (int stages : {2, 4, 8}) {
      auto slowest = [&](const std::vector<std::pair<int, int>>& parts, const std::vector<double>& costs) {
        const std::vector<double> s = stage_costs(parts, costs, c.first_extra, c.last_extra);
        return *std::max_element(s.begin(), s.end());
      };
      const double blocks = slowest(balanced_partition(c.layers, stages, c.first_extra, c.last_extra), c.layers);
      const double halves = slowest(balanced_partition(c.sublayers, stages, c.first_extra, c.last_extra), c.sublayers);
      EXPECT_LE(halves, blocks * (1 + 1e-12)) << m->layers << " layers, " << stages << " stages";
      if (m == &gpt2 && stages == 4) EXPECT_LT(halves, 0.97 * blocks);
    }
  }
  // stage_costs: units plus the first and last stage's extras.
  EXPECT_EQ(stage_costs({{0, 1}, {1, 3}}, {1, 2, 4}, 10, 100), (std::vector<double>{11, 106}));
}

}  // namespace
}  // namespace trident::train

