// Evaluator: perplexity and token accuracy of the model on the validation shard (data.valid),
// forward only, under any layout: the same rows as the single-rank run (the dp-invariant
// sampler over the first log.eval_batches global batches), so the figures do not depend on the
// layout beyond floating-point rounding. Results go to <run_dir>/eval.jsonl (rank 0).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <memory>
#include <string>

#include "trident/dist/topology.hpp"
#include "trident/train/data_source.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

struct EvalResult {
  int64_t step = 0;        // optimizer steps done when evaluated
  int64_t batches = 0;     // global batches evaluated
  int64_t tokens = 0;      // targets scored (loss-masked ones excluded)
  double loss = 0;         // mean token loss (nats)
  double perplexity = 0;   // exp(loss)
  double accuracy = 0;     // share of targets the model ranks first
  double seconds = 0;
  double tokens_per_s = 0;    // input tokens (B*T per row) per second, all ranks
  double samples_per_s = 0;   // rows per second
  double mem_mb = 0;          // peak RSS of the slowest rank so far
};

class Evaluator {
 public:
  // Opens cfg.data.valid (ConfigError when unset or unreadable).
  Evaluator(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline);
  ~Evaluator();

  // Collective over the world; every rank returns the same result.
  EvalResult run(int64_t step);
  const std::string& dataset() const { return data_.prefix(); }

 private:
  const RunConfig& cfg_;
  dist::Topology& topology_;
  PipelineExecutor& pipeline_;
  DataSource data_;
  int64_t batches_ = 0;
};

// Appends one line per metric {"step", "metric", "value", "dataset"} to path (eval.jsonl).
void append_metric_lines(const std::string& path, int64_t step, const std::string& dataset,
                         std::initializer_list<std::pair<const char*, double>> metrics);
void append_eval_jsonl(const std::string& path, const EvalResult& r, const std::string& dataset);
// A short table for the terminal.
std::string format_eval(const EvalResult& r, const std::string& dataset);

}  // namespace trident::train
