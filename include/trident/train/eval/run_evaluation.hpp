// RunEvaluation: what an evaluation of a run computes at a step (log.eval_interval during
// training, and `trident eval`): perplexity and token accuracy on data.valid and exact match /
// F1 of greedy generation on eval.task, whichever are set; tables on the terminal and lines
// appended to <run_dir>/eval.jsonl on rank 0. Each evaluator is built on first use.
#pragma once
#include <cstdint>
#include <memory>

#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/eval/evaluator.hpp"
#include "trident/train/eval/task_evaluator.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

class RunEvaluation {
 public:
  RunEvaluation(const RunConfig& cfg, dist::Topology& topology, model::GPTModel& model, PipelineExecutor& pipeline,
                const Logger& log);
  ~RunEvaluation();

  // Collective: evaluates the model after `step` optimizer steps. Returns the validation
  // result (empty without data.valid); last_task() holds the task's.
  EvalResult evaluate(int64_t step);
  const TaskResult& last_task() const { return last_task_; }

 private:
  const RunConfig& cfg_;
  dist::Topology& topology_;
  model::GPTModel& model_;
  PipelineExecutor& pipeline_;
  const Logger& log_;
  std::unique_ptr<Evaluator> evaluator_;
  std::unique_ptr<TaskEvaluator> task_evaluator_;
  TaskResult last_task_;
};

}  // namespace trident::train
