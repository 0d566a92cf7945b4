// trident: one binary, one subcommand per job (docs/design.md section 4).
#include <cstdio>
#include <cstring>
#include <string>

#include "trident/cli/commands.hpp"
#include "trident/core/file_policy.hpp"

namespace {

struct Subcommand {
  const char* name;
  int (*run)(int, char**);
  const char* help;
};

constexpr Subcommand kSubcommands[] = {
    {"train", trident::cli::run_train, "train or fine-tune a model from an INI config"},
    {"prep", trident::cli::run_prep, "turn text / JSONL files into memory-mapped token shards"},
    {"eval", trident::cli::run_eval, "evaluate a model: perplexity, tasks (generation, multiple choice, rolling), robustness, OOD"},
    {"evalgen", trident::cli::run_evalgen, "generate evaluation suites (arithmetic, dates, lookups, ...) as JSONL"},
    {"inspect", trident::cli::run_inspect, "print statistics of token shards, decode documents"},
    {"plan", trident::cli::run_plan, "predict step time and memory of layouts, pick the best"},
    {"privacy", trident::cli::run_privacy, "differential privacy: epsilon of DP-SGD (q, sigma, steps, delta), or the sigma for a target"},
    {"convert", trident::cli::run_convert, "Hugging Face model directory <-> trident checkpoint"},
    {"bench", trident::cli::run_bench, "micro-benchmarks: gemm, allreduce, io"},
};

void print_usage(FILE* f) {
  std::fprintf(f, "usage: trident <command> [options]   (trident <command> --help for its options)\n\ncommands:\n");
  for (const auto& s : kSubcommands) std::fprintf(f, "  %-8s %s\n", s.name, s.help);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h")) {
    print_usage(stdout);
    return argc < 2 ? 2 : 0;
  }
  // Everything is created owner-only and then given the configured group and mode (default
  // 0640 / 0750); a command with a [security] section or options installs its own first.
  trident::install_file_policy(trident::FilePolicy{});
  for (const auto& s : kSubcommands)
    if (std::string(argv[1]) == s.name) return s.run(argc - 1, argv + 1);
  std::fprintf(stderr, "trident: unknown command '%s'\n\n", argv[1]);
  print_usage(stderr);
  return 2;
}
