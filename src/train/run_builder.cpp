// Building a run's pieces on request, in dependency order.
#include "trident/train/run_builder.hpp"

#include "trident/core/timer.hpp"
#include "trident/interop/hf_weights.hpp"
#include "trident/interop/peft_convert.hpp"
#include "trident/interop/hf_config.hpp"
#include "trident/train/pipeline/stage_plan.hpp"

namespace trident::train {

RunBuilder::RunBuilder(const RunConfig& cfg, Ops& ops, dist::Topology& topology, const Logger& log, RunHooks* hooks)
    : cfg_(cfg), ops_(ops), topology_(topology), log_(log), hooks_(hooks) {}

RunBuilder::~RunBuilder() = default;

DataSource& RunBuilder::train_data() {
  if (!train_data_) {
    TRIDENT_CONFIG_CHECK(!cfg_.data.train.empty(), "data.train: no shard prefix given (training needs data)");
    train_data_ = std::make_unique<DataSource>(cfg_, topology_);
    TRIDENT_CHECK(train_data_->micro_batches() == cfg_.micro_batches_per_step(), "sampler and config disagree on ",
                  "micro-batches per step");
  }
  return *train_data_;
}

model::GPTModel& RunBuilder::model() {
  if (model_) return *model_;
  model::TensorParallel tp;
  if (topology_.layout().tp > 1) tp.comm = &topology_.tp();
  tp.sequence_parallel = cfg_.sequence_parallel;
  const model::StagePlan plan =
      make_stage_plan(cfg_, topology_.pp_rank(), cfg_.micro_batches_per_step(), &pipeline_text_);
  // GEMMs compute in the precision the backend settled on when it was selected: the asked one
  // where it measures faster, else fp32. The activations keep the asked 16-bit storage either
  // way (the memory saving); only train.precision = auto falls back to fp32 throughout.
  const DType matmul = matmul_dtype();
  TRIDENT_CHECK(matmul == cfg_.train.precision || matmul == DType::kF32, "the backend's GEMMs are set to ",
                dtype_name(matmul), " but train.precision is ", dtype_name(cfg_.train.precision),
                ": set the backend's precision when selecting it");
  activation_dtype_ = cfg_.train.precision_auto ? matmul : cfg_.train.precision;
  model::ExpertParallel ep;
  if (topology_.layout().ep > 1) ep.comm = &topology_.ep();
  model_ = std::make_unique<model::GPTModel>(
      cfg_.model, ops_, DType::kF32, cfg_.train.micro_batch, GradReducer::pad_multiple(topology_.layout().dp), tp, plan,
      activation_dtype_ != DType::kF32 ? std::optional<DType>(activation_dtype_) : std::nullopt, ep);
  model_->initialize(cfg_.train.seed);
  return *model_;
}

PipelineExecutor& RunBuilder::pipeline() {
  if (pipeline_) return *pipeline_;
  model::GPTModel& m = model();
  TRIDENT_CONFIG_CHECK(ops_.device() == Device::kCPU || topology_.layout().pp > 1 ||
                           cfg_.schedule != ScheduleKind::kInterleaved,
                       "parallel.schedule = interleaved with parallel.pp = 1 passes activations from a rank to "
                       "itself, which the GPU backend does not do; use parallel.schedule = 1f1b");
  pipeline_ = std::make_unique<PipelineExecutor>(m, topology_.pp(), cfg_.schedule, cfg_.micro_batches_per_step(),
                                                 cfg_.virtual_stages, topology_.pipeline_lanes());
  return *pipeline_;
}

GradReducer& RunBuilder::reducer() {
  if (reducer_) return *reducer_;
  model::GPTModel& m = model();
  const CommConfig& c = cfg_.comm;
  // Node-aware reduction where the dp group spans nodes evenly (auto), or as asked. Every rank
  // decides alike: dp_spans_nodes_evenly is agreed over the world.
  using H = CommConfig::Hierarchical;
  const bool even = topology_.dp_spans_nodes_evenly();
  TRIDENT_CONFIG_CHECK(c.hierarchical != H::kOn || even, "comm.hierarchical = on needs every dp group spread over ",
                       "more than one node with the same number (> 1) of its ranks on each; this job's dp group of ",
                       topology_.layout().dp, " has ", topology_.dp_node().size(), " on this rank's node (use auto)");
  NodeGroups nodes{.node = &topology_.dp_node(), .cross = &topology_.dp_cross(),
                   .hierarchical = even && c.hierarchical != H::kOff && c.compression == dist::CompressionKind::kNone,
                   .dp_on_node = topology_.members_on_node(topology_.dp()),
                   .edp_on_node = topology_.members_on_node(topology_.edp())};
  if (nodes.hierarchical)
    log_.info("dp reduction: hierarchical, ", topology_.dp_node().size(), " dp ranks per node x ",
              topology_.dp_cross().size(), " nodes");
  reducer_ = std::make_unique<GradReducer>(
      m.params(), ops_, topology_.dp(),
      ReducerOptions{.bucket_mb = c.bucket_mb, .overlap = c.overlap, .zero = cfg_.zero == 1,
                     .compression = {.kind = c.compression, .topk_ratio = c.topk_ratio, .topk_warmup = c.topk_warmup,
                                     .topk_dense_steps = c.topk_dense_steps, .powersgd_rank = c.powersgd_rank,
                                     .seed = cfg_.train.seed},
                     .grad_dtype = c.grad_dtype, .check_local = cfg_.train.rerun_bad_steps},
      topology_.model_parallel().size() > 1 ? &topology_.model_parallel() : nullptr, topology_.tp_rank(),
      topology_.layout().ep > 1 ? &topology_.edp() : nullptr, topology_.layout().ep > 1 ? &topology_.ep() : nullptr,
      nodes);
  // Registered once: the model reports, during the last micro-batch's backward, from where on
  // its gradients are final, and those buckets start reducing.
  if (c.overlap) m.set_grad_ready_hook([reducer = reducer_.get()](int64_t offset) { reducer->grads_final_from(offset); });
  Tensor tied = m.tied_embedding_grad();
  if (tied.defined() && topology_.embedding()) reducer_->tie_across_stages(tied, *topology_.embedding());
  return *reducer_;
}

AdamW& RunBuilder::optimizer() {
  if (optimizer_) return *optimizer_;
  GradReducer& r = reducer();
  optimizer_ = std::make_unique<AdamW>(model().params(), ops_, cfg_.train, r.optimizer_segments());
  // Top-k after a dense start: Adam's second moment is frozen where the sparse phase begins.
  if (r.compressor() && cfg_.comm.compression == dist::CompressionKind::kTopK)
    optimizer_->freeze_variance_after(cfg_.comm.topk_dense_steps);
  return *optimizer_;
}

LossScaler& RunBuilder::scaler() {
  if (!scaler_) scaler_ = std::make_unique<LossScaler>(cfg_.train.loss_scale, cfg_.train.precision == DType::kF16);
  return *scaler_;
}

LisaSwitch* RunBuilder::lisa() {
  if (!lisa_ && cfg_.lisa.enabled)
    lisa_ = std::make_unique<LisaSwitch>(cfg_.lisa, cfg_.model.layers, cfg_.train.seed, cfg_.model.tie_embeddings,
                                         model().params(), optimizer(), log_);
  return lisa_.get();
}

TrainingStep& RunBuilder::step() {
  if (!step_)
    step_ = std::make_unique<TrainingStep>(cfg_.train, model(), pipeline(), reducer(), optimizer(), scaler(), topology_,
                                           lisa(), hooks_);
  return *step_;
}

PrivateTraining* RunBuilder::privacy() {
  if (!cfg_.privacy.enabled) return nullptr;
  if (!privacy_)
    privacy_ = std::make_unique<PrivateTraining>(cfg_, train_data(), step(), model(), pipeline(), reducer(), scaler(),
                                                 topology_);
  return privacy_.get();
}

StepResult RunBuilder::train_step(int64_t step) {
  if (PrivateTraining* private_steps = privacy()) return private_steps->run(step);
  DataSource& data = train_data();
  Stopwatch watch;
  const std::vector<data::Batch>& batches = data.load(step);
  const data::GlobalBatchStats& stats = data.global_batch_stats(step);
  const double data_s = watch.seconds();
  StepResult r = this->step().run(step, batches, stats);
  r.sections.data = data_s;
  return r;
}

Checkpointer& RunBuilder::checkpointer() {
  if (!checkpointer_) {
    checkpointer_ = std::make_unique<Checkpointer>(cfg_, topology_, model(), ops_, log_, &optimizer(), hooks_);
    checkpointer_->set_compressor(reducer().compressor(), cfg_.comm.compression);  // error-feedback state
  }
  return *checkpointer_;
}

Checkpointer& RunBuilder::weights_reader() {
  if (!weights_reader_)
    weights_reader_ = std::make_unique<Checkpointer>(cfg_, topology_, model(), ops_, log_, /*optimizer=*/nullptr);
  return *weights_reader_;
}

RunEvaluation& RunBuilder::evaluation() {
  if (!evaluation_) evaluation_ = std::make_unique<RunEvaluation>(cfg_, topology_, model(), pipeline(), log_);
  return *evaluation_;
}

void RunBuilder::load_initial_weights() {
  model::GPTModel& m = model();
  if (!cfg_.init_from.empty()) {
    if (interop::is_hf_model_dir(cfg_.init_from)) interop::load_hf_model(m.params(), ops_, m.config(), cfg_.init_from);
    else (optimizer_ ? checkpointer() : weights_reader()).load_model(cfg_.init_from, /*adapters=*/false);
    const std::string tokenizer = interop::model_tokenizer_path(cfg_.init_from);
    log_.info("initialised from ", cfg_.init_from, tokenizer.empty() ? "" : "; its tokenizer: " + tokenizer);
  }
  if (!cfg_.lora_init_from.empty()) {
    interop::load_peft_adapter(m.params(), ops_, m.config(), cfg_.lora_init_from);
    log_.info("LoRA adapters from ", cfg_.lora_init_from);
  }
}

}  // namespace trident::train
