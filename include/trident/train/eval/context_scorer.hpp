// SharedContextScorer: the log-likelihoods of several continuations of one context (a
// multiple-choice example's choices) with the context computed once. lm-evaluation-harness runs
// every (context, continuation) as its own row and computes the logits of every position;
// here a batch of contexts is prefilled into a KV cache (model::Decoder) without the head, each
// cached context is copied to one decoder sequence per continuation, and the continuations run
// longest first in calls over runs of similar length (each padded to its longest, the shortest
// at least 3/4 of it) whose head computes logits only for the rows with a target. Per example of
// a context of c tokens and K continuations of m_k tokens, the blocks see about c - 1 + sum m_k
// rows instead of K (c + m - 1), the head sum m_k rows instead of K (c + m - 1).
//
// The numbers are those of the row a LoglikelihoodScorer would build, (context +
// continuation)[:-1] at positions 0.., for groups that fit seq_len without cutting the context
// (longer ones are left to LoglikelihoodScorer, which cuts as the harness does). Groups are dealt
// round-robin to the data-parallel replicas, longest context first; each replica runs its own
// batches (the model-parallel ranks of a replica together), results are summed over the world.
// Expert parallelism pairs the replicas' rows in every MoE layer, so it is not supported here
// (supported() says when to use LoglikelihoodScorer instead).
#pragma once
#include <cstdint>
#include <vector>

#include "trident/dist/topology.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/eval/loglikelihood.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

struct ContextGroup {
  std::vector<int32_t> context;                     // >= 1 token
  std::vector<std::vector<int32_t>> continuations;  // >= 1, each >= 1 token
  // Fits one row: context + the longest continuation - 1 <= seq_len.
  bool fits(int64_t seq_len) const;
};

class SharedContextScorer {
 public:
  SharedContextScorer(const RunConfig& cfg, dist::Topology& topology, const model::GPTModel& model, Ops& ops);
  static bool supported(const RunConfig& cfg) { return cfg.layout.ep == 1; }

  // Collective over the world: every rank passes the same groups (each fits seq_len) and gets
  // every continuation's result, group by group.
  std::vector<LoglikelihoodResult> score(const std::vector<ContextGroup>& groups);

 private:
  const RunConfig& cfg_;
  dist::Topology& topology_;
  const model::GPTModel& model_;
  Ops& ops_;
};

}  // namespace trident::train
