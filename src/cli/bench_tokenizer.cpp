// `trident bench tokenizer`: encoding speed of a tokenizer (MB of text per second on one core),
// next to the built-in byte tokenizer's speed on the same text in the same run, with the data
// checked (decode(encode(text)) == text). Optionally trains a BPE tokenizer first and times that.
#include <boost/program_options.hpp>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <sstream>

#include "bench_options.hpp"
#include "trident/core/file_policy.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/error.hpp"
#include "trident/core/timer.hpp"
#include "trident/data/bpe_trainer.hpp"
#include "trident/data/tokenizer.hpp"

namespace po = boost::program_options;

namespace trident::cli {

namespace {

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in, "cannot read ", path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

struct Pass {
  double seconds = 0;
  uint64_t ids = 0;
};

// Encodes every document once, as prep does (one encode call per document).
Pass encode_all(const data::Tokenizer& tok, const std::vector<std::string>& docs) {
  std::vector<uint32_t> ids;
  Pass pass;
  Stopwatch watch;
  for (const std::string& doc : docs) {
    ids.clear();
    tok.encode_append(doc, ids);
    pass.ids += ids.size();
  }
  pass.seconds = watch.seconds();
  return pass;
}

int bench_tokenizer_checked(const po::variables_map& vm) {
  const std::string spec = vm["tokenizer"].as<std::string>();
  const std::vector<std::string> inputs = vm["input"].as<std::vector<std::string>>();
  if (const uint64_t vocab = vm["train-vocab"].as<uint64_t>()) {
    const data::BpeTrainingReport r = data::train_bpe_tokenizer(inputs, vocab, spec);
    std::printf("trained %s: %llu ids (%llu merges) from %.2f MB, %llu pre-tokens (%llu distinct) in %.2f s: %.2f MB/s\n",
                spec.c_str(), (unsigned long long)r.vocab_size, (unsigned long long)r.merges, r.bytes_read / 1e6,
                (unsigned long long)r.words, (unsigned long long)r.unique_words, r.seconds, r.bytes_read / 1e6 / r.seconds);
  }
  std::vector<std::string> docs;
  double bytes = 0;
  for (const std::string& path : inputs) {
    docs.push_back(read_file(path));
    bytes += static_cast<double>(docs.back().size());
  }
  TRIDENT_CONFIG_CHECK(bytes > 0, "trident bench tokenizer: the input is empty");
  const std::unique_ptr<data::Tokenizer> tok = data::load_tokenizer(spec);
  const std::unique_ptr<data::Tokenizer> reference = data::load_tokenizer("byte");

  const Pass cold = encode_all(*tok, docs);  // the pre-token cache starts empty
  // MB/s of repeated passes over all documents, for at least --seconds.
  const double min_seconds = vm["seconds"].as<double>();
  auto rate = [&](const data::Tokenizer& t) {
    double seconds = 0;
    int passes = 0;
    do {
      seconds += encode_all(t, docs).seconds;
      ++passes;
    } while (seconds < min_seconds);
    return passes * bytes / 1e6 / seconds;
  };
  const double warm_mb_s = rate(*tok);
  const double reference_mb_s = rate(*reference);

  size_t differing = 0;
  for (const std::string& doc : docs) differing += tok->decode(tok->encode(doc)) != doc;
  if (vm.count("dump-ids")) {
    std::ofstream out = create_file(vm["dump-ids"].as<std::string>());
    for (uint32_t id : tok->encode(docs.front())) out << id << '\n';
    TRIDENT_CONFIG_CHECK(out, "trident bench tokenizer: cannot write ", vm["dump-ids"].as<std::string>());
  }

  const double cold_mb_s = bytes / 1e6 / cold.seconds;
  std::printf("tokenizer %s (vocab %llu) on %zu file(s), %.2f MB, one thread\n", tok->describe().c_str(),
              (unsigned long long)tok->vocab_size(), docs.size(), bytes / 1e6);
  std::printf("%-26s %10s %12s\n", "pass", "MB/s", "of byte tok");
  std::printf("%-26s %10.2f %11.1f%%\n", "first pass (cache filling)", cold_mb_s, 100 * cold_mb_s / reference_mb_s);
  std::printf("%-26s %10.2f %11.1f%%\n", "later passes (cache warm)", warm_mb_s, 100 * warm_mb_s / reference_mb_s);
  std::printf("%-26s %10.2f %11.1f%%\n", "byte tokenizer (reference)", reference_mb_s, 100.0);
  std::printf("%llu ids, %.2f bytes per id; round trip: %s\n", (unsigned long long)cold.ids, bytes / cold.ids,
              differing ? "DIFFERS" : "exact");
  if (differing) std::printf("  %zu of %zu files do not decode back to their text (expected for NFC tokenizers)\n", differing, docs.size());
  return 0;
}

}  // namespace

int bench_tokenizer(int argc, char** argv) {
  po::options_description desc("trident bench tokenizer --tokenizer T --input FILE... [options]");
  desc.add_options()("help", "this help")
      ("tokenizer", po::value<std::string>()->required(), "tokenizer.json (or its directory), or byte; with --train-vocab: where to write the trained one")
      ("input", po::value<std::vector<std::string>>()->multitoken()->required(), "text files, each one document")
      ("seconds", po::value<double>()->default_value(2.0), "least time for the repeated passes")
      ("train-vocab", po::value<uint64_t>()->default_value(0), "first train a byte-level BPE tokenizer of this many ids on the inputs (0: no)")
      ("dump-ids", po::value<std::string>(), "write the ids of the first input, one a line (for utils/make_tokenizer_fixtures.py check)");
  po::variables_map vm;
  if (const auto stop = parse_bench_options(desc, argc, argv, "tokenizer", vm)) return *stop;
  try {
    return bench_tokenizer_checked(vm);
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident bench tokenizer: %s\n", e.what());
    return 2;
  }
}

}  // namespace trident::cli
