// A run's evaluation at a step: validation perplexity, the task by its kind and OOD detection,
// printed and recorded.
#include "trident/train/eval/run_evaluation.hpp"

#include <filesystem>

#include "trident/data/mix_spec.hpp"
#include "trident/io/tensorboard_writer.hpp"

namespace trident::train {

RunEvaluation::RunEvaluation(const RunConfig& cfg, dist::Topology& topology, model::GPTModel& model,
                             PipelineExecutor& pipeline, const Logger& log)
    : cfg_(cfg), topology_(topology), model_(model), pipeline_(pipeline), log_(log),
      task_kind_(cfg.eval.task.empty() ? TaskKind::kGenerate : resolve_task_kind(cfg.eval.kind, cfg.eval.task)) {}

RunEvaluation::~RunEvaluation() = default;

void RunEvaluation::record(const std::vector<MetricLine>& lines) {
  if (topology_.world_rank() != 0) return;
  append_metric_lines((std::filesystem::path(cfg_.log.run_dir) / "eval.jsonl").string(), lines);
  if (!tensorboard_) return;
  for (const MetricLine& m : lines) {
    std::string tag = "eval/" + std::filesystem::path(m.dataset).filename().string() + "/" + m.metric;
    for (const std::string* label : {&m.level, &m.perturbation, &m.score})
      if (!label->empty()) tag += "/" + *label;
    tensorboard_->add_scalar(tag, m.step, m.value);
  }
  tensorboard_->flush();
}

void RunEvaluation::evaluate(int64_t step) {
  model_.refresh_weights();  // the 16-bit copy lags the last optimizer step
  if (evaluators_.empty())
    for (const std::string& prefix : data::valid_prefixes(cfg_.data.valid))
      evaluators_.push_back(std::make_unique<Evaluator>(cfg_, topology_, pipeline_, prefix));
  for (const auto& evaluator : evaluators_) {
    const EvalResult r = evaluator->run(step);
    log_.info(format_eval(r, evaluator->dataset()));
    record(eval_metric_lines(r, evaluator->dataset()));
  }
  if (!cfg_.eval.task.empty()) {
    if (task_kind_ == TaskKind::kGenerate) {
      if (!task_evaluator_) task_evaluator_ = std::make_unique<TaskEvaluator>(cfg_, topology_, model_, model_.ops());
      const TaskResult t = task_evaluator_->run(step);
      log_.info(format_task(t, task_evaluator_->dataset()));
      record(task_metric_lines(t, task_evaluator_->dataset()));
      if (cfg_.eval.predictions && topology_.world_rank() == 0) write_predictions(cfg_.log.run_dir, t);
    } else {
      if (!likelihood_evaluator_)
        likelihood_evaluator_ = std::make_unique<LikelihoodTaskEvaluator>(cfg_, topology_, pipeline_, model_, task_kind_);
      const LikelihoodTaskResult t = likelihood_evaluator_->run(step);
      log_.info(format_likelihood(t, likelihood_evaluator_->dataset()));
      record(likelihood_metric_lines(t, likelihood_evaluator_->dataset()));
      if (cfg_.eval.predictions && topology_.world_rank() == 0 && task_kind_ == TaskKind::kChoice)
        write_predictions_file(cfg_.log.run_dir, t.step, t.predictions);
    }
  }
  if (!cfg_.eval.ood.empty()) {
    if (!ood_evaluator_) ood_evaluator_ = std::make_unique<OodEvaluator>(cfg_, topology_, pipeline_);
    const OodResult o = ood_evaluator_->run(step);
    log_.info(format_ood(o));
    record(ood_metric_lines(o));
    if (topology_.world_rank() == 0) write_ood_scores(cfg_.log.run_dir, o);
  }
}

}  // namespace trident::train
