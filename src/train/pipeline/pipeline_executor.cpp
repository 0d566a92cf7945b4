// Executing a pipeline schedule: compute actions call the model, communication actions move
// [B*T, C] activations and gradients with non-blocking sends and waited receives.
#include "trident/train/pipeline/pipeline_executor.hpp"

#include <mpi.h>

namespace trident::train {

PipelineExecutor::PipelineExecutor(model::GPTModel& model, dist::Communicator& pp, ScheduleKind kind,
                                   int micro_batches, int virtual_stages, const dist::PipelineLanes* lanes)
    : model_(model), pp_(pp), lanes_(lanes), kind_(kind), virtual_stages_(virtual_stages),
      micro_batches_(micro_batches), chunks_(model.num_chunks()) {
  actions_ = build_schedule(kind, pp.size(), pp.rank(), micro_batches, virtual_stages);
  slots_ = model.plan().slots;
  TRIDENT_CHECK(max_in_flight(actions_, chunks_) <= slots_, "the schedule keeps ", max_in_flight(actions_, chunks_),
                " micro-batches in flight, the model has ", slots_, " slots");
  sends_act_.resize(static_cast<size_t>(chunks_ * slots_));
  sends_grad_.resize(static_cast<size_t>(chunks_ * slots_));
}

int PipelineExecutor::slots_needed(ScheduleKind kind, int pp, int micro_batches, int virtual_stages) {
  int most = 1;
  const int chunks = kind == ScheduleKind::kInterleaved ? virtual_stages : 1;
  for (int stage = 0; stage < pp; ++stage)
    most = std::max(most, max_in_flight(build_schedule(kind, pp, stage, micro_batches, virtual_stages), chunks));
  return most;
}

std::pair<int, int> PipelineExecutor::next_of(int chunk) const {
  const int pp = pp_.size(), r = pp_.rank();
  return {(r + 1) % pp, r == pp - 1 ? chunk + 1 : chunk};
}

std::pair<int, int> PipelineExecutor::prev_of(int chunk) const {
  const int pp = pp_.size(), r = pp_.rank();
  return {(r + pp - 1) % pp, r == 0 ? chunk - 1 : chunk};
}

dist::CommRequest PipelineExecutor::send(const Tensor& x, bool grad, int peer, int tag) {
  if (!lanes_) return pp_.isend(x, peer, tag);
  dist::Communicator& lane = *(grad ? lanes_->grad_out : lanes_->act_out);
  return lane.isend(x, 1 - lane.rank(), tag);
}

dist::CommRequest PipelineExecutor::recv(Tensor& x, bool grad, int peer, int tag) {
  if (!lanes_) return pp_.irecv(x, peer, tag);
  dist::Communicator& lane = *(grad ? lanes_->grad_in : lanes_->act_in);
  return lane.irecv(x, 1 - lane.rank(), tag);
}

const std::vector<Action>& PipelineExecutor::schedule_for(int micro_batches) {
  if (micro_batches == micro_batches_) return actions_;
  TRIDENT_CHECK(micro_batches >= 1 && micro_batches < micro_batches_ && fewer_micro_batches(), "the schedule runs ",
                micro_batches_, " micro-batches, given ", micro_batches);
  auto [it, added] = shorter_.try_emplace(micro_batches);
  if (added) {
    it->second = build_schedule(kind_, pp_.size(), pp_.rank(), micro_batches, virtual_stages_);
    TRIDENT_CHECK(max_in_flight(it->second, chunks_) <= slots_, "a schedule of ", micro_batches,
                  " micro-batches needs more slots than the model has");
  }
  return it->second;
}

double PipelineExecutor::run(int64_t step, double grad_scale, const std::vector<data::Batch>& batches,
                             bool final_pass, std::vector<double>* per_sequence) {
  const std::vector<Action>& actions = schedule_for(int(batches.size()));
  const double start = MPI_Wtime();
  wait_s_ = 0;
  model_.take_loss_sum();  // nothing left over from a pass that did not finish
  const int last_mb = final_pass ? int(batches.size()) - 1 : -1;
  for (const Action& a : actions) {
    const int s = slot(a.micro_batch), index = a.chunk * slots_ + s;
    switch (a.kind) {
      case ActionKind::kRecvAct: {
        sends_act_[index].wait();  // the slot's previous output must have left before reuse
        const auto [peer, peer_chunk] = prev_of(a.chunk);
        const double t0 = MPI_Wtime();
        recv(model_.input(a.chunk, s), false, peer, tag(a.micro_batch, peer_chunk, false)).wait();
        wait_s_ += MPI_Wtime() - t0;
        break;
      }
      case ActionKind::kForward: {
        sends_act_[index].wait();   // forward rewrites the slot's output ...
        sends_grad_[index].wait();  // ... and, on the last stage, its gradient
        const data::Batch& batch = batches[static_cast<size_t>(a.micro_batch)];
        model_.set_micro_batch_position(a.chunk, s, step, batch.first_sequence);
        model_.set_micro_batch_units(a.chunk, s, &batch.units);
        model_.forward(a.chunk, s, batch.tokens, batch.targets, batch.positions, grad_scale,
                                   a.micro_batch == last_mb);
        break;
      }
      case ActionKind::kSendAct: {
        const auto [peer, peer_chunk] = next_of(a.chunk);
        (void)peer_chunk;
        sends_act_[index] = send(model_.output(a.chunk, s), false, peer, tag(a.micro_batch, a.chunk, false));
        break;
      }
      case ActionKind::kRecvGrad: {
        sends_grad_[index].wait();
        const auto [peer, peer_chunk] = next_of(a.chunk);
        const double t0 = MPI_Wtime();
        recv(model_.grad(a.chunk, s), true, peer, tag(a.micro_batch, peer_chunk, true)).wait();
        wait_s_ += MPI_Wtime() - t0;
        break;
      }
      case ActionKind::kBackward:
        model_.backward(a.chunk, s, a.micro_batch == last_mb);
        break;
      case ActionKind::kSendGrad: {
        const auto [peer, peer_chunk] = prev_of(a.chunk);
        (void)peer_chunk;
        sends_grad_[index] = send(model_.grad(a.chunk, s), true, peer, tag(a.micro_batch, a.chunk, true));
        break;
      }
    }
  }
  for (auto& r : sends_act_) r.wait();
  for (auto& r : sends_grad_) r.wait();
  run_s_ = MPI_Wtime() - start;
  return model_.take_loss_sum(per_sequence);
}

// Every rank walks the (micro-batch, virtual stage) pairs in one global order and owns the
// stages c * pp + rank; a blocking send is matched by the next stage's receive, which comes
// earlier in its own walk than any send it makes later, so the walk cannot deadlock.
model::EvalSums PipelineExecutor::run_eval(const std::vector<data::Batch>& batches,
                                           std::vector<model::TokenScores>* per_token) {
  const int pp = pp_.size(), last_stage = chunks_ * pp - 1;
  model::EvalSums sums;
  if (per_token) per_token->assign(batches.size(), {});
  for (int mb = 0; mb < int(batches.size()); ++mb) {
    const data::Batch& batch = batches[static_cast<size_t>(mb)];
    for (int c = 0; c < chunks_; ++c) {
      const int stage = c * pp + pp_.rank();
      if (stage > 0) {
        const auto [peer, peer_chunk] = prev_of(c);
        recv(model_.input(c, 0), false, peer, tag(mb, peer_chunk, false)).wait();
      }
      sums += model_.evaluate(c, 0, batch.tokens, batch.targets, batch.positions,
                              per_token ? &(*per_token)[size_t(mb)] : nullptr);
      if (stage < last_stage) send(model_.output(c, 0), false, next_of(c).first, tag(mb, c, false)).wait();
    }
  }
  return sums;
}

}  // namespace trident::train
