// The start-up banner of a run.
#include "trident/train/run_banner.hpp"

#include "trident/train/run_accounting.hpp"

namespace trident::train {

void log_model_banner(RunBuilder& run) {
  const RunConfig& cfg = run.config();
  const Logger& log = run.log();
  model::GPTModel& model = run.model();
  const model::ModelConfig& m = model.config();
  const DType matmul = run.matmul_dtype();
  // Why the GEMMs compute in fp32: this rank's measurement, or another rank's (cli's agreement).
  const std::string why = run.ops().matmul_precision_note().empty()
                              ? std::string("another rank measured 16-bit GEMMs no faster")
                              : run.ops().matmul_precision_note();
  if (cfg.train.precision_auto)
    log.info("train.precision = auto: ", dtype_name(matmul),
             matmul != DType::kF32 ? std::string(" (16-bit GEMMs are the faster here)") : "; " + why);
  else if (matmul != cfg.train.precision)
    log.info("train.precision = ", dtype_name(cfg.train.precision), ": ", why, "; ",
             dtype_name(cfg.train.precision), " storage, GEMMs computing in ", dtype_name(matmul));
  const DType stored = run.activation_dtype();
  std::string fp16_note;
  if (stored == DType::kF16)
    fp16_note = (run.ops().device() == Device::kCPU ? "; fp16 is storage only on this CPU (fp32 arithmetic)" : "") +
                std::string("; loss scale ") + cfg.train.loss_scale;
  if (stored != DType::kF32)
    log.info("mixed precision: ",
             matmul == stored ? "weights (a copy refreshed each step) and the activations kept for backward in " +
                                    std::string(dtype_name(stored)) + ", GEMMs accumulating in fp32"
                              : "the activations kept for backward in " + std::string(dtype_name(stored)) +
                                    ", GEMMs widening them to fp32 against the fp32 master weights",
             "; fp32 master weights, gradients, optimizer state, residual stream, norm statistics, softmax and loss",
             fp16_note);
  log.info("model: ", model::arch_name(m.arch), ", ", m.layers, " layers, hidden ", m.hidden, ", heads ", m.heads,
           "/", m.kv_heads, ", ffn ", m.ffn_hidden, ", vocab ", m.vocab, ", seq ", m.seq_len, ": ",
           model.params().parameter_elements(), " parameters on this rank (", m.total_params(),
           " in the model)");
  if (m.moe.enabled())
    log.info("mixture of experts: ", m.moe_layers(), " of ", m.layers, " layers with ", m.moe.experts,
             " experts of ffn ", m.moe.ffn_hidden, ", top-", m.moe.top_k,
             m.moe.norm_topk_prob ? " (weights renormalised)" : " (raw softmax weights)",
             m.moe.shared_experts > 0 ? ", a shared MLP of ffn " + std::to_string(m.moe.shared_experts * m.moe.ffn_hidden)
                                      : std::string(),
             ", ", m.moe.capacity_factor > 0 ? "capacity factor " + detail::concat(m.moe.capacity_factor) : "dropless",
             ", aux loss coef ", m.moe.aux_loss_coef, ", z-loss coef ", m.moe.z_loss_coef, "; ", m.matmul_params(),
             " matmul parameters active per token");
  const model::TensorParallel& tp = model.tensor_parallel();
  if (tp.size() > 1)
    log.info("tensor parallel: tp ", tp.size(), ", ", m.heads / tp.size(), " heads and ",
             m.padded_vocab(tp.size()) / tp.size(), " vocabulary rows per rank (vocab padded to ",
             m.padded_vocab(tp.size()), "), sequence parallelism ", tp.sequence_parallel ? "on" : "off");
  if (run.topology().layout().pp > 1) log.info(run.pipeline_description());
}

void log_training_banner(RunBuilder& run) {
  const RunConfig& cfg = run.config();
  const Logger& log = run.log();
  model::GPTModel& model = run.model();
  const model::ModelConfig& m = model.config();
  const AdamW& optimizer = run.optimizer();
  GradReducer& reducer = run.reducer();
  const dist::Layout& layout = run.topology().layout();
  const double state_mib = double(optimizer.state_bytes()) / (1 << 20);
  if (!cfg.layout_note.empty()) log.info(cfg.layout_note);
  if (m.lora.enabled()) {
    const int64_t trainable = trainable_params(cfg, m);
    log.info("LoRA: rank ", m.lora.r, ", alpha ", m.lora.alpha, " on ", m.lora.targets, ": ", trainable,
             " trainable parameters (", 100.0 * double(trainable) / double(m.total_params()), "% of ",
             m.total_params(), "), the base frozen; optimizer state ", state_mib, " MiB per rank");
  }
  log.info("memory per rank: parameters+gradients ", parameter_bytes(model.params()) >> 20, " MiB, optimizer state ",
           state_mib, " MiB", cfg.zero ? " (ZeRO-1 share)" : "", ", activations ",
           double(model.activation_bytes()) / (1 << 20), " MiB (recompute ", model::recompute_name(cfg.recompute), ")");
  log.info("data parallel: dp ", layout.dp, ", ", reducer.num_buckets(), " gradient buckets of <= ", cfg.comm.bucket_mb,
           " MiB, overlap ", cfg.comm.overlap ? "on" : "off", ", ZeRO-", cfg.zero, ", compression ",
           dist::compression_name(reducer.compressor() ? cfg.comm.compression : dist::CompressionKind::kNone));
  DataSource& data = run.train_data();
  // A private run's global batch is the expected privacy units per step (PrivateBatches).
  const std::string batch =
      cfg.privacy.enabled
          ? detail::concat("; global batch: ", cfg.train.global_batch, " expected privacy units per step in rounds of <= ",
                           data.micro_batches(), " micro-batches x ", cfg.train.micro_batch, " rows per dp rank")
          : detail::concat("; global batch ", cfg.train.global_batch, " = dp ", layout.dp, " x ", data.micro_batches(),
                           " micro-batches x ", cfg.train.micro_batch, " sequences");
  uint64_t tokens = 0, documents = 0;
  for (size_t i = 0; i < data.num_sources(); ++i) {
    tokens += data.shards(i).num_tokens();
    documents += data.shards(i).num_documents();
  }
  log.info("data: ", tokens, " tokens in ", documents, " documents", data.mixture() ? detail::concat(" of ", data.num_sources(), " sources") : "", ", ",
           data.num_rows(), cfg.data.packing ? " packed rows of " : " one-document rows of ", m.seq_len, batch);
  for (const std::string& line : data.mix_lines()) log.info(line);
  const data::DocumentStream& docs = data.documents();
  if (docs.cut_documents() > 0)
    log.info("data.truncate = left: ", docs.cut_documents(), " fine-tuning examples with prompts longer than seq_len = ",
             m.seq_len, " tokens: prompts cut from the left to their last ", m.seq_len, " tokens (", docs.cut_tokens(),
             " tokens dropped)");
  if (docs.skipped_documents() > 0)
    log.info("data.truncate = skip: ", docs.skipped_documents(), " fine-tuning examples with prompts longer than ",
             "seq_len = ", m.seq_len, " tokens left out");
  const bool bf16 = run.peak_dtype() == DType::kBF16 && run.ops().device() == Device::kCPU;
  log.info("backend: ", run.ops().name(), ", peak ", run.peak_flops_per_rank() / 1e9, " GFLOP/s per rank for ",
           dtype_name(run.peak_dtype()),
           bf16 ? " (the measured fp32 FMA rate x the measured bf16:fp32 GEMM speed)" : " (measured FMA rate)");
}

}  // namespace trident::train
