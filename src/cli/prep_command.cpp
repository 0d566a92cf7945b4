// `trident prep`: text files and JSONL prompt/response lines -> memory-mapped token shards.
// Single process; parses options, runs data::prepare_shards and prints what it did.
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>

#include "trident/cli/commands.hpp"
#include "trident/core/error.hpp"
#include "trident/data/prep.hpp"

namespace trident::cli {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: trident prep --input FILE... --output PREFIX [--tokenizer byte] [--valid-permille N]\n"
    "  Each text file is one document; each line of a *.jsonl file is one document\n"
    "  {\"input\": \"...\", \"output\": \"...\"} trained on the output only. Writes PREFIX.bin/.idx\n"
    "  (and PREFIX-valid.bin/.idx when --valid-permille > 0).";

void print_summary(const data::PrepOptions& options, const data::PrepSummary& s) {
  std::printf("prep: %lld documents read: %lld written, %lld duplicates dropped, %lld empty dropped\n",
              static_cast<long long>(s.documents_in), static_cast<long long>(s.documents_out()),
              static_cast<long long>(s.duplicates_dropped), static_cast<long long>(s.empty_dropped));
  std::printf("prep: train  %lld documents, %lld tokens -> %s.bin/.idx\n",
              static_cast<long long>(s.train_documents), static_cast<long long>(s.train_tokens),
              options.output.c_str());
  if (options.valid_permille > 0)
    std::printf("prep: valid  %lld documents, %lld tokens -> %s.bin/.idx\n",
                static_cast<long long>(s.valid_documents), static_cast<long long>(s.valid_tokens),
                data::valid_shard_prefix(options.output).c_str());
  std::printf("prep: %.2f s, %.1f M tokens/s\n", s.seconds,
              s.seconds > 0 ? static_cast<double>(s.tokens()) / s.seconds / 1e6 : 0.0);
}

}  // namespace

int run_prep(int argc, char** argv) {
  data::PrepOptions options;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "print this help")
      ("input", po::value<std::vector<std::string>>(&options.inputs)->multitoken()->required(),
       "input files: raw text (one document each) or *.jsonl")
      ("output", po::value<std::string>(&options.output)->required(),
       "output shard prefix")
      ("tokenizer", po::value<std::string>(&options.tokenizer)->default_value("byte"),
       "tokenizer (byte: ids 0..255 + end-of-text 256)")
      ("valid-permille", po::value<int>(&options.valid_permille)->default_value(0),
       "documents per 1000 sent to the validation shard PREFIX-valid, by content hash");
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).run(), vm);
    if (vm.count("help")) {
      std::cout << kUsage << "\n\n" << desc;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "trident prep: error: %s\n%s\n", e.what(), kUsage);
    return 2;
  }
  try {
    print_summary(options, data::prepare_shards(options));
    return 0;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident prep: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident prep: failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace trident::cli
