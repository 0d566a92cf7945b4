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

#include "run_session.hpp"
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

// What the timed steps measured.
struct StepMeasurement {
  std::vector<Phase> phases;                 // per step, this rank's
  std::vector<KernelTimes::Kernel> kernels;  // this rank's, slowest first
  double step_s = 0, peak_rss_mb = 0, peak_gpu_mb = 0;  // the slowest rank's
  double loss = 0;                           // of the last timed step
  double tokens_per_step = 0, tokens_per_s = 0, flops_per_s = 0;
  double peak = 0, mfu = 0;                  // peak: the run's FLOP/s (every rank)
  double gemm_rate = 0;                      // FLOP/s inside GEMM calls, this rank
  double accounted_mb = 0;                   // parameters, gradients, optimizer, activations
  DType compute = DType::kF32;               // the precision the GEMMs compute in
};

// The synthetic data of `steps` steps as data.train, in scratch.
void use_synthetic_data(train::RunConfig& cfg, const fs::path& scratch, int64_t steps) {
  const int64_t tokens = steps * cfg.train.global_batch * cfg.model.seq_len + cfg.model.seq_len + 1;
  write_synthetic_shard((scratch / "synthetic").string(), tokens, cfg.model.vocab, cfg.train.seed,
                        cfg.privacy.enabled ? cfg.model.seq_len + 1 : 0);
  cfg.data.train = (scratch / "synthetic").string();
  cfg.data.mix = data::parse_mix(cfg.data.train, "", "", "", "");
  cfg.train.steps = steps;
}

// Collective: warm-up, the timed steps, then (on a GPU: kernel_times was off) as many profiled
// steps for the kernel breakdown.
StepMeasurement measure(train::RunBuilder& run, KernelTimes& kernel_times, const BenchOptions& options) {
  dist::Topology& topology = run.topology();
  train::DataSource& data = run.train_data();
  const bool on_cpu = run.ops().device() == Device::kCPU;
  for (int64_t s = 0; s < options.warmup; ++s) run.train_step(s);
  auto comm_seconds = [&] {
    double t = topology.dp().seconds() + (topology.layout().tp > 1 ? topology.tp().seconds() : 0.0);
    if (topology.embedding()) t += topology.embedding()->seconds();
    return t;
  };
  kernel_times = KernelTimes{};
  kernel_times.enabled = on_cpu;
  const double comm0 = comm_seconds(), data0 = data.seconds();
  StepMeasurement out;
  double bubble = 0;
  topology.world().barrier();
  Stopwatch watch;
  const int64_t timed_end = options.warmup + options.steps;
  for (int64_t s = options.warmup; s < timed_end; ++s) {
    const train::StepResult r = run.train_step(s);
    bubble += r.bubble * r.seconds;
    out.loss = r.loss;
  }
  const double seconds = watch.seconds();
  if (!on_cpu) {
    kernel_times.enabled = true;
    for (int64_t s = timed_end; s < run.config().train.steps; ++s) run.train_step(s);
  }
  const double n = double(options.steps);
  for (size_t i = 0; i < kernel_times.seconds.size(); ++i)
    out.phases.push_back({kernel_phase_name(static_cast<KernelPhase>(i)), kernel_times.seconds[i] / n});
  out.phases.push_back({"comm_wait", (comm_seconds() - comm0) / n});
  out.phases.push_back({"pipeline_bubble", bubble / n});
  out.phases.push_back({"data", (data.seconds() - data0) / n});
  double accounted = 0;
  for (const Phase& p : out.phases) accounted += p.seconds;
  out.phases.push_back({"other", std::max(0.0, seconds / n - accounted)});
  double worst[3] = {seconds / n, peak_rss_mb(), run.ops().peak_device_mb()};
  topology.world().all_reduce_max(worst, 3);
  out.step_s = worst[0];
  out.peak_rss_mb = worst[1];
  out.peak_gpu_mb = worst[2];
  out.kernels = kernel_times.kernels;
  std::sort(out.kernels.begin(), out.kernels.end(), [](const auto& a, const auto& b) { return a.seconds > b.seconds; });
  out.gemm_rate = kernel_times.seconds[0] > 0 ? kernel_times.gemm_flops / kernel_times.seconds[0] : 0;
  return out;
}

