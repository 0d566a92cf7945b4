// The local checkpoint tier: per-rank files, partner copies, the agreed newest complete step.
#include "trident/core/file_policy.hpp"
#include "trident/train/checkpoint/local_tier.hpp"

#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <memory>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"
#include "trident/dist/agreement.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::train {

namespace fs = std::filesystem;

namespace {

constexpr int kStepsListed = 4;               // per rank and kind in the agreement
constexpr size_t kChunkBytes = size_t(64) << 20;  // per message of a file transfer
constexpr int kTransferTag = 7301;

std::string step_name(int64_t step) {
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld.bin", static_cast<long long>(step));
  return name;
}

// The step of "step_<8 digits>.bin", or -1.
int64_t step_of(const std::string& name) {
  if (name.size() != 17 || name.rfind("step_", 0) != 0 || name.substr(13) != ".bin") return -1;
  int64_t step = 0;
  for (size_t i = 5; i < 13; ++i) {
    if (name[i] < '0' || name[i] > '9') return -1;
    step = step * 10 + (name[i] - '0');
  }
  return step;
}

std::string rank_dir(const char* kind, int rank) {
  char name[32];
  std::snprintf(name, sizeof name, "%s_%05d", kind, rank);
  return name;
}

// Steps of the files in dir (newest first) that carry key and were written by `rank`.
std::vector<int64_t> steps_in(const std::string& dir, const std::string& key, int rank) {
  std::vector<int64_t> steps;
  std::error_code ec;
  if (!fs::is_directory(dir, ec)) return steps;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const int64_t step = step_of(entry.path().filename().string());
    if (step < 0) continue;
    try {
      const io::CheckpointAttributes a = io::read_local_attributes(entry.path().string());
      const auto k = a.texts.find("local_key");
      const auto r = a.numbers.find("world_rank");
      if (k != a.texts.end() && k->second == key && r != a.numbers.end() && r->second == rank) steps.push_back(step);
    } catch (const ConfigError&) {
      // not a file of this tier: ignored
    }
  }
  std::sort(steps.rbegin(), steps.rend());
  return steps;
}

}  // namespace

LocalTier::LocalTier(const std::string& local_dir, bool replicas, const std::string& checkpoint_dir, std::string key,
                     const security::MasterKey* encryption, dist::Topology& topology, const Logger& log)
    : topology_(topology), log_(log), key_(std::move(key)), encryption_(encryption) {
  std::error_code ec;
  const std::string global = fs::weakly_canonical(fs::absolute(checkpoint_dir), ec).string();
  char run[32];
  std::snprintf(run, sizeof run, "trident-%016llx", static_cast<unsigned long long>(rng_key(0, global)));
  root_ = (fs::path(local_dir) / run / ("node_" + std::to_string(topology.node()))).string();
  if (!replicas) return;
  // The partner is R ranks on, R = ranks per node: on another node when every node holds R
  // consecutive ranks (Slurm's block distribution) and there is more than one node.
  dist::Communicator& world = topology.world();
  const int r = topology.members_on_node(world), size = world.size();
  std::vector<int> nodes(static_cast<size_t>(size));
  const int mine = topology.node();
  world.all_gather_bytes(&mine, nodes.data(), sizeof(int));
  bool ok = r < size;
  for (int i = 0; i < size && ok; ++i) ok = nodes[static_cast<size_t>((i + r) % size)] != nodes[static_cast<size_t>(i)];
  // Every rank must shift by the same R: nodes of unequal size give no partners at all.
  double checks[3] = {ok ? 0.0 : 1.0, double(r), -double(r)};
  world.all_reduce_max(checks, 3);
  if (checks[0] > 0 || checks[1] != -checks[2]) {
    if (world.rank() == 0)
      log_.warn("checkpoint.local_replicas = 1: no rank has a partner on another node (", size, " ranks, ", r,
              " on this node: one node, nodes of unequal size, or ranks not in blocks of consecutive ranks); the local tier keeps no copies");
    return;
  }
  partner_shift_ = r;
}

std::string LocalTier::own_dir() const {
  return (fs::path(root_) / rank_dir("rank", topology_.world_rank())).string();
}

std::string LocalTier::replica_dir() const {
  const int size = topology_.world_size();
  const int owner = (topology_.world_rank() - partner_shift_ + size) % size;
  return (fs::path(root_) / rank_dir("replica", owner)).string();
}

