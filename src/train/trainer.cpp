// The training loop: micro-batch accumulation, dp gradient sum, clipping, AdamW, metrics.
#include "trident/train/trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <thread>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "trident/train/peft_convert.hpp"
#include "trident/core/timer.hpp"
#include "trident/model/hf_config.hpp"
#include "trident/train/hf_weights.hpp"
#include "trident/train/data_source.hpp"
#include "trident/train/preemption.hpp"
#include "trident/train/stage_plan.hpp"

namespace trident::train {

namespace {

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

}  // namespace

Trainer::Trainer(const RunConfig& cfg, Ops& ops, dist::Topology& topology, const Logger& log, FaultInjection fault)
    : cfg_(cfg), ops_(ops), topology_(topology), log_(log), fault_(fault) {
  // Without data.train the trainer can only evaluate (`trident eval` on an eval.task alone).
  if (!cfg.data.train.empty()) {
    reader_ = open_run_shards(cfg, "data.train", cfg.data.train);
    sampler_ = std::make_unique<data::BatchSampler>(*reader_, run_sampler_options(cfg, topology));
    batch_ = sampler_->make_batch();
  }

  model::TensorParallel tp;
  if (topology.layout().tp > 1) tp.comm = &topology.tp();
  tp.sequence_parallel = cfg.sequence_parallel;
  const int micro_batches = cfg.micro_batches_per_step();
  TRIDENT_CHECK(!sampler_ || sampler_->micro_batches_per_step() == micro_batches, "sampler and config disagree on ",
                "micro-batches per step");
  std::string pipeline_text;
  const model::StagePlan plan = make_stage_plan(cfg, topology.pp_rank(), micro_batches, &pipeline_text);
  // The GEMM precision decides the activations' storage (fp32 where the processor lacks the type).
  const DType matmul = ops.set_matmul_precision(cfg.train.precision);
  model_ = std::make_unique<model::GPTModel>(
      cfg.model, ops, DType::kF32, cfg.train.micro_batch, GradReducer::pad_multiple(topology.layout().dp), tp, plan,
      matmul != DType::kF32 ? std::optional<DType>(matmul) : std::nullopt);
  model_->initialize(cfg.train.seed);
  TRIDENT_CONFIG_CHECK(ops.device() == Device::kCPU || topology.layout().pp > 1 ||
                           cfg.schedule != ScheduleKind::kInterleaved,
                       "parallel.schedule = interleaved with parallel.pp = 1 passes activations from a rank to "
                       "itself, which the GPU backend does not do; use parallel.schedule = 1f1b");
  pipeline_ = std::make_unique<PipelineExecutor>(*model_, topology.pp(), cfg.schedule, micro_batches,
                                                 cfg.virtual_stages, topology.pipeline_lanes());
  bubble_theory_ = topology.layout().pp > 1
                       ? theoretical_bubble(cfg.schedule, topology.layout().pp, micro_batches, cfg.virtual_stages)
                       : 0.0;
  reducer_ = std::make_unique<GradReducer>(
      model_->params(), ops, topology.dp(),
      ReducerOptions{.bucket_mb = cfg.comm.bucket_mb, .overlap = cfg.comm.overlap, .zero = cfg.zero == 1,
                     .compression = {.kind = cfg.comm.compression, .topk_ratio = cfg.comm.topk_ratio,
                                     .topk_warmup = cfg.comm.topk_warmup,
                                     .topk_dense_steps = cfg.comm.topk_dense_steps,
                                     .powersgd_rank = cfg.comm.powersgd_rank, .seed = cfg.train.seed},
                     .grad_dtype = cfg.comm.grad_dtype},
      topology.model_parallel().size() > 1 ? &topology.model_parallel() : nullptr, topology.tp_rank());
  optimizer_ = std::make_unique<AdamW>(model_->params(), ops, cfg.train, reducer_->optimizer_segments());
  // Top-k after a dense start: Adam's second moment is frozen where the sparse phase begins.
  if (reducer_->compressor() && cfg.comm.compression == dist::CompressionKind::kTopK)
    optimizer_->freeze_variance_after(cfg.comm.topk_dense_steps);
  scaler_ = std::make_unique<LossScaler>(cfg.train.loss_scale, cfg.train.precision == DType::kF16);
  parts_ = std::make_unique<StepParts>(StepParts{*model_, *optimizer_, *reducer_, *pipeline_, ops, topology.dp(),
                                                 topology.pp(), topology.embedding(), scaler_.get()});
  if (matmul != cfg.train.precision)
    log_.info("train.precision = ", dtype_name(cfg.train.precision), ": this processor has no ",
              dtype_name(cfg.train.precision), " instructions; computing in ", dtype_name(matmul));
  if (matmul != DType::kF32)
    log_.info("mixed precision: weights (a copy refreshed each step) and the activations kept for backward in ",
              dtype_name(matmul), ", GEMMs accumulating in fp32; fp32 master weights, gradients, optimizer state, ",
              "residual stream, norm statistics, softmax and loss", matmul == DType::kF16
                  ? "; fp16 is storage only on this CPU (fp32 arithmetic); loss scale " + cfg.train.loss_scale
                  : std::string());
  // MFU against the peak of the arithmetic the GEMMs use (bf16 dot products: twice fp32).
  peak_flops_ = ops.peak_flops(cfg.train.precision == DType::kBF16 ? DType::kBF16 : DType::kF32);

  const model::ModelConfig& m = model_->config();
  log_.info("model: ", model::arch_name(m.arch), ", ", m.layers, " layers, hidden ", m.hidden, ", heads ", m.heads,
            "/", m.kv_heads, ", ffn ", m.ffn_hidden, ", vocab ", m.vocab, ", seq ", m.seq_len, ": ",
            model_->params().numel() + model_->params().frozen_numel(), " parameters on this rank (",
            m.total_params(), " in the model)");
  if (m.lora.enabled())
    log_.info("LoRA: rank ", m.lora.r, ", alpha ", m.lora.alpha, " on ", m.lora.targets, ": ", trainable_params(),
              " trainable parameters (", 100.0 * double(trainable_params()) / double(m.total_params()),
              "% of ", m.total_params(), "), the base frozen; optimizer state ",
              double(optimizer_->state_bytes()) / (1 << 20), " MiB per rank");
  log_.info("memory per rank: parameters+gradients ", parameter_bytes() >> 20,
            " MiB, optimizer state ", double(optimizer_->state_bytes()) / (1 << 20), " MiB", cfg.zero ? " (ZeRO-1 share)" : "",
            ", activations ", double(model_->activation_bytes()) / (1 << 20), " MiB (recompute ",
            model::recompute_name(cfg.recompute), ")");
  if (tp.size() > 1)
    log_.info("tensor parallel: tp ", tp.size(), ", ", m.heads / tp.size(), " heads and ",
              m.padded_vocab(tp.size()) / tp.size(), " vocabulary rows per rank (vocab padded to ",
              m.padded_vocab(tp.size()), "), sequence parallelism ", tp.sequence_parallel ? "on" : "off");
  if (topology.layout().pp > 1) log_.info(pipeline_text);
  log_.info("data parallel: dp ", topology.layout().dp, ", ", reducer_->num_buckets(), " gradient buckets of <= ",
            cfg.comm.bucket_mb, " MiB, overlap ", cfg.comm.overlap ? "on" : "off", ", ZeRO-", cfg.zero,
            ", compression ", dist::compression_name(reducer_->compressor() ? cfg.comm.compression : dist::CompressionKind::kNone));
  if (reader_)
    log_.info("data: ", reader_->num_tokens(), " tokens in ", reader_->num_documents(), " documents, ",
            sampler_->num_rows(), cfg.data.packing ? " packed rows of " : " one-document rows of ", m.seq_len,
            "; global batch ", cfg.train.global_batch,
            " = dp ", topology.layout().dp, " x ", sampler_->micro_batches_per_step(), " micro-batches x ",
            cfg.train.micro_batch, " sequences");
  log_.info("backend: ", ops.name(), ", peak ", peak_flops_ / 1e9, " GFLOP/s per rank for ",
            dtype_name(cfg.train.precision == DType::kBF16 ? DType::kBF16 : DType::kF32), " (measured FMA rate)");

  if (cfg.lisa.enabled) {
    lisa_ = std::make_unique<LisaSchedule>(cfg.lisa, cfg.model.layers, cfg.train.seed);
    lisa_full_state_bytes_ = optimizer_->state_bytes();
  }
  checkpointer_ = std::make_unique<Checkpointer>(cfg, topology, *model_, *optimizer_, ops, log);
  checkpointer_->set_compressor(reducer_->compressor(), cfg.comm.compression);  // error-feedback state
  if (!cfg.init_from.empty()) {  // pretrained weights; a checkpoint resumed below replaces them
    if (model::is_hf_model_dir(cfg.init_from)) load_hf_model(model_->params(), ops, model_->config(), cfg.init_from);
    else checkpointer_->load_model(cfg.init_from);
    const std::string tokenizer = model::model_tokenizer_path(cfg.init_from);
    log_.info("initialised from ", cfg.init_from, tokenizer.empty() ? "" : "; its tokenizer: " + tokenizer);
  }
  if (!cfg.lora_init_from.empty()) {
    load_peft_adapter(model_->params(), ops, model_->config(), cfg.lora_init_from);
    log_.info("LoRA adapters from ", cfg.lora_init_from);
  }
  start_step_ = checkpointer_->resume();
  if (checkpointer_->restored_loss_scale() > 0 && scaler_->dynamic()) scaler_->restore(checkpointer_->restored_loss_scale());
  TRIDENT_CONFIG_CHECK(start_step_ <= cfg.train.steps, "the checkpoint has ", start_step_,
                       " steps done, more than train.steps = ", cfg.train.steps);
  if (topology.world_rank() == 0) {
    std::filesystem::create_directories(std::filesystem::path(cfg.log.run_dir) / "checkpoints");
    std::ofstream(std::filesystem::path(cfg.log.run_dir) / "config.ini") << cfg.resolved_ini;
    // A resumed run continues the metrics of the run it resumes.
    metrics_ = std::make_unique<io::MetricsWriter>((std::filesystem::path(cfg.log.run_dir) / "metrics.jsonl").string(),
                                                   /*append=*/start_step_ > 0);
  }
  topology.world().barrier();
}

Trainer::~Trainer() = default;

size_t Trainer::parameter_bytes() const {  // values (frozen ones too) + gradients of the trainable ones
  const model::ParamStore& p = model_->params();
  return 2 * p.flat_values().bytes() + size_t(p.frozen_numel()) * dtype_size(p.flat_values().dtype());
}
size_t Trainer::optimizer_state_bytes() const { return optimizer_->state_bytes(); }

double Trainer::flops_per_token() const {
  const model::ModelConfig& m = model_->config();
  if (!lisa_) return m.train_flops_per_token();
  // Idle blocks compute no weight gradients: 2 of their 6 FLOPs per matmul parameter go.
  const double block_matmul = double(m.matmul_params() - int64_t(m.vocab) * m.hidden) / m.layers;
  return m.train_flops_per_token() - 2.0 * block_matmul * (m.layers - cfg_.lisa.layers);
}

int64_t Trainer::trainable_params() const {
  const model::ModelConfig& m = model_->config();
  if (m.lora.enabled()) return m.lora_params();
  if (!lisa_) return m.total_params();
  const LisaConfig& l = cfg_.lisa;
  const bool table = l.embedding || (m.tie_embeddings && l.head);  // a tied table trains with either
  return l.layers * m.block_params() + (l.embedding ? m.embedding_params() : table ? int64_t(m.vocab) * m.hidden : 0) +
         (l.head ? m.head_params() : 0);
}

void Trainer::apply_lisa(int64_t step) {
  if (!lisa_ || (lisa_applied_ && step % cfg_.lisa.interval != 0)) return;
  lisa_applied_ = true;
  const bool tied = model_->config().tie_embeddings;
  auto& params = model_->params().all();
  for (auto& p : params)
    if (p->trainable()) p->idle = !lisa_->trains(p->spec.name, step, tied);
  // Each optimizer segment lies within one parameter: it follows that parameter.
  const auto& segments = optimizer_->segments();
  std::vector<bool> active(segments.size());
  std::vector<int64_t> since(segments.size(), 0);
  for (size_t i = 0; i < segments.size(); ++i)
    for (const auto& p : params)
      if (p->trainable() && p->offset <= segments[i].begin && segments[i].end <= p->offset + p->local_shape.numel()) {
        active[i] = !p->idle;
        if (active[i]) since[i] = lisa_->trained_since(p->spec.name, step, tied);
        break;
      }
  optimizer_->set_active(active, since);
  std::string layers;
  for (int l : lisa_->active_layers(step)) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
  log_.info("LISA at step ", step + 1, ": blocks [", layers, "] of ", model_->config().layers, " trained",
            cfg_.lisa.embedding ? ", embedding" : "", cfg_.lisa.head ? ", head" : "", "; optimizer state ",
            double(optimizer_->state_bytes()) / (1 << 20), " MiB per rank (all layers: ",
            double(lisa_full_state_bytes_) / (1 << 20), " MiB)");
}

StepResult Trainer::train_step(int64_t step) {
  TRIDENT_CONFIG_CHECK(sampler_, "data.train: no shard prefix given (training needs data)");
  apply_lisa(step);
  return optimizer_step(*parts_, cfg_.train, step, sampler_->count_valid_targets(step),
                        [&](int k, data::Batch& batch) {
                          Stopwatch watch;
                          sampler_->fill(step, k, batch);
                          data_seconds_ += watch.seconds();
                        },
                        batch_,
                        fault_.poisons(topology_.world_rank(), step + 1) ? fault_.nan_value : 0.0);
}

EvalResult Trainer::evaluate(int64_t step) {
  model_->refresh_weights();  // the 16-bit copy lags the last optimizer step
  const std::string eval_jsonl = (std::filesystem::path(cfg_.log.run_dir) / "eval.jsonl").string();
  EvalResult r;
  if (!cfg_.data.valid.empty()) {
    if (!evaluator_) evaluator_ = std::make_unique<Evaluator>(cfg_, topology_, *pipeline_);
    r = evaluator_->run(step);
    log_.info(format_eval(r, evaluator_->dataset()));
    if (topology_.world_rank() == 0) append_eval_jsonl(eval_jsonl, r, evaluator_->dataset());
  }
  if (!cfg_.eval.task.empty()) {
    if (!task_evaluator_) task_evaluator_ = std::make_unique<TaskEvaluator>(cfg_, topology_, *model_, ops_);
    last_task_ = task_evaluator_->run(step);
    log_.info(format_task(last_task_, task_evaluator_->dataset()));
    if (topology_.world_rank() == 0) append_task_jsonl(eval_jsonl, last_task_, task_evaluator_->dataset());
  }
  return r;
}

StepResult Trainer::run() {
  StepResult last;
  for (int64_t step = start_step_; step < cfg_.train.steps; ++step) {
    TRIDENT_CHECK(!fault_.fires(topology_.world_rank(), step + 1), "injected failure (TRIDENT_TEST_FAIL) on rank ",
                  topology_.world_rank(), " at step ", step + 1);
    if (fault_.hang_rank == topology_.world_rank() && fault_.hang_step == step + 1)
      std::this_thread::sleep_for(std::chrono::hours(1));  // test hook: a rank that stops responding
    if (dist::Watchdog* dog = topology_.watchdog()) dog->set_step(step + 1);
    last = train_step(step);
    steps_done_ = step + 1;
    elapsed_ += last.seconds;
    check_health(step, last);
    // A preemption signal may reach any rank: agree on it, then checkpoint and stop together.
    double preempt = preemption_requested() || fault_.preempt_after == step + 1 ? 1.0 : 0.0;
    topology_.world().all_reduce_max(&preempt, 1);
    // No periodic checkpoint of a skipped step: the newest checkpoint stays a good one.
    const bool interval = cfg_.checkpoint.interval > 0 && (step + 1) % cfg_.checkpoint.interval == 0 && !last.skipped;
    checkpointer_->set_loss_scale(scaler_->scale());
    if (interval || preempt > 0) ckpt_stall_s_ = checkpointer_->save(step + 1);
    // The first step is always logged: it shows the starting loss (about ln(vocab)).
    if (step == start_step_ || (step + 1) % cfg_.log.interval == 0 || step + 1 == cfg_.train.steps || preempt > 0 ||
        last.skipped)
      log_step(step, last);
    if (cfg_.log.eval_interval > 0 && ((step + 1) % cfg_.log.eval_interval == 0 || step + 1 == cfg_.train.steps))
      evaluate(step + 1);
    if (preempt > 0) {
      preempted_ = true;
      checkpointer_->wait();
      log_.info("preempted: checkpoint of step ", step + 1, " written to ", checkpointer_->directory(),
                "; exiting (resume with checkpoint.resume = auto)");
      break;
    }
  }
  checkpointer_->wait();  // an asynchronous write still in flight completes before the run ends
  return last;
}

void Trainer::check_health(int64_t step, const StepResult& r) {
  if (r.skipped) {
    ++bad_steps_;
    log_.info("step ", step + 1, " skipped: non-finite loss or gradient (", bad_steps_, " in a row, train.max_bad_steps = ",
              cfg_.train.max_bad_steps, ")");
    TRIDENT_CHECK(bad_steps_ < cfg_.train.max_bad_steps, "stopping: ", bad_steps_,
                  " consecutive steps had a non-finite loss or gradient; the newest complete checkpoint (if any) is ",
                  Checkpointer::newest(checkpointer_->directory()).empty() ? std::string("none")
                                                                           : Checkpointer::newest(checkpointer_->directory()));
    return;
  }
  bad_steps_ = 0;
  // Loss spikes: more than kSpikeFactor times the running mean of the recent losses.
  constexpr double kSpikeFactor = 3.0, kMeanDecay = 0.9;
  if (loss_mean_ > 0 && r.loss > kSpikeFactor * loss_mean_)
    log_.info("loss spike at step ", step + 1, ": ", r.loss, " (running mean ", loss_mean_, ")");
  loss_mean_ = loss_mean_ > 0 ? kMeanDecay * loss_mean_ + (1 - kMeanDecay) * r.loss : r.loss;
}

void Trainer::log_step(int64_t step, const StepResult& r) {
  const double tokens_per_step = double(cfg_.train.global_batch) * cfg_.model.seq_len;
  const double tokens_per_s = tokens_per_step / r.seconds;
  const double flops = flops_per_token() * tokens_per_step;
  const double mfu = flops / r.seconds / (peak_flops_ * topology_.world_size());
  const double mem_mb = peak_rss_mb();
  if (metrics_) {
    io::MetricsWriter::Record record = {{"step", double(step + 1)},
                                        {"loss", r.loss},
                                        {"lr", r.lr},
                                        {"grad_norm", r.grad_norm},
                                        {"tokens", tokens_per_step * double(step + 1)},
                                        {"tokens_per_s", tokens_per_s},
                                        {"mfu", mfu},
                                        {"loss_scale", r.loss_scale},
                                        {"skipped", r.skipped ? 1.0 : 0.0},
                                        {"mem_mb", mem_mb},
                                        {"elapsed_s", elapsed_},
                                        {"step_s", r.seconds},
                                        {"comm_bytes", double(reducer_->step_wire_bytes())},       // this step, on the wire
                                        {"comm_bytes_raw", double(reducer_->step_raw_bytes())},   // the same uncompressed
                                        {"comm_s", topology_.dp().seconds()},
                                        {"optim_state_mb", double(optimizer_->state_bytes()) / double(1 << 20)},
                                        {"trainable_params", double(trainable_params())},
                                        {"bubble", r.bubble},
                                        {"act_mb", double(model_->activation_bytes()) / double(1 << 20)},
                                        {"ckpt_stall_s", ckpt_stall_s_},
                                        {"ckpt_write_s", checkpointer_->last_write_seconds()},
                                        {"bubble_theory", bubble_theory_},
                                        {"padding", padding_share(sampler_->global_batch_stats(step))}};
    if (ops_.device() != Device::kCPU) record.push_back({"gpu_mem_mb", ops_.peak_device_mb()});
    metrics_->write(record);
  }
  const double eta = elapsed_ / double(step + 1) * double(cfg_.train.steps - step - 1);
  char line[256];
  std::snprintf(line, sizeof line, "step %lld/%lld | loss %.4f | lr %.2e | grad norm %.3f | %.0f tok/s | MFU %.1f%% | ETA %s",
                static_cast<long long>(step + 1), static_cast<long long>(cfg_.train.steps), r.loss, r.lr, r.grad_norm,
                tokens_per_s, 100.0 * mfu, format_duration(eta).c_str());
  log_.progress(line);
}

}  // namespace trident::train
