// A run's evaluation at a step: validation perplexity and generation tasks, printed and recorded.
#include "trident/train/eval/run_evaluation.hpp"

#include <filesystem>

namespace trident::train {

RunEvaluation::RunEvaluation(const RunConfig& cfg, dist::Topology& topology, model::GPTModel& model,
                             PipelineExecutor& pipeline, const Logger& log)
    : cfg_(cfg), topology_(topology), model_(model), pipeline_(pipeline), log_(log) {}

RunEvaluation::~RunEvaluation() = default;

EvalResult RunEvaluation::evaluate(int64_t step) {
  model_.refresh_weights();  // the 16-bit copy lags the last optimizer step
  const std::string eval_jsonl = (std::filesystem::path(cfg_.log.run_dir) / "eval.jsonl").string();
  EvalResult r;
  if (!cfg_.data.valid.empty()) {
    if (!evaluator_) evaluator_ = std::make_unique<Evaluator>(cfg_, topology_, pipeline_);
    r = evaluator_->run(step);
    log_.info(format_eval(r, evaluator_->dataset()));
    if (topology_.world_rank() == 0) append_eval_jsonl(eval_jsonl, r, evaluator_->dataset());
  }
  if (!cfg_.eval.task.empty()) {
    if (!task_evaluator_) task_evaluator_ = std::make_unique<TaskEvaluator>(cfg_, topology_, model_, model_.ops());
    last_task_ = task_evaluator_->run(step);
    log_.info(format_task(last_task_, task_evaluator_->dataset()));
    if (topology_.world_rank() == 0) append_task_jsonl(eval_jsonl, last_task_, task_evaluator_->dataset());
  }
  return r;
}

}  // namespace trident::train
