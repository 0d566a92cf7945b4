// Parameter, FLOP and memory counts of a run.
#include "trident/train/run_accounting.hpp"

namespace trident::train {

int64_t trainable_params(const RunConfig& cfg, const model::ModelConfig& m) {
  if (m.lora.enabled()) return m.lora_params();
  if (!cfg.lisa.enabled) return m.total_params();
  const LisaConfig& l = cfg.lisa;
  const bool table = l.embedding || (m.tie_embeddings && l.head);  // a tied table trains with either
  return l.layers * m.block_params() + (l.embedding ? m.embedding_params() : table ? int64_t(m.vocab) * m.hidden : 0) +
         (l.head ? m.head_params() : 0);
}

double train_flops_per_token(const RunConfig& cfg, const model::ModelConfig& m) {
  if (!cfg.lisa.enabled) return m.train_flops_per_token();
  // Idle blocks compute no weight gradients: 2 of their 6 FLOPs per matmul parameter go.
  const double block_matmul = double(m.matmul_params() - int64_t(m.vocab) * m.hidden) / m.layers;
  return m.train_flops_per_token() - 2.0 * block_matmul * (m.layers - cfg.lisa.layers);
}

size_t parameter_bytes(const model::ParamStore& p) {
  return 2 * p.flat_values().bytes() + size_t(p.frozen_numel()) * dtype_size(p.flat_values().dtype());
}

}  // namespace trident::train
