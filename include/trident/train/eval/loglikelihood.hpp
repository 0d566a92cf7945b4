// LoglikelihoodScorer: log-probabilities of continuations given contexts, forward only, under
// any layout (lm-evaluation-harness's `loglikelihood` request). A request is scored on one row:
// its tokens (context + continuation)[-(T+1):][:-1], the continuation's tokens the targets of
// the row's last positions, so a context longer than the row loses its oldest tokens, as the
// harness truncates. Requests are sorted longest first and dealt in micro-batches of
// train.micro_batch rows to the data-parallel replicas, each batch cut to its longest row
// (rounded up to lcm(8, tp), as bucketing cuts; whole rows under pp > 1); every replica runs the same number of batches
// (expert parallelism exchanges rows between replicas), the last ones padded with empty rows.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/data/batch.hpp"
#include "trident/dist/topology.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

struct LoglikelihoodRequest {
  std::vector<int32_t> context;       // at least one token (a prefix token stands in for an empty context)
  std::vector<int32_t> continuation;  // 1 .. seq_len tokens
};

struct LoglikelihoodResult {
  double logprob = 0;       // sum over the continuation's tokens of log p(token | preceding)
  bool greedy = false;      // every continuation token is the argmax
  double max_prob_sum = 0;  // sum over those positions of the largest softmax probability
  int64_t tokens = 0;       // continuation tokens scored
};

class LoglikelihoodScorer {
 public:
  LoglikelihoodScorer(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline);

  // Collective over the world: every rank passes the same requests and returns all results.
  std::vector<LoglikelihoodResult> score(const std::vector<LoglikelihoodRequest>& requests);

 private:
  const RunConfig& cfg_;
  dist::Topology& topology_;
  PipelineExecutor& pipeline_;
  data::Batch batch_;  // [B, T] host buffers, refilled per micro-batch
};

}  // namespace trident::train
