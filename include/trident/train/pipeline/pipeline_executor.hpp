// PipelineExecutor: runs one optimizer step's schedule on this rank: forward and backward of
// the model chunks for each micro-batch, activations and their gradients moved between
// neighbouring virtual stages with non-blocking point-to-point on the pp communicator. It
// knows the schedule and the communicator, never the layers.
#pragma once
#include <map>
#include <vector>

#include "trident/data/batch.hpp"
#include "trident/dist/communicator.hpp"
#include "trident/dist/topology.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/pipeline/pipeline_schedule.hpp"

namespace trident::train {

class PipelineExecutor {
 public:
  // pp: the pipeline communicator (size 1 without pipeline parallelism). lanes: the pipeline
  // lanes (Topology::pipeline_lanes), which then carry the transfers; nullptr: pp does.
  PipelineExecutor(model::GPTModel& model, dist::Communicator& pp, ScheduleKind kind, int micro_batches,
                   int virtual_stages, const dist::PipelineLanes* lanes = nullptr);

  // Whether run() takes fewer micro-batches than the schedule's (not interleaved: its
  // micro-batches come in multiples of pp).
  bool fewer_micro_batches() const { return kind_ != ScheduleKind::kInterleaved; }
  int micro_batches() const { return micro_batches_; }

  // Most micro-batches one chunk holds at once: the slots the model must be built with.
  static int slots_needed(ScheduleKind kind, int pp, int micro_batches, int virtual_stages);

  // Runs every action of the step over this rank's micro-batches (batches[k] is micro-batch
  // k; one per micro-batch of the schedule, or fewer where fewer_micro_batches() allows: the
  // schedule for that many, built on first use). The model's last pass over each chunk is marked
  // as such, so its gradient-ready hook fires then. Returns this rank's loss sum (non-zero on
  // the last stage only). final_pass = false: a pass before the step's last (differential
  // privacy's norm pass, or a round of a step with more micro-batches than the schedule's):
  // no pass is marked last, so no gradient counts as final yet. per_sequence (optional, one
  // entry per global-batch row): each of this rank's sequences' loss sum added at its row (the
  // last stage only).
  double run(int64_t step, double grad_scale, const std::vector<data::Batch>& batches, bool final_pass = true,
             std::vector<double>* per_sequence = nullptr);

  // Forward-only pass over the micro-batches for evaluation, one at a time through every
  // virtual stage (slot 0 of each chunk). Returns this rank's sums (non-empty on the last
  // stage only). per_token: also each micro-batch's per-target scores (filled on the last
  // stage only; one entry per batch).
  model::EvalSums run_eval(const std::vector<data::Batch>& batches,
                           std::vector<model::TokenScores>* per_token = nullptr);

  // Seconds spent waiting for activations or gradients in the last run (the pipeline bubble
  // as this rank sees it), and the whole run.
  double wait_seconds() const { return wait_s_; }
  double run_seconds() const { return run_s_; }
  const std::vector<Action>& actions() const { return actions_; }

 private:
  int slot(int mb) const { return mb % slots_; }
  int tag(int mb, int chunk, bool grad) const { return ((mb * chunks_ + chunk) * 2 + (grad ? 1 : 0)) % 32000; }
  // Neighbouring virtual stage of (this stage, chunk): rank in pp and its chunk.
  std::pair<int, int> next_of(int chunk) const;
  std::pair<int, int> prev_of(int chunk) const;
  // Transfers to / from a neighbouring stage (peer: its pp rank) over the lane of that
  // direction and kind, or over pp.
  dist::CommRequest send(const Tensor& x, bool grad, int peer, int tag);
  dist::CommRequest recv(Tensor& x, bool grad, int peer, int tag);

  model::GPTModel& model_;
  dist::Communicator& pp_;
  const dist::PipelineLanes* lanes_;
  const std::vector<Action>& schedule_for(int micro_batches);

  ScheduleKind kind_;
  int virtual_stages_;
  int micro_batches_, chunks_, slots_;
  std::vector<Action> actions_;
  std::map<int, std::vector<Action>> shorter_;  // schedules for fewer micro-batches, by count
  std::vector<dist::CommRequest> sends_act_, sends_grad_;  // per (chunk, slot): pending sends
  double wait_s_ = 0, run_s_ = 0;
};

}  // namespace trident::train
