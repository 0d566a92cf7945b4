// LoRA adapters <-> Hugging Face PEFT.
//   to PEFT:  adapter_model.safetensors + adapter_config.json that peft's PeftModel.from_pretrained
//             loads onto the base model. Names: base_model.model.<HF module>.lora_{A,B}.weight,
//             A [r, in], B [out, r]. GPT-2's q, k, v live in one fused c_attn: its adapter
//             stacks their A's and puts their B's on the block diagonal (rank = r times the
//             targeted of q, k, v; rank_pattern / alpha_pattern keep the scale alpha / r).
//   merged:   W + (alpha / r) B A for every adapted weight, written as a plain HF model (what
//             `convert --to hf` of a LoRA checkpoint writes too).
//   from PEFT: adapter tensors into a model's LoRA parameters (lora.init_from); a fused c_attn
//             adapter becomes q, k, v adapters sharing its A, each with its block of B.
// Serial; the adapters are small, the merge holds the model once.
#pragma once
#include <string>

#include "trident/interop/hf_convert.hpp"
#include "trident/model/model_config.hpp"
#include "trident/model/param_store.hpp"

namespace trident::interop {

// The checkpoint's LoRA adapters as a PEFT adapter directory. base_model_name_or_path names the
// HF directory the run started from (model.hf_base), or, when none is known, the checkpoint's
// base weights written as an HF model into out_dir/base, so AutoPeftModelForCausalLM loads it.
// key: opens an encrypted checkpoint.
void checkpoint_to_peft(const std::string& checkpoint, const CheckpointModel& model, const std::string& out_dir,
                        const security::MasterKey* key = nullptr);

// PEFT's module name (below base_model.model.) of trident projection `proj` (q, k, v, o, up,
// down, gate) of layer `layer`, and whether its LoRA B is a row block of a fused module.
struct PeftModule {
  std::string name;       // "model.layers.3.self_attn.q_proj", "transformer.h.3.attn.c_attn"
  int fused_index = -1;   // GPT-2 c_attn: 0 q, 1 k, 2 v; else -1
};
PeftModule peft_module(const model::ModelConfig& cfg, int layer, const std::string& proj);

// Loads a PEFT adapter directory into the LoRA parameters of store (this rank's shards): its
// r, lora_alpha and modules must match cfg.lora (ConfigError naming what differs).
void load_peft_adapter(model::ParamStore& store, Ops& ops, const model::ModelConfig& cfg, const std::string& dir);

}  // namespace trident::interop
