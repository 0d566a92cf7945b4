// `trident bench step`: warm-up, then N timed training steps of a configuration on synthetic
// tokens, with the time split by phase (kernels by kind, communication wait, pipeline bubble,
// data) and the model FLOP rate against the rank's measured peak.
#include <algorithm>
#include <stdlib.h>
#include <unistd.h>

#include <cstdio>
#include <optional>
#include <span>
#include <filesystem>
#include <string>
#include <vector>

#include "rank_threads.hpp"
#include "backend_select.hpp"
#include "trident/backend/profiling_ops.hpp"
#include "trident/cli/commands.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/core/json.hpp"
#include "trident/core/log.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/timer.hpp"
#include "trident/data/shard_format.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/dist/topology.hpp"
#include "trident/dist/watchdog.hpp"
#include "trident/train/run_accounting.hpp"
#include "trident/train/run_banner.hpp"
#include "trident/train/run_builder.hpp"

namespace trident::cli {
namespace {

namespace fs = std::filesystem;

constexpr const char* kUsage =
    "usage: trident bench step --config FILE [--steps N] [--warmup N] [--json] [--section.key=value ...]\n"
    "       mpirun -np N trident bench step --config FILE --parallel.dp=N ...\n"
    "Runs the configuration's training step on synthetic tokens: warm-up steps, then N timed steps.\n"
    "Model FLOPs per token = 6 * (matmul parameters, head included) + 12 * layers * seq_len * hidden\n"
    "(attention scores and values); recomputed FLOPs are not counted. On a GPU (train.backend) the timed\n"
    "steps run unprofiled and N more steps, synchronised around every kernel, give the per-kernel times.";

struct BenchOptions {
  int64_t steps = 10;
  int64_t warmup = 2;
  bool json = false;
  bool help = false;
  std::vector<char*> config_args;  // what parse_run_config sees
};

// Takes --steps/--warmup/--json/--help out of argv; everything else is the run configuration.
BenchOptions split_options(int argc, char** argv) {
  BenchOptions o;
  o.config_args.push_back(argv[0]);
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    auto value = [&](const std::string& name) -> std::optional<int64_t> {
      std::string text;
      if (arg == name && i + 1 < argc) text = argv[++i];
      else if (arg.rfind(name + "=", 0) == 0) text = arg.substr(name.size() + 1);
      else return std::nullopt;
      char* end = nullptr;
      const long long v = std::strtoll(text.c_str(), &end, 10);
      TRIDENT_CONFIG_CHECK(!text.empty() && *end == '\0' && v >= 0, name, " needs a non-negative integer (got '",
                           text, "')");
      return v;
    };
    if (auto v = value("--steps")) o.steps = *v;
    else if (auto w = value("--warmup")) o.warmup = *w;
    else if (arg == "--json") o.json = true;
    else if (arg == "--help" || arg == "-h") o.help = true;
    else o.config_args.push_back(argv[i]);
  }
  TRIDENT_CONFIG_CHECK(o.steps >= 1, "--steps must be at least 1");
  return o;
}

// A private scratch directory per rank, removed at the end.
struct ScratchDir {
  fs::path path;
  ScratchDir() {
    std::string pattern = (fs::temp_directory_path() / "trident-bench-XXXXXX").string();
    TRIDENT_CHECK(mkdtemp(pattern.data()) != nullptr, "cannot create a scratch directory under ",
                  fs::temp_directory_path().string());
    path = pattern;
  }
  ~ScratchDir() {
    std::error_code ignored;
    fs::remove_all(path, ignored);
  }
};

// One document of uniformly random tokens, enough for every step of the benchmark.
// One document of `tokens` random ids, or (document_tokens > 0) documents of that many: one
// per row of seq_len + 1, so that privacy units fill whole rows as the packed stream does.
void write_synthetic_shard(const std::string& prefix, int64_t tokens, int64_t vocab, uint64_t seed,
                           int64_t document_tokens = 0) {
  data::ShardWriter writer(prefix, static_cast<uint64_t>(vocab));
  std::vector<uint32_t> ids(static_cast<size_t>(tokens));
  const uint64_t key = rng_key(seed, "bench.tokens");
  for (size_t i = 0; i < ids.size(); ++i) ids[i] = static_cast<uint32_t>(rng_uniform(key, i) * double(vocab)) % vocab;
  const size_t per = document_tokens > 0 ? size_t(document_tokens) : ids.size();
  for (size_t at = 0; at + per <= ids.size(); at += per)
    writer.add_document(std::span<const uint32_t>(ids).subspan(at, per));
  writer.finish();
}

struct Phase {
  std::string name;
  double seconds;  // per step
};

}  // namespace

