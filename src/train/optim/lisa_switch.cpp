// LISA's switch of trained blocks: parameters' idle flags and the optimizer's active segments.
#include "trident/train/optim/lisa_switch.hpp"

#include <string>
#include <vector>

namespace trident::train {

LisaSwitch::LisaSwitch(const LisaConfig& cfg, int model_layers, uint64_t seed, bool tied_embeddings,
                       model::ParamStore& params, AdamW& optimizer, const Logger& log)
    : schedule_(cfg, model_layers, seed), layers_(model_layers), tied_(tied_embeddings), params_(params), optimizer_(optimizer), log_(log),
      full_state_bytes_(optimizer.state_bytes()) {}

void LisaSwitch::apply(int64_t step) {
  const LisaConfig& cfg = schedule_.config();
  if (applied_ && step % cfg.interval != 0) return;
  applied_ = true;
  auto& params = params_.all();
  for (auto& p : params)
    if (p->trainable()) p->idle = !schedule_.trains(p->spec.name, step, tied_);
  // Each optimizer segment lies within one parameter: it follows that parameter.
  const auto& segments = optimizer_.segments();
  std::vector<bool> active(segments.size());
  std::vector<int64_t> since(segments.size(), 0);
  for (size_t i = 0; i < segments.size(); ++i)
    for (const auto& p : params)
      if (p->trainable() && p->offset <= segments[i].begin && segments[i].end <= p->offset + p->local_shape.numel()) {
        active[i] = !p->idle;
        if (active[i]) since[i] = schedule_.trained_since(p->spec.name, step, tied_);
        break;
      }
  optimizer_.set_active(active, since);
  std::string layers;
  for (int l : schedule_.active_layers(step)) layers += (layers.empty() ? "" : ", ") + std::to_string(l);
  log_.info("LISA at step ", step + 1, ": blocks [", layers, "] of ", layers_, " trained", cfg.embedding ? ", embedding" : "",
            cfg.head ? ", head" : "", "; optimizer state ", double(optimizer_.state_bytes()) / (1 << 20),
            " MiB per rank (all layers: ", double(full_state_bytes_) / (1 << 20), " MiB)");
}

}  // namespace trident::train
