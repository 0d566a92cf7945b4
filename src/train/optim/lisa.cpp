// LISA's per-period draw of trained blocks.
#include "trident/train/optim/lisa.hpp"

#include <algorithm>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::train {

namespace {
// Block index of "blocks.L.<...>", else -1.
int block_of(const std::string& name) {
  if (name.rfind("blocks.", 0) != 0) return -1;
  return std::stoi(name.substr(7, name.find('.', 7) - 7));
}
}  // namespace

LisaSchedule::LisaSchedule(const LisaConfig& cfg, int model_layers, uint64_t seed)
    : cfg_(cfg), model_layers_(model_layers), key_(rng_key(seed, "lisa")) {
  TRIDENT_CONFIG_CHECK(cfg.layers >= 1 && cfg.layers <= model_layers, "lisa.layers = ", cfg.layers,
                       " must be in [1, model.layers = ", model_layers, "]");
  TRIDENT_CONFIG_CHECK(cfg.interval >= 1, "lisa.interval must be >= 1 (got ", cfg.interval, ")");
}

std::vector<int> LisaSchedule::active_layers(int64_t step) const {
  // A partial Fisher-Yates shuffle driven by the counter-based generator at (period, i).
  std::vector<int> order(static_cast<size_t>(model_layers_));
  std::iota(order.begin(), order.end(), 0);
  const uint64_t p = static_cast<uint64_t>(period(step));
  for (int i = 0; i < cfg_.layers; ++i) {
    const double u = rng_uniform(key_, static_cast<uint64_t>(i), p);
    const int j = i + std::min(model_layers_ - i - 1, static_cast<int>(u * (model_layers_ - i)));
    std::swap(order[size_t(i)], order[size_t(j)]);
  }
  std::vector<int> drawn(order.begin(), order.begin() + cfg_.layers);
  std::sort(drawn.begin(), drawn.end());
  return drawn;
}

bool LisaSchedule::trains(const std::string& name, int64_t step, bool tied_embeddings) const {
  const int block = block_of(name);
  if (block >= 0) {
    const std::vector<int> active = active_layers(step);
    return std::binary_search(active.begin(), active.end(), block);
  }
  if (name == "embed.tok.weight") return cfg_.embedding || (tied_embeddings && cfg_.head);
  if (name.rfind("embed.", 0) == 0) return cfg_.embedding;
  return cfg_.head;  // head.weight, final_norm.*
}

int64_t LisaSchedule::trained_since(const std::string& name, int64_t step, bool tied_embeddings) const {
  if (block_of(name) < 0) return 0;  // embedding and head: throughout
  int64_t p = period(step);
  while (p > 0 && trains(name, (p - 1) * cfg_.interval, tied_embeddings)) --p;
  return p * cfg_.interval;
}

}  // namespace trident::train
