// Every configuration key with its default and a line of help (docs/design.md section 5).
#include "trident/cli/config_parser.hpp"

#include "trident/interop/model_keys.hpp"

namespace trident::cli {

namespace {

// The keys of interop::model_keys() in `section` ("model.", "moe.", "lora."), in its order.
std::vector<ConfigKey> model_section_keys(const char* section) {
  std::vector<ConfigKey> out;
  for (const interop::ModelKey& k : interop::model_keys())
    if (std::string(k.name).rfind(section, 0) == 0) out.push_back({k.name, k.fallback, k.help});
  return out;
}

// [model], then the parallel and training keys, [moe], [lora] and the rest.
std::vector<ConfigKey> all_keys() {
  std::vector<ConfigKey> keys = model_section_keys("model.");
  const std::vector<ConfigKey> run_keys = {
      {"parallel.dp", "1", "data-parallel ranks"},
      {"parallel.tp", "1", "tensor-parallel ranks (heads, kv_heads and ffn_hidden divisible by it; vocab padded to a multiple)"},
      {"parallel.pp", "1", "pipeline stages"},
      {"parallel.ep", "1", "expert-parallel ranks: each MoE layer's experts split over ep of the dp ranks (ep divides dp and moe.experts)"},
      {"parallel.microbatches", "0", "micro-batches per step per dp rank; when set, micro_batch = global_batch / (dp * microbatches)"},
      {"parallel.schedule", "1f1b", "pipeline schedule: gpipe | 1f1b | interleaved"},
      {"parallel.virtual_stages", "1", "model chunks per pipeline rank (interleaved schedule)"},
      {"parallel.zero", "0", "ZeRO stage: 0 | 1 (optimizer state sharded over the dp group)"},
      {"parallel.sequence_parallel", "false", "split norm/dropout/residual regions over the tp ranks' rows (needs tp > 1)"},
      {"parallel.partition", "uniform", "layers to stages: uniform | balanced (by per-layer FLOPs, embedding and head included) | balanced_sublayer (a stage may end between a block's attention and its MLP)"},
      {"parallel.layout", "manual", "manual (parallel.dp/tp/pp as given) | auto: the planner picks dp, tp, pp and the micro-batch (<= train.micro_batch) for the job's ranks at start, so a requeued job on more or fewer ranks goes on with the same global batch"},
      {"parallel.cluster", "local", "what parallel.layout = auto plans for: local (this machine, from `trident plan --calibrate`'s file, else nominal CPU figures) | a100-80g | h100-sxm | h200"},
      {"train.steps", "100", "optimizer steps"},
      {"train.micro_batch", "2", "sequences per micro-batch per rank"},
      {"train.global_batch", "16", "sequences per optimizer step over all dp ranks"},
      {"train.lr", "3e-4", "peak learning rate"},
      {"train.min_lr", "3e-5", "learning rate at the end of the decay"},
      {"train.warmup", "10", "linear warmup steps"},
      {"train.decay", "cosine", "decay after warmup: cosine | linear | const"},
      {"train.weight_decay", "0.1", "decoupled weight decay of matmul weights (not norms, biases, embeddings)"},
      {"train.beta1", "0.9", "AdamW beta1"},
      {"train.beta2", "0.95", "AdamW beta2"},
      {"train.eps", "1e-8", "AdamW epsilon"},
      {"train.clip", "1.0", "clip gradients to this global norm (0 = off)"},
      {"train.seed", "1234", "seed of initialisation and data order"},
      {"train.precision", "fp32", "fp32 | bf16 | fp16: GEMM inputs in 16 bits, fp32 accumulation, master weights and state (bf16 keeps bf16 activations but computes GEMMs in fp32 where bf16 GEMMs measure no faster than fp32, saying so) | auto: bf16 where its GEMMs measure faster, else fp32 throughout"},
      {"train.loss_scale", "dynamic", "fp16 loss scaling: dynamic (start 65536, halve on overflow, double after 2000 clean steps) | <number>"},
      {"train.recompute", "none", "activation recompute: none | selective (attention rebuilt in backward) | full (each block rerun)"},
      {"train.threads", "0", "compute threads per rank (0 = cores of the node / ranks on the node)"},
      {"train.backend", "auto", "compute backend: auto (cuda when a GPU is visible, else cpu, saying so) | cpu | cuda; one GPU per rank, chosen by the node-local rank"},
      {"train.max_bad_steps", "5", "stop after this many consecutive non-finite steps"},
      {"train.rerun_bad_steps", "false", "a step whose loss or gradient norm is non-finite, or a loss spike (3x the running mean), runs again with the same data and random streams before its update: the same result again is persistent (skipped or kept as without), a different one transient (the re-run's result is used; logged with the ranks whose own loss or gradients were non-finite; metrics rerun). Each bucket's local gradients are checked before reduction (one read of the gradients)"},
      {"train.straggler_exit", "0", "after N straggler reports in a row naming the same host: checkpoint and exit 4 (jobs/lib.sh requeues the job without that host; 0 = never)"},
      {"train.replica_check_interval", "0", "every N steps and before every checkpoint, hash the parameters each rank holds replicated and compare them across its data-parallel (and expert-data-parallel) group: a rank that differs (silent data corruption) is named with its host, no checkpoint is written from that state and every rank exits 5 (0 = off)"},
  };
  const std::vector<ConfigKey> later_keys = {
      {"lisa.enabled", "false", "LISA: train a few transformer blocks at a time, drawn uniformly every lisa.interval steps (the rest idle, no optimizer state)"},
      {"lisa.layers", "2", "blocks trained at a time"},
      {"lisa.interval", "20", "steps between draws"},
      {"lisa.embedding", "true", "LISA: train the embedding throughout"},
      {"lisa.head", "true", "LISA: train the output head and final norm throughout"},
      {"data.train", "", "training shard prefix (<prefix>.bin + <prefix>.idx, made by trident prep), or a mixture of weight, prefix pairs (0.6 input/data/en 0.3 input/data/code 0.1 input/data/zh: weights normalised, shares of rows, each source named by its prefix's file name), or several prefixes with data.mix_alpha"},
      {"data.mix_alpha", "", "weights of data.train's sources proportional to (tokens)^alpha (temperature sampling; 0 = uniform, 1 = by size); printed at start"},
      {"data.mix_stages", "", "weights from a step on: 2000: 0.4 0.4 0.2; 8000: 0.2 0.5 0.3 (one per source of data.train); every source goes on from its cursor"},
      {"data.max_repeat", "0", "a source needed more than this many times over (epochs of its rows) is an error at start (0 = no limit; any source needed beyond its size repeats in reshuffled epochs)"},
      {"data.mix_change", "refuse", "a resume whose data mixture (sources, weights, stages, alpha) differs from the checkpoint's: refuse (exit 2) | continue (the new mix goes on from each source's cursor: nothing repeated, nothing skipped)"},
      {"data.valid", "", "validation shard prefix, or several (a mixture's sources: each evaluated on its own, eval/<name>/loss)"},
      {"data.packing", "true", "true: documents packed back to back into rows, attention and positions restart at each document (document masking); false: one document per row, padded"},
      {"data.bucket", "false", "with packing = false: sort rows by length within windows of 16 global batches and cut each micro-batch to its longest row (less padding computed; pp = 1)"},
      {"data.truncate", "left", "fine-tuning examples whose prompt is longer than seq_len tokens (no trainable target in a row of their own): left (cut the prompt from the left to its last seq_len tokens) | skip (leave them out); counted at start and per step (metrics truncated); plain text is never cut"},
      {"comm.compression", "none", "dp gradient compression with error feedback: none | int8 (blocks of 4096, 75% fewer bytes) | topk | powersgd; buckets/matrices under 4096 elements (and, for powersgd, matrices with a side <= 2*rank) go uncompressed"},
      {"comm.topk_ratio", "0.01", "share of each bucket's elements topk sends, as (index, value) pairs"},
      {"comm.topk_warmup", "auto", "topk: steps over which the share sent falls from 1/4 to topk_ratio (x1/4 per quarter; 0 = none; auto: 2/3 of train.steps)"},
      {"comm.topk_dense_steps", "auto", "topk: the first N steps reduce uncompressed, then AdamW's second moment is frozen (as 1-bit Adam) and top-k starts (0 = off; auto: 2/15 of train.steps, 0 under LISA)"},
      {"comm.powersgd_rank", "4", "rank of PowerSGD's approximation of each 2-D gradient (vectors go uncompressed)"},
      {"comm.bucket_mb", "25", "gradient bucket size in MiB"},
      {"comm.overlap", "true", "start each gradient bucket's reduction during backward as soon as it is complete"},
      {"comm.grad_dtype", "fp32", "dtype gradients are reduced in across data-parallel ranks: fp32 (exact) | bf16 | fp16 (half the bytes; each reduction step adds in fp32 and rounds once)"},
      {"comm.hierarchical", "auto", "node-aware dp reduction: reduce-scatter inside each node, all-reduce the shard across nodes, all-gather inside (1/L of the inter-node bytes with L dp ranks per node): auto (where the dp group spans nodes evenly) | on | off; TRIDENT_NODE_SIZE=k models nodes of k consecutive ranks"},
      {"comm.timeout_s", "600", "watchdog: a communication waiting this long is reported (op, group, peers, step) and the job aborted (0 = off)"},
      {"checkpoint.dir", "", "checkpoint directory (default <run_dir>/checkpoints)"},
      {"checkpoint.interval", "0", "steps between checkpoints (0 = none; SIGTERM/SIGUSR1 still save one and exit)"},
      {"checkpoint.keep", "3", "checkpoints kept, oldest removed after a newer one is complete (0 = all)"},
      {"checkpoint.async", "false", "snapshot the state and write checkpoints from a thread while training goes on"},
      {"checkpoint.on_error", "fail", "a checkpoint that cannot be written (full disk, I/O error): fail (stop the run, exit 1) | warn (log it, keep training); the previous checkpoint and latest stay intact either way"},
      {"checkpoint.local_dir", "", "node-local directory of the local checkpoint tier (e.g. /tmp or $SLURM_TMPDIR; \"\" = none): each rank's own state, raw with a checksum, atomic"},
      {"checkpoint.local_interval", "0", "steps between local-tier saves (0 = none; between the global checkpoints of checkpoint.interval)"},
      {"checkpoint.local_replicas", "0", "1: each rank's local file is also copied to its partner on the next node (rank + ranks per node), so one lost node does not lose the tier"},
      {"checkpoint.resume", "auto", "auto (newest complete checkpoint of checkpoint.dir, if any) | none | <path>"},
      {"log.run_dir", "runs/default", "run directory: config.ini, metrics.jsonl, checkpoints/"},
      {"log.interval", "1", "steps between metrics lines"},
      {"log.eval_interval", "0", "steps between evaluations on data.valid (0 = none); also after the last step"},
      {"log.eval_batches", "8", "batches per evaluation"},
      {"log.straggler_interval", "50", "every N steps the ranks' own work per step (data, compute, optimizer, checkpoint; not the waits) is gathered and scored: relative = the fastest rank's / this rank's, individual = this rank's best interval / its current (0 = off)"},
      {"log.straggler_threshold", "0.75", "a rank whose relative score is below this is named with its host and slowest section (log, metrics straggler_rank, straggler_host, straggler_score, <run_dir>/stragglers.jsonl)"},
      {"log.overwrite", "false", "a fresh start (no checkpoint resumed) in a run directory holding an earlier run's metrics.jsonl: false refuses (exit 2); true moves that record aside as metrics.jsonl.N, config.ini.N, eval.jsonl.N, tensorboard.N"},
      {"log.tensorboard", "true", "TensorBoard event files in <run_dir>/tensorboard/ (world rank 0): every metrics.jsonl key as a scalar, config.ini as text (tag config); a new file each start"},
      {"eval.task", "", "JSONL task scored at each evaluation by its eval.kind: greedy generation (exact match, token F1), multiple choice (acc, acc_norm) or rolling perplexity"},
      {"eval.template", "auto", "prompt template of eval.task lines (plain | alpaca | chatml | model: the chat template of eval.tokenizer's directory | custom; auto: the one data.train's prep.json names, else plain)"},
      {"eval.tokenizer", "auto", "tokenizer for eval.task (auto: model.init_from's tokenizer.json, else the one data.train's prep.json names, else byte)"},
      {"eval.max_new_tokens", "32", "most tokens generated per answer"},
      {"eval.examples", "0", "eval.task lines used (0 = all)"},
      {"eval.batch", "8", "prompts generated together per data-parallel rank"},
      {"eval.kind", "auto", "eval.task's kind: generate (input/output or chat lines) | choice ({context, choices, gold}: acc, acc_norm) | rolling ({text}: word/byte perplexity, bits per byte) | auto (from the first line's keys)"},
      {"eval.metrics", "em,f1", "generate tasks: comma-separated scores among em (exact match), f1 (token F1), rouge1, rouge2, rougeL, rougeLsum (rouge-score's F-measures) and bleu (sacrebleu's corpus BLEU, 13a, 0-100)"},
      {"eval.rouge_stem", "false", "ROUGE with Porter stemming of tokens longer than 3 characters (rouge-score's use_stemmer)"},
      {"eval.predictions", "false", "each example's prompt, prediction and reference (choice tasks: and each choice's log-likelihood) to <run_dir>/predictions/step_<8 digits>.jsonl at every task evaluation"},
      {"eval.perturb", "", "robustness: comma-separated perturbations scored besides the clean task (typo, case, whitespace, shuffle_choices, distractor)"},
      {"eval.perturb_rate", "0.05", "per-character probability of a typo, case flip or whitespace change"},
      {"eval.perturb_seed", "1234", "seed of the perturbations"},
      {"eval.ood", "", "shard prefix scored as out-of-distribution against data.valid (AUROC, AUPR, FPR at 95% TPR of mean token NLL and max softmax probability); `trident eval --ood`"},
      {"privacy.enabled", "false", "differentially private training (DP-SGD): each privacy unit's gradient clipped to privacy.clip, Gaussian noise added to their sum, Poisson sampling, the epsilon spent in every metrics line; train.clip is then not applied"},
      {"privacy.clip", "1.0", "C: the largest L2 norm of one unit's gradient (of its mean token loss)"},
      {"privacy.noise_multiplier", "0", "sigma: noise of std sigma * C on the summed gradient (0: the sigma privacy.target_epsilon needs over train.steps)"},
      {"privacy.target_epsilon", "0", "the budget: sigma is found by bisection so that train.steps spend it, and training stops before a step would exceed it (0: none; privacy.noise_multiplier then required); with both set, sigma is the one given and the budget stops training"},
      {"privacy.delta", "0", "delta of (epsilon, delta)-DP (0: 1 / N, N the privacy units of data.train)"},
      {"privacy.unit", "document", "the privacy unit: document (a document of data.train, packed with others into rows; its first seq_len + 1 tokens) | row (a whole row of the batch sampler)"},
      {"privacy.sampling", "poisson", "poisson (each unit joins a step with probability q = train.global_batch / N, independently; what the accountant assumes) | shuffle (an epoch's permutation in batches of train.global_batch units; the epsilon reported is then the Poisson analysis, not a proven bound)"},
      {"privacy.accountant", "prv", "prv (numerical composition, Gopi et al. 2021) | rdp (Renyi DP, Mironov et al. 2019)"},
      {"security.group", "", "every file and directory trident writes is given to this group (the user must be a member; \"\" = left as created)"},
      {"security.file_mode", "0640", "exact mode of every file trident writes (run directory, metrics, TensorBoard events, checkpoints of both tiers, exports), whatever the umask: files are created owner-only and given this mode and the group before anything is written"},
      {"security.dir_mode", "0750", "exact mode of every directory trident creates (02750: setgid, so files others add inherit the group)"},
      {"security.inputs", "warn", "an input (config, shard, checkpoint, tokenizer, key file) writable by others, or a symlink out of its directory: strict (exit 2 naming it and its mode) | warn | off"},
      {"security.key_file", "", "encryption at rest: a 32-byte key (64 hex digits or raw) in a file of mode 0600 or 0400 owned by the user; shards made with `trident prep --key-file` are read with it and checkpoints (both tiers) are written encrypted (AES-256-GCM)"},
      {"security.audit", "false", "append one JSON line per file read or written (time, user, uid, host, Slurm job, rank, action, path, size, key id or SHA-256) to <run_dir>/audit.jsonl"},
      {"eval.ood_samples", "512", "samples scored on each side of the OOD comparison: pieces of seq_len + 1 tokens of the documents, spread evenly over each set"},
  };
  keys.insert(keys.end(), run_keys.begin(), run_keys.end());
  for (const char* section : {"moe.", "lora."}) {
    const std::vector<ConfigKey> more = model_section_keys(section);
    keys.insert(keys.end(), more.begin(), more.end());
  }
  keys.insert(keys.end(), later_keys.begin(), later_keys.end());
  return keys;
}

}  // namespace

const std::vector<ConfigKey>& config_schema() {
  static const std::vector<ConfigKey> keys = all_keys();
  return keys;
}

}  // namespace trident::cli
