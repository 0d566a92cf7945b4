// The training loop: data to the step, then health, checkpoints, metrics and evaluation.
#include "trident/train/trainer.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <limits>

#include "trident/core/json.hpp"
#include "trident/core/timer.hpp"
#include "trident/io/jsonl_file.hpp"
#include "trident/train/pipeline/pipeline_schedule.hpp"
#include "trident/train/preemption.hpp"
#include "trident/train/run_accounting.hpp"
#include "trident/train/run_banner.hpp"

namespace trident::train {

namespace {

constexpr double kSpikeFactor = 3.0;  // a loss above this times the running mean is a spike

std::string format_duration(double seconds) {
  const long s = std::lround(std::max(0.0, seconds));
  char out[32];
  if (s >= 3600) std::snprintf(out, sizeof out, "%ldh%02ldm", s / 3600, (s / 60) % 60);
  else std::snprintf(out, sizeof out, "%ldm%02lds", s / 60, s % 60);
  return out;
}

// Share of the computed input positions that were padding.
double padding_share(const data::GlobalBatchStats& s) {
  return s.computed_tokens > 0 ? double(s.padding_tokens) / double(s.computed_tokens) : 0.0;
}

// Every piece of the training step first (the model, pipeline, reducer and its compressor,
// optimizer), then the checkpointer over them.
Checkpointer& step_then_checkpointer(RunBuilder& run) {
  run.step();
  return run.checkpointer();
}

}  // namespace

Trainer::Trainer(RunBuilder& run, SignalWatch* signals)
    : run_(run),
      signals_(signals),
      cfg_(run.config()),
      topology_(run.topology()),
      log_(run.log()),
      checkpointer_(step_then_checkpointer(run)) {
  peak_flops_ = run.peak_flops_per_rank();
  const dist::Layout& layout = topology_.layout();
  const int micro_batches = cfg_.micro_batches_per_step();
  bubble_theory_ = layout.pp > 1 ? theoretical_bubble(cfg_.schedule, layout.pp, micro_batches, cfg_.virtual_stages) : 0;
  log_model_banner(run);
  log_training_banner(run);

  run.load_initial_weights();  // a checkpoint resumed below replaces them
  const Resumed resumed = checkpointer_.resume();
  start_step_ = steps_done_ = resumed.step;
  source_documents_ = run.train_data().resume(start_step_, resumed.scalars.data, resumed.scalars.data_mix, log_);
  if (PrivateTraining* privacy = run.privacy()) {
    privacy->check_resumed(resumed.scalars.privacy, start_step_);
    privacy->log_banner(log_);
  }
  LossScaler& scaler = run.scaler();
  if (resumed.scalars.loss_scale > 0 && scaler.dynamic()) scaler.restore(resumed.scalars.loss_scale);
  TRIDENT_CONFIG_CHECK(start_step_ <= cfg_.train.steps, "the checkpoint has ", start_step_,
                       " steps done, more than train.steps = ", cfg_.train.steps);
  record_ = RunRecord::open(cfg_, start_step_, topology_.world(), log_);
  if (cfg_.log.straggler_interval > 0)
    stragglers_ = std::make_unique<StragglerWatch>(topology_, cfg_.log.straggler_threshold);
  if (cfg_.train.replica_check_interval > 0)
    replica_check_ = std::make_unique<ReplicaCheck>(run.model().params(), run.ops(), topology_);
  run.evaluation().set_tensorboard(record_ ? record_->tensorboard() : nullptr);  // evaluations as scalars too
  // Checkpoints carry the run's training time; older ones do not: then the record's last line.
  tokens_ = resumed.scalars.tokens > 0
                ? resumed.scalars.tokens
                : double(start_step_) * double(cfg_.train.global_batch) * double(cfg_.model.seq_len);
  elapsed_ = start_elapsed_ = resumed.scalars.elapsed_s > 0 ? resumed.scalars.elapsed_s
                              : record_                     ? record_->last_elapsed()
                                                            : 0.0;
}

Trainer::~Trainer() = default;

void Trainer::save(int64_t steps_done) {
  const RunScalars scalars = scalars_at(steps_done);
  guarded_save([&] { ckpt_stall_s_ = checkpointer_.save(steps_done, scalars); });
}

void Trainer::save_local(int64_t steps_done) {
  const RunScalars scalars = scalars_at(steps_done);
  guarded_save([&] { ckpt_local_s_ = checkpointer_.save_local(steps_done, scalars); });
}

RunScalars Trainer::scalars_at(int64_t steps_done) {
  RunScalars scalars;
  scalars.elapsed_s = elapsed_;  // rank 0's clock: the attribute must be the same on every rank
  topology_.world().broadcast(&scalars.elapsed_s, sizeof scalars.elapsed_s, 0);
  scalars.loss_scale = run_.scaler().scale();
  scalars.tokens = tokens_;
  if (PrivateTraining* privacy = run_.privacy()) scalars.privacy = privacy->checkpoint_numbers(steps_done);
  run_.train_data().checkpoint_record(steps_done, source_documents_, scalars.data, scalars.data_mix);
  return scalars;
}

void Trainer::guarded_save(const std::function<void()>& io) {
  // Every rank fails a save together (the checkpoint's I/O agrees on failures), so every rank
  // goes on, or stops, together.
  try {
    io();
  } catch (const std::exception& e) {
    if (!cfg_.checkpoint.warn_on_error) throw;
    log_.warn("a checkpoint could not be written: ", e.what(), "; training goes on (checkpoint.on_error = warn)");
  }
}

StepResult Trainer::run() {
  StepResult last;
  RunHooks* hooks = run_.hooks();
  for (int64_t step = start_step_; step < cfg_.train.steps; ++step) {
    if (PrivateTraining* privacy = run_.privacy(); privacy && step >= privacy->budget_steps()) {
      // Every rank computes the same budget: all stop here together, the last step checkpointed.
      log_.info("privacy: the budget epsilon = ", cfg_.privacy.target_epsilon, " is spent after ", step,
                " steps (epsilon ", privacy->epsilon(step), "); training stops");
      if (step > start_step_ && cfg_.checkpoint.interval > 0 && step % cfg_.checkpoint.interval != 0) save(step);
      break;
    }
    if (dist::Watchdog* dog = topology_.watchdog()) dog->set_step(step + 1);
    if (signals_) signals_->set_step(step + 1);
    if (hooks) hooks->step_starting(step + 1);
    // The spike rule (check_health's) marks a step bad for train.rerun_bad_steps.
    run_.step().set_spike_threshold(loss_mean_ > 0 ? kSpikeFactor * loss_mean_ : std::numeric_limits<double>::infinity());
    {
      const dist::WatchdogPhase phase(topology_.watchdog(), detail::concat("training step ", step + 1));
      last = run_.train_step(step);
    }
    if (last.rerun == 1)
      log_.info("rerun: transient ", last.rerun_origin.empty() ? "(origin not located: a loss spike, or a fault after the local checks)"
                                                               : "on " + last.rerun_origin,
                "; step ", step + 1, " re-run: loss ", last.loss, ", grad norm ", last.grad_norm, " used");
    else if (last.rerun == 2)
      log_.info("rerun: persistent at step ", step + 1, ": the re-run gave the same loss and norm (",
                last.rerun_origin.empty() ? "no rank's own figures were non-finite" : "on " + last.rerun_origin, ")");
    if (hooks) hooks->parameters_updated(step + 1, run_.ops(), run_.model().params());
    steps_done_ = step + 1;
    elapsed_ += last.seconds;
    tokens_ += last.tokens;
    if (run_.train_data().mixture()) {
      const data::GlobalBatchStats& batch = run_.train_data().global_batch_stats(step);
      for (size_t i = 0; i < source_documents_.size(); ++i) source_documents_[i] += batch.source_documents[i];
    }
    check_health(step, last);
    // A preemption signal may reach any rank: agree on it, then checkpoint and stop together.
    double preempt = (signals_ && signals_->requested()) || (hooks && hooks->stop_after(step + 1)) ? 1.0 : 0.0;
    topology_.world().all_reduce_max(&preempt, 1);
    if (preempt > 0 && signals_) signals_->acknowledge();
    // No periodic checkpoint of a skipped step: the newest checkpoint stays a good one.
    const bool interval = cfg_.checkpoint.interval > 0 && (step + 1) % cfg_.checkpoint.interval == 0 && !last.skipped;
    const bool local = checkpointer_.has_local_tier() && cfg_.checkpoint.local_interval > 0 &&
                       (step + 1) % cfg_.checkpoint.local_interval == 0 && !last.skipped;
    // Replicas are compared every replica_check_interval steps and before any checkpoint, so
    // no checkpoint holds a state one replica alone computed.
    const bool replicas_checked =
        replica_check_ && ((step + 1) % cfg_.train.replica_check_interval == 0 || interval || local || preempt > 0);
    if (replicas_checked) verify_replicas(step + 1);
    Stopwatch checkpoint_watch;
    if (interval || preempt > 0) save(step + 1);
    else if (local) save_local(step + 1);  // a global checkpoint of the same step makes it moot
    last.sections.checkpoint += checkpoint_watch.seconds();
    const bool straggler_step = stragglers_ && (step + 1) % cfg_.log.straggler_interval == 0;
    if (stragglers_) stragglers_->add(last.sections);
    if (straggler_step) check_stragglers(step + 1);
    // The first step is always logged: it shows the starting loss (about ln(vocab)).
    if (step == start_step_ || (step + 1) % cfg_.log.interval == 0 || step + 1 == cfg_.train.steps || preempt > 0 ||
        last.skipped || (straggler_step && !straggler_check_.reports.empty()))
      log_step(step, last);
    if (cfg_.log.eval_interval > 0 && ((step + 1) % cfg_.log.eval_interval == 0 || step + 1 == cfg_.train.steps))
      evaluate(step + 1);
    if (straggler_step && cfg_.train.straggler_exit > 0 && straggler_repeats_ >= cfg_.train.straggler_exit) {
      if (!interval && preempt == 0) {
        if (replica_check_ && !replicas_checked) verify_replicas(step + 1);
        save(step + 1);
      }
      guarded_save([&] { checkpointer_.wait(); });
      throw AgreedStop(kStragglerExit,
                       detail::concat("train.straggler_exit = ", cfg_.train.straggler_exit, ": host ", straggler_host_,
                                      " was named a straggler ", straggler_repeats_, " checks in a row (",
                                      straggler_check_.reports.front().describe(), "); checkpoint of step ", step + 1,
                                      " written. Resume without that host (jobs/lib.sh requeues the job excluding it)"));
    }
    if (preempt > 0) {
      preempted_ = true;
      guarded_save([&] { checkpointer_.wait(); });
      log_.info("preempted: checkpoint of step ", step + 1, " written to ", checkpointer_.directory().path(),
                "; exiting (resume with checkpoint.resume = auto)");
      break;
    }
  }
  guarded_save([&] { checkpointer_.wait(); });  // an asynchronous write in flight completes before the end
  return last;
}

void Trainer::check_stragglers(int64_t steps_done) {
  straggler_check_ = stragglers_->check(steps_done);
  const StragglerCheck& c = straggler_check_;
  if (c.reports.empty()) {
    straggler_host_.clear();
    straggler_repeats_ = 0;
    char scores[160];
    std::snprintf(scores, sizeof scores, "slowest rank %d relative %.2f, lowest individual %.2f (rank %d)",
                  c.slowest_rank, c.slowest_relative, c.lowest_individual, c.lowest_individual_rank);
    log_.info("stragglers at step ", steps_done, ": none below ", cfg_.log.straggler_threshold, " (", scores, ")");
    return;
  }
  const std::string& host = c.reports.front().host;
  straggler_repeats_ = host == straggler_host_ ? straggler_repeats_ + 1 : 1;
  straggler_host_ = host;
  for (const StragglerReport& s : c.reports) log_.info("straggler at step ", steps_done, ": ", s.describe());
  if (topology_.world_rank() != 0) return;
  io::JsonlAppender out((std::filesystem::path(cfg_.log.run_dir) / "stragglers.jsonl").string());
  for (const StragglerReport& s : c.reports) {
    Json line = Json::object();
    line.set("step", Json(steps_done));
    line.set("rank", Json(int64_t(s.rank)));
    line.set("host", Json(s.host));
    line.set("relative", Json(s.relative));
    line.set("individual", Json(s.individual));
    line.set("section", Json(s.section));
    line.set("section_s", Json(s.section_s));
    line.set("median_s", Json(s.median_s));
    out.append(line.dump());
  }
}

void Trainer::verify_replicas(int64_t steps_done) {
  const ReplicaVerdict v = replica_check_->run();
  if (v.agree) {
    if (!replica_checked_) log_.info("replica check after step ", steps_done, ": every dp replica agrees (", v.seconds, " s)");
    replica_checked_ = true;
    return;
  }
  guarded_save([&] { checkpointer_.wait(); });  // a write in flight holds an earlier, checked state
  const std::string newest = checkpointer_.directory().newest();
  throw AgreedStop(kReplicaMismatchExit,
                   detail::concat("replica check after step ", steps_done, ": the parameters of ", v.describe(),
                                  " differ from their data-parallel replicas' (silent data corruption: a faulty core, "
                                  "GPU or memory); no checkpoint was written from this state; the newest checked one "
                                  "is ", newest.empty() ? std::string("none") : newest,
                                  ". Exclude the host and resume (checkpoint.resume = auto)"));
}

void Trainer::check_health(int64_t step, const StepResult& r) {
  if (r.no_targets) {  // not the model's fault: the data's (data.truncate avoids most of these)
    log_.warn("step ", step + 1, " skipped: its global batch holds no trainable target (every token a prompt token)");
    return;
  }
  if (r.skipped) {
    ++bad_steps_;
    log_.info("step ", step + 1, " skipped: non-finite loss or gradient (", bad_steps_, " in a row, train.max_bad_steps = ",
              cfg_.train.max_bad_steps, ")");
    if (bad_steps_ >= cfg_.train.max_bad_steps) {
      const std::string newest = checkpointer_.directory().newest();
      TRIDENT_CHECK(false, "stopping: ", bad_steps_,
                    " consecutive steps had a non-finite loss or gradient; the newest complete checkpoint (if any) is ",
                    newest.empty() ? std::string("none") : newest);
    }
    return;
  }
  bad_steps_ = 0;
  // Loss spikes: more than kSpikeFactor times the running mean of the recent losses.
  constexpr double kMeanDecay = 0.9;
  if (loss_mean_ > 0 && r.loss > kSpikeFactor * loss_mean_)
    log_.info("loss spike at step ", step + 1, ": ", r.loss, " (running mean ", loss_mean_, ")");
  loss_mean_ = loss_mean_ > 0 ? kMeanDecay * loss_mean_ + (1 - kMeanDecay) * r.loss : r.loss;
}

void Trainer::log_step(int64_t step, const StepResult& r) {
  const model::GPTModel& model = run_.model();
  const double tokens_per_step = r.tokens;
  const double tokens_per_s = tokens_per_step / r.seconds;
  const double mfu = model_flops_utilization(cfg_, model.config(), tokens_per_s, peak_flops_, topology_.world_size());
  if (record_) {
    GradReducer& reducer = run_.reducer();
    PrivateTraining* privacy = run_.privacy();
    const data::GlobalBatchStats batch =
        privacy ? privacy->batches().last_stats() : run_.train_data().global_batch_stats(step);
    io::MetricsRecord record = {{"step", double(step + 1)},
                                {"loss", r.loss},
                                {"lr", r.lr},
                                {"grad_norm", r.grad_norm},
                                {"tokens", tokens_},
                                {"tokens_per_s", tokens_per_s},
                                {"mfu", mfu},
                                {"loss_scale", r.loss_scale},
                                {"skipped", r.skipped ? 1.0 : 0.0},
                                {"mem_mb", peak_rss_mb()},
                                {"elapsed_s", elapsed_},
                                {"step_s", r.seconds},
                                {"comm_bytes", double(reducer.step_wire_bytes())},      // this step, on the wire
                                {"comm_bytes_raw", double(reducer.step_raw_bytes())},  // the same uncompressed
                                {"comm_inter_node_bytes", double(reducer.step_inter_node_bytes())},
                                {"comm_s", topology_.dp().seconds() + topology_.dp_node().seconds() +
                                               topology_.dp_cross().seconds()},
                                {"optim_state_mb", double(run_.optimizer().state_bytes()) / double(1 << 20)},
                                {"trainable_params", double(trainable_params(cfg_, model.config()))},
                                {"bubble", r.bubble},
                                {"act_mb", double(model.activation_bytes()) / double(1 << 20)},
                                {"ckpt_stall_s", ckpt_stall_s_},
                                {"ckpt_local_s", ckpt_local_s_},
                                {"ckpt_write_s", checkpointer_.last_write_seconds()},
                                {"bubble_theory", bubble_theory_},
                                {"padding", padding_share(batch)},
                                {"truncated", double(batch.truncated_documents)}};
    if (run_.ops().device() != Device::kCPU) record.push_back({"gpu_mem_mb", run_.ops().peak_device_mb()});
    if (DataSource& data = run_.train_data(); data.mixture())  // each source's trained targets this step
      for (size_t i = 0; i < data.num_sources(); ++i)
        record.push_back({"tokens/" + data.sampler().source_name(i), double(batch.source_targets[i])});
    for (size_t i = 0; i < r.source_loss.size(); ++i)  // skipped steps without targets have none
      record.push_back({"loss/" + run_.train_data().sampler().source_name(i), r.source_loss[i]});
    if (cfg_.train.rerun_bad_steps) record.push_back({"rerun", double(r.rerun)});
    io::MetricsText text;
    if (straggler_check_.step == step + 1 && !straggler_check_.reports.empty()) {  // the worst of this step's check
      record.push_back({"straggler_rank", double(straggler_check_.reports.front().rank)});
      record.push_back({"straggler_score", straggler_check_.reports.front().relative});
      text.push_back({"straggler_host", straggler_check_.reports.front().host});
    }
    if (privacy) {
      record.push_back({"epsilon", privacy->epsilon(step + 1)});
      record.push_back({"privacy_units", double(r.privacy_units)});
      record.push_back({"privacy_clipped", r.privacy_clipped});
      record.push_back({"privacy_unit_norm", r.privacy_unit_norm});
    }
    if (model.config().moe.enabled()) {
      record.push_back({"moe_aux_loss", r.moe_aux_loss});
      record.push_back({"moe_z_loss", r.moe_z_loss});
      record.push_back({"moe_load_max_over_mean", r.moe_load_max_over_mean});
      record.push_back({"moe_dropped_tokens", r.moe_dropped});
    }
    record_->write(record, text);
  }
  // The pace of this start (a resumed run's earlier starts ran on other machines, maybe).
  const double steps_here = double(step + 1 - start_step_);
  const double eta = (elapsed_ - start_elapsed_) / steps_here * double(cfg_.train.steps - step - 1);
  char line[256];
  std::snprintf(line, sizeof line, "step %lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %.0f tok/s | MFU %.1f%% | ETA %s",
                static_cast<long long>(step + 1), static_cast<long long>(cfg_.train.steps), r.loss, r.lr, r.grad_norm,
                tokens_per_s, 100.0 * mfu, format_duration(eta).c_str());
  log_.progress(line);
  if (!r.moe_load.empty()) log_moe_load(r);
}

void Trainer::log_moe_load(const StepResult& r) {
  // One line per step logged: each MoE layer's share of assignments per expert, in percent.
  std::string text = "moe: aux " + detail::concat(r.moe_aux_loss) + ", max/mean load " +
                     detail::concat(r.moe_load_max_over_mean) + ", dropped " + detail::concat(r.moe_dropped) +
                     "; expert load %";
  const model::ModelConfig& m = run_.model().config();
  size_t index = 0;
  for (int l = 0; l < m.layers && index < r.moe_load.size(); ++l) {
    if (!m.moe.layer(l)) continue;
    text += " | layer " + std::to_string(l) + ":";
    for (const double share : r.moe_load[index]) {
      char cell[16];
      std::snprintf(cell, sizeof cell, " %.0f", 100.0 * share);
      text += cell;
    }
    ++index;
  }
  log_.info(text);
}

}  // namespace trident::train