int bench_step(int argc, char** argv) {
  BenchOptions options;
  try {
    options = split_options(argc, argv);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident bench step: error: %s\n", e.what());
    return 2;
  }
  if (options.help) {
    std::printf("%s\n", config_help(kUsage).c_str());
    return 0;
  }
  dist::MpiSession mpi(&argc, &argv);
  const Logger log = options.json ? Logger::quiet(mpi.world_rank()) : Logger(mpi.world_rank());
  train::RunConfig cfg;
  try {
    cfg = parse_run_config(static_cast<int>(options.config_args.size()), options.config_args.data(), mpi.world_size());
  } catch (const ConfigError& e) {
    if (mpi.world_rank() == 0) std::fprintf(stderr, "trident bench step: error: %s\n", e.what());
    return 2;
  }
  try {
    ScratchDir scratch;
    const int threads = compute_threads(cfg.train.threads);
    std::unique_ptr<Ops> backend = select_backend(cfg.train.backend, threads, log);
    // A device backend's timed steps run unprofiled (profiling synchronises around every
    // kernel); as many profiled steps follow for the breakdown.
    const bool on_cpu = backend->device() == Device::kCPU;
    const int64_t steps = options.warmup + options.steps * (on_cpu ? 1 : 2);
    const int64_t tokens = steps * cfg.train.global_batch * cfg.model.seq_len + cfg.model.seq_len + 1;
    write_synthetic_shard((scratch.path / "synthetic").string(), tokens, cfg.model.vocab, cfg.train.seed,
                          cfg.privacy.enabled ? cfg.model.seq_len + 1 : 0);
    cfg.data.train = (scratch.path / "synthetic").string();
    cfg.train.steps = steps;

    KernelTimes kernel_times;
    std::unique_ptr<Ops> ops = make_profiling_ops(*backend, kernel_times);
    kernel_times.enabled = on_cpu;
    dist::Watchdog watchdog(cfg.comm.timeout_s, mpi.world_rank());
    dist::Topology topology(cfg.layout, MPI_COMM_WORLD, mpi.reductions());
    topology.set_watchdog(&watchdog);
    attach_device_groups(topology, *backend);  // the CUDA backend itself: NCCL needs its stream
    // What a training step needs and nothing else: no checkpoints, no run record, no weights
    // loaded (the values do not change the time).
    train::RunBuilder run(cfg, *ops, topology, log);
    train::TrainingStep& step = run.step();
    train::DataSource& data = run.train_data();
    train::log_model_banner(run);
    // The precision the GEMMs really compute in (train.precision = bf16 or auto may fall back).
    const DType compute = run.matmul_dtype() == DType::kBF16 ? DType::kBF16 : DType::kF32;
    train::log_training_banner(run, ops->peak_flops(compute));
    train::PrivateTraining* private_steps = run.privacy();  // DP-SGD's two passes and noise
    auto train_step = [&](int64_t s) {
      return private_steps ? private_steps->run(s) : step.run(s, data.load(s), data.global_batch_stats(s));
    };

    for (int64_t s = 0; s < options.warmup; ++s) train_step(s);
    auto comm_seconds = [&] {
      double t = topology.dp().seconds() + (topology.layout().tp > 1 ? topology.tp().seconds() : 0.0);
      if (topology.embedding()) t += topology.embedding()->seconds();
      return t;
    };
    kernel_times = KernelTimes{};
    kernel_times.enabled = on_cpu;
    const double comm0 = comm_seconds(), data0 = data.seconds();
    double bubble = 0, loss = 0;
    topology.world().barrier();
    Stopwatch watch;
    const int64_t timed_end = options.warmup + options.steps;
    for (int64_t s = options.warmup; s < timed_end; ++s) {
      const train::StepResult r = train_step(s);
      bubble += r.bubble * r.seconds;
      loss = r.loss;
    }
    const double seconds = watch.seconds();
    if (!on_cpu) {
      kernel_times.enabled = true;
      for (int64_t s = timed_end; s < steps; ++s) train_step(s);
    }
    const double n = double(options.steps);

    // Per-step phase times of this rank; the step time and memory are the slowest rank's.
    std::vector<Phase> phases;
    for (size_t i = 0; i < kernel_times.seconds.size(); ++i)
      phases.push_back({kernel_phase_name(static_cast<KernelPhase>(i)), kernel_times.seconds[i] / n});
    phases.push_back({"comm_wait", (comm_seconds() - comm0) / n});
    phases.push_back({"pipeline_bubble", bubble / n});
    phases.push_back({"data", (data.seconds() - data0) / n});
    double accounted = 0;
    for (const Phase& p : phases) accounted += p.seconds;
    const double step_s = seconds / n;
    phases.push_back({"other", std::max(0.0, step_s - accounted)});
    double worst[3] = {step_s, peak_rss_mb(), backend->peak_device_mb()};
    topology.world().all_reduce_max(worst, 3);
    topology.shutdown_device();  // the steps are done; what follows is rank 0's report

    const model::ModelConfig& m = run.model().config();
    const double tokens_per_step = double(cfg.train.global_batch) * double(m.seq_len);
    const double tokens_per_s = tokens_per_step / worst[0];
    const double flops_per_s = tokens_per_s * m.train_flops_per_token();
    const double peak = ops->peak_flops(compute) * mpi.world_size();
    const double mfu = flops_per_s / peak;
    const double gemm_rate = kernel_times.seconds[0] > 0 ? kernel_times.gemm_flops / kernel_times.seconds[0] : 0;
    const double accounted_mb = double(train::parameter_bytes(run.model().params()) + run.optimizer().state_bytes() +
                                       run.model().activation_bytes()) / double(1 << 20);
    if (mpi.world_rank() != 0) return 0;
    // The kernels behind the phases, slowest first: where an optimisation would pay.
    std::vector<KernelTimes::Kernel> kernels = kernel_times.kernels;
    std::sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });

    if (options.json) {
      Json out = Json::object();
      out.set("layout", Json(detail::concat("dp=", cfg.layout.dp, ",tp=", cfg.layout.tp, ",pp=", cfg.layout.pp)));
      out.set("ranks", Json(mpi.world_size()));
      out.set("threads_per_rank", Json(threads));
      out.set("precision", Json(dtype_name(run.matmul_dtype())));
      out.set("activation_dtype", Json(dtype_name(run.activation_dtype())));
      out.set("steps", Json(options.steps));
      out.set("tokens_per_step", Json(tokens_per_step));
      out.set("step_s", Json(worst[0]));
      out.set("tokens_per_s", Json(tokens_per_s));
      out.set("tflops", Json(flops_per_s / 1e12));
      out.set("tflops_per_rank", Json(flops_per_s / 1e12 / mpi.world_size()));
      out.set("mfu", Json(mfu));
      out.set("peak_gflops", Json(peak / 1e9));
      out.set("gemm_gflops_per_rank", Json(gemm_rate / 1e9));
      out.set("peak_rss_mb", Json(worst[1]));
      if (!on_cpu) out.set("peak_gpu_mb", Json(worst[2]));
      out.set("accounted_mb", Json(accounted_mb));
      out.set("loss", Json(loss));
      Json breakdown = Json::object();
      for (const Phase& p : phases) breakdown.set(p.name, Json(p.seconds));
      out.set("breakdown_s", std::move(breakdown));
      Json per_kernel = Json::object();
      for (const KernelTimes::Kernel& k : kernels) per_kernel.set(k.name, Json(k.seconds / n));
      out.set("kernels_s", std::move(per_kernel));
      std::printf("%s\n", out.dump().c_str());
      return 0;
    }
    std::printf("\nbench step: %lld timed steps after %lld warm-up, %d rank(s) x %d thread(s), %s, layout dp=%d tp=%d pp=%d\n",
                (long long)options.steps, (long long)options.warmup, mpi.world_size(), threads,
                std::string(dtype_name(run.matmul_dtype())).c_str(), cfg.layout.dp, cfg.layout.tp, cfg.layout.pp);
    std::printf("  tokens/s            %12.1f   (%g tokens per step, %.4f s per step)\n", tokens_per_s, tokens_per_step,
                worst[0]);
    std::printf("  model TFLOP/s       %12.4f   (6 x %lld matmul parameters + 12 x %d x %lld x %d attention, per token)\n",
                flops_per_s / 1e12, (long long)m.matmul_params(), m.layers, (long long)m.seq_len, m.hidden);
    const std::string peak_kind = compute == DType::kBF16 && ops->device() == Device::kCPU
                                      ? "fp32 FMA rate x measured bf16:fp32 GEMM speed"
                                      : std::string(dtype_name(compute)) + " FMA rate";
    std::printf("  MFU                 %11.1f%%   of %.0f GFLOP/s measured peak (%s x %d rank(s))\n", 100 * mfu,
                peak / 1e9, peak_kind.c_str(), mpi.world_size());
    std::printf("  GEMM rate (rank 0)  %12.1f   GFLOP/s inside GEMM calls\n", gemm_rate / 1e9);
    std::printf("  peak RSS            %12.1f   MiB per rank (accounted: %.1f MiB parameters+gradients+optimizer+activations)\n",
                worst[1], accounted_mb);
    if (!on_cpu) std::printf("  peak GPU memory     %12.1f   MiB per rank (live tensors)\n", worst[2]);
    std::printf("  time per step, rank 0:\n");
    for (const Phase& p : phases)
      std::printf("    %-18s %9.4f s  %5.1f%%\n", p.name.c_str(), p.seconds, 100 * p.seconds / step_s);
    std::printf("  kernels per step, rank 0 (phase):\n");
    for (const KernelTimes::Kernel& k : kernels)
      std::printf("    %-32s %9.4f s  %5.1f%%  %6.1f calls  (%s)\n", k.name, k.seconds / n, 100 * k.seconds / n / step_s,
                  double(k.calls) / n, kernel_phase_name(k.phase));
    return 0;
  } catch (const ConfigError& e) {
    mpi.abort(2, std::string("trident bench step: error: ") + e.what());
  } catch (const std::exception& e) {
    mpi.abort(1, std::string("trident bench step: failed: ") + e.what());
  }
}

}  // namespace trident::cli
