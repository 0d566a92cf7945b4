// `trident inspect PREFIX`: statistics of a token shard (counts, dtype, document lengths and
// their histogram), and `--decode I|all` to print documents back as text.
#include <algorithm>
#include <bit>
#include <boost/program_options.hpp>
#include <cstdio>
#include <iostream>
#include <string>
#include <string_view>
#include <vector>

#include "trident/cli/commands.hpp"
#include "trident/core/error.hpp"
#include "trident/data/byte_tokenizer.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::cli {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: trident inspect PREFIX [--decode I|all]   (token shards)\n"
    "       trident inspect CHECKPOINT.h5              (tensors, attributes, checksums verified)";

void print_statistics(const data::ShardReader& reader) {
  const uint64_t D = reader.num_documents();
  std::printf("shard      %s (.bin, .idx)\n", reader.prefix().c_str());
  std::printf("documents  %llu\n", static_cast<unsigned long long>(D));
  std::printf("tokens     %llu\n", static_cast<unsigned long long>(reader.num_tokens()));
  std::printf("vocab      %llu\n", static_cast<unsigned long long>(reader.vocab()));
  std::printf("dtype      %s\n", reader.token_bytes() == 2 ? "uint16" : "uint32");
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
  if (reader.has_loss_starts())
    std::printf("prompts    %llu documents, %llu tokens not trained on (before the loss start)\n",
                static_cast<unsigned long long>(prompt_docs), static_cast<unsigned long long>(prompt_tokens));

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

// Text for the byte tokenizer's vocabulary, else the ids (another tokenizer's shard).
void print_document(const data::ShardReader& reader, uint64_t d) {
  const data::DocumentSpan doc = reader.document(d);
  std::vector<uint32_t> ids;
  ids.reserve(doc.size());
  for (uint64_t t = doc.begin; t < doc.end; ++t) ids.push_back(reader.token(t));
  if (reader.vocab() == data::ByteTokenizer::kVocabSize) {
    const std::string text = data::ByteTokenizer::decode(ids);
    std::fwrite(text.data(), 1, text.size(), stdout);  // may hold NUL bytes
  } else {
    for (size_t i = 0; i < ids.size(); ++i) std::printf(i ? " %u" : "%u", ids[i]);
  }
  std::printf("\n");
}

}  // namespace

int inspect_checkpoint(const std::string& path, int argc, char** argv);  // inspect_checkpoint.cpp

int run_inspect(int argc, char** argv) {
  if (argc >= 2 && std::string_view(argv[1]).ends_with(".h5")) return inspect_checkpoint(argv[1], argc, argv);
  std::string prefix, decode;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "print this help")
      ("prefix", po::value<std::string>(&prefix)->required(), "shard prefix (PREFIX.bin, PREFIX.idx)")
      ("decode", po::value<std::string>(&decode)->default_value(""),
       "print document I as text, or every document (all), instead of statistics");
  po::positional_options_description positional;
  positional.add("prefix", 1);
  po::variables_map vm;
  try {
    po::store(po::command_line_parser(argc, argv).options(desc).positional(positional).run(), vm);
    if (vm.count("help")) {
      std::cout << kUsage << "\n\n" << desc;
      return 0;
    }
    po::notify(vm);
  } catch (const po::error& e) {
    std::fprintf(stderr, "trident inspect: error: %s\n%s\n", e.what(), kUsage);
    return 2;
  }
  try {
    const data::ShardReader reader(prefix);
    if (decode.empty()) {
      print_statistics(reader);
    } else if (decode == "all") {
      for (uint64_t d = 0; d < reader.num_documents(); ++d) {
        if (d) std::printf("\n");  // a blank line between documents
        print_document(reader, d);
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
      print_document(reader, d);
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
