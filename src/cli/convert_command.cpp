// `trident convert`: Hugging Face model directories <-> trident checkpoints
// (train/hf_convert.hpp). One process does the work; under mpirun the other ranks wait.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <optional>
#include <string>

#include "trident/cli/commands.hpp"
#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/io/safetensors.hpp"
#include "trident/interop/hf_config.hpp"
#include "trident/interop/hf_convert.hpp"
#include "trident/interop/peft_convert.hpp"

namespace trident::cli {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: trident convert --to hf --input CHECKPOINT.h5 --output DIR [--tokenizer PATH] [--dtype fp32|bf16]\n"
    "                               [--key-file PATH]\n"
    "       trident convert --to peft --input CHECKPOINT.h5 --output DIR [--merge] [--key-file PATH]\n"
    "       trident convert --from hf --input DIR --output CHECKPOINT.h5 [--seq-len N]\n"
    "  --to hf:   DIR gets model.safetensors (F32, or BF16 with --dtype bf16), config.json\n"
    "             (transformers' from_pretrained loads it) and generation_config.json (the eos\n"
    "             ids generate() stops at), and tokenizer.json: --tokenizer, or the one of the\n"
    "             model the run was initialised from; a LoRA checkpoint's adapters are merged in\n"
    "  --to peft: DIR gets the LoRA adapters as adapter_model.safetensors and adapter_config.json\n"
    "             (peft's PeftModel.from_pretrained loads them onto the base model); with --merge\n"
    "             the merged model instead, as --to hf writes it\n"
    "  --from hf: DIR is a Hugging Face model directory (gpt2, llama, mistral, qwen2, qwen3; one\n"
    "             model.safetensors or shards with model.safetensors.index.json); the checkpoint\n"
    "             works as model.init_from and as checkpoint.resume (step 0, zero moments)";

int convert(int argc, char** argv) {
  po::options_description desc("options");
  desc.add_options()("help,h", "this help")("to", po::value<std::string>(), "hf: checkpoint -> HF directory")(
      "from", po::value<std::string>(), "hf: HF directory -> checkpoint")("input", po::value<std::string>(),
                                                                          "what to convert")(
      "output", po::value<std::string>(), "where to write")("tokenizer", po::value<std::string>()->default_value(""),
                                                            "tokenizer.json (or its directory) to put next to --to hf output")(
      "seq-len", po::value<int>()->default_value(0), "--from hf: model.seq_len recorded (0: the model's positions)")(
      "merge", "--to peft: write the base model with the adapters merged in")(
      "dtype", po::value<std::string>()->default_value("fp32"), "--to hf: fp32 | bf16, the stored weights' type")(
      "key-file", po::value<std::string>(), "--to hf / peft: the key file of an encrypted checkpoint (security.key_file)");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    po::notify(vm);
  } catch (const po::error& e) {
    throw ConfigError(std::string(e.what()) + "\n" + kUsage);
  }
  if (vm.count("help")) {
    std::cout << kUsage << "\n\n" << desc << "\n";
    return 0;
  }
  TRIDENT_CONFIG_CHECK(vm.count("to") + vm.count("from") == 1, "give one of --to hf, --to peft or --from hf\n", kUsage);
  TRIDENT_CONFIG_CHECK(vm.count("input") && vm.count("output"), "--input and --output are required\n", kUsage);
  const std::string input = vm["input"].as<std::string>(), output = vm["output"].as<std::string>();
  std::optional<security::MasterKey> key;
  if (vm.count("key-file")) {
    TRIDENT_CONFIG_CHECK(vm.count("to"), "--key-file goes with --to hf or --to peft (--from hf writes a plain ",
                         "checkpoint)");
    key = security::load_key_file(vm["key-file"].as<std::string>());
  }
  const security::MasterKey* key_ptr = key ? &*key : nullptr;
  if (vm.count("to") && vm["to"].as<std::string>() == "peft" && !vm.count("merge")) {
    interop::checkpoint_to_peft(input, checkpoint_model(input), output, key_ptr);
    std::printf("wrote %s/adapter_model.safetensors and adapter_config.json from %s\n", output.c_str(), input.c_str());
  } else if (vm.count("to")) {
    const std::string to = vm["to"].as<std::string>();
    TRIDENT_CONFIG_CHECK(to == "hf" || to == "peft", "--to ", to, ": expected hf or peft");
    TRIDENT_CONFIG_CHECK(!vm.count("merge") || to == "peft", "--merge goes with --to peft");
    const std::string dtype = vm["dtype"].as<std::string>();
    TRIDENT_CONFIG_CHECK(dtype == "fp32" || dtype == "bf16", "--dtype ", dtype, ": expected fp32 or bf16");
    interop::checkpoint_to_hf(input, checkpoint_model(input), output, vm["tokenizer"].as<std::string>(),
                              dtype == "bf16" ? io::StoredFloat::kBF16 : io::StoredFloat::kF32, key_ptr);
    std::printf("wrote %s/model.safetensors and config.json from %s\n", output.c_str(), input.c_str());
  } else {
    TRIDENT_CONFIG_CHECK(vm["from"].as<std::string>() == "hf", "--from ", vm["from"].as<std::string>(),
                         ": only hf is supported");
    const interop::HfModelInfo info = interop::read_hf_config(input);
    interop::hf_to_checkpoint(input, output, MPI_COMM_SELF, vm["seq-len"].as<int>());
    std::printf("wrote %s from %s (%s, %d layers, hidden %d, vocab %d)\n", output.c_str(), input.c_str(),
                interop::hf_family_name(info.family), info.config.layers, info.config.hidden, info.config.vocab);
  }
  return 0;
}

}  // namespace

int run_convert(int argc, char** argv) {
  dist::MpiSession mpi(&argc, &argv);
  int code = 0;
  if (mpi.world_rank() == 0) {
    try {
      code = convert(argc, argv);
    } catch (const ConfigError& e) {
      std::fprintf(stderr, "trident convert: error: %s\n", e.what());
      code = 2;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "trident convert: failed: %s\n", e.what());
      code = 1;
    }
  }
  MPI_Bcast(&code, 1, MPI_INT, 0, MPI_COMM_WORLD);
  return code;
}

}  // namespace trident::cli
