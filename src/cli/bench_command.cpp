// `trident bench gemm`: the backend's GEMM rate at transformer shapes, next to the rank's
// peak FLOP/s measured in the same run (benchmarks report ratios, never bare numbers).
#include <boost/program_options.hpp>

#include <cstdio>
#include <iostream>
#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "bench_options.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/timer.hpp"

namespace po = boost::program_options;

namespace trident::cli {

namespace {

struct GemmCase {
  std::string what;
  bool trans_a, trans_b;
  int64_t m, n, k;
};

// Seconds per call, timed over repeated calls after one warm-up call. a and b are held in
// `inputs` (bf16: already converted, so no per-call rounding is timed), c in `output`.
double time_gemm(Ops& ops, const GemmCase& g, double min_seconds, DType inputs, DType output) {
  Tensor a = ops.zeros(g.trans_a ? Shape{g.k, g.m} : Shape{g.m, g.k}, inputs);
  Tensor b = ops.zeros(g.trans_b ? Shape{g.n, g.k} : Shape{g.k, g.n}, inputs);
  Tensor c = ops.zeros(Shape{g.m, g.n}, output);
  ops.fill(a, 0.01);
  ops.fill(b, 0.02);
  ops.gemm(g.trans_a, g.trans_b, 1.0, a, b, 0.0, c);
  Stopwatch watch;
  int calls = 0;
  do {
    ops.gemm(g.trans_a, g.trans_b, 1.0, a, b, 0.0, c);
    ++calls;
  } while (watch.seconds() < min_seconds);
  // Check the data too: every element of c is k * 0.01 * 0.02 (to bf16 rounding).
  const float expect = static_cast<float>(g.k * 0.01 * 0.02);
  Tensor last = ops.zeros(Shape{1}, DType::kF32);
  ops.copy(c.flat().narrow(c.numel() - 1, c.numel()), last);
  const float got = last.data<float>()[0];
  if (std::abs(got - expect) > 1e-2f * expect) std::fprintf(stderr, "bench gemm: wrong result %g != %g\n", got, expect);
  return watch.seconds() / calls;
}

int bench_gemm(int argc, char** argv) {
  po::options_description desc("trident bench gemm [options]: fp32 GEMMs of one transformer layer and the head");
  desc.add_options()("help", "this help")
      ("rows", po::value<int64_t>()->default_value(1024), "rows N = micro_batch * seq_len")
      ("hidden", po::value<int64_t>()->default_value(768), "hidden size C")
      ("ffn", po::value<int64_t>()->default_value(3072), "MLP hidden size F")
      ("vocab", po::value<int64_t>()->default_value(50304), "vocabulary V")
      ("threads", po::value<int>()->default_value(0), "threads (0 = OpenMP default)")
      ("precision", po::value<std::string>()->default_value("fp32"), "fp32 | bf16 (inputs rounded, fp32 accumulation)")
      ("tensors", po::value<std::string>()->default_value("fp32"),
       "dtype of the input tensors: fp32 (rounded per call at bf16 precision) | bf16 (already bf16)")
      ("out", po::value<std::string>()->default_value("fp32"), "dtype of the output tensor: fp32 | bf16")
      ("seconds", po::value<double>()->default_value(0.5), "time per shape");
  po::variables_map vm;
  if (const auto stop = parse_bench_options(desc, argc, argv, "gemm", vm)) return *stop;
  const int64_t n = vm["rows"].as<int64_t>(), c = vm["hidden"].as<int64_t>(), f = vm["ffn"].as<int64_t>(),
                v = vm["vocab"].as<int64_t>();
  if (n < 1 || c < 1 || f < 1 || v < 1) {
    std::fprintf(stderr, "trident bench gemm: sizes must be >= 1\n");
    return 2;
  }
  std::unique_ptr<Ops> ops = make_cpu_ops(vm["threads"].as<int>());
  const std::string precision = vm["precision"].as<std::string>();
  if (precision != "fp32" && precision != "bf16") {
    std::fprintf(stderr, "trident bench gemm: --precision must be fp32 or bf16\n");
    return 2;
  }
  const std::string tensors = vm["tensors"].as<std::string>(), out = vm["out"].as<std::string>();
  if ((tensors != "fp32" && tensors != "bf16") || (out != "fp32" && out != "bf16")) {
    std::fprintf(stderr, "trident bench gemm: --tensors and --out must be fp32 or bf16\n");
    return 2;
  }
  const DType inputs = dtype_from_name(tensors), output = dtype_from_name(out);
  // bf16 tensors are multiplied in bf16 whatever the precision setting.
  const DType dtype = precision == "bf16" || inputs == DType::kBF16 ? DType::kBF16 : DType::kF32;
  const double peak = ops->peak_flops(dtype);
  const std::vector<GemmCase> cases = {
      {"qkv/o forward   x W^T", false, true, n, c, c},
      {"mlp up forward  x W^T", false, true, n, f, c},
      {"mlp down fwd    x W^T", false, true, n, c, f},
      {"mlp up dgrad    dy W", false, false, n, c, f},
      {"mlp up wgrad    dy^T x", true, false, f, c, n},
      {"head forward    x W^T", false, true, n, v, c},
      {"head wgrad      dy^T x", true, false, v, c, n},
  };
  std::printf("%s GEMM (%s inputs, %s output) on %s, peak %.0f GFLOP/s (measured fp32 FMA rate%s)\n",
              std::string(dtype_name(dtype)).c_str(), tensors.c_str(), out.c_str(), ops->name().c_str(), peak / 1e9,
              dtype == DType::kBF16 ? " x 2 for bf16 dot products" : "");
  const bool reference = dtype != DType::kF32 || output != DType::kF32;  // fp32 in the same run, for the ratio
  std::printf("%-24s %7s %7s %7s %10s %8s%s\n", "shape", "M", "N", "K", "GFLOP/s", "of peak",
              reference ? "  fp32 GFLOP/s  speed-up" : "");
  for (const GemmCase& g : cases) {
    const double flop = 2.0 * double(g.m) * double(g.n) * double(g.k);
    ops->set_matmul_precision(dtype);
    const double rate = flop / time_gemm(*ops, g, vm["seconds"].as<double>(), inputs, output);
    std::printf("%-24s %7lld %7lld %7lld %10.1f %7.1f%%", g.what.c_str(), (long long)g.m, (long long)g.n,
                (long long)g.k, rate / 1e9, 100.0 * rate / peak);
    if (reference) {
      ops->set_matmul_precision(DType::kF32);
      const double rate32 = flop / time_gemm(*ops, g, vm["seconds"].as<double>(), DType::kF32, DType::kF32);
      std::printf(" %14.1f %8.2fx", rate32 / 1e9, rate / rate32);
    }
    std::printf("\n");
  }
  return 0;
}

}  // namespace

int bench_allreduce(int argc, char** argv);  // bench_allreduce.cpp
int bench_io(int argc, char** argv);         // bench_io.cpp
int bench_tokenizer(int argc, char** argv);  // bench_tokenizer.cpp
int bench_step(int argc, char** argv);       // bench_step.cpp

int run_bench(int argc, char** argv) {
  if (argc >= 2 && std::string(argv[1]) == "gemm") return bench_gemm(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "allreduce") return bench_allreduce(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "io") return bench_io(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "tokenizer") return bench_tokenizer(argc - 1, argv + 1);
  if (argc >= 2 && std::string(argv[1]) == "step") return bench_step(argc - 1, argv + 1);
  std::fprintf(stderr, "usage: trident bench step|gemm|allreduce|io|tokenizer [--help]\n");
  return (argc >= 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) ? 0 : 2;
}

}  // namespace trident::cli