LocalTier::Listing LocalTier::list() const {
  Listing l;
  l.own = steps_in(own_dir(), key_, topology_.world_rank());
  if (partner_shift_ > 0) {
    const int size = topology_.world_size();
    l.held = steps_in(replica_dir(), key_, (topology_.world_rank() - partner_shift_ + size) % size);
  }
  return l;
}

void LocalTier::prune(const std::string& dir, int64_t step) {
  std::vector<int64_t> steps;
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const int64_t s = step_of(entry.path().filename().string());
    if (s > step) fs::remove(entry.path(), ec);  // an abandoned timeline
    else if (s >= 0) steps.push_back(s);
  }
  std::sort(steps.rbegin(), steps.rend());
  for (size_t i = 2; i < steps.size(); ++i) fs::remove(fs::path(dir) / step_name(steps[i]), ec);
}

void LocalTier::shift_file(const std::string& send, int to, const std::string& receive, int from, MPI_Comm comm) {
  std::exception_ptr error;
  using File = std::unique_ptr<FILE, int (*)(FILE*)>;
  File in(nullptr, std::fclose), out(nullptr, std::fclose);
  uint64_t send_bytes = 0, recv_bytes = 0;
  if (!send.empty()) {
    in.reset(std::fopen(send.c_str(), "rb"));
    std::error_code ec;
    if (in) send_bytes = fs::file_size(send, ec);
    if (!in || ec) error = std::make_exception_ptr(Error(detail::concat("local checkpoint: cannot read ", send)));
    if (ec) send_bytes = 0;
  }
  // Sizes first (0: nothing comes), then chunks until both directions are done.
  MPI_CHECK(MPI_Sendrecv(&send_bytes, 1, MPI_UINT64_T, to, kTransferTag, &recv_bytes, 1, MPI_UINT64_T, from,
                         kTransferTag, comm, MPI_STATUS_IGNORE));
  const std::string tmp = receive + ".tmp";
  if (recv_bytes > 0) {
    out.reset(std::fopen(tmp.c_str(), "wb"));
    if (!out) error = std::make_exception_ptr(Error(detail::concat("local checkpoint: cannot create ", tmp, ": ",
                                                                   std::strerror(errno))));
    else secure_file(fileno(out.get()), tmp);
  }
  std::vector<char> send_buf(std::min<uint64_t>(send_bytes, kChunkBytes)), recv_buf(std::min<uint64_t>(recv_bytes, kChunkBytes));
  uint64_t sent = 0, received = 0;
  bool ok = true;
  while (sent < send_bytes || received < recv_bytes) {
    const int n_send = static_cast<int>(std::min<uint64_t>(send_bytes - sent, kChunkBytes));
    const int n_recv = static_cast<int>(std::min<uint64_t>(recv_bytes - received, kChunkBytes));
    if (n_send > 0 && std::fread(send_buf.data(), 1, size_t(n_send), in.get()) != size_t(n_send)) {
      std::fill(send_buf.begin(), send_buf.end(), 0);  // the partner still gets the bytes promised
      if (!error) error = std::make_exception_ptr(Error(detail::concat("local checkpoint: short read of ", send)));
    }
    MPI_CHECK(MPI_Sendrecv(send_buf.data(), n_send, MPI_BYTE, n_send > 0 ? to : MPI_PROC_NULL, kTransferTag,
                           recv_buf.data(), n_recv, MPI_BYTE, n_recv > 0 ? from : MPI_PROC_NULL, kTransferTag, comm,
                           MPI_STATUS_IGNORE));
    if (n_recv > 0 && out) ok = ok && std::fwrite(recv_buf.data(), 1, size_t(n_recv), out.get()) == size_t(n_recv);
    sent += uint64_t(n_send);
    received += uint64_t(n_recv);
  }
  if (out) {
    ok = ok && std::fflush(out.get()) == 0 && ::fsync(fileno(out.get())) == 0;
    ok = std::fclose(out.release()) == 0 && ok;
    std::error_code ec;
    if (ok) fs::rename(tmp, receive, ec);
    if (!ok || ec) {
      fs::remove(tmp, ec);
      if (!error) error = std::make_exception_ptr(Error(detail::concat("local checkpoint: cannot write ", receive,
                                                                       " (disk full?)")));
    }
  }
  dist::throw_if_any_failed(comm, error);
}

