// `trident convert`: Hugging Face model directories <-> trident checkpoints.
//   from HF: every parameter in its stored global shape under /model/<name>, zero AdamW
//            moments under /optim/..., step 0 and the [model] section as the config text, so the
//            file works as model.init_from and as checkpoint.resume (a fresh start).
//   to HF:   model.safetensors (F32 or BF16) + config.json (hf_config_json) +
//            generation_config.json (bos/eos ids), and tokenizer.json when one is known
//            (given, or next to the model the run was initialised from).
// Conversion holds the whole model in memory on one process.
#pragma once
#include <mpi.h>

#include <string>

#include "trident/io/safetensors.hpp"
#include "trident/security/crypto.hpp"
#include "trident/model/model_config.hpp"
#include "trident/interop/hf_weights.hpp"

namespace trident::interop {

// The model a trident checkpoint holds, as its config text describes it (read by the CLI's
// configuration reader, cli::checkpoint_model): its [model] and [lora] sections and the
// model.init_from it was trained from ("" if none), and the Hugging Face model directory at the
// start of that chain (init_from itself, or the one a checkpoint it names came from; "" if none).
struct CheckpointModel {
  model::ModelConfig config;
  std::string init_from;
  std::string hf_base;
  std::string train_data;  // its run's data.train ("" if none)
};

// W += (alpha / r) B A for every adapted weight; the adapters dropped (the model without LoRA).
std::vector<WholeTensor> merge_lora(const model::ModelConfig& cfg, std::vector<WholeTensor> tensors);

// Collective over comm (write_checkpoint). seq_len 0: the model's maximum positions.
void hf_to_checkpoint(const std::string& hf_dir, const std::string& checkpoint, MPI_Comm comm, int seq_len = 0);

// Serial. tokenizer: a tokenizer.json to copy ("" = the one of the model the checkpoint's run
// was initialised from, if any). A LoRA checkpoint is written merged (merge_lora). key: opens an
// encrypted checkpoint (io::CheckpointKeyError without the right one).
void checkpoint_to_hf(const std::string& checkpoint, const CheckpointModel& model, const std::string& out_dir,
                      const std::string& tokenizer = "", io::StoredFloat stored = io::StoredFloat::kF32,
                      const security::MasterKey* key = nullptr);

}  // namespace trident::interop
