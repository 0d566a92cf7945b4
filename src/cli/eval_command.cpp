// `trident eval`: perplexity and token accuracy of a trained model on data.valid, under any
// layout, from the run's latest checkpoint (checkpoint.resume = auto) or a given one.
#include <optional>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "run_session.hpp"
#include "trident/core/file_policy.hpp"
#include "run_security.hpp"
#include "trident/cli/commands.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/core/log.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/io/tensorboard_writer.hpp"
#include "trident/train/eval/task_evaluator.hpp"
#include "trident/train/run_banner.hpp"
#include "trident/train/run_builder.hpp"

namespace trident::cli {
namespace {

constexpr const char* kUsage =
    "usage: trident eval --config FILE [--checkpoint PATH] [--ood DATA] [--section.key=value ...]\n"
    "       mpirun -np N trident eval --config FILE --parallel.dp=N ...\n"
    "Evaluates the weights of --checkpoint (the model its own [model] and [lora] sections\n"
    "describe, whatever its step), else of the latest checkpoint under log.run_dir\n"
    "(checkpoint.resume = auto), else of model.init_from: perplexity and token accuracy on\n"
    "data.valid (log.eval_batches global batches) and/or exact match and F1 of greedy generation\n"
    "on eval.task (JSONL prompt/answer or chat lines; {context, choices, gold} lines: acc and\n"
    "acc_norm as lm-evaluation-harness; {text} lines: rolling word/byte perplexity), with\n"
    "eval.perturb also on perturbed copies; --ood DATA (eval.ood): AUROC, AUPR and FPR at 95%\n"
    "TPR of telling DATA's documents from data.valid's by mean token NLL and max softmax\n"
    "probability (scores in <log.run_dir>/ood/step_N.json); appends the results to\n"
    "<log.run_dir>/eval.jsonl and changes nothing else there (no optimizer state is built).";

}  // namespace

int run_eval(int argc, char** argv) {
  std::vector<char*> args{argv[0]};
  std::string checkpoint_override, checkpoint, ood_override;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n", config_help(kUsage).c_str());
      return 0;
    }
    if (arg == "--checkpoint" && i + 1 < argc) checkpoint = argv[++i];
    else if (arg.rfind("--checkpoint=", 0) == 0) checkpoint = arg.substr(13);
    else if (arg == "--ood" && i + 1 < argc) ood_override = std::string("--eval.ood=") + argv[++i];
    else if (arg.rfind("--ood=", 0) == 0) ood_override = "--eval.ood=" + arg.substr(6);
    else args.push_back(argv[i]);
  }
  if (!checkpoint.empty()) checkpoint_override = "--checkpoint.resume=" + checkpoint;
  if (!checkpoint_override.empty()) args.push_back(checkpoint_override.data());
  if (!ood_override.empty()) args.push_back(ood_override.data());
  dist::MpiSession mpi(&argc, &argv);
  Logger log(mpi.world_rank());
  train::RunConfig cfg;
  std::optional<RunSecurity> security;
  try {
    // The model is the checkpoint's own (its [model] and [lora] sections), whatever the config says.
    cfg = parse_run_config(static_cast<int>(args.size()), args.data(), mpi.world_size(), checkpoint);
    security.emplace(cfg, static_cast<int>(args.size()), args.data(), mpi.world_rank(), log);
    // Evaluation reads no training data; its prep.json still says how task prompts are rendered.
    if (!cfg.eval.task.empty()) {
      cfg.eval.prompt_template = train::task_template(cfg);
      cfg.eval.tokenizer = train::task_tokenizer_spec(cfg);
    }
    cfg.data.train.clear();
    cfg.data.mix = {};
    TRIDENT_CONFIG_CHECK(!cfg.data.valid.empty() || !cfg.eval.task.empty(),
                         "evaluation needs data.valid (a validation shard prefix) or eval.task (a JSONL task)");
    TRIDENT_CONFIG_CHECK(cfg.eval.ood.empty() || !cfg.data.valid.empty(),
                         "--ood / eval.ood needs data.valid: the in-distribution documents it is compared with");
  } catch (const ConfigError& e) {
    if (mpi.world_rank() == 0) std::fprintf(stderr, "trident eval: error: %s\n", e.what());
    return 2;
  }
  try {
    RunSession session(cfg, MPI_COMM_WORLD, mpi.reductions(), log);
    // The model and its weights, and nothing of training: no optimizer, no run record.
    train::RunBuilder run(cfg, session.backend(), session.topology(), log);
    train::log_model_banner(run);
    run.load_initial_weights();
    std::string checkpoint;
    const int64_t step = run.weights_reader().load_resume_model(/*adapters=*/true, &checkpoint);
    if (!checkpoint.empty()) {
      log.info("evaluating ", checkpoint, " (", step, " steps done)");
    } else if (cfg.init_from.empty()) {
      log.warn("no checkpoint found (checkpoint.resume = ", cfg.checkpoint.resume,
               "): evaluating the freshly initialised model");
    }
    if (mpi.world_rank() == 0) make_directories(cfg.log.run_dir);  // for eval.jsonl
    // The results as TensorBoard scalars too, in an events file of their own (rank 0; no session
    // start: the run's training scalars stay as they are).
    std::unique_ptr<io::TensorBoardWriter> tensorboard;
    if (mpi.world_rank() == 0 && cfg.log.tensorboard)
      tensorboard = std::make_unique<io::TensorBoardWriter>(
          (std::filesystem::path(cfg.log.run_dir) / "tensorboard").string(), log);
    run.evaluation().set_tensorboard(tensorboard.get());
    session.topology().world().barrier();
    run.evaluation().evaluate(step);
    session.finish();
    return 0;
  } catch (const ConfigError& e) {
    mpi.abort(2, std::string("trident eval: error: ") + e.what());
  } catch (const std::exception& e) {
    mpi.abort(1, std::string("trident eval: failed: ") + e.what());
  }
}

}  // namespace trident::cli
