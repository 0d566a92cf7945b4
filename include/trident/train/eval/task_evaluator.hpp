// TaskEvaluator: exact match and token F1 of greedy generations on a JSONL task (eval.task).
// Each line is a prompt/answer pair {"input", "output"} or a chat {"messages"} (as prep reads
// them; an optional "answers" array adds accepted references). The prompt is rendered with the
// template the training data used and encoded as prep encodes it (after the tokenizer's
// prefix, e.g. Llama's BOS), so the model sees what it was trained on; generation stops at end-of-text (and at <|im_end|> for ChatML) or after
// eval.max_new_tokens. Examples are dealt round-robin to the data-parallel replicas; the
// scores are summed over the world.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trident/data/tokenizer.hpp"
#include "trident/dist/topology.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/eval/evaluator.hpp"
#include "trident/train/eval/perturb.hpp"
#include "trident/train/eval/task_metrics.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

struct TaskExample {
  std::string prompt;                   // rendered, before truncation
  std::vector<int32_t> prompt_ids;      // prefix (BOS) + encoded prompt, its oldest prompt tokens cut to fit seq_len
  std::vector<std::string> references;  // the answer, then any "answers"
  std::string answer_end;               // text the template puts after an answer ("" if none)
  std::string level;                    // the line's "level" ("" if none: generated suites name one)
  bool truncated = false;
};

struct TaskSample {
  std::string prompt, reference, prediction;
  std::string perturbation;  // "" = clean
};

struct TaskResult {
  int64_t step = 0;
  std::vector<TaskMetric> metrics;  // eval.metrics, the order of Row::values
  struct Row {
    std::string level, perturbation;  // "" = all levels / clean
    std::vector<double> values;       // per metric
    int64_t examples = 0;
    double value(TaskMetric m, const std::vector<TaskMetric>& metrics) const;
  };
  Row overall;                      // every clean example
  std::vector<Row> rows;            // per level (when lines name one), then per perturbation
  int64_t generated_tokens = 0;     // all ranks
  int64_t truncated = 0;            // prompts cut from the left to fit seq_len
  double seconds = 0;
  double tokens_per_s = 0;          // generated tokens per second, all replicas
  double samples_per_s = 0;
  double mem_mb = 0;                // peak RSS of the largest rank so far
  std::vector<TaskSample> samples;  // the first few examples (on world rank 0)
  // With perturbations and em asked for: right clean and under every perturbation.
  bool has_worst = false;
  double exact_match_worst = 0, exact_match_drop = 0;
  // eval.predictions: every example on world rank 0, clean in file order, then each perturbation.
  std::vector<TaskSample> predictions;
};

// Reads and renders the task (ConfigError naming the file and line for a bad line); perturb:
// the prompts' text ("input", or the last user message) perturbed first (perturb.hpp).
std::vector<TaskExample> load_task(const std::string& path, const std::string& prompt_template,
                                   const data::Tokenizer& tokenizer, int max_prompt_tokens, int max_examples,
                                   const PerturbSpec* perturb = nullptr);

class TaskEvaluator {
 public:
  // Loads eval.task with eval.tokenizer / eval.template resolved as run_config.hpp says.
  TaskEvaluator(const RunConfig& cfg, dist::Topology& topology, const model::GPTModel& model, Ops& ops);
  ~TaskEvaluator();

  // Collective over the world; every rank returns the same scores.
  TaskResult run(int64_t step);
  const std::string& dataset() const { return cfg_.eval.task; }
  const data::Tokenizer& tokenizer() const { return *tokenizer_; }

 private:
  const RunConfig& cfg_;
  dist::Topology& topology_;
  const model::GPTModel& model_;
  Ops& ops_;
  std::unique_ptr<data::Tokenizer> tokenizer_;
  // Each example's statistics ([n * kExampleFields], the same on all ranks), the set generated
  // by the replicas together; with eval.predictions, the predictions join r.predictions on
  // world rank 0.
  std::vector<double> score(const std::vector<TaskExample>& examples, const std::string& perturbation, TaskResult& r);

  std::vector<TaskExample> examples_;
  std::vector<std::pair<std::string, std::vector<TaskExample>>> perturbed_;  // per eval.perturb (not shuffle_choices)
  std::vector<int32_t> stop_;
  std::vector<TaskMetric> metrics_;
};

// <run_dir>/predictions/step_<8 digits>.jsonl: {"prompt", "prediction", "reference"} (and
// "perturbation" for perturbed copies) per line, written aside and renamed (a re-evaluation of
// the step replaces the file whole).
void write_predictions(const std::string& run_dir, const TaskResult& r);

// The eval.task tokenizer spec: eval.tokenizer unless "auto", else model.init_from's
// tokenizer.json, else the one data.train's (or data.valid's) prep.json names, else "byte".
std::string task_tokenizer_spec(const RunConfig& cfg);
// The eval.task template: eval.template unless "auto", else data.train's prep.json, else plain.
std::string task_template(const RunConfig& cfg);

// eval.jsonl lines: the eval.metrics (em as exact_match), examples, gen_tokens_per_s,
// gen_samples_per_s, mem_mb; then per level and perturbation, and exact_match_worst /
// exact_match_drop with perturbations and em.
std::vector<MetricLine> task_metric_lines(const TaskResult& r, const std::string& dataset);
std::string format_task(const TaskResult& r, const std::string& dataset);

}  // namespace trident::train