// The rates and memory of a measurement, from the run's model and each rank's peak FLOP/s.
void add_rates(StepMeasurement& m, train::RunBuilder& run) {
  const train::RunConfig& cfg = run.config();
  const model::ModelConfig& model = run.model().config();
  const int ranks = run.topology().world_size();
  m.compute = run.peak_dtype();
  const double peak_per_rank = run.peak_flops_per_rank();
  m.tokens_per_step = double(cfg.train.global_batch) * double(model.seq_len);
  m.tokens_per_s = m.tokens_per_step / m.step_s;
  m.flops_per_s = m.tokens_per_s * train::train_flops_per_token(cfg, model);
  m.peak = peak_per_rank * ranks;
  m.mfu = train::model_flops_utilization(cfg, model, m.tokens_per_s, peak_per_rank, ranks);
  m.accounted_mb = double(train::parameter_bytes(run.model().params()) + run.optimizer().state_bytes() +
                          run.model().activation_bytes()) / double(1 << 20);
}

void print_json(const StepMeasurement& m, train::RunBuilder& run, const BenchOptions& options, int threads) {
  const train::RunConfig& cfg = run.config();
  const int ranks = run.topology().world_size();
  const double n = double(options.steps);
  Json out = Json::object();
  out.set("layout", Json(detail::concat("dp=", cfg.layout.dp, ",tp=", cfg.layout.tp, ",pp=", cfg.layout.pp)));
  out.set("ranks", Json(ranks));
  out.set("threads_per_rank", Json(threads));
  out.set("precision", Json(dtype_name(run.matmul_dtype())));
  out.set("activation_dtype", Json(dtype_name(run.activation_dtype())));
  out.set("steps", Json(options.steps));
  out.set("tokens_per_step", Json(m.tokens_per_step));
  out.set("step_s", Json(m.step_s));
  out.set("tokens_per_s", Json(m.tokens_per_s));
  out.set("tflops", Json(m.flops_per_s / 1e12));
  out.set("tflops_per_rank", Json(m.flops_per_s / 1e12 / ranks));
  out.set("mfu", Json(m.mfu));
  out.set("peak_gflops", Json(m.peak / 1e9));
  out.set("gemm_gflops_per_rank", Json(m.gemm_rate / 1e9));
  out.set("peak_rss_mb", Json(m.peak_rss_mb));
  if (run.ops().device() != Device::kCPU) out.set("peak_gpu_mb", Json(m.peak_gpu_mb));
  out.set("accounted_mb", Json(m.accounted_mb));
  out.set("loss", Json(m.loss));
  Json breakdown = Json::object();
  for (const Phase& p : m.phases) breakdown.set(p.name, Json(p.seconds));
  out.set("breakdown_s", std::move(breakdown));
  Json per_kernel = Json::object();
  for (const KernelTimes::Kernel& k : m.kernels) per_kernel.set(k.name, Json(k.seconds / n));
  out.set("kernels_s", std::move(per_kernel));
  std::printf("%s\n", out.dump().c_str());
}

