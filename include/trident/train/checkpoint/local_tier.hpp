// LocalTier: the frequent, cheap tier of two-tier checkpointing (checkpoint.local_dir and
// checkpoint.local_interval). Every rank writes its own state, as it lies in memory, to one
// file on node-local storage (io/local_state_file.hpp) and, with checkpoint.local_replicas = 1,
// sends a copy to its partner R ranks on (R = ranks per node: a rank of the next node), so
// one lost node does not lose the tier. The global parallel-HDF5 checkpoints stay at
// checkpoint.interval; a resume takes the newer of the two tiers (Checkpointer::resume).
//
// Files: <local_dir>/trident-<hash of the checkpoint directory>/node_<node>/
//          rank_<world rank>/step_<8 digits>.bin       this rank's own state
//          replica_<world rank>/step_<8 digits>.bin    the copy it holds for rank - R
// Each directory keeps its two newest steps at or below the one just written; newer ones
// (an abandoned timeline after a resume from an older step) go.
//
// A step is complete when every rank has its own file of it, or its partner holds the copy;
// every rank gathers every rank's list (one all-gather) and decides alike.
#pragma once
#include <mpi.h>

#include <cstdint>
#include <string>
#include <vector>

#include "trident/core/log.hpp"
#include "trident/dist/topology.hpp"
#include "trident/io/local_state_file.hpp"

namespace trident::train {

class LocalTier {
 public:
  // Collective over the world. key: what the files must carry to be this run's (layout,
  // model shapes, compression): another key is another layout, and the file is not used.
  // encryption: the master key the files are encrypted under (nullptr: plain; not owned).
  LocalTier(const std::string& local_dir, bool replicas, const std::string& checkpoint_dir, std::string key,
            const security::MasterKey* encryption, dist::Topology& topology, const Logger& log);

  // Collective over comm (the world's ranks: the world communicator, or its duplicate when
  // called from a writer thread): writes this rank's file of `step` (and the partner copy),
  // then prunes. Every rank fails together (an Error naming the first failing rank's problem).
  void save(int64_t step, io::CheckpointAttributes attributes, const std::vector<io::LocalPiece>& pieces,
            MPI_Comm comm);

  // Collective: the steps above `above` that are complete on every rank, newest first; the
  // same on every rank. *newest_seen: the newest step any rank has a file of (-1: none).
  std::vector<int64_t> complete_steps(int64_t above, int64_t* newest_seen = nullptr);
  // Collective: makes this rank's own file of a complete step present (a partner holding the
  // only copy sends it back) and returns its path.
  std::string restore(int64_t step);

  // The key a file must carry (attribute text local_key); set again when the datasets change.
  void set_key(std::string key) { key_ = std::move(key); }

 private:
  struct Listing {
    std::vector<int64_t> own, held;  // steps of this rank's files and of the copies it holds
  };
  Listing list() const;
  std::string own_dir() const;
  std::string replica_dir() const;
  // Sends the file at `send` (empty: nothing) to world rank `to` while receiving one from
  // `from` into `receive` (written atomically; empty: nothing), over the world communicator.
  void shift_file(const std::string& send, int to, const std::string& receive, int from, MPI_Comm comm);
  // Removes step files above `step` and all but the two newest at or below it.
  static void prune(const std::string& dir, int64_t step);

  dist::Topology& topology_;
  const Logger& log_;
  std::string root_;  // <local_dir>/trident-<hash>/node_<node>
  std::string key_;
  const security::MasterKey* encryption_;
  int partner_shift_ = 0;  // R: the partner holding this rank's copy is rank + R (0: no replicas)
};

}  // namespace trident::train
