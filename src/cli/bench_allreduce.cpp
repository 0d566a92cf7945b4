// `trident bench allreduce`: trident's all-reduce (chunked, in place) next to one plain
// MPI_Allreduce of the same buffer, measured in the same run, message sizes 4 KiB .. 256 MiB.
// Reports time, algorithm bandwidth (bytes / time) and bus bandwidth (x 2(n-1)/n, the
// nccl-tests convention), and checks the reduced data of both.
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <vector>

#include "bench_options.hpp"
#include "trident/cli/commands.hpp"
#include "trident/dist/communicator.hpp"
#include "trident/dist/mpi_session.hpp"

namespace po = boost::program_options;

namespace trident::cli {

namespace {

// Seconds per call (the slowest rank's), after one warm-up call.
template <typename Fn>
double time_calls(MPI_Comm comm, double min_seconds, Fn&& fn) {
  fn();
  MPI_Barrier(comm);
  const double t0 = MPI_Wtime();
  int calls = 0;
  int go = 1;
  while (go) {
    fn();
    ++calls;
    // Every rank must make the same number of calls: rank 0 decides when to stop.
    go = MPI_Wtime() - t0 < min_seconds;
    MPI_Bcast(&go, 1, MPI_INT, 0, comm);
  }
  double per_call = (MPI_Wtime() - t0) / calls;
  MPI_Allreduce(MPI_IN_PLACE, &per_call, 1, MPI_DOUBLE, MPI_MAX, comm);
  return per_call;
}

// Fills x with rank-dependent values; check() verifies the sum after `reductions` in-place
// all-reduces (values grow by the group size each time).
void fill(Tensor& x, int rank) {
  float* p = x.data<float>();
  for (int64_t i = 0; i < x.numel(); ++i) p[i] = float((rank + 1) * (i % 5));
}
bool check(const Tensor& x, int size) {
  const float* p = x.data<float>();
  const float ranks = float(size * (size + 1) / 2);
  for (int64_t i = 0; i < x.numel(); i += 997)
    if (p[i] != ranks * float(i % 5)) return false;
  return true;
}

}  // namespace

int bench_allreduce(int argc, char** argv) {
  po::options_description desc("mpirun -np N trident bench allreduce [options]");
  desc.add_options()("help", "this help")
      ("min-bytes", po::value<int64_t>()->default_value(4 << 10), "smallest message")
      ("max-bytes", po::value<int64_t>()->default_value(int64_t(256) << 20), "largest message (sizes x4)")
      ("seconds", po::value<double>()->default_value(0.3), "time per size and method");
  po::variables_map vm;
  if (const auto stop = parse_bench_options(desc, argc, argv, "allreduce", vm)) return *stop;
  dist::MpiSession mpi(&argc, &argv);
  dist::Communicator world(MPI_COMM_WORLD);
  const int n = world.size(), r = world.rank();
  const double seconds = vm["seconds"].as<double>();
  if (r == 0) {
    std::printf("all-reduce (sum, fp32, in place) over %d ranks; bus bandwidth = algorithm bandwidth x 2(n-1)/n\n", n);
    std::printf("%10s | %10s %9s %9s | %10s %9s %9s | %7s\n", "bytes", "trident ms", "alg GB/s", "bus GB/s",
                "plain ms", "alg GB/s", "bus GB/s", "speedup");
  }
  bool all_ok = true;
  for (int64_t bytes = vm["min-bytes"].as<int64_t>(); bytes <= vm["max-bytes"].as<int64_t>(); bytes *= 4) {
    Tensor x = Tensor::zeros(Shape{bytes / 4}, DType::kF32);
    // Correctness first: one reduction of known data by each method.
    fill(x, r);
    world.all_reduce_sum(x);
    bool ok = check(x, n);
    fill(x, r);
    MPI_Allreduce(MPI_IN_PLACE, x.raw(), static_cast<int>(x.numel()), MPI_FLOAT, MPI_SUM, world.comm());
    ok = ok && check(x, n);
    all_ok = all_ok && ok;
    // Timing on zeros, so repeated sums stay finite.
    std::fill(x.data<float>(), x.data<float>() + x.numel(), 0.0f);
    const double t_ours = time_calls(world.comm(), seconds, [&] { world.all_reduce_sum(x); });
    const double t_plain = time_calls(world.comm(), seconds, [&] {
      MPI_Allreduce(MPI_IN_PLACE, x.raw(), static_cast<int>(x.numel()), MPI_FLOAT, MPI_SUM, world.comm());
    });
    const double bus = 2.0 * (n - 1) / n;
    if (r == 0)
      std::printf("%10lld | %10.3f %9.2f %9.2f | %10.3f %9.2f %9.2f | %6.2fx%s\n", (long long)bytes, t_ours * 1e3,
                  bytes / t_ours / 1e9, bus * bytes / t_ours / 1e9, t_plain * 1e3, bytes / t_plain / 1e9,
                  bus * bytes / t_plain / 1e9, t_plain / t_ours, ok ? "" : "  WRONG DATA");
  }
  return all_ok ? 0 : 1;
}

}  // namespace trident::cli
