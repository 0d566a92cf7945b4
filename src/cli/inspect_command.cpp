// `trident inspect PREFIX`: statistics of a token shard set (counts, dtype, loss-masked share,
// document lengths and their histogram), and `--decode I|all` to print documents back as text
// with the tokenizer PREFIX.prep.json names (or --tokenizer). `--config FILE --batches N`: a
// run's data order (inspect_batches.cpp); `CHECKPOINT.h5`: inspect_checkpoint.cpp.
#include <algorithm>
#include <bit>
#include <boost/program_options.hpp>
#include <cstdio>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "command_options.hpp"
#include "trident/cli/commands.hpp"
#include <filesystem>
#include <fstream>
#include <memory>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/prep.hpp"
#include "trident/data/shard_set.hpp"
#include "trident/security/crypto.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::cli {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: trident inspect PREFIX [--decode I|all] [--tokenizer T] [--key-file KEY]   (token shards)\n"
    "       trident inspect CHECKPOINT.h5 [--key-file PATH]   (tensors, attributes, checksums verified;\n"
    "                                                     an encrypted checkpoint's with its key)\n"
    "       trident inspect --config FILE --batches N [--json]   (a run's first N global batches)";

void print_statistics(const data::ShardSet& reader) {
  const uint64_t D = reader.num_documents();
  if (reader.num_shards() == 1)
    std::printf("shard      %s (.bin, .idx)\n", reader.prefix().c_str());
  else
    std::printf("shards     %d: %s ... %s (.bin, .idx)\n", reader.num_shards(),
                data::shard_file_prefix(reader.prefix(), 0, reader.num_shards()).c_str(),
                data::shard_file_prefix(reader.prefix(), reader.num_shards() - 1, reader.num_shards()).c_str());
  std::printf("documents  %llu\n", static_cast<unsigned long long>(D));
  std::printf("tokens     %llu\n", static_cast<unsigned long long>(reader.num_tokens()));
  std::printf("vocab      %llu\n", static_cast<unsigned long long>(reader.vocab()));
  std::printf("dtype      %s\n", reader.token_bytes() == 2 ? "uint16" : "uint32");
  if (reader.num_shards() > 1) {  // the balance of the hash split
    uint64_t lo = UINT64_MAX, hi = 0;
    for (int s = 0; s < reader.num_shards(); ++s) {
      lo = std::min(lo, reader.shard(s).num_tokens());
      hi = std::max(hi, reader.shard(s).num_tokens());
    }
    std::printf("per shard  %llu to %llu tokens\n", static_cast<unsigned long long>(lo),
                static_cast<unsigned long long>(hi));
  }
  if (D == 0) return;

  // Power-of-two length buckets: bucket k holds lengths in [2^k, 2^(k+1)); bucket 0 also 0.
  uint64_t min_len = UINT64_MAX, max_len = 0, prompt_tokens = 0, prompt_docs = 0;
  std::vector<uint64_t> buckets(65, 0);
  for (uint64_t d = 0; d < D; ++d) {
    const data::DocumentSpan doc = reader.document(d);
    min_len = std::min(min_len, doc.size());
    max_len = std::max(max_len, doc.size());
    ++buckets[doc.size() <= 1 ? 0 : std::bit_width(doc.size()) - 1];
    prompt_tokens += doc.loss_start;
    prompt_docs += doc.loss_start > 0;
  }
  std::printf("doc length min %llu, mean %.1f, max %llu tokens\n", static_cast<unsigned long long>(min_len),
              static_cast<double>(reader.num_tokens()) / static_cast<double>(D),
              static_cast<unsigned long long>(max_len));
  std::printf("loss mask  %.2f%% of tokens not trained on (prompts before the loss start, in %llu documents)\n",
              100.0 * static_cast<double>(prompt_tokens) / static_cast<double>(std::max<uint64_t>(reader.num_tokens(), 1)),
              static_cast<unsigned long long>(prompt_docs));

  std::printf("length histogram (tokens per document):\n");
  const auto first = std::find_if(buckets.begin(), buckets.end(), [](uint64_t n) { return n > 0; });
  const auto last = std::find_if(buckets.rbegin(), buckets.rend(), [](uint64_t n) { return n > 0; }).base();
  const uint64_t peak = *std::max_element(buckets.begin(), buckets.end());
  for (auto it = first; it != last; ++it) {
    const int k = static_cast<int>(it - buckets.begin());
    const unsigned long long lo = k == 0 ? 0 : 1ull << k, hi = (k == 63 ? UINT64_MAX : (1ull << (k + 1)) - 1);
    const int bar = static_cast<int>((*it * 50 + peak - 1) / peak);
    std::printf("  %10llu - %-10llu %10llu %s\n", lo, hi, static_cast<unsigned long long>(*it),
                std::string(static_cast<size_t>(bar), '#').c_str());
  }
}

