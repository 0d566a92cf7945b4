// The subcommands of the trident binary. Each takes the arguments after its name and returns
// the process exit code (0 ok, 1 runtime failure, 2 bad input).
#pragma once

namespace trident::cli {

int run_train(int argc, char** argv);    // train a model from a config (src/cli/train_command.cpp)
int run_prep(int argc, char** argv);     // text / JSONL -> token shards (src/cli/prep_command.cpp)
int run_inspect(int argc, char** argv);  // shard statistics and decoding (src/cli/inspect_command.cpp)
int run_eval(int argc, char** argv);     // perplexity, tasks, robustness, OOD (src/cli/eval_command.cpp)
int run_evalgen(int argc, char** argv);  // generated evaluation suites (src/cli/evalgen_command.cpp)
int run_convert(int argc, char** argv);  // HF safetensors <-> checkpoints (src/cli/convert_command.cpp)
int run_bench(int argc, char** argv);    // micro-benchmarks: gemm (src/cli/bench_command.cpp)
int run_plan(int argc, char** argv);     // step time / memory of layouts (src/cli/plan_command.cpp)
int run_privacy(int argc, char** argv);  // DP-SGD epsilon / noise for a target (src/cli/privacy_command.cpp)

}  // namespace trident::cli
