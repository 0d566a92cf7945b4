// Log-likelihood tasks (eval.kind = choice | rolling), scored as lm-evaluation-harness 0.4
// scores them with its Hugging Face backend and default arguments:
//   choice   {"context", "choices": [...], "gold": i} lines: each choice is the continuation
//            " " + choice of the context (the harness's target delimiter); acc by the highest
//            summed log-likelihood, acc_norm by log-likelihood over the choice's length in
//            characters (ties to the first choice, as numpy's argmax);
//   rolling  {"text"} lines: the document's log-likelihood over disjoint windows of seq_len
//            predicted tokens (the first conditioned on the prefix token, later ones on the
//            preceding tokens); word and byte perplexity and bits per byte over all documents.
// Text is encoded as the harness does: with the tokenizer's own framing (encode with special
// tokens, e.g. Llama's BOS) unless it starts with the prefix token's text; a context's trailing
// whitespace moves to the continuation, whose tokens are those of (context + continuation)
// after the context's; an empty context is the prefix token (the tokenizer's BOS, else its end
// of text). An optional "level" key groups the results (generated suites). With eval.perturb,
// choice tasks are also scored on each perturbed copy of the examples (perturb.hpp); acc_worst
// counts an example right only when it is right clean and under every perturbation.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trident/data/tokenizer.hpp"
#include "trident/dist/topology.hpp"
#include "trident/train/eval/context_scorer.hpp"
#include "trident/train/eval/evaluator.hpp"
#include "trident/train/eval/loglikelihood.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

enum class TaskKind { kGenerate, kChoice, kRolling };
// eval.kind, or ("auto") what the file's first line holds: "choices" -> choice, "text" alone ->
// rolling, else generate. ConfigError for an unreadable or empty file or an unknown kind.
TaskKind resolve_task_kind(const std::string& kind, const std::string& path);
const char* task_kind_name(TaskKind kind);

struct ChoiceExample {
  std::string context;
  std::vector<std::string> choices;
  int gold = 0;
  std::string level;  // "" when the line has none
};
struct RollingDocument {
  std::string text;
  std::string level;
};
// ConfigError naming the file and line for a bad line.
std::vector<ChoiceExample> load_choice_task(const std::string& path, int max_examples);
std::vector<RollingDocument> load_rolling_task(const std::string& path, int max_examples);

// The harness's encodings (see above).
class HarnessEncoder {
 public:
  explicit HarnessEncoder(const data::Tokenizer& tokenizer);
  int32_t prefix_token() const { return prefix_; }
  std::vector<int32_t> encode(const std::string& text) const;  // tok_encode
  LoglikelihoodRequest request(const std::string& context, const std::string& continuation) const;
  // The windows of a document, one request each; empty for a document without tokens.
  std::vector<LoglikelihoodRequest> rolling(const std::string& text, int64_t seq_len) const;

 private:
  const data::Tokenizer& tokenizer_;
  int32_t prefix_ = 0;
  std::string prefix_text_;
};

// Python's len(re.split(r"\s+", s)) and len(s) (code points) as the harness counts.
int64_t count_words(std::string_view s);
int64_t count_characters(std::string_view utf8);

struct ChoiceScores {
  double acc = 0, acc_norm = 0;
  int64_t examples = 0;
};
struct LikelihoodTaskResult {
  int64_t step = 0;
  TaskKind kind = TaskKind::kChoice;
  struct Row {
    std::string level;         // "" = every example
    std::string perturbation;  // "" = clean
    ChoiceScores scores;
  };
  std::vector<Row> rows;       // choice: clean overall first, then per level, then per perturbation
  double acc_worst = 0, acc_drop = 0;  // with perturbations
  // rolling
  double loglikelihood = 0, word_perplexity = 0, byte_perplexity = 0, bits_per_byte = 0;
  int64_t documents = 0, words = 0, bytes = 0;
  struct Level {
    std::string level;
    double word_perplexity, byte_perplexity, bits_per_byte;
    int64_t documents;
  };
  std::vector<Level> levels;  // rolling, per level when the lines name levels
  int64_t requests = 0;
  double seconds = 0, samples_per_s = 0, mem_mb = 0;
  // eval.predictions (choice tasks, world rank 0): per example {"prompt", "prediction",
  // "reference", "loglikelihoods"[, "perturbation"]} JSON, clean in file order, then each perturbation.
  std::vector<std::string> predictions;
};

class LikelihoodTaskEvaluator {
 public:
  LikelihoodTaskEvaluator(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline,
                          const model::GPTModel& model, TaskKind kind);
  ~LikelihoodTaskEvaluator();
  // Collective over the world; every rank returns the same result.
  LikelihoodTaskResult run(int64_t step);
  const std::string& dataset() const { return cfg_.eval.task; }

 private:
  LikelihoodTaskResult run_choice();
  LikelihoodTaskResult run_rolling();
  // Every request's result; per_example: the consecutive requests of each choice example.
  std::vector<LoglikelihoodResult> score_choices(const std::vector<LoglikelihoodRequest>& requests,
                                                 const std::vector<size_t>& per_example);

  const RunConfig& cfg_;
  dist::Topology& topology_;
  TaskKind kind_;
  std::unique_ptr<data::Tokenizer> tokenizer_;
  std::unique_ptr<HarnessEncoder> encoder_;
  LoglikelihoodScorer scorer_;
  std::unique_ptr<SharedContextScorer> shared_;  // choice tasks, where the layout allows
  std::vector<ChoiceExample> choices_;
  std::vector<RollingDocument> documents_;
};

// eval.jsonl lines: acc, acc_norm, examples per level and perturbation (choice) or the perplexities.
std::vector<MetricLine> likelihood_metric_lines(const LikelihoodTaskResult& r, const std::string& dataset);
std::string format_likelihood(const LikelihoodTaskResult& r, const std::string& dataset);

}  // namespace trident::train