void print_text(const StepMeasurement& m, train::RunBuilder& run, const BenchOptions& options, int threads) {
  const train::RunConfig& cfg = run.config();
  const model::ModelConfig& model = run.model().config();
  const int ranks = run.topology().world_size();
  const bool on_cpu = run.ops().device() == Device::kCPU;
  const double n = double(options.steps);
  std::printf("\nbench step: %lld timed steps after %lld warm-up, %d rank(s) x %d thread(s), %s, layout dp=%d tp=%d pp=%d\n",
              (long long)options.steps, (long long)options.warmup, ranks, threads,
              std::string(dtype_name(run.matmul_dtype())).c_str(), cfg.layout.dp, cfg.layout.tp, cfg.layout.pp);
  std::printf("  tokens/s            %12.1f   (%g tokens per step, %.4f s per step)\n", m.tokens_per_s,
              m.tokens_per_step, m.step_s);
  std::printf("  model TFLOP/s       %12.4f   (6 x %lld matmul parameters + 12 x %d x %lld x %d attention, per token)\n",
              m.flops_per_s / 1e12, (long long)model.matmul_params(), model.layers, (long long)model.seq_len,
              model.hidden);
  const std::string peak_kind = m.compute == DType::kBF16 && on_cpu
                                    ? "fp32 FMA rate x measured bf16:fp32 GEMM speed"
                                    : std::string(dtype_name(m.compute)) + " FMA rate";
  std::printf("  MFU                 %11.1f%%   of %.0f GFLOP/s measured peak (%s x %d rank(s))\n", 100 * m.mfu,
              m.peak / 1e9, peak_kind.c_str(), ranks);
  std::printf("  GEMM rate (rank 0)  %12.1f   GFLOP/s inside GEMM calls\n", m.gemm_rate / 1e9);
  std::printf("  peak RSS            %12.1f   MiB per rank (accounted: %.1f MiB parameters+gradients+optimizer+activations)\n",
              m.peak_rss_mb, m.accounted_mb);
  if (!on_cpu) std::printf("  peak GPU memory     %12.1f   MiB per rank (live tensors)\n", m.peak_gpu_mb);
  std::printf("  time per step, rank 0:\n");
  for (const Phase& p : m.phases)
    std::printf("    %-18s %9.4f s  %5.1f%%\n", p.name.c_str(), p.seconds, 100 * p.seconds / m.step_s);
  std::printf("  kernels per step, rank 0 (phase):\n");
  for (const KernelTimes::Kernel& k : m.kernels)
    std::printf("    %-32s %9.4f s  %5.1f%%  %6.1f calls  (%s)\n", k.name, k.seconds / n, 100 * k.seconds / n / m.step_s,
                double(k.calls) / n, kernel_phase_name(k.phase));
}

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
    install_file_policy(cfg.security.files);
  } catch (const ConfigError& e) {
    if (mpi.world_rank() == 0) std::fprintf(stderr, "trident bench step: error: %s\n", e.what());
    return 2;
  }
  try {
    ScratchDir scratch;
    RunSession session(cfg, MPI_COMM_WORLD, mpi.reductions(), log);
    // A device backend's timed steps run unprofiled (profiling synchronises around every
    // kernel); as many profiled steps follow for the breakdown.
    const bool on_cpu = session.backend().device() == Device::kCPU;
    use_synthetic_data(cfg, scratch.path, options.warmup + options.steps * (on_cpu ? 1 : 2));
    KernelTimes kernel_times;
    std::unique_ptr<Ops> ops = make_profiling_ops(session.backend(), kernel_times);
    kernel_times.enabled = on_cpu;
    // What a training step needs and nothing else: no checkpoints, no run record, no weights
    // loaded (the values do not change the time).
    train::RunBuilder run(cfg, *ops, session.topology(), log);
    train::log_model_banner(run);
    train::log_training_banner(run);
    StepMeasurement m = measure(run, kernel_times, options);
    add_rates(m, run);
    session.finish();  // the steps are done; what follows is rank 0's report
    if (mpi.world_rank() != 0) return 0;
    if (options.json) print_json(m, run, options, session.threads());
    else print_text(m, run, options, session.threads());
    return 0;
  } catch (const ConfigError& e) {
    mpi.abort(2, std::string("trident bench step: error: ") + e.what());
  } catch (const std::exception& e) {
    mpi.abort(1, std::string("trident bench step: failed: ") + e.what());
  }
}

}  // namespace trident::cli
