// `trident bench io`: write and read bandwidth of a checkpoint of a given size through trident's
// collective parallel-HDF5 path, next to a plain sequential write (+ fsync) of the same bytes
// measured in the same run; with --key-file, the same checkpoint encrypted, timed in turn with
// the plain one (best of --repeat each) and reported as a ratio to it. The data is checked after
// every read; with --cold, reads come from storage (the file dropped from the page cache).
#include <boost/program_options.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iostream>
#include <optional>

#include "bench_options.hpp"
#include "trident/core/file_policy.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/timer.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/security/crypto.hpp"

namespace po = boost::program_options;

namespace trident::cli {

namespace {

float expected_value(int64_t t, int64_t i) { return float((t * 7 + i) % 1000) * 0.5f; }

struct Timing {
  double write_s = 1e300, read_s = 1e300;
  int bad = 0;
};

// Drops the file's pages from the page cache (written and fsynced: clean), so that the read
// that follows comes from storage, as a resume after a restart does.
void evict(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
  ::close(fd);
}

// One write and read of the checkpoint (key: encrypted), the data checked; the best times kept.
void time_round(const std::string& path, const std::map<std::string, Shape>& datasets, std::vector<io::ShardPiece>& pieces,
                const security::MasterKey* key, bool cold, Timing& best) {
  MPI_Barrier(MPI_COMM_WORLD);
  Stopwatch write_watch;
  io::write_checkpoint(path, MPI_COMM_WORLD, datasets, pieces, {}, key);
  best.write_s = std::min(best.write_s, write_watch.seconds());
  for (auto& p : pieces) std::fill(p.data.data<float>(), p.data.data<float>() + p.end, 0.0f);
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (cold && rank == 0) evict(path);
  MPI_Barrier(MPI_COMM_WORLD);
  Stopwatch read_watch;
  io::read_checkpoint(path, MPI_COMM_WORLD, datasets, pieces, key);
  best.read_s = std::min(best.read_s, read_watch.seconds());
  for (size_t t = 0; t < pieces.size(); ++t)
    for (int64_t i = 0; i < pieces[t].end; i += 4099)
      best.bad += pieces[t].data.data<float>()[i] != expected_value(int64_t(t), i);
}

}  // namespace

int bench_io(int argc, char** argv) {
  po::options_description desc("mpirun -np N trident bench io [options]");
  desc.add_options()("help", "this help")
      ("mb", po::value<int64_t>()->default_value(512), "checkpoint size in MiB (fp32 tensors of 16 MiB)")
      ("split", po::value<std::string>()->default_value("rows"), "rows | cols: how each tensor is split over the ranks")
      ("key-file", po::value<std::string>(), "also time the checkpoint encrypted under this key (security.key_file)")
      ("repeat", po::value<int>()->default_value(3), "rounds of each kind; the best time of each is reported")
      ("cold", "read from storage: the file's pages dropped from the page cache before each read")
      ("dir", po::value<std::string>()->default_value("runs/bench-io"), "directory for the files (removed after)");
  po::variables_map vm;
  if (const auto stop = parse_bench_options(desc, argc, argv, "io", vm)) return *stop;
  const std::string split = vm["split"].as<std::string>();
  if (split != "rows" && split != "cols") {
    std::fprintf(stderr, "trident bench io: --split must be rows or cols (got %s)\n", split.c_str());
    return 2;
  }
  std::optional<security::MasterKey> key;
  if (vm.count("key-file")) {
    try {
      key = security::load_key_file(vm["key-file"].as<std::string>());
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "trident bench io: %s\n", e.what());
      return 2;
    }
  }
  dist::MpiSession mpi(&argc, &argv);
  const int rank = mpi.world_rank(), size = mpi.world_size();
  const std::string dir = vm["dir"].as<std::string>();
  if (rank == 0) make_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  // Tensors of [1024, 4096] fp32 (16 MiB), each split by rows (or columns) over the ranks, like a tp shard.
  constexpr int64_t kRows = 1024, kCols = 4096;
  const int64_t tensors = std::max<int64_t>(1, vm["mb"].as<int64_t>() / 16);
  const bool by_rows = split == "rows";
  const int64_t rows = by_rows ? kRows / size : kRows, cols = by_rows ? kCols : kCols / size;
  std::map<std::string, Shape> datasets;
  std::vector<io::ShardPiece> pieces;
  for (int64_t t = 0; t < tensors; ++t) {
    const std::string name = "/model/t" + std::to_string(t);
    datasets[name] = Shape{kRows, kCols};
    io::ShardPiece p;
    p.dataset = name;
    p.row0 = by_rows ? rows * rank : 0;
    p.col0 = by_rows ? 0 : cols * rank;
    p.local_cols = cols;
    p.begin = 0;
    p.end = rows * cols;
    p.stored_rows = kRows;
    p.data = Tensor::zeros(Shape{rows * cols}, DType::kF32);
    pieces.push_back(p);
  }
  const double bytes = double(tensors) * kRows * kCols * 4;
  const std::string path = dir + "/bench.h5";

