// `trident plan --calibrate`: measures what the planner's `local` cluster needs on this machine:
// the backend's peak and GEMM rate at transformer shapes, its attention rate, streaming memory
// bandwidth, a small kernel's fixed cost, and (under mpirun with >= 2 ranks) MPI all-reduce
// bandwidth and latency. Rank 0 writes the calibration file.
#include <mpi.h>

#include <algorithm>
#include <chrono>
#include <ctime>
#include <functional>
#include <thread>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/core/timer.hpp"
#include "trident/plan/cluster.hpp"

namespace trident::cli {

namespace {

// Median of `reps` timings of fn after one warm-up call: what a long run gets on a machine that
// other work shares (the best time would be what it gets when alone).
double median_seconds(int reps, const std::function<void()>& fn) {
  fn();
  std::vector<double> times;
  for (int i = 0; i < reps; ++i) {
    Stopwatch w;
    fn();
    times.push_back(w.seconds());
  }
  std::nth_element(times.begin(), times.begin() + reps / 2, times.end());
  return times[static_cast<size_t>(reps / 2)];
}

// FLOP/s of the GEMMs of a transformer block at 4096 rows, hidden 768 (QKV, MLP up and down).
double gemm_rate(Ops& ops, DType precision) {
  ops.set_matmul_precision(precision);
  const int64_t rows = 4096, h = 768;
  double flops = 0, seconds = 0;
  for (auto [n, k] : {std::pair<int64_t, int64_t>{3 * h, h}, {4 * h, h}, {h, 4 * h}}) {
    Tensor a = ops.zeros(Shape{rows, k}, DType::kF32), b = ops.zeros(Shape{n, k}, DType::kF32);
    Tensor c = ops.zeros(Shape{rows, n}, DType::kF32);
    ops.fill(a, 0.5), ops.fill(b, 0.25);
    seconds += median_seconds(5, [&] { ops.gemm(false, true, 1.0, a, b, 0.0, c); });
    flops += 2.0 * rows * n * k;
  }
  ops.set_matmul_precision(DType::kF32);
  return flops / seconds;
}

// Causal attention forward + backward, counted as 3 x 4 B T^2 C (the convention of the planner:
// full T x T products).
double attention_rate(Ops& ops) {
  const int64_t batch = 4, t = 256, heads = 6, hs = 64, c = heads * hs;
  Tensor q = ops.zeros(Shape{batch, t, c}, DType::kF32), k = ops.zeros(Shape{batch, t, c}, DType::kF32);
  Tensor v = ops.zeros(Shape{batch, t, c}, DType::kF32), out = ops.zeros(Shape{batch, t, c}, DType::kF32);
  Tensor lse = ops.zeros(Shape{batch, heads, t}, DType::kF32), dout = ops.zeros(Shape{batch, t, c}, DType::kF32);
  Tensor dq = ops.zeros(Shape{batch, t, c}, DType::kF32), dk = ops.zeros(Shape{batch, t, c}, DType::kF32);
  Tensor dv = ops.zeros(Shape{batch, t, c}, DType::kF32);
  ops.fill(q, 0.1), ops.fill(k, 0.2), ops.fill(v, 0.3), ops.fill(dout, 0.01);
  const Tensor none;
  const double seconds = median_seconds(5, [&] {
    ops.attention_forward(q, k, v, int(heads), int(heads), none, out, lse);
    ops.attention_backward(q, k, v, out, lse, dout, int(heads), int(heads), none, dq, dk, dv);
  });
  return 3.0 * 4.0 * batch * t * t * c / seconds;
}

// Bytes/s of out = a + b over 3 x 64 MiB (read 2, write 1).
double memory_rate(Ops& ops) {
  const int64_t n = 16 << 20;
  Tensor a = ops.zeros(Shape{n}, DType::kF32), b = ops.zeros(Shape{n}, DType::kF32), out = ops.zeros(Shape{n}, DType::kF32);
  return 3.0 * 4.0 * n / median_seconds(5, [&] { ops.add(a, b, out); });
}

// A GEMM and an add on 32 x 32 tensors (no work to speak of), repeated for ~0.2 s: the mean time
// of the pair is the fixed cost of two kernels as a step pays it on average, preemptions by
// other work on the machine included.
struct SmallKernels {
  double seconds, flops, bytes;
};
SmallKernels small_kernels(Ops& ops) {
  const int64_t rows = 32, h = 32;
  Tensor x = ops.zeros(Shape{rows, h}, DType::kF32), w = ops.zeros(Shape{3 * h, h}, DType::kF32);
  Tensor y = ops.zeros(Shape{rows, 3 * h}, DType::kF32), z = ops.zeros(Shape{rows, 3 * h}, DType::kF32);
  ops.gemm(false, true, 1.0, x, w, 0.0, y);
  Stopwatch watch;
  int n = 0;
  for (; n < 100000 && (n < 100 || watch.seconds() < 0.2); ++n) {
    ops.gemm(false, true, 1.0, x, w, 0.0, y);
    ops.add(y, y, z);
  }
  return {watch.seconds() / n, 2.0 * rows * 3 * h * h, 3.0 * 4 * rows * 3 * h};
}

// Mean time of a GEMM of a small model's size ([128, 64] x [64, 192]) over ~0.2 s; what exceeds
// its FLOPs at the large-GEMM rate is the GEMM's fixed cost (packing, threads).
constexpr double kSmallGemmFlops = 2.0 * 128 * 192 * 64;
double small_gemm_seconds(Ops& ops) {
  Tensor x = ops.zeros(Shape{128, 64}, DType::kF32), w = ops.zeros(Shape{192, 64}, DType::kF32);
  Tensor y = ops.zeros(Shape{128, 192}, DType::kF32);
  ops.gemm(false, true, 1.0, x, w, 0.0, y);
  Stopwatch watch;
  int n = 0;
  for (; n < 100000 && (n < 100 || watch.seconds() < 0.2); ++n) ops.gemm(false, true, 1.0, x, w, 0.0, y);
  return watch.seconds() / n;
}

// Bus bandwidth of an 8 MiB all-reduce and the time of an 8-byte one, over MPI_COMM_WORLD.
std::pair<double, double> comm_rate() {
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  if (size < 2) return {0.0, 0.0};
  std::vector<float> buf(2 << 20, 1.0f);
  double tiny[1] = {1.0};
  auto sync_best = [&](int reps, const std::function<void()>& fn) {
    double best = 1e30;
    for (int i = 0; i <= reps; ++i) {
      MPI_Barrier(MPI_COMM_WORLD);
      Stopwatch w;
      fn();
      double s = w.seconds();
      MPI_Allreduce(MPI_IN_PLACE, &s, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
      if (i > 0) best = std::min(best, s);
    }
    return best;
  };
  const double big = sync_best(5, [&] { MPI_Allreduce(MPI_IN_PLACE, buf.data(), int(buf.size()), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD); });
  const double small = sync_best(50, [&] { MPI_Allreduce(MPI_IN_PLACE, tiny, 1, MPI_DOUBLE, MPI_SUM, MPI_COMM_WORLD); });
  const double bytes = 4.0 * double(buf.size());
  return {2.0 * (size - 1) / size * bytes / big, small / (2.0 * (size - 1))};
}

// A barrier that sleeps while it waits: Open MPI's blocking barrier spins and would take a core
// from the rank that is measuring.
void idle_barrier() {
  MPI_Request request;
  MPI_Ibarrier(MPI_COMM_WORLD, &request);
  int done = 0;
  while (MPI_Test(&request, &done, MPI_STATUS_IGNORE), !done) std::this_thread::sleep_for(std::chrono::milliseconds(2));
}

}  // namespace

plan::LocalCalibration calibrate_local_machine() {
  plan::LocalCalibration c;
  int size = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  c.cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  // Compute figures of all cores, measured by rank 0 alone with every core (the others sleep).
  int rank = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  if (rank == 0) {
    std::unique_ptr<Ops> ops = make_cpu_ops(c.cores);
    const SmallKernels small = small_kernels(*ops);
    // A process with MPI, OpenMP threads and the GEMM library loaded, before any large buffer.
    c.base_rss_bytes = current_rss_mb() * 1024 * 1024;
    c.peak_fp32 = ops->peak_flops(DType::kF32);
    c.peak_bf16 = ops->peak_flops(DType::kBF16);
    c.gemm_fp32 = gemm_rate(*ops, DType::kF32);
    // 0 where the backend computes bf16 GEMMs in fp32 (no faster path here).
    const bool bf16_gemms = ops->set_matmul_precision(DType::kBF16) == DType::kBF16;
    ops->set_matmul_precision(DType::kF32);
    c.gemm_bf16 = bf16_gemms ? gemm_rate(*ops, DType::kBF16) : 0;
    c.attention_fp32 = attention_rate(*ops);
    c.memory_bandwidth = memory_rate(*ops);
    c.kernel_overhead_s = small.seconds / 2;
    c.gemm_overhead_s = std::max(0.0, small_gemm_seconds(*ops) - kSmallGemmFlops / c.gemm_fp32 - c.kernel_overhead_s);
    std::unique_ptr<Ops> one = make_cpu_ops(1);
    c.gemm_fp32_1 = gemm_rate(*one, DType::kF32);
    c.gemm_bf16_1 = bf16_gemms ? gemm_rate(*one, DType::kBF16) : 0;
    c.attention_fp32_1 = attention_rate(*one);
    c.memory_bandwidth_1 = memory_rate(*one);
  }
  idle_barrier();
  std::tie(c.comm_bandwidth, c.comm_latency_s) = comm_rate();
  const std::time_t now = std::time(nullptr);
  char stamp[32];
  std::strftime(stamp, sizeof stamp, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
  c.measured_at = stamp;
  return c;
}

}  // namespace trident::cli
