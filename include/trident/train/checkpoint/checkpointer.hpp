// Checkpointer: saves and restores this rank's training state in the collective HDF5 format of
// io/checkpoint_file.hpp: model values under /model/<name>, AdamW moments under
// /optim/exp_avg/<name> and /optim/exp_avg_sq/<name> (fp32 training keeps no separate master
// copy: /model holds the fp32 master weights), in global shapes, so any layout (dp, tp, pp,
// zero) loads any checkpoint. Replicas are written by one rank of their group. The files, the
// `latest` pointer and checkpoint.keep: CheckpointDirectory. The run's scalars (loss scale,
// time, tokens, privacy spent) travel as one RunScalars: given to each save, returned by resume.
//
// Without an optimizer (evaluation) only the model's weights can be loaded.
//
// Asynchronous mode (checkpoint.async): the state is copied into snapshot buffers (allocated
// once) and a BackgroundWriter writes it while training goes on. The next checkpoint, or the
// end of the run, waits for the previous write.
//
// State in GPU memory (the CUDA backend): HDF5 reads and writes host memory only, so every save
// goes through the host snapshot buffers (filled by Ops::copy; written on the calling thread
// when synchronous) and every load reads into them and copies up to the device. On the CPU,
// synchronous saves and all loads use the live tensors in place.
//
// Two tiers (checkpoint.local_dir): between the global checkpoints, save_local() writes each
// rank's own state to node-local storage (local_tier.hpp); resume() with
// checkpoint.resume = auto takes the newest step complete on every rank in the local tier when
// it is newer than the global tier's newest, else the global tier (another layout, a lost node
// without copies, a corrupt file: the global one).
//
// Gradient compression state (error-feedback residuals, PowerSGD's Q) is per rank and has no
// global shape: each rank stores its own as /comm/state/rank_<world rank, 5 digits> (one fp32
// vector), with the root attribute comm_compression. A resume with the same dp, tp, pp, ZeRO
// and compression continues it exactly; any other resume starts the residuals at zero (and Q
// afresh) with a one-line warning.
//
// Encryption at rest (security.key_file): both tiers' files are written encrypted under the key
// and read with it; an encrypted checkpoint without the key, or with another, is a
// CheckpointKeyError that a resume does not skip (every older checkpoint needs the key too).
#pragma once
#include <atomic>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/ops.hpp"
#include "trident/core/log.hpp"
#include "trident/dist/compression.hpp"
#include "trident/dist/topology.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/model/gpt_model.hpp"
#include "trident/train/checkpoint/background_writer.hpp"
#include "trident/train/checkpoint/checkpoint_directory.hpp"
#include "trident/train/checkpoint/local_tier.hpp"
#include "trident/train/optim/adamw.hpp"
#include "trident/train/run_config.hpp"
#include "trident/train/run_hooks.hpp"

namespace trident::train {

// The run's scalars a checkpoint carries as root attributes beside the tensors. Restored ones
// are 0 (or empty) where the checkpoint has none.
struct RunScalars {
  double loss_scale = 0;                  // the loss scaler's current scale (0: none; saved as 1)
  double elapsed_s = 0;                   // training seconds of the run so far (metrics elapsed_s)
  double tokens = 0;                      // tokens trained on so far (0: steps * global_batch * seq_len)
  std::map<std::string, double> privacy;  // privacy_* attributes: the mechanism and epsilon spent
  // The data mixture (DataSource::checkpoint_record): data_* attributes (each source's
  // cursor, the schedule's origin) and the mix's description.
  std::map<std::string, double> data;
  std::string data_mix;
};

// What a resume restored: the optimizer steps done (0: nothing resumed, a fresh run) and the
// scalars stored with them.
struct Resumed {
  int64_t step = 0;
  RunScalars scalars;
};

class Checkpointer {
 public:
  // ops: the backend that holds the model's and optimizer's tensors (copies to and from the host).
  // optimizer: nullptr when only weights are loaded (load_model). hooks: see RunHooks.
  Checkpointer(const RunConfig& cfg, dist::Topology& topology, model::GPTModel& model, Ops& ops, const Logger& log,
               AdamW* optimizer, RunHooks* hooks = nullptr);
  ~Checkpointer();

  // Collective: checkpoints the state after `steps_done` optimizer steps with the run's
  // scalars (the same on every rank), synchronously or, in async mode, by snapshot and
  // background write. Returns the seconds training stalled.
  double save(int64_t steps_done, const RunScalars& scalars);
  // Collective: this rank's state to the local tier (checkpoint.local_dir; needs it). Returns
  // the seconds training stalled.
  double save_local(int64_t steps_done, const RunScalars& scalars);
  bool has_local_tier() const { return local_ != nullptr; }
  // Collective: waits for an asynchronous write in flight (no-op otherwise); rethrows its error.
  void wait();
  // Seconds the last completed write took (the whole write, in the background when async).
  double last_write_seconds() const { return last_write_s_; }
  // Collective: loads the training state of the first checkpoint checkpoint.resume names
  // (CheckpointDirectory::resume_candidates) that loads (needs the optimizer); auto skips a
  // corrupt or unreadable one with a warning, and none intact out of some is a ConfigError.
  Resumed resume();
  // Collective: the same choice for the model's weights only (load_model); *path receives the
  // file loaded ("" when none). Returns its steps.
  int64_t load_resume_model(bool adapters, std::string* path);
  // Collective: loads only the model weights of a checkpoint, in any layout; optimizer state
  // and step stay as they are. adapters: the LoRA adapters too (evaluating a fine-tuned run);
  // without, they keep their initialisation (model.init_from = FILE.h5: a base model has
  // none). Returns the steps the checkpoint had done.
  int64_t load_model(const std::string& path, bool adapters);
  const CheckpointDirectory& directory() const { return directory_; }
  // Collective: checkpoint (and resume) this compressor's state too (nullptr: none). Call before
  // resume(), on every rank.
  void set_compressor(dist::GradCompressor* compressor, dist::CompressionKind kind);

