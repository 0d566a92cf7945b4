// `trident plan`: predicts step time, throughput and memory of layouts of a model on a cluster
// (include/trident/plan/step_model.hpp), searches all layouts of N ranks or scores one, and
// prints the best with a time and memory breakdown; `--calibrate` measures the local preset.
#include <mpi.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "trident/cli/commands.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/core/json.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/plan/search.hpp"

namespace trident::cli {

plan::LocalCalibration calibrate_local_machine();  // plan_calibrate.cpp

std::string calibration_path() {
  if (const char* p = std::getenv("TRIDENT_CALIBRATION"); p && *p) return p;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/trident/calibration.json";
  const char* home = std::getenv("HOME");
  return std::string(home && *home ? home : ".") + "/.cache/trident/calibration.json";
}

namespace {

constexpr const char* kUsage = R"(usage: trident plan --model SPEC --ranks N --cluster PRESET --global-batch B --seq S [options]
       trident plan --calibrate [--calibration FILE]      (mpirun -np 2 also measures MPI)

Predicts one training step (time by phase, TFLOP/s, MFU, memory per rank) of every valid layout
of N ranks, drops those that do not fit in device memory, and prints the best; --layout scores one.

  --model SPEC          a trident config file, or layers=L,hidden=H,heads=A,vocab=V[,ffn=F]
                        [,arch=gpt2|llama][,kv_heads=K][,tied=0|1][,dropout=0|1]
                        [,experts=E,top_k=K,moe_ffn=F,moe_every=N,shared_ffn=F] (mixture of experts)
  --ranks N             devices (default: the config's dp*tp*pp, or the layout's)
  --cluster PRESET      a100-80g | h100-sxm | h200 | local        (default a100-80g)
  --global-batch B      sequences per step (default: the config's train.global_batch)
  --seq S               tokens per sequence (default: the config's model.seq_len)
  --recompute MODE      none | selective | full (default: the config's; search: all three)
  --layout dp,tp,pp,mb[,v]   score this layout (mb = sequences per micro-batch, v = virtual
                        stages: v > 1 selects the interleaved schedule)
  --schedule NAME       gpipe | 1f1b for --layout with pp > 1 and v = 1 (default 1f1b)
  --ep N                expert parallelism for --layout (a divisor of dp; default 1; the search
                        tries every divisor of dp that divides the experts)
  --sp on|off           sequence parallelism (default: --layout off, search on where tp > 1)
  --zero 0|1            ZeRO-1 optimizer sharding (default: --layout 0, search 1 where dp > 1)
  --dp-overlap on|off   gradient all-reduce overlapped with the last backward, and ZeRO-1's
                        parameter all-gather with the next forward (default on)
  --hierarchical on|off|auto  node-aware dp reduction where the dp group spans nodes with more
                        than one of its ranks on each (comm.hierarchical; default auto: on where
                        that holds; on = auto, a group inside one node has nothing to split)
  --tp-overlap on|off   tensor-parallel communication overlapped with its GEMMs, as Megatron-Core's
                        --tp-comm-overlap (needs --sp; default off: trident's engine)
  --attention flash|unfused  override the preset's attention kernel (a100-80g: unfused, the
                        SC21 stack; the others: flash)
  --precision fp32|bf16 local preset only: GEMM precision (default: the config's, else fp32)
  --top K               layouts to print (default 5)
  --json                one JSON object per layout instead of the table
  --calibrate           measure this machine for the local preset and write the calibration
  --calibration FILE    the local preset's calibration (default $TRIDENT_CALIBRATION, else
                        ~/.cache/trident/calibration.json; measured now when absent)
)";

struct Options {
  std::string model, cluster = "a100-80g", layout, schedule, sp, zero, dp_overlap, hierarchical, tp_overlap, attention,
      precision, recompute;
  std::string calibration;
  long ranks = 0, global_batch = 0, seq = 0, ep = 1;
  int top = 5;
  bool json = false, calibrate = false, help = false;
};

long positive(const std::string& name, const std::string& text) {
  char* end = nullptr;
  const long long v = std::strtoll(text.c_str(), &end, 10);
  TRIDENT_CONFIG_CHECK(!text.empty() && *end == '\0' && v >= 1, name, " needs a positive integer (got '", text, "')");
  return static_cast<long>(v);
}

bool on_off(const std::string& name, const std::string& text) {
  if (text == "on" || text == "1" || text == "true") return true;
  if (text == "off" || text == "0" || text == "false") return false;
  throw ConfigError(detail::concat(name, " must be on or off (got '", text, "')"));
}

Options parse_options(int argc, char** argv) {
  Options o;
  for (int i = 1; i < argc; ++i) {
    std::string arg = argv[i], value;
    const size_t eq = arg.find('=');
    const bool flag = arg == "--json" || arg == "--calibrate" || arg == "--help" || arg == "-h";
    if (!flag) {
      TRIDENT_CONFIG_CHECK(arg.rfind("--", 0) == 0, "unexpected argument '", arg, "' (see trident plan --help)");
      if (eq != std::string::npos) {
        value = arg.substr(eq + 1);
        arg = arg.substr(0, eq);
      } else {
        TRIDENT_CONFIG_CHECK(i + 1 < argc, arg, " needs a value");
        value = argv[++i];
      }
    }
    if (arg == "--json") o.json = true;
    else if (arg == "--calibrate") o.calibrate = true;
    else if (arg == "--help" || arg == "-h") o.help = true;
    else if (arg == "--model") o.model = value;
    else if (arg == "--cluster") o.cluster = value;
    else if (arg == "--layout") o.layout = value;
    else if (arg == "--schedule") o.schedule = value;
    else if (arg == "--sp") o.sp = value;
    else if (arg == "--zero") o.zero = value;
    else if (arg == "--dp-overlap") o.dp_overlap = value;
    else if (arg == "--hierarchical") o.hierarchical = value;
    else if (arg == "--tp-overlap") o.tp_overlap = value;
    else if (arg == "--attention") o.attention = value;
    else if (arg == "--precision") o.precision = value;
    else if (arg == "--recompute") o.recompute = value;
    else if (arg == "--calibration") o.calibration = value;
    else if (arg == "--ranks") o.ranks = positive(arg, value);
    else if (arg == "--global-batch") o.global_batch = positive(arg, value);
    else if (arg == "--seq") o.seq = positive(arg, value);
    else if (arg == "--ep") o.ep = positive(arg, value);
    else if (arg == "--top") o.top = static_cast<int>(positive(arg, value));
    else throw ConfigError(detail::concat("unknown option '", arg, "' (see trident plan --help)"));
  }
  return o;
}

// What a config file contributes besides the model: defaults for the options.
struct ConfigDefaults {
  long global_batch = 0, micro_batch = 0, ranks = 0;
  std::string recompute, precision;
  bool sequence_parallel = false, zero = false;
  plan::Layout layout;
};

plan::ModelShape read_model(const std::string& spec, ConfigDefaults& d) {
  TRIDENT_CONFIG_CHECK(!spec.empty(), "--model is required (a config file or layers=L,hidden=H,heads=A,vocab=V)");
  if (plan::looks_like_model_spec(spec) && !std::filesystem::exists(spec)) return plan::parse_model_spec(spec);
  TRIDENT_CONFIG_CHECK(std::filesystem::exists(spec), "--model: no such config file '", spec, "'");
  // The file's own layout is read for its defaults; parse it as a one-rank run first.
  std::vector<std::string> args = {"plan", "--config", spec};
  std::vector<char*> argv;
  for (std::string& a : args) argv.push_back(a.data());
  train::RunConfig cfg;
  try {
    std::vector<std::string> one = args;
    one.insert(one.end(), {"--parallel.dp=1", "--parallel.tp=1", "--parallel.pp=1", "--parallel.microbatches=0",
                           "--parallel.schedule=1f1b", "--parallel.virtual_stages=1", "--parallel.zero=0",
                           "--parallel.sequence_parallel=false"});
    std::vector<char*> one_argv;
    for (std::string& a : one) one_argv.push_back(a.data());
    cfg = parse_run_config(int(one_argv.size()), one_argv.data(), 1);
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat("--model ", spec, ": ", e.what()));
  }
  d.global_batch = cfg.train.global_batch;
  d.micro_batch = cfg.train.micro_batch;
  d.recompute = model::recompute_name(cfg.recompute);
  d.precision = cfg.train.precision == DType::kBF16 ? "bf16" : "fp32";
  return cfg.model.plan_shape();
}

plan::Layout parse_layout(const std::string& text) {
  std::vector<long> v;
  std::istringstream in(text);
  std::string item;
  while (std::getline(in, item, ',')) v.push_back(positive("--layout", item));
  TRIDENT_CONFIG_CHECK(v.size() == 4 || v.size() == 5, "--layout needs dp,tp,pp,mb[,v] (got '", text, "')");
  plan::Layout l;
  l.dp = int(v[0]), l.tp = int(v[1]), l.pp = int(v[2]), l.micro_batch = int(v[3]);
  l.virtual_stages = v.size() == 5 ? int(v[4]) : 1;
  l.schedule = l.virtual_stages > 1 ? plan::Schedule::kInterleaved : plan::Schedule::kOneFOneB;
  return l;
}

plan::Cluster make_cluster(const Options& o, int ranks, const std::string& precision) {
  plan::Cluster c;
  if (o.cluster == "local") {
    const std::string path = o.calibration.empty() ? calibration_path() : o.calibration;
    plan::LocalCalibration cal;
    if (std::filesystem::exists(path)) {
      cal = plan::read_calibration(path);
    } else {
      std::fprintf(stderr, "trident plan: no calibration at %s; measuring this machine now (trident plan --calibrate)\n",
                   path.c_str());
      cal = calibrate_local_machine();
      plan::write_calibration(cal, path);
    }
    // Ranks share the machine: the cluster is one node of `ranks` devices.
    c = plan::local_cluster(cal, ranks, precision == "bf16");
  } else {
    TRIDENT_CONFIG_CHECK(o.precision.empty() || o.precision == "bf16", "--precision applies to the local preset only");
    c = plan::cluster_preset(o.cluster);
  }
  if (!o.attention.empty()) {
    TRIDENT_CONFIG_CHECK(o.attention == "flash" || o.attention == "unfused", "--attention must be flash or unfused (got '",
                         o.attention, "')");
    c.flash_attention = o.attention == "flash";
  }
  c.tp_comm_overlap = !o.tp_overlap.empty() && on_off("--tp-overlap", o.tp_overlap);
  return c;
}

// --hierarchical: auto and on both mean "where it applies" (the planner has no other way to run it).
bool hierarchical_dp(const Options& o) {
  if (o.hierarchical.empty() || o.hierarchical == "auto" || o.hierarchical == "on") return true;
  TRIDENT_CONFIG_CHECK(o.hierarchical == "off", "--hierarchical must be on, off or auto (got '", o.hierarchical, "')");
  return false;
}

Json layout_json(const plan::StepEstimate& e) {
  const plan::Layout& l = e.layout;
  Json j = Json::object();
  j.set("dp", Json(l.dp));
  j.set("tp", Json(l.tp));
  j.set("pp", Json(l.pp));
  j.set("ep", Json(l.ep));
  j.set("micro_batch", Json(l.micro_batch));
  j.set("micro_batches", Json(e.micro_batches));
  j.set("schedule", Json(l.pp > 1 ? plan::schedule_name(l.schedule) : "none"));
  j.set("virtual_stages", Json(l.virtual_stages));
  j.set("sequence_parallel", Json(l.sequence_parallel));
  j.set("zero", Json(l.zero ? 1 : 0));
  j.set("recompute", Json(plan::recompute_name(l.recompute)));
  j.set("dp_overlap", Json(l.dp_overlap));
  j.set("hierarchical_dp", Json(l.hierarchical_dp));
  return j;
}

Json estimate_json(const plan::StepEstimate& e, const plan::Cluster& c) {
  constexpr double kGB = 1e9;
  Json j = Json::object();
  j.set("layout", layout_json(e));
  j.set("cluster", Json(c.name));
  j.set("step_s", Json(e.step_s));
  j.set("tokens_per_s", Json(e.tokens_per_s));
  j.set("tflops_per_gpu", Json(e.tflops_per_gpu));
  j.set("model_tflops_per_gpu", Json(e.model_tflops_per_gpu));
  j.set("mfu", Json(e.mfu));
  j.set("mem_gb_per_gpu", Json(e.memory.total() / kGB));
  j.set("fits", Json(e.fits));
  j.set("bubble_fraction", Json(e.bubble_fraction));
  const plan::TimeBreakdown& t = e.time;
  Json tj = Json::object();
  for (auto [k, v] : {std::pair<const char*, double>{"forward", t.forward}, {"backward", t.backward},
                      {"recompute", t.recompute}, {"tp_comm", t.tp_comm}, {"p2p", t.p2p}, {"ep_comm", t.ep_comm},
                      {"bubble", t.bubble},
                      {"dp_comm", t.dp_comm}, {"dp_exposed", t.dp_exposed}, {"embedding_sync", t.embedding_sync},
                      {"optimizer", t.optimizer}})
    tj.set(k, Json(v));
  j.set("time_s", std::move(tj));
  const plan::MemoryBreakdown& m = e.memory;
  Json mj = Json::object();
  for (auto [k, v] : {std::pair<const char*, double>{"weights", m.weights}, {"grads", m.grads},
                      {"optimizer", m.optimizer}, {"activations", m.activations}, {"logits", m.logits},
                      {"buffers", m.buffers}, {"reserved", m.reserved}})
    mj.set(k, Json(v / kGB));
  j.set("memory_gb", std::move(mj));
  return j;
}

void print_table(const std::vector<plan::StepEstimate>& rows, const plan::Cluster& c) {
  std::printf("  %-3s %-64s %10s %12s %9s %9s %6s %8s\n", "#", "layout", "step s", "tokens/s", "TFLOP/s", "model TF",
              "MFU", "mem GB");
  for (size_t i = 0; i < rows.size(); ++i) {
    const plan::StepEstimate& e = rows[i];
    std::printf("  %-3zu %-64s %10.4g %12.5g %9.4g %9.4g %5.1f%% %8.4g%s\n", i + 1, e.layout.describe().c_str(), e.step_s,
                e.tokens_per_s, e.tflops_per_gpu, e.model_tflops_per_gpu, 100 * e.mfu, e.memory.total() / 1e9,
                e.fits ? "" : "  (does not fit)");
  }
  (void)c;
}

void print_breakdown(const plan::StepEstimate& e, const plan::Cluster& c) {
  const plan::TimeBreakdown& t = e.time;
  const double s = e.step_s;
  auto line = [&](const char* name, double v, const char* why) {
    std::printf("    %-16s %10.4g s %6.1f%%   %s\n", name, v, 100 * v / s, why);
  };
  std::printf("\nbest: %s, %d micro-batches of %d per step per dp rank\n", e.layout.describe().c_str(), e.micro_batches,
              e.layout.micro_batch);
  std::printf("  time per step (slowest pipeline stage): %.4g s\n", s);
  line("forward", t.forward, "GEMMs, attention, norms/activations (memory-bound)");
  line("backward", t.backward, "input and weight gradients");
  line("recompute", t.recompute, "forward work redone in backward");
  line("tp comm", t.tp_comm, "tensor-parallel all-reduces (or SP reduce-scatter + all-gather)");
  line("p2p", t.p2p, "activations and gradients between pipeline stages");
  if (t.ep_comm > 0) line("ep comm", t.ep_comm, "MoE token all-to-alls (dispatch and combine, forward and backward)");
  line("bubble", t.bubble, "(pp - 1) / v micro-batch times of pipeline fill and drain");
  line("dp exposed", t.dp_exposed, detail::concat("gradient reduction not hidden (all of it: ", t.dp_comm, " s)").c_str());
  line("embedding sync", t.embedding_sync, "tied embedding all-reduce between first and last stage");
  line("optimizer", t.optimizer, "AdamW and the gradient norm (memory-bound)");
  const plan::MemoryBreakdown& m = e.memory;
  const double total = m.total();
  std::printf("  memory per rank (the stage that needs most): %.2f GB of %.0f GB usable\n", total / 1e9,
              c.memory_bytes * c.memory_usable_fraction / 1e9);
  auto mem = [&](const char* name, double v, const char* why) {
    std::printf("    %-16s %10.3f GB %5.1f%%   %s\n", name, v / 1e9, 100 * v / total, why);
  };
  mem("weights", m.weights, "");
  mem("gradients", m.grads, "");
  mem("optimizer", m.optimizer, e.layout.zero ? "Adam m, v (+ fp32 master) / dp (ZeRO-1)" : "Adam m, v (+ fp32 master)");
  mem("activations", m.activations, "kept for backward x micro-batches in flight");
  mem("logits", m.logits, "last stage");
  mem("buffers", m.buffers, "one block's temporaries, pipeline receive buffers");
  mem("reserved", m.reserved, "runtime and libraries (CUDA context, NCCL; the local process base)");
}

int plan_main(const Options& o) {
  ConfigDefaults d;
  plan::ModelShape model = read_model(o.model, d);
  if (o.seq) model.seq = static_cast<int>(o.seq);
  model.resolve();
  const long global_batch = o.global_batch ? o.global_batch : d.global_batch;
  TRIDENT_CONFIG_CHECK(global_batch >= 1, "--global-batch is required with a model spec");
  const std::string precision = o.precision.empty() ? (d.precision.empty() ? "fp32" : d.precision) : o.precision;
  TRIDENT_CONFIG_CHECK(precision == "fp32" || precision == "bf16", "--precision must be fp32 or bf16");

  std::vector<plan::StepEstimate> rows;
  plan::Cluster cluster;
  std::string header;
  if (!o.layout.empty()) {
    plan::Layout l = parse_layout(o.layout);
    l.ep = int(o.ep);
    TRIDENT_CONFIG_CHECK(!o.ranks || o.ranks == l.ranks(), "--ranks ", o.ranks, " differs from the layout's dp*tp*pp = ", l.ranks());
    if (!o.schedule.empty()) {
      l.schedule = plan::schedule_from_name(o.schedule);
      TRIDENT_CONFIG_CHECK(l.schedule != plan::Schedule::kInterleaved || l.virtual_stages > 1,
                           "--schedule interleaved needs v > 1 in --layout");
    }
    const std::string rc = o.recompute.empty() ? (d.recompute.empty() ? "none" : d.recompute) : o.recompute;
    l.recompute = plan::recompute_from_name(rc);
    l.sequence_parallel = !o.sp.empty() && on_off("--sp", o.sp);
    l.zero = !o.zero.empty() && on_off("--zero", o.zero);
    l.dp_overlap = o.dp_overlap.empty() || on_off("--dp-overlap", o.dp_overlap);
    l.hierarchical_dp = hierarchical_dp(o);
    cluster = make_cluster(o, l.ranks(), precision);
    rows.push_back(plan::estimate_step(model, l, cluster, global_batch));
  } else {
    const long ranks = o.ranks;
    TRIDENT_CONFIG_CHECK(ranks >= 1, "--ranks is required without --layout");
    TRIDENT_CONFIG_CHECK(o.ep == 1, "--ep goes with --layout (the search tries every ep)");
    cluster = make_cluster(o, int(ranks), precision);
    plan::SearchSpace space;
    space.ranks = int(ranks);
    space.global_batch = global_batch;
    if (!o.recompute.empty()) space.recompute = plan::recompute_from_name(o.recompute);
    if (!o.sp.empty()) space.sequence_parallel = on_off("--sp", o.sp);
    if (!o.zero.empty()) space.zero = on_off("--zero", o.zero);
    space.dp_overlap = o.dp_overlap.empty() || on_off("--dp-overlap", o.dp_overlap);
    space.hierarchical_dp = hierarchical_dp(o);
    const plan::SearchResult found = plan::search_layouts(model, cluster, space);
    if (found.fitting.empty()) {
      std::string why = detail::concat("no layout of ", ranks, " ranks fits: ", found.considered, " valid layouts, ",
                                       found.too_big, " over the ", cluster.memory_bytes * cluster.memory_usable_fraction / 1e9,
                                       " GB usable on a device");
      if (found.smallest_misfit)
        why += detail::concat("; the smallest needs ", found.smallest_misfit->memory.total() / 1e9, " GB (",
                              found.smallest_misfit->layout.describe(), ")");
      throw ConfigError(why);
    }
    rows.assign(found.fitting.begin(), found.fitting.begin() + std::min<size_t>(found.fitting.size(), size_t(o.top)));
    header = detail::concat(found.considered, " valid layouts, ", found.too_big, " do not fit in memory, ",
                            found.fitting.size(), " ranked");
  }

  if (o.json) {
    for (const plan::StepEstimate& e : rows) std::printf("%s\n", estimate_json(e, cluster).dump().c_str());
    return 0;
  }
  std::printf("model: %s, %d layers, hidden %d, %d heads (%d kv), ffn %d, vocab %d, seq %d: %.3g B parameters\n",
              plan::model_arch_name(model.arch), model.layers, model.hidden, model.heads, model.kv(), model.ffn,
              model.vocab, model.seq, model.total_params() / 1e9);
  if (model.experts > 0)
    std::printf("mixture of experts: %d of %d layers with %d experts of ffn %d, top-%d%s; %.3g B matmul parameters "
                "active per token\n",
                model.moe_layers(), model.layers, model.experts, model.moe_ffn, model.top_k,
                model.shared_ffn > 0 ? detail::concat(", a shared MLP of ffn ", model.shared_ffn).c_str() : "",
                (model.layers * model.block_gemm_flops_per_token() / 2 + double(model.vocab) * model.hidden) / 1e9);
  std::printf("cluster: %s, %.4g TFLOP/s peak per device, %.0f GB usable, %d per node; global batch %ld (%ld tokens)\n",
              cluster.name.c_str(), cluster.peak_flops / 1e12, cluster.memory_bytes * cluster.memory_usable_fraction / 1e9,
              cluster.devices_per_node,
              global_batch, global_batch * model.seq);
  if (!header.empty()) std::printf("%s\n", header.c_str());
  std::printf("\n");
  print_table(rows, cluster);
  print_breakdown(rows.front(), cluster);
  if (!rows.front().fits) std::printf("\nwarning: this layout does not fit in device memory\n");
  return 0;
}

}  // namespace

int run_plan(int argc, char** argv) {
  Options o;
  try {
    o = parse_options(argc, argv);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident plan: error: %s\n", e.what());
    return 2;
  }
  if (o.help) {
    std::printf("%s", kUsage);
    return 0;
  }
  // MPI is needed for --calibrate (and the local preset measuring itself); a single process
  // runs as its own world.
  dist::MpiSession mpi(&argc, &argv);
  try {
    if (o.calibrate) {
      const plan::LocalCalibration c = calibrate_local_machine();
      if (mpi.world_rank() != 0) return 0;
      const std::string path = o.calibration.empty() ? calibration_path() : o.calibration;
      plan::write_calibration(c, path);
      std::printf("calibration of this machine (%d cores, %s) written to %s\n", c.cores, c.measured_at.c_str(), path.c_str());
      std::printf("  peak fp32 %.1f GFLOP/s, bf16 %.1f; GEMM fp32 %.1f, bf16 %s; attention fp32 %.1f\n", c.peak_fp32 / 1e9,
                  c.peak_bf16 / 1e9, c.gemm_fp32 / 1e9,
                  c.gemm_bf16 > 0 ? detail::concat(c.gemm_bf16 / 1e9).c_str() : "no faster than fp32 (computed in fp32)",
                  c.attention_fp32 / 1e9);
      std::printf("  one thread: GEMM fp32 %.1f, bf16 %.1f, attention %.1f GFLOP/s, memory %.1f GB/s; small GEMM +%.1f us\n",
                  c.gemm_fp32_1 / 1e9, c.gemm_bf16_1 / 1e9, c.attention_fp32_1 / 1e9, c.memory_bandwidth_1 / 1e9,
                  c.gemm_overhead_s * 1e6);
      std::printf("  memory %.1f GB/s, small kernel %.2f us; MPI all-reduce %.2f GB/s, %.2f us per step (%s)\n",
                  c.memory_bandwidth / 1e9, c.kernel_overhead_s * 1e6, c.comm_bandwidth / 1e9, c.comm_latency_s * 1e6,
                  c.comm_bandwidth > 0 ? "measured" : "not measured: run under mpirun -np 2");
      std::printf("  process base %.1f MiB resident\n", c.base_rss_bytes / (1 << 20));
      return 0;
    }
    if (mpi.world_rank() != 0) return 0;
    return plan_main(o);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident plan: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident plan: failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace trident::cli
