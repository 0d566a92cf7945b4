// `trident bench io`: write and read bandwidth of a checkpoint of a given size through trident's
// collective parallel-HDF5 path, next to a plain sequential write (+ fsync) of the same bytes
// measured in the same run. The data is checked after the read.
#include <boost/program_options.hpp>
#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <iostream>

#include "bench_options.hpp"
#include "trident/core/file_policy.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/timer.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/io/checkpoint_file.hpp"

namespace po = boost::program_options;

namespace trident::cli {

int bench_io(int argc, char** argv) {
  po::options_description desc("mpirun -np N trident bench io [options]");
  desc.add_options()("help", "this help")
      ("mb", po::value<int64_t>()->default_value(512), "checkpoint size in MiB (fp32 tensors of 16 MiB)")
      ("dir", po::value<std::string>()->default_value("runs/bench-io"), "directory for the files (removed after)");
  po::variables_map vm;
  if (const auto stop = parse_bench_options(desc, argc, argv, "io", vm)) return *stop;
  dist::MpiSession mpi(&argc, &argv);
  const int rank = mpi.world_rank(), size = mpi.world_size();
  const std::string dir = vm["dir"].as<std::string>();
  if (rank == 0) make_directories(dir);
  MPI_Barrier(MPI_COMM_WORLD);
  // Tensors of [1024, 4096] fp32 (16 MiB), each split by rows over the ranks, like a tp shard.
  constexpr int64_t kRows = 1024, kCols = 4096;
  const int64_t tensors = std::max<int64_t>(1, vm["mb"].as<int64_t>() / 16);
  const int64_t rows = kRows / size;
  std::map<std::string, Shape> datasets;
  std::vector<io::ShardPiece> pieces;
  for (int64_t t = 0; t < tensors; ++t) {
    const std::string name = "/model/t" + std::to_string(t);
    datasets[name] = Shape{kRows, kCols};
    io::ShardPiece p;
    p.dataset = name;
    p.row0 = rows * rank;
    p.local_cols = kCols;
    p.begin = 0;
    p.end = rows * kCols;
    p.stored_rows = kRows;
    p.data = Tensor::zeros(Shape{rows * kCols}, DType::kF32);
    for (int64_t i = 0; i < p.end; ++i) p.data.data<float>()[i] = float((t * 7 + i) % 1000) * 0.5f;
    pieces.push_back(p);
  }
  const double bytes = double(tensors) * kRows * kCols * 4;
  const std::string path = dir + "/bench.h5";

  MPI_Barrier(MPI_COMM_WORLD);
  Stopwatch write_watch;
  io::write_checkpoint(path, MPI_COMM_WORLD, datasets, pieces, {});
  const double write_s = write_watch.seconds();

  for (auto& p : pieces) std::fill(p.data.data<float>(), p.data.data<float>() + p.end, 0.0f);
  MPI_Barrier(MPI_COMM_WORLD);
  Stopwatch read_watch;
  io::read_checkpoint(path, MPI_COMM_WORLD, datasets, pieces);
  const double read_s = read_watch.seconds();
  int bad = 0;
  for (int64_t t = 0; t < tensors; ++t)
    for (int64_t i = 0; i < pieces[t].end; i += 4099)
      bad += pieces[t].data.data<float>()[i] != float((t * 7 + i) % 1000) * 0.5f;
  MPI_Allreduce(MPI_IN_PLACE, &bad, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD);

  // The reference: one process writing the same bytes sequentially, then fsync.
  double plain_s = 0;
  if (rank == 0) {
    const std::string plain = dir + "/plain.bin";
    std::vector<char> block(size_t(16) << 20, 1);
    Stopwatch plain_watch;
    const int fd = ::open(plain.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd >= 0) secure_file(fd, plain);
    for (int64_t t = 0; t < tensors; ++t)
      if (::write(fd, block.data(), block.size()) != static_cast<ssize_t>(block.size())) bad = 1;
    ::fsync(fd);
    ::close(fd);
    plain_s = plain_watch.seconds();
    std::filesystem::remove(plain);
    std::filesystem::remove(path);
    std::printf("checkpoint of %.0f MiB in %lld tensors over %d ranks\n", bytes / (1 << 20), (long long)tensors, size);
    std::printf("  trident write (collective HDF5, checksums, fsync, rename): %7.3f s  %7.1f MB/s\n", write_s, bytes / write_s / 1e6);
    std::printf("  trident read  (checksums verified, then pieces):          %7.3f s  %7.1f MB/s\n", read_s, bytes / read_s / 1e6);
    std::printf("  plain sequential write + fsync, one process:              %7.3f s  %7.1f MB/s\n", plain_s, bytes / plain_s / 1e6);
    std::printf("  trident write / plain write bandwidth: %.2fx%s\n", plain_s / write_s, bad ? "  (DATA CHECK FAILED)" : "");
  }
  return bad ? 1 : 0;
}

}  // namespace trident::cli