// The tokenizer that made the shards: --tokenizer, else the one PREFIX.prep.json names (the
// valid split PREFIX-valid shares its train split's prep.json), else the byte tokenizer when
// the vocabulary is its 257, else none.
std::unique_ptr<data::Tokenizer> shard_tokenizer(const std::string& prefix, const std::string& spec, uint64_t vocab) {
  if (!spec.empty()) return data::load_tokenizer(spec);
  std::string named;
  try {
    named = data::prep_json_field(prefix, "tokenizer");
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(e.what(), "; pass --tokenizer"));
  }
  if (named.empty()) return vocab == 257 ? data::load_tokenizer("byte") : nullptr;
  return data::load_tokenizer(named);
}

// Text through the tokenizer; without one, the ids.
void print_document(const data::ShardSet& reader, const data::Tokenizer* tokenizer, uint64_t d) {
  const data::DocumentSpan doc = reader.document(d);
  std::vector<uint32_t> ids;
  ids.reserve(doc.size());
  for (uint64_t t = doc.begin; t < doc.end; ++t) ids.push_back(reader.token(t));
  if (tokenizer) {
    const std::string text = tokenizer->decode(ids);
    std::fwrite(text.data(), 1, text.size(), stdout);  // may hold NUL bytes
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %u" : "%u", ids[i]);
  }
  std::printf("\n");
}

}  // namespace

int inspect_checkpoint(const std::string& path, int argc, char** argv);  // inspect_checkpoint.cpp
int inspect_batches(int argc, char** argv);                              // inspect_batches.cpp

int run_inspect(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]).ends_with(".h5")) return inspect_checkpoint(argv[1], argc, argv);
  for (int i = 1; i < argc; ++i)
    if (std::string_view(argv[i]) == "--config" || std::string_view(argv[i]).starts_with("--config="))
      return inspect_batches(argc, argv);
  std::string prefix, decode, tokenizer_spec, key_file;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "print this help")
      ("prefix", po::value<std::string>(&prefix)->required(), "shard prefix: PREFIX.bin/.idx, or the shards PREFIX-iiiii-of-NNNNN.bin/.idx of a set")
      ("decode", po::value<std::string>(&decode)->default_value(""),
       "print document I as text, or every document (all), instead of statistics")
      ("tokenizer", po::value<std::string>(&tokenizer_spec)->default_value(""),
       "tokenizer for --decode (default: the one PREFIX.prep.json names; without one, byte for a "
       "257-id vocab, else the ids are printed)")
      ("key-file", po::value<std::string>(&key_file)->default_value(""), "the key of encrypted shards (trident prep --key-file)");
  po::positional_options_description positional;
  positional.add("prefix", 1);
  po::variables_map vm;
  try {
    if (!parse_options(argc, argv, desc, kUsage, vm, &positional)) return 0;
  } catch (const po::error& e) {
    std::fprintf(stderr, "trident inspect: error: %s\n%s\n", e.what(), kUsage);
    return 2;
  }
  try {
    const std::optional<security::MasterKey> key =
        key_file.empty() ? std::nullopt : std::optional(security::load_key_file(key_file));
    const data::ShardSet reader(prefix, key ? &*key : nullptr);
    if (decode.empty()) {
      print_statistics(reader);
      return 0;
    }
    const std::unique_ptr<data::Tokenizer> tokenizer = shard_tokenizer(prefix, tokenizer_spec, reader.vocab());
    TRIDENT_CONFIG_CHECK(!tokenizer || tokenizer->vocab_size() <= reader.vocab(), "tokenizer ",
                         tokenizer->describe(), " has ", tokenizer->vocab_size(), " ids but the shards' vocab is ",
                         reader.vocab(), ": not the tokenizer these shards were made with");
    if (decode == "all") {
      for (uint64_t d = 0; d < reader.num_documents(); ++d) {
        if (d) std::printf("\n");  // a blank line between documents
        print_document(reader, tokenizer.get(), d);
      }
    } else {
      size_t used = 0;
      unsigned long long d = 0;
      try {
        d = std::stoull(decode, &used);
      } catch (const std::exception&) {
      }
      TRIDENT_CONFIG_CHECK(used == decode.size() && decode[0] != '-' && d < reader.num_documents(),
                           "--decode wants a document index in [0, ", reader.num_documents(),
                           ") or 'all', got '", decode, "'");
      print_document(reader, tokenizer.get(), d);
    }
    return 0;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident inspect: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "trident inspect: failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace trident::cli
