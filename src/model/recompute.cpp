// Names of the activation recompute modes.
#include "trident/model/recompute.hpp"

#include "trident/core/error.hpp"

namespace trident::model {

const char* recompute_name(Recompute mode) {
  return mode == Recompute::kFull ? "full" : mode == Recompute::kSelective ? "selective" : "none";
}

Recompute recompute_from_name(const std::string& name) {
  if (name == "none") return Recompute::kNone;
  if (name == "selective") return Recompute::kSelective;
  if (name == "full") return Recompute::kFull;
  throw ConfigError("train.recompute: unknown mode '" + name + "' (expected none, selective or full)");
}

}  // namespace trident::model