  Timing plain, sealed;
  for (int round = 0; round < std::max(1, vm["repeat"].as<int>()); ++round) {  // in turn: drift hits both
    for (size_t t = 0; t < pieces.size(); ++t)
      for (int64_t i = 0; i < pieces[t].end; ++i) pieces[t].data.data<float>()[i] = expected_value(int64_t(t), i);
    time_round(path, datasets, pieces, nullptr, vm.count("cold") > 0, plain);
    if (!key) continue;
    for (size_t t = 0; t < pieces.size(); ++t)
      for (int64_t i = 0; i < pieces[t].end; ++i) pieces[t].data.data<float>()[i] = expected_value(int64_t(t), i);
    time_round(path, datasets, pieces, &*key, vm.count("cold") > 0, sealed);
  }
  int bad = plain.bad + sealed.bad;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  // The reference: one process writing the same bytes sequentially, then fsync.
  double plain_s = 0;
  if (rank == 0) {
    const std::string plain_file = dir + "/plain.bin";
    std::vector<char> block(size_t(16) << 20, 1);
    Stopwatch plain_watch;
    const int fd = ::open(plain_file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) secure_file(fd, plain_file);
    for (int64_t t = 0; t < tensors; ++t)
      if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) bad = 1;
    ::fsync(fd);
    ::close(fd);
    plain_s = plain_watch.seconds();
    std::filesystem::remove(plain_file);
    std::filesystem::remove(path);
    std::printf("checkpoint of %.0f MiB in %lld tensors over %d ranks (split by %s), best of %d, reads %s\n",
                bytes / (1 << 20), (long long)tensors, size, split.c_str(), std::max(1, vm["repeat"].as<int>()),
                vm.count("cold") ? "from storage (page cache dropped)" : "from the page cache");
    std::printf("  trident write (collective HDF5, checksums, fsync, rename): %7.3f s  %7.1f MB/s\n", plain.write_s, bytes / plain.write_s / 1e6);
    std::printf("  trident read  (checksums verified, then pieces):          %7.3f s  %7.1f MB/s\n", plain.read_s, bytes / plain.read_s / 1e6);
    if (key) {
      std::printf("  encrypted write (AES-256-GCM chunks, key id %s):  %7.3f s  %7.1f MB/s\n", key->id.c_str(), sealed.write_s, bytes / sealed.write_s / 1e6);
      std::printf("  encrypted read  (tags and checksums verified, then pieces): %7.3f s  %7.1f MB/s\n", sealed.read_s, bytes / sealed.read_s / 1e6);
    }
    std::printf("  plain sequential write + fsync, one process:              %7.3f s  %7.1f MB/s\n", plain_s, bytes / plain_s / 1e6);
    std::printf("  trident write / plain write bandwidth: %.2fx%s\n", plain_s / plain.write_s, bad ? "  (DATA CHECK FAILED)" : "");
    if (key)
      std::printf("  encrypted / plain trident bandwidth: write %.2fx, read %.2fx\n", plain.write_s / sealed.write_s,
                  plain.read_s / sealed.read_s);
  }
  return bad ? 1 : 0;
}

}  // namespace trident::cli