 private:
  // The pieces of this rank's state; value(p) and moment(i, second) give the tensors to write or
  // read (the live state, or its snapshot).
  // n zeros (read-only, shared): the moments of a segment idle under LISA, as written.
  Tensor zero_moments(int64_t n);
  std::vector<io::ShardPiece> pieces(const std::function<Tensor(const model::Parameter&)>& value,
                                     const std::function<Tensor(size_t, bool)>& moment);
  std::vector<io::ShardPiece> live_pieces();
  // Whether the state is in GPU memory, where HDF5 cannot read or write it: saves and loads then
  // go through the host snapshot.
  bool stage_through_host() const;
  // Whether snapshot buffers exist: asynchronous saves, or state staged through the host.
  bool keeps_snapshot() const { return cfg_.checkpoint.async || stage_through_host(); }
  void allocate_snapshot();
  // The snapshot's view of parameter p's values and of segment i's moments. Frozen values are
  // snapshotted only when staged: on the CPU they never change, so they are written in place.
  Tensor snapshot_value(const model::Parameter& p) const;
  Tensor snapshot_moment(size_t i, bool second) const;
  // Copies the state into the snapshot buffers and returns its pieces (snapshot_pieces()).
  std::vector<io::ShardPiece> snapshot();
  // The pieces of the snapshot buffers, in the order of live_pieces(); no copy.
  std::vector<io::ShardPiece> snapshot_pieces();
  // Reads the datasets `wanted` selects into the live state (through the snapshot when staged).
  io::CheckpointAttributes read(const std::string& path, const std::function<bool(const std::string&)>& wanted);
  // This rank's compression state dataset and piece (data: the live state or its snapshot).
  std::string comm_dataset() const;
  io::ShardPiece comm_piece(const Tensor& data) const;
  // Whether the checkpoint at path holds compression state this run can continue.
  bool comm_state_resumable(const std::string& path) const;
  std::map<std::string, Shape> my_datasets() const;
  io::CheckpointAttributes attributes(int64_t steps_done, const RunScalars& scalars) const;
  // Tries load on each resume candidate until one succeeds (see resume()); returns its path.
  std::string load_first(const std::function<void(const std::string&)>& load);
  io::CheckpointState load_training_state(const std::string& path);
  // The loaded state's step into the optimizer; its step and scalars.
  Resumed restored(const io::CheckpointState& state);
  // Copies pieces read into host buffers up to the live state (staged through the host).
  void copy_up(const std::vector<io::ShardPiece>& staged, const std::vector<io::ShardPiece>& live);
  // Local tier: the key its files carry (layout, datasets, compression), and a resume from it:
  // the step loaded, or 0 when no local step newer than the global tier's loads on every rank.
  std::string local_key() const;
  Resumed resume_local();
  // Reads a verified local file into the state (an Error when that fails: no fallback then).
  io::CheckpointState load_local(const std::string& path);
  // The state's pieces as the local tier stores them: the snapshot buffers' or the live ones.
  std::vector<io::LocalPiece> local_pieces(bool snapshot_buffers);
  // Writes the file, then (rank 0) publishes it in the directory; collective over comm.
  void write(int64_t steps_done, MPI_Comm comm, const std::vector<io::ShardPiece>& pieces,
             const io::CheckpointAttributes& attributes);
  // Waits for the background write in flight and returns its error (null: none, or synchronous).
  std::exception_ptr finish_background_write();

  const RunConfig& cfg_;
  dist::Topology& topology_;
  model::GPTModel& model_;
  Ops& ops_;
  const Logger& log_;
  AdamW* optimizer_;
  RunHooks* hooks_;
  const security::MasterKey* key_;  // security.key_file: encrypts both tiers (nullptr: plain)
  CheckpointDirectory directory_;
  std::map<std::string, Shape> datasets_;  // every rank's, identical on all ranks
  std::atomic<double> last_write_s_ = 0;
  // Host snapshot (keeps_snapshot()): flat values, moments, compression state; frozen values
  // only when staged, copied again only after a load (training never changes them).
  Tensor snapshot_values_, snapshot_exp_avg_, snapshot_exp_avg_sq_, snapshot_comm_, snapshot_frozen_;
  bool snapshot_frozen_current_ = false;
  Tensor zeros_;  // zero_moments()
  dist::GradCompressor* compressor_ = nullptr;
  dist::CompressionKind compression_ = dist::CompressionKind::kNone;
  std::vector<int64_t> moment_offsets_;  // segment i's offset in the snapshot moment buffers
  std::unique_ptr<BackgroundWriter> writer_;  // checkpoint.async (nullptr: synchronous)
  std::unique_ptr<LocalTier> local_;  // checkpoint.local_dir (nullptr: one tier)
};

}  // namespace trident::train
