// `trident inspect --config FILE --batches N [--json]`: the first N global batches of a run's
// data order, without training: each source's rows per batch and each row's source, document
// and offset. The order is a pure function of (seed, mix, step), the same under any layout,
// so it is computed for one rank (dp = tp = pp = 1) whatever the config's layout.
#include <cstdio>
#include <map>
#include <string>
#include <vector>

#include "trident/cli/config_parser.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/train/data_source.hpp"

namespace trident::cli {

namespace {

constexpr const char* kBatchesUsage =
    "usage: trident inspect --config FILE --batches N [--json] [--section.key=value ...]\n"
    "  the first N global batches of the run's data order: each source's row count per batch and each\n"
    "  row's source, document and first token offset (--json: one line per row in global order)";

void print_batches(train::DataSource& data, int64_t batches, int64_t G, bool json) {
  data::BatchSampler& sampler = data.sampler();
  const size_t m = sampler.num_sources();
  for (int64_t b = 0; b < batches; ++b) {
    std::vector<int64_t> counts(m, 0);
    std::vector<std::string> rows;
    for (int64_t j = 0; j < G; ++j) {
      const int64_t g = b * G + j;
      const data::BatchSampler::RowRef at = sampler.locate(g);
      const auto [document, offset] = sampler.source(at.source).row_origin(at.row);
      ++counts[at.source];
      const std::string& name = data.mixture() ? sampler.source_name(at.source) : std::string("train");
      if (json) {
        std::printf("{\"batch\": %lld, \"row\": %lld, \"source\": %s, \"document\": %llu, \"offset\": %llu}\n",
                    static_cast<long long>(b), static_cast<long long>(g), json_quote(name).c_str(),
                    static_cast<unsigned long long>(document), static_cast<unsigned long long>(offset));
      } else {
        rows.push_back(detail::concat("  row ", g, ": ", name, " document ", document, " offset ", offset));
      }
    }
    if (json) continue;
    std::string head = detail::concat("batch ", b, ":");
    for (size_t i = 0; i < m; ++i)
      head += detail::concat(" ", data.mixture() ? sampler.source_name(i) : std::string("train"), " ", counts[i]);
    std::printf("%s\n", head.c_str());
    for (const std::string& row : rows) std::printf("%s\n", row.c_str());
  }
}

}  // namespace

int inspect_batches(int argc, char** argv) {
  std::vector<std::string> kept;
  int64_t batches = -1;
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg == "--help" || arg == "-h") {
      std::printf("%s\n", kBatchesUsage);
      return 0;
    }
    std::string value;
    if (arg == "--batches" && i + 1 < argc) value = argv[++i];
    else if (arg.rfind("--batches=", 0) == 0) value = arg.substr(10);
    else if (arg == "--json") json = true;
    else kept.push_back(arg);
    if (!value.empty() || arg.rfind("--batches", 0) == 0) {
      size_t used = 0;
      try {
        batches = std::stoll(value, &used);
      } catch (const std::exception&) {
        used = 0;
      }
      if (used != value.size() || value.empty() || batches < 1) {
        std::fprintf(stderr, "trident inspect: error: --batches wants a whole number >= 1, got '%s'\n%s\n",
                     value.c_str(), kBatchesUsage);
        return 2;
      }
    }
  }
  if (batches < 1) {
    std::fprintf(stderr, "trident inspect: error: --config needs --batches N\n%s\n", kBatchesUsage);
    return 2;
  }
  // One rank's view: the data order does not depend on the layout.
  for (const char* one : {"--parallel.dp=1", "--parallel.tp=1", "--parallel.pp=1", "--parallel.ep=1",
                          "--parallel.sequence_parallel=false", "--parallel.layout=manual",
                          "--parallel.virtual_stages=1"})
    kept.push_back(one);
  std::vector<char*> args{argv[0]};
  for (std::string& a : kept) args.push_back(a.data());
  try {
    const train::RunConfig cfg = parse_run_config(static_cast<int>(args.size()), args.data(), 1);
    // The whole global batch, as one dp rank would read it (rows do not depend on the layout).
    train::DataSource data(cfg, train::run_sampler_options(cfg, 0, 1, 1));
    print_batches(data, batches, cfg.train.global_batch, json);
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
