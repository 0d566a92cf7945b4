// RunEvaluation: what an evaluation of a run computes at a step (log.eval_interval during
// training, and `trident eval`): perplexity and token accuracy on each of data.valid's prefixes
// (one or several: a mixture's held-out loss per source); eval.task by its
// kind (exact match / F1 of greedy generation, or acc / acc_norm of multiple choice, or rolling
// word/byte perplexity; per level and perturbation); and OOD detection of eval.ood against
// data.valid — whichever are set. Tables on the terminal; on rank 0, lines appended to
// <run_dir>/eval.jsonl and, when set, the same values as TensorBoard scalars
// ("eval/<dataset file>/<metric>[/<level>][/<perturbation>][/<score>]"). Each evaluator is
// built on first use.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/eval/evaluator.hpp"
#include "trident/train/eval/likelihood_task.hpp"
#include "trident/train/eval/ood.hpp"
#include "trident/train/eval/task_evaluator.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/run_config.hpp"

namespace trident::io {
class TensorBoardWriter;
}

namespace trident::train {

class RunEvaluation {
 public:
  RunEvaluation(const RunConfig& cfg, dist::Topology& topology, model::GPTModel& model, PipelineExecutor& pipeline,
                const Logger& log);
  ~RunEvaluation();

  // Where rank 0 also sends the results (nullptr: eval.jsonl only).
  void set_tensorboard(io::TensorBoardWriter* tensorboard) { tensorboard_ = tensorboard; }

  // Collective: evaluates the model after `step` optimizer steps; every result goes to the log
  // and the records (each data.valid prefix on its own).
  void evaluate(int64_t step);

 private:
  void record(const std::vector<MetricLine>& lines);

  const RunConfig& cfg_;
  dist::Topology& topology_;
  model::GPTModel& model_;
  PipelineExecutor& pipeline_;
  const Logger& log_;
  TaskKind task_kind_;  // eval.task's, resolved once
  io::TensorBoardWriter* tensorboard_ = nullptr;
  std::vector<std::unique_ptr<Evaluator>> evaluators_;  // one per data.valid prefix
  std::unique_ptr<TaskEvaluator> task_evaluator_;
  std::unique_ptr<LikelihoodTaskEvaluator> likelihood_evaluator_;
  std::unique_ptr<OodEvaluator> ood_evaluator_;
};

}  // namespace trident::train
