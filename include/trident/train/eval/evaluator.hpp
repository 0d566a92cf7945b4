// Evaluator: perplexity and token accuracy of the model on a validation shard (data.valid's),
// forward only, under any layout: the same rows as the single-rank run (the dp-invariant
// sampler over the first log.eval_batches global batches), so the figures do not depend on the
// layout beyond floating-point rounding. Results go to <run_dir>/eval.jsonl (rank 0).
#pragma once
#include <cstdint>
#include <initializer_list>
#include <utility>
#include <memory>
#include <string>
#include <vector>

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
  // Opens `prefix`, one of data.valid's (ConfigError when unreadable).
  Evaluator(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline, const std::string& prefix);
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

// One eval.jsonl line: {"step", "metric", "value", "dataset"} and, when set, "level" (of a
// generated suite), "perturbation" (robustness) and "score" (OOD detection).
struct MetricLine {
  int64_t step = 0;
  std::string metric;
  double value = 0;
  std::string dataset, level, perturbation, score;
};
// Lines of one result: the metrics under the same step, dataset and labels.
std::vector<MetricLine> metric_lines(int64_t step, const std::string& dataset,
                                     std::initializer_list<std::pair<const char*, double>> metrics,
                                     const std::string& level = "", const std::string& perturbation = "",
                                     const std::string& score = "");
// Appends the lines to path (eval.jsonl), each whole.
void append_metric_lines(const std::string& path, const std::vector<MetricLine>& lines);
std::vector<MetricLine> eval_metric_lines(const EvalResult& r, const std::string& dataset);
// <run_dir>/predictions/step_<8 digits>.jsonl holding the lines (JSON objects, one per
// example), written aside and renamed: a re-evaluation of the step replaces the file whole.
void write_predictions_file(const std::string& run_dir, int64_t step, const std::vector<std::string>& lines);
// A short table for the terminal.
std::string format_eval(const EvalResult& r, const std::string& dataset);

}  // namespace trident::train
