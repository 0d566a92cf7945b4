// The configuration's sections read from the resolved strings: each reader converts its keys
// and checks the rules within its section; to_run_config then checks the rules across them.
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <thread>

#include "config_values.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/interop/model_keys.hpp"
#include "trident/plan/cluster.hpp"
#include "trident/train/eval/likelihood_task.hpp"
#include "trident/train/eval/perturb.hpp"
#include "trident/train/eval/task_metrics.hpp"
#include "trident/train/optim/loss_scaler.hpp"

namespace trident::cli {

namespace {
enum class PathKind { kNone, kFile, kDirectory };

// What a configured path names ("" and missing: none). A path the file system refuses (a name
// too long, a component that is a file, no permission) is a ConfigError naming the key.
PathKind path_kind(const char* key, const std::string& path) {
  if (path.empty()) return PathKind::kNone;
  std::error_code ec;
  const std::filesystem::file_status st = std::filesystem::status(path, ec);
  if (ec && ec != std::errc::no_such_file_or_directory)
    throw ConfigError(detail::concat(key, " = ", path, ": ", ec.message()));
  if (!std::filesystem::exists(st)) return PathKind::kNone;
  return std::filesystem::is_directory(st) ? PathKind::kDirectory : PathKind::kFile;
}

}  // namespace

model::ModelConfig read_model_section(const Values& v) {
  return interop::read_model_keys([&v](const std::string& key) -> const std::string& { return v.str(key); });
}

namespace {

// TRIDENT_NODE_SIZE=k: nodes of k consecutive ranks (models several nodes on one machine);
// unset: the ranks that share memory form a node (0).
int node_size_override() {
  const char* text = std::getenv("TRIDENT_NODE_SIZE");
  if (!text || !*text) return 0;
  char* end = nullptr;
  const long k = std::strtol(text, &end, 10);
  TRIDENT_CONFIG_CHECK(*end == '\0' && k >= 1 && k <= 1 << 20, "TRIDENT_NODE_SIZE must be a rank count >= 1 (got '",
                       text, "')");
  return static_cast<int>(k);
}

void read_parallel_section(const Values& v, train::RunConfig& c) {
  c.layout = {.dp = v.int32("parallel.dp"), .tp = v.int32("parallel.tp"), .pp = v.int32("parallel.pp"),
              .ep = v.int32("parallel.ep"), .node_size = node_size_override()};
  TRIDENT_CONFIG_CHECK(c.layout.ep >= 1, "parallel.ep must be >= 1 (got ", c.layout.ep, ")");
  c.microbatches = v.int32("parallel.microbatches");
  c.zero = v.int32("parallel.zero");
  c.schedule = train::schedule_from_name(v.str("parallel.schedule"));
  c.virtual_stages = v.int32("parallel.virtual_stages");
  c.partition = train::partition_from_name(v.str("parallel.partition"));
  c.sequence_parallel = v.boolean("parallel.sequence_parallel");
  TRIDENT_CONFIG_CHECK(c.zero == 0 || c.zero == 1, "parallel.zero must be 0 or 1 (got ", c.zero, ")");
}

// "auto" as -1 (resolved by resolve_topk_schedule once train.steps is known), else a count.
int auto_or_count(const Values& v, const std::string& key) {
  return v.str(key) == "auto" ? -1 : v.int32(key);
}

train::CommConfig read_comm_section(const Values& v) {
  train::CommConfig comm = {.bucket_mb = v.number("comm.bucket_mb"), .overlap = v.boolean("comm.overlap"),
                            .timeout_s = v.number("comm.timeout_s"),
                            .compression = dist::compression_from_name(v.str("comm.compression")),
                            .topk_ratio = v.number("comm.topk_ratio"),
                            .topk_warmup = auto_or_count(v, "comm.topk_warmup"),
                            .topk_dense_steps = auto_or_count(v, "comm.topk_dense_steps"),
                            .powersgd_rank = v.int32("comm.powersgd_rank")};
  TRIDENT_CONFIG_CHECK(comm.topk_warmup >= -1, "comm.topk_warmup must be auto or >= 0 (got ", comm.topk_warmup, ")");
  TRIDENT_CONFIG_CHECK(comm.topk_dense_steps >= -1, "comm.topk_dense_steps must be auto or >= 0 (got ",
                       comm.topk_dense_steps, ")");
  TRIDENT_CONFIG_CHECK(comm.topk_dense_steps <= 0 || comm.compression == dist::CompressionKind::kTopK,
                       "comm.topk_dense_steps applies to comm.compression = topk only");
  TRIDENT_CONFIG_CHECK(comm.topk_ratio > 0 && comm.topk_ratio <= 1, "comm.topk_ratio must be in (0, 1] (got ",
                       comm.topk_ratio, ")");
  TRIDENT_CONFIG_CHECK(comm.powersgd_rank >= 1 && comm.powersgd_rank <= 64, "comm.powersgd_rank must be in 1..64 (got ",
                       comm.powersgd_rank, ")");
  const std::string grad_dtype = v.str("comm.grad_dtype");
  TRIDENT_CONFIG_CHECK(grad_dtype == "fp32" || grad_dtype == "bf16" || grad_dtype == "fp16",
                       "comm.grad_dtype must be fp32, bf16 or fp16 (got '", grad_dtype, "')");
  comm.grad_dtype = dtype_from_name(grad_dtype);
  TRIDENT_CONFIG_CHECK(comm.grad_dtype == DType::kF32 || comm.compression == dist::CompressionKind::kNone,
                       "comm.grad_dtype = ", grad_dtype, " and comm.compression both shrink the gradient traffic: choose one");
  const std::string hierarchical = v.str("comm.hierarchical");
  TRIDENT_CONFIG_CHECK(hierarchical == "auto" || hierarchical == "on" || hierarchical == "off",
                       "comm.hierarchical must be auto, on or off (got '", hierarchical, "')");
  using H = train::CommConfig::Hierarchical;
  comm.hierarchical = hierarchical == "on" ? H::kOn : hierarchical == "off" ? H::kOff : H::kAuto;
  TRIDENT_CONFIG_CHECK(comm.hierarchical != H::kOn || comm.compression == dist::CompressionKind::kNone,
                       "comm.hierarchical = on reduces uncompressed buckets only; comm.compression = ",
                       v.str("comm.compression"), " reduces flat (use auto or off)");
  TRIDENT_CONFIG_CHECK(comm.timeout_s >= 0, "comm.timeout_s must be >= 0 (0 turns the watchdog off)");
  TRIDENT_CONFIG_CHECK(comm.bucket_mb > 0, "comm.bucket_mb must be > 0 (got ", comm.bucket_mb, ")");
  return comm;
}

train::TrainConfig read_train_section(const Values& v) {
  train::TrainConfig t;
  t.steps = v.integer("train.steps");
  t.micro_batch = v.int32("train.micro_batch");
  t.global_batch = v.int32("train.global_batch");
  t.lr = v.number("train.lr");
  t.min_lr = v.number("train.min_lr");
  t.warmup = v.integer("train.warmup");
  t.decay = train::decay_from_name(v.str("train.decay"));
  t.weight_decay = v.number("train.weight_decay");
  t.beta1 = v.number("train.beta1");
  t.beta2 = v.number("train.beta2");
  t.eps = v.number("train.eps");
  t.clip = v.number("train.clip");
  t.seed = static_cast<uint64_t>(v.integer("train.seed"));
  t.precision_auto = v.str("train.precision") == "auto";
  t.precision = t.precision_auto ? DType::kBF16 : dtype_from_name(v.str("train.precision"));
  TRIDENT_CONFIG_CHECK(t.precision == DType::kF32 || t.precision == DType::kBF16 || t.precision == DType::kF16,
                       "train.precision must be fp32, bf16, fp16 or auto (got ", v.str("train.precision"), ")");
  t.loss_scale = v.str("train.loss_scale");
  (void)train::LossScaler(t.loss_scale, /*enabled=*/true);  // checks the value
  t.threads = v.int32("train.threads");
  t.backend = v.str("train.backend");
  t.max_bad_steps = v.int32("train.max_bad_steps");
  t.replica_check_interval = v.int32("train.replica_check_interval");
  t.rerun_bad_steps = v.boolean("train.rerun_bad_steps");
  t.straggler_exit = v.int32("train.straggler_exit");
  TRIDENT_CONFIG_CHECK(t.straggler_exit >= 0, "train.straggler_exit must be >= 0 (0 = never), got ", t.straggler_exit);
  TRIDENT_CONFIG_CHECK(t.steps >= 1, "train.steps must be >= 1");
  TRIDENT_CONFIG_CHECK(t.warmup >= 0, "train.warmup must be >= 0");
  TRIDENT_CONFIG_CHECK(t.lr > 0 && t.min_lr >= 0 && t.min_lr <= t.lr,
                       "train.lr must be > 0 and 0 <= train.min_lr <= train.lr");
  TRIDENT_CONFIG_CHECK(t.beta1 >= 0 && t.beta1 < 1 && t.beta2 >= 0 && t.beta2 < 1,
                       "train.beta1 and train.beta2 must be in [0, 1)");
  TRIDENT_CONFIG_CHECK(t.eps > 0, "train.eps must be > 0");
  TRIDENT_CONFIG_CHECK(t.clip >= 0, "train.clip must be >= 0");
  TRIDENT_CONFIG_CHECK(t.weight_decay >= 0, "train.weight_decay must be >= 0");
  // More threads than the machine has cores only slows a rank down (and far more fails).
  const int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  TRIDENT_CONFIG_CHECK(t.threads >= 0 && t.threads <= cores, "train.threads must be in [0, ", cores,
                       "] (this machine's cores; 0 = share them among the node's ranks), got ", t.threads);
  TRIDENT_CONFIG_CHECK(t.backend == "auto" || t.backend == "cpu" || t.backend == "cuda",
                       "train.backend must be auto, cpu or cuda (got '", t.backend, "')");
  TRIDENT_CONFIG_CHECK(t.max_bad_steps >= 1, "train.max_bad_steps must be >= 1");
  TRIDENT_CONFIG_CHECK(t.replica_check_interval >= 0, "train.replica_check_interval must be >= 0 (0 = off), got ",
                       t.replica_check_interval);
  return t;
}

// [data], [checkpoint] and [log]: where the run reads and writes.
void read_io_sections(const Values& v, train::RunConfig& c) {
  c.data = {.train = v.str("data.train"), .valid = v.str("data.valid"), .packing = v.boolean("data.packing"),
            .bucket = v.boolean("data.bucket"), .truncate = data::truncate_from_name(v.str("data.truncate")),
            .mix = data::parse_mix(v.str("data.train"), v.str("data.mix_alpha"), v.str("data.mix_stages"),
                                   v.str("data.max_repeat"), v.str("data.mix_change"))};
  data::valid_prefixes(c.data.valid);  // its errors at start, not at the first evaluation
  TRIDENT_CONFIG_CHECK(!c.data.bucket || !c.data.packing,
                       "data.bucket = true groups unpacked rows by length: it needs data.packing = false");
  c.checkpoint = {.dir = v.str("checkpoint.dir"), .interval = v.int32("checkpoint.interval"),
                  .keep = v.int32("checkpoint.keep"), .async = v.boolean("checkpoint.async"),
                  .resume = v.str("checkpoint.resume"), .local_dir = v.str("checkpoint.local_dir"),
                  .local_interval = v.int32("checkpoint.local_interval"),
                  .local_replicas = v.int32("checkpoint.local_replicas")};
  TRIDENT_CONFIG_CHECK(c.checkpoint.local_interval >= 0, "checkpoint.local_interval must be >= 0 (got ",
                       c.checkpoint.local_interval, ")");
  TRIDENT_CONFIG_CHECK(c.checkpoint.local_interval == 0 || !c.checkpoint.local_dir.empty(),
                       "checkpoint.local_interval = ", c.checkpoint.local_interval,
                       " needs checkpoint.local_dir (node-local storage, e.g. /tmp or $SLURM_TMPDIR)");
  TRIDENT_CONFIG_CHECK(c.checkpoint.local_replicas == 0 || c.checkpoint.local_replicas == 1,
                       "checkpoint.local_replicas must be 0 or 1 (got ", c.checkpoint.local_replicas, ")");
  TRIDENT_CONFIG_CHECK(c.checkpoint.local_replicas == 0 || !c.checkpoint.local_dir.empty(),
                       "checkpoint.local_replicas = 1 needs checkpoint.local_dir");
  if (!c.checkpoint.local_dir.empty())
    TRIDENT_CONFIG_CHECK(path_kind("checkpoint.local_dir", c.checkpoint.local_dir) != PathKind::kFile,
                         "checkpoint.local_dir = ", c.checkpoint.local_dir, " is a file, not a directory");
  TRIDENT_CONFIG_CHECK(c.checkpoint.interval >= 0, "checkpoint.interval must be >= 0");
  TRIDENT_CONFIG_CHECK(c.checkpoint.keep >= 0, "checkpoint.keep must be >= 0 (0 keeps all)");
  TRIDENT_CONFIG_CHECK(!c.checkpoint.resume.empty(), "checkpoint.resume must be auto, none or a checkpoint path");
  const std::string on_error = v.str("checkpoint.on_error");
  TRIDENT_CONFIG_CHECK(on_error == "fail" || on_error == "warn", "checkpoint.on_error must be fail or warn (got '",
                       on_error, "')");
  c.checkpoint.warn_on_error = on_error == "warn";
  c.log = {.run_dir = v.str("log.run_dir"), .interval = v.int32("log.interval"),
           .eval_interval = v.int32("log.eval_interval"), .eval_batches = v.int32("log.eval_batches"),
           .overwrite = v.boolean("log.overwrite"), .tensorboard = v.boolean("log.tensorboard"),
           .straggler_interval = v.int32("log.straggler_interval"),
           .straggler_threshold = v.number("log.straggler_threshold")};
  TRIDENT_CONFIG_CHECK(c.log.straggler_interval >= 0, "log.straggler_interval must be >= 0 (0 = off), got ",
                       c.log.straggler_interval);
  TRIDENT_CONFIG_CHECK(c.log.straggler_threshold > 0 && c.log.straggler_threshold < 1,
                       "log.straggler_threshold must be in (0, 1), got ", c.log.straggler_threshold);
  TRIDENT_CONFIG_CHECK(c.log.eval_interval >= 0, "log.eval_interval must be >= 0 (0: no evaluation)");
  TRIDENT_CONFIG_CHECK(c.log.eval_batches >= 1, "log.eval_batches must be >= 1");
  TRIDENT_CONFIG_CHECK(c.log.interval >= 1, "log.interval must be >= 1");
  TRIDENT_CONFIG_CHECK(!c.log.run_dir.empty(), "log.run_dir must not be empty");
  // Paths are checked for their kind before any work, naming the key.
  const PathKind run_dir = path_kind("log.run_dir", c.log.run_dir), checkpoint_dir = path_kind("checkpoint.dir", c.checkpoint.dir);
  TRIDENT_CONFIG_CHECK(run_dir != PathKind::kFile, "log.run_dir = ", c.log.run_dir, " exists and is not a directory");
  TRIDENT_CONFIG_CHECK(checkpoint_dir != PathKind::kFile, "checkpoint.dir = ", c.checkpoint.dir,
                       " exists and is not a directory");
  const std::string& resume = c.checkpoint.resume;
  if (resume == "auto" || resume == "none") return;
  const PathKind kind = path_kind("checkpoint.resume", resume);
  TRIDENT_CONFIG_CHECK(kind != PathKind::kDirectory, "checkpoint.resume: ", resume,
                       " is a directory, not a checkpoint file (auto, none or a checkpoint .h5 file)");
  TRIDENT_CONFIG_CHECK(kind == PathKind::kFile, "checkpoint.resume: ", "checkpoint ", resume,
                       " not found (auto, none or a checkpoint .h5 file)");
}

train::EvalConfig read_eval_section(const Values& v, const model::ModelConfig& m) {
  train::EvalConfig e = {.task = v.str("eval.task"), .prompt_template = v.str("eval.template"),
                         .tokenizer = v.str("eval.tokenizer"), .max_new_tokens = v.int32("eval.max_new_tokens"),
                         .examples = v.int32("eval.examples"), .batch = v.int32("eval.batch"),
                         .kind = v.str("eval.kind"), .perturb = train::parse_perturbations(v.str("eval.perturb")),
                         .perturb_rate = v.number("eval.perturb_rate"),
                         .perturb_seed = static_cast<uint64_t>(v.integer("eval.perturb_seed")),
                         .ood = v.str("eval.ood"), .ood_samples = v.int32("eval.ood_samples"),
                         .metrics = v.str("eval.metrics"), .rouge_stem = v.boolean("eval.rouge_stem"),
                         .predictions = v.boolean("eval.predictions")};
  const bool default_metrics = train::parse_task_metrics(e.metrics) == train::parse_task_metrics("em,f1");
  TRIDENT_CONFIG_CHECK(e.examples >= 0, "eval.examples must be >= 0 (0: all)");
  TRIDENT_CONFIG_CHECK(e.kind == "auto" || e.kind == "generate" || e.kind == "choice" || e.kind == "rolling",
                       "eval.kind must be auto, generate, choice or rolling (got '", e.kind, "')");
  TRIDENT_CONFIG_CHECK(e.perturb_rate > 0 && e.perturb_rate <= 1, "eval.perturb_rate must be in (0, 1] (got ",
                       e.perturb_rate, ")");
  TRIDENT_CONFIG_CHECK(e.ood_samples >= 2, "eval.ood_samples must be >= 2");
  TRIDENT_CONFIG_CHECK(e.perturb.empty() || !e.task.empty(), "eval.perturb needs eval.task (the examples it perturbs)");
  TRIDENT_CONFIG_CHECK(e.batch >= 1, "eval.batch must be >= 1");
  if (!e.task.empty()) {
    TRIDENT_CONFIG_CHECK(path_kind("eval.task", e.task) == PathKind::kFile, "eval.task: no such file '", e.task, "'");
    const train::TaskKind kind = train::resolve_task_kind(e.kind, e.task);
    e.kind = train::task_kind_name(kind);
    TRIDENT_CONFIG_CHECK(kind != train::TaskKind::kGenerate || (e.max_new_tokens >= 1 && e.max_new_tokens < m.seq_len),
                         "eval.max_new_tokens must be in [1, model.seq_len = ", m.seq_len, ") (got ", e.max_new_tokens,
                         ")");
    TRIDENT_CONFIG_CHECK(kind == train::TaskKind::kGenerate || default_metrics,
                         "eval.metrics applies to generate tasks; a ", train::task_kind_name(kind),
                         " task reports its own scores (got eval.metrics = ", e.metrics, ")");
    TRIDENT_CONFIG_CHECK(e.perturb.empty() || kind != train::TaskKind::kRolling,
                         "eval.perturb applies to choice and generate tasks, not to rolling perplexity");
  }
  return e;
}

// comm.topk_warmup / topk_dense_steps = auto: with top-k, the recipe of tests/cli/compression.sh
// scaled to the run (300 steps: dense 40, warm-up 200), i.e. dense 2/15 and warm-up 2/3 of
// train.steps (no dense steps under LISA, which they do not combine with); 0 otherwise.
void resolve_topk_schedule(const Values& v, train::RunConfig& c) {
  const bool topk = c.comm.compression == dist::CompressionKind::kTopK;
  const int64_t steps = c.train.steps;
  if (c.comm.topk_warmup < 0) c.comm.topk_warmup = topk ? int(steps * 2 / 3) : 0;
  if (c.comm.topk_dense_steps < 0) c.comm.topk_dense_steps = topk && !v.boolean("lisa.enabled") ? int(steps * 2 / 15) : 0;
}

train::LisaConfig read_lisa_section(const Values& v, const train::RunConfig& c) {
  const train::LisaConfig lisa = {.enabled = v.boolean("lisa.enabled"), .layers = v.int32("lisa.layers"),
                                  .interval = v.int32("lisa.interval"), .embedding = v.boolean("lisa.embedding"),
                                  .head = v.boolean("lisa.head")};
  if (lisa.enabled) {
    (void)train::LisaSchedule(lisa, c.model.layers, 0);  // checks layers and interval
    TRIDENT_CONFIG_CHECK(!c.model.lora.enabled(), "lisa.enabled and lora.enabled: choose one way of fine-tuning");
    TRIDENT_CONFIG_CHECK(!c.model.moe.enabled(), "lisa.enabled with moe.experts > 0 is not supported (LISA samples "
                         "whole dense blocks); fine-tune MoE models fully or with LoRA");
    // A block drawn again restarts its moments from zero: there is no variance to freeze.
    TRIDENT_CONFIG_CHECK(c.comm.topk_dense_steps == 0, "lisa.enabled and comm.topk_dense_steps: not combinable");
  }
  return lisa;
}

train::PrivacyConfig read_privacy_section(const Values& v, const train::RunConfig& c) {
  train::PrivacyConfig p = {.enabled = v.boolean("privacy.enabled"), .clip = v.number("privacy.clip"),
                            .noise_multiplier = v.number("privacy.noise_multiplier"),
                            .target_epsilon = v.number("privacy.target_epsilon"), .delta = v.number("privacy.delta")};
  const std::string unit = v.str("privacy.unit"), sampling = v.str("privacy.sampling");
  TRIDENT_CONFIG_CHECK(unit == "document" || unit == "row", "privacy.unit must be document or row (got '", unit, "')");
  TRIDENT_CONFIG_CHECK(sampling == "poisson" || sampling == "shuffle", "privacy.sampling must be poisson or shuffle (got '",
                       sampling, "')");
  p.unit = unit == "row" ? train::PrivacyUnit::kRow : train::PrivacyUnit::kDocument;
  p.sampling = sampling == "shuffle" ? train::PrivacySampling::kShuffle : train::PrivacySampling::kPoisson;
  const std::string accountant = v.str("privacy.accountant");
  TRIDENT_CONFIG_CHECK(accountant == "prv" || accountant == "rdp", "privacy.accountant must be prv or rdp (got '",
                       accountant, "')");
  p.accountant = train::privacy::parse_accountant(accountant);
  if (!p.enabled) return p;
  TRIDENT_CONFIG_CHECK(std::isfinite(p.clip) && p.clip > 0, "privacy.clip must be > 0 (got ", p.clip, ")");
  TRIDENT_CONFIG_CHECK(std::isfinite(p.noise_multiplier) && p.noise_multiplier >= 0,
                       "privacy.noise_multiplier must be >= 0 (got ", p.noise_multiplier, ")");
  TRIDENT_CONFIG_CHECK(std::isfinite(p.target_epsilon) && p.target_epsilon >= 0,
                       "privacy.target_epsilon must be >= 0 (got ", p.target_epsilon, ")");
  TRIDENT_CONFIG_CHECK(p.noise_multiplier > 0 || p.target_epsilon > 0,
                       "privacy.enabled needs privacy.noise_multiplier or privacy.target_epsilon (or both: a given "
                       "sigma with a budget)");
  TRIDENT_CONFIG_CHECK(p.delta >= 0 && p.delta < 1, "privacy.delta must be in [0, 1) (0: 1 / N; got ", p.delta, ")");
  const model::ModelConfig& m = c.model;
  // What the per-unit gradient norms do not cover (model/unit_gradients.hpp).
  TRIDENT_CONFIG_CHECK(!m.moe.enabled(), "privacy.enabled with moe.experts > 0 is not supported yet (per-unit norms "
                       "of routed experts)");
  TRIDENT_CONFIG_CHECK(!c.sequence_parallel, "privacy.enabled with parallel.sequence_parallel is not supported (a "
                       "unit's rows would be split over the tensor-parallel group)");
  TRIDENT_CONFIG_CHECK(!m.tie_embeddings || m.lora.enabled(), "privacy.enabled with a trainable tied token table "
                       "(model.tie_embeddings = true) is not supported: its two uses' per-unit gradients do not add in "
                       "norm; fine-tune with lora.enabled or set model.tie_embeddings = false");
  TRIDENT_CONFIG_CHECK(!m.qk_norm || m.lora.enabled(), "privacy.enabled with trainable q/k norms (model.qk_norm) is "
                       "not supported; fine-tune with lora.enabled");
  TRIDENT_CONFIG_CHECK(c.comm.compression == dist::CompressionKind::kNone,
                       "privacy.enabled with comm.compression is not supported (the clipped sum would not have "
                       "sensitivity privacy.clip)");
  return p;
}

// The rules across sections: the layout against the model, the world and the batch.
void check_across_sections(train::RunConfig& c, int world_size) {
  const model::ModelConfig& m = c.model;
  train::TrainConfig& t = c.train;
  const dist::Layout& L = c.layout;
  TRIDENT_CONFIG_CHECK(c.lora_init_from.empty() || m.lora.enabled(), "lora.init_from needs lora.enabled = true");
  TRIDENT_CONFIG_CHECK(c.lora_init_from.empty() || path_kind("lora.init_from", c.lora_init_from + "/adapter_config.json") == PathKind::kFile,
                       "lora.init_from: ", c.lora_init_from, " has no adapter_config.json (not a PEFT adapter directory)");
  TRIDENT_CONFIG_CHECK(!c.data.bucket || L.pp == 1,
                       "data.bucket = true cuts micro-batches to their longest row, which pipeline stages do not "
                       "support yet: it needs parallel.pp = 1");
  TRIDENT_CONFIG_CHECK(!c.privacy.enabled || c.data.mix.single(), "privacy.enabled with a data mixture (several "
                       "sources in data.train, or data.mix_stages) is not supported: a private run samples its units "
                       "from one source");
  TRIDENT_CONFIG_CHECK(c.eval.ood.empty() || !c.data.valid.empty(),
                       "eval.ood needs data.valid: the in-distribution documents it is compared with");
  // A re-run repeats the reductions; compression's error feedback would have moved on, and a
  // private step's noise pass is its own schedule.
  TRIDENT_CONFIG_CHECK(!t.rerun_bad_steps || c.comm.compression == dist::CompressionKind::kNone,
                       "train.rerun_bad_steps with comm.compression is not supported (the error-feedback residuals "
                       "would not be those of the first pass)");
  TRIDENT_CONFIG_CHECK(t.straggler_exit == 0 || c.log.straggler_interval > 0,
                       "train.straggler_exit needs the straggler checks (log.straggler_interval > 0)");
  TRIDENT_CONFIG_CHECK(!t.rerun_bad_steps || !c.privacy.enabled,
                       "train.rerun_bad_steps with privacy.enabled is not supported");
  TRIDENT_CONFIG_CHECK(c.log.eval_interval == 0 || !c.data.valid.empty() || !c.eval.task.empty(),
                       "log.eval_interval = ", c.log.eval_interval,
                       " needs data.valid (a validation shard prefix) or eval.task (a JSONL task)");
  TRIDENT_CONFIG_CHECK(L.dp >= 1 && L.tp >= 1 && L.pp >= 1, "parallel.dp, parallel.tp and parallel.pp must be >= 1");
  m.check_tensor_parallel(L.tp);
  if (L.ep > 1) {
    TRIDENT_CONFIG_CHECK(m.moe.enabled(), "parallel.ep = ", L.ep, " needs a mixture-of-experts model (moe.experts > 0)");
    TRIDENT_CONFIG_CHECK(L.dp % L.ep == 0, "parallel.ep = ", L.ep, " must divide parallel.dp = ", L.dp,
                         " (expert parallelism splits the data-parallel ranks)");
    TRIDENT_CONFIG_CHECK(m.moe.experts % L.ep == 0, "moe.experts = ", m.moe.experts,
                         " must be divisible by parallel.ep = ", L.ep);
    TRIDENT_CONFIG_CHECK(c.comm.compression == dist::CompressionKind::kNone,
                         "comm.compression with parallel.ep > 1 is not supported (expert gradients reduce over their "
                         "own group)");
    TRIDENT_CONFIG_CHECK(c.eval.task.empty() || c.eval.kind != "generate", "eval.task (generation) with parallel.ep > 1 is not supported yet: each "
                         "rank decodes its own prompts; evaluate the task with parallel.ep = 1");
  }
  TRIDENT_CONFIG_CHECK(c.virtual_stages >= 1, "parallel.virtual_stages must be >= 1");
  TRIDENT_CONFIG_CHECK(c.virtual_stages == 1 || c.schedule == train::ScheduleKind::kInterleaved,
                       "parallel.virtual_stages = ", c.virtual_stages, " needs parallel.schedule = interleaved");
  TRIDENT_CONFIG_CHECK(c.schedule != train::ScheduleKind::kInterleaved || c.virtual_stages > 1 || L.pp == 1,
                       "parallel.schedule = interleaved needs parallel.virtual_stages > 1");
  if (c.partition == train::Partition::kBalancedSublayer)
    TRIDENT_CONFIG_CHECK(2 * m.layers >= L.pp * c.virtual_stages, "model.layers = ", m.layers, " has ",
                         2 * m.layers, " halves (attention, MLP), fewer than parallel.pp * parallel.virtual_stages = ",
                         L.pp * c.virtual_stages);
  else
    TRIDENT_CONFIG_CHECK(m.layers >= L.pp * c.virtual_stages, "model.layers = ", m.layers,
                         " must be >= parallel.pp * parallel.virtual_stages = ", L.pp * c.virtual_stages);
  TRIDENT_CONFIG_CHECK(world_size == L.world(), "parallel.dp * parallel.tp * parallel.pp = ", L.dp, " * ", L.tp,
                       " * ", L.pp, " = ", L.world(), " but the job has ", world_size,
                       " ranks (world size must equal dp*tp*pp)");
  TRIDENT_CONFIG_CHECK(t.global_batch >= 1, "train.global_batch must be >= 1");
  if (c.microbatches > 0) {
    TRIDENT_CONFIG_CHECK(t.global_batch % (L.dp * c.microbatches) == 0, "train.global_batch = ", t.global_batch,
                         " must be divisible by parallel.dp * parallel.microbatches = ", L.dp * c.microbatches);
    t.micro_batch = t.global_batch / (L.dp * c.microbatches);
  }
  TRIDENT_CONFIG_CHECK(t.micro_batch >= 1, "train.micro_batch must be >= 1");
  TRIDENT_CONFIG_CHECK(t.global_batch % (t.micro_batch * L.dp) == 0, "train.global_batch = ", t.global_batch,
                       " must be divisible by train.micro_batch * parallel.dp = ", t.micro_batch, " * ", L.dp);
  if (c.schedule == train::ScheduleKind::kInterleaved && L.pp > 1) {
    const int micro_batches = t.global_batch / (t.micro_batch * L.dp);
    TRIDENT_CONFIG_CHECK(micro_batches % L.pp == 0, "parallel.schedule = interleaved needs the micro-batches per step (",
                         micro_batches, " = global_batch / (micro_batch * dp)) divisible by parallel.pp = ", L.pp);
  }
  if (c.sequence_parallel) {
    TRIDENT_CONFIG_CHECK(L.tp > 1, "parallel.sequence_parallel = true needs parallel.tp > 1");
    TRIDENT_CONFIG_CHECK(int64_t(t.micro_batch) * m.seq_len % L.tp == 0,
                         "parallel.sequence_parallel: micro_batch * seq_len = ", int64_t(t.micro_batch) * m.seq_len,
                         " must be divisible by parallel.tp = ", L.tp);
  }
}

}  // namespace

train::RunConfig to_run_config(const Values& v, int world_size) {
  train::RunConfig c;
  c.model = read_model_section(v);
  c.init_from = v.str("model.init_from");
  c.lora_init_from = v.str("lora.init_from");
  read_parallel_section(v, c);
  c.recompute = model::recompute_from_name(v.str("train.recompute"));
  c.comm = read_comm_section(v);
  c.train = read_train_section(v);
  read_io_sections(v, c);
  c.eval = read_eval_section(v, c.model);
  resolve_topk_schedule(v, c);
  c.lisa = read_lisa_section(v, c);
  c.privacy = read_privacy_section(v, c);
  c.security = read_security_section(v);
  const std::string layout = v.str("parallel.layout");
  TRIDENT_CONFIG_CHECK(layout == "manual" || layout == "auto", "parallel.layout must be manual or auto (got '", layout,
                       "')");
  const std::vector<std::string> clusters = plan::cluster_preset_names();
  TRIDENT_CONFIG_CHECK(std::find(clusters.begin(), clusters.end(), v.str("parallel.cluster")) != clusters.end(),
                       "parallel.cluster must be local, a100-80g, h100-sxm or h200 (got '", v.str("parallel.cluster"),
                       "')");
  if (layout == "auto")
    choose_auto_layout(v, c, world_size, [world_size](const train::RunConfig& trial) {
      train::RunConfig copy = trial;
      try {
        check_across_sections(copy, world_size);
        return true;
      } catch (const ConfigError&) {
        return false;
      }
    });
  check_across_sections(c, world_size);
  c.resolved_ini = resolved_ini(v);
  return c;
}

}  // namespace trident::cli