void LocalTier::save(int64_t step, io::CheckpointAttributes attributes, const std::vector<io::LocalPiece>& pieces,
                     MPI_Comm comm) {
  const int rank = topology_.world_rank(), size = topology_.world_size();
  attributes.texts["local_key"] = key_;
  attributes.numbers["world_rank"] = rank;
  const std::string own = (fs::path(own_dir()) / step_name(step)).string();
  std::exception_ptr error;
  try {
    make_directories(own_dir());
    if (partner_shift_ > 0) make_directories(replica_dir());
    io::write_local_state(own, attributes, pieces, encryption_);
  } catch (...) {
    error = std::current_exception();
  }
  dist::throw_if_any_failed(comm, error);
  if (partner_shift_ > 0)  // this rank's file to rank + R; rank - R's into the copy held here
    shift_file(own, (rank + partner_shift_) % size, (fs::path(replica_dir()) / step_name(step)).string(),
               (rank - partner_shift_ + size) % size, comm);
  prune(own_dir(), step);
  if (partner_shift_ > 0) prune(replica_dir(), step);
}

std::vector<int64_t> LocalTier::complete_steps(int64_t above, int64_t* newest_seen) {
  const Listing l = list();
  const int size = topology_.world_size();
  std::vector<int64_t> mine(2 * kStepsListed, -1), all(mine.size() * static_cast<size_t>(size));
  for (size_t i = 0; i < l.own.size() && i < kStepsListed; ++i) mine[i] = l.own[i];
  for (size_t i = 0; i < l.held.size() && i < kStepsListed; ++i) mine[kStepsListed + i] = l.held[i];
  topology_.world().all_gather_bytes(mine.data(), all.data(), int64_t(mine.size() * sizeof(int64_t)));
  auto has = [&](int rank, bool held, int64_t step) {
    const int64_t* row = all.data() + mine.size() * static_cast<size_t>(rank) + (held ? kStepsListed : 0);
    return std::find(row, row + kStepsListed, step) != row + kStepsListed;
  };
  std::vector<int64_t> candidates;
  for (int r = 0; r < size; ++r)
    for (int i = 0; i < kStepsListed; ++i) {
      const int64_t s = all[mine.size() * static_cast<size_t>(r) + i];
      if (s > above && std::find(candidates.begin(), candidates.end(), s) == candidates.end()) candidates.push_back(s);
    }
  std::sort(candidates.rbegin(), candidates.rend());
  if (newest_seen) *newest_seen = candidates.empty() ? -1 : candidates.front();
  std::erase_if(candidates, [&](int64_t s) {
    for (int r = 0; r < size; ++r)
      if (!has(r, false, s) && !(partner_shift_ > 0 && has((r + partner_shift_) % size, true, s))) return true;
    return false;
  });
  return candidates;
}

std::string LocalTier::restore(int64_t step) {
  const int rank = topology_.world_rank(), size = topology_.world_size();
  const std::string own = (fs::path(own_dir()) / step_name(step)).string();
  const Listing l = list();
  int need = std::find(l.own.begin(), l.own.end(), step) == l.own.end() ? 1 : 0;
  std::vector<int> needs(static_cast<size_t>(size));
  topology_.world().all_gather_bytes(&need, needs.data(), sizeof(int));
  if (std::none_of(needs.begin(), needs.end(), [](int n) { return n != 0; })) return own;
  TRIDENT_CHECK(partner_shift_ > 0, "local checkpoint: step ", step, " is missing on a rank and no copies exist");
  std::error_code ec;
  make_directories(own_dir(), ec);
  // The copy held here goes back to its owner rank - R; this rank's comes from rank + R.
  const int owner = (rank - partner_shift_ + size) % size, holder = (rank + partner_shift_) % size;
  const std::string send = needs[static_cast<size_t>(owner)] ? (fs::path(replica_dir()) / step_name(step)).string() : "";
  shift_file(send, owner, need ? own : "", holder, topology_.world().comm());
  std::string restored;
  for (int r = 0; r < size; ++r)
    if (needs[static_cast<size_t>(r)]) restored += (restored.empty() ? "" : ", ") + std::to_string(r);
  log_.info("local checkpoint: step ", step, " of ranks ", restored, " restored from their partners' copies");
  return own;
}

}  // namespace trident::train
