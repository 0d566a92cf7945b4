// Activation recompute modes (train.recompute): what a model keeps for backward and what it
// rebuilds there. Its own header so that configuration code need not include the model.
#pragma once
#include <string>

namespace trident::model {

// Activation recompute (train.recompute): none keeps every block's activations per micro-batch;
// selective keeps all but attention's (q, k, v, attention output, lse) and rebuilds those in
// backward; full keeps only each block's input and reruns the block's forward in backward.
// The same kernels in the same order: losses are bitwise those of none.
enum class Recompute { kNone, kSelective, kFull };
Recompute recompute_from_name(const std::string& name);
const char* recompute_name(Recompute mode);

}  // namespace trident::model
