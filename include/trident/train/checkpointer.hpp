// Checkpointer: saves and restores this rank's training state in the collective HDF5 format of
// io/checkpoint_file.hpp: model values under /model/<name>, AdamW moments under
// /optim/exp_avg/<name> and /optim/exp_avg_sq/<name> (fp32 training keeps no separate master
// copy: /model holds the fp32 master weights), in global shapes, so any layout (dp, tp, pp,
// zero) loads any checkpoint. Replicas are written by one rank of their group. Files are
// checkpoints/step_<8 digits>.h5; `latest` names the newest complete one and is replaced
// atomically; only checkpoint.keep files are kept, the oldest removed after a newer one is
// complete.
#pragma once
#include <string>
#include <vector>

#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/adamw.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

class Checkpointer {
 public:
  Checkpointer(const RunConfig& cfg, dist::Topology& topology, model::GPTModel& model, AdamW& optimizer,
               const Logger& log);

  // Collective: writes the state after `steps_done` optimizer steps. Returns seconds taken.
  double save(int64_t steps_done);
  // Collective: loads per checkpoint.resume (auto: the newest complete checkpoint in the
  // directory, if any; none; or a path). Returns the optimizer steps done by the loaded state
  // (0 when nothing was loaded).
  int64_t resume();
  const std::string& directory() const { return dir_; }

  // checkpoints/step_00000012.h5
  static std::string file_name(int64_t step);
  // The newest complete checkpoint of a directory ("" if none): `latest` when it names an
  // existing file, else the highest step_*.h5 (never a .tmp).
  static std::string newest(const std::string& dir);

 private:
  std::vector<io::ShardPiece> pieces();
  std::map<std::string, Shape> my_datasets() const;
  void prune();

  const RunConfig& cfg_;
  dist::Topology& topology_;
  model::GPTModel& model_;
  AdamW& optimizer_;
  const Logger& log_;
  std::string dir_;
  std::map<std::string, Shape> datasets_;  // every rank's, identical on all ranks
};

}  // namespace trident::train
