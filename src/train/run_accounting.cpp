// Parameter, FLOP and memory counts of a run.
#include "trident/train/run_accounting.hpp"

#include <cmath>

namespace trident::train {

int64_t trainable_params(const RunConfig& cfg, const model::ModelConfig& m) {
  if (m.lora.enabled()) return m.lora_params();
  if (!cfg.lisa.enabled) return m.total_params();
  // LISA: the drawn blocks (a mean block each when some are MoE layers), the embedding and head.
  const LisaConfig& l = cfg.lisa;
  const plan::ModelShape s = m.plan_shape();
  const bool table = l.embedding || (m.tie_embeddings && l.head);  // a tied table trains with either
  const double blocks = l.layers * s.block_params();
  const double embedding = l.embedding ? s.embedding_params() : table ? double(m.vocab) * m.hidden : 0.0;
  const double head = l.head ? s.head_params() + s.final_norm_params() : 0.0;
  return std::llround(blocks + embedding + head);
}

double train_flops_per_token(const RunConfig& cfg, const model::ModelConfig& m) {
  const plan::ModelShape s = m.plan_shape();
  if (!cfg.lisa.enabled) return s.train_flops_per_token();
  // Idle blocks compute no weight gradients: 2 of their 6 FLOPs per matmul parameter go.
  return s.train_flops_per_token() - (m.layers - cfg.lisa.layers) * s.block_gemm_flops_per_token();
}

double model_flops_utilization(const RunConfig& cfg, const model::ModelConfig& m, double tokens_per_s,
                               double peak_flops_per_rank, int ranks) {
  return tokens_per_s * train_flops_per_token(cfg, m) / (peak_flops_per_rank * ranks);
}

size_t parameter_bytes(const model::ParamStore& p) {
  return 2 * p.flat_values().bytes() + size_t(p.frozen_numel()) * dtype_size(p.flat_values().dtype());
}

}  // namespace trident::train
