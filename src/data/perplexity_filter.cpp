// The perplexity filter's decision (perplexity_filter.hpp); the scores come from the caller.
#include "trident/data/perplexity_filter.hpp"

#include <algorithm>
#include <bit>
#include <cmath>

#include "rank_select.hpp"
#include "trident/core/error.hpp"

namespace trident::data {

void check_perplexity(const PerplexityOptions& o) {
  const bool by_value = o.max != 0, by_share = o.keep_percentile != 0;
  if (!o.enabled()) {
    TRIDENT_CONFIG_CHECK(!by_value && !by_share, "--ppl-max and --ppl-keep-percentile need --ppl-model");
    return;
  }
  TRIDENT_CONFIG_CHECK(by_value != by_share, "--ppl-model needs one of --ppl-max X or --ppl-keep-percentile P");
  TRIDENT_CONFIG_CHECK(!by_value || o.max > 1, "--ppl-max must be above 1 (a perplexity; got ", o.max, ")");
  TRIDENT_CONFIG_CHECK(!by_share || (o.keep_percentile > 0 && o.keep_percentile <= 100),
                       "--ppl-keep-percentile must be in (0, 100] (got ", o.keep_percentile, ")");
  TRIDENT_CONFIG_CHECK(o.batch >= 1, "--ppl-batch must be at least 1 (got ", o.batch, ")");
}

const std::vector<double>& perplexity_histogram_edges() {
  static const std::vector<double> edges = {2, 5, 10, 20, 50, 100, 200, 500, 1000, 2000, 5000, 10000};
  return edges;
}

std::vector<bool> filter_perplexity(const std::vector<double>& perplexity, const std::vector<bool>& active,
                                    const PerplexityOptions& options, const PrepComm& comm, PerplexityReport* report) {
  const std::vector<double>& edges = perplexity_histogram_edges();
  std::vector<int64_t> counts(edges.size() + 2, 0);  // buckets, then the unscored
  std::vector<uint64_t> bits(perplexity.size());
  std::vector<int> group(perplexity.size(), -1);
  for (size_t i = 0; i < perplexity.size(); ++i) {
    if (!active[i]) continue;
    if (perplexity[i] <= 0) {
      ++counts.back();
      continue;
    }
    ++counts[static_cast<size_t>(std::upper_bound(edges.begin(), edges.end(), perplexity[i]) - edges.begin())];
    bits[i] = std::bit_cast<uint64_t>(perplexity[i]);  // positive doubles order as their bits
    group[i] = 0;
  }
  comm.sum(counts);
  int64_t scored = 0;
  for (size_t b = 0; b + 1 < counts.size(); ++b) scored += counts[b];

  double threshold = options.max;
  if (options.keep_percentile > 0 && scored > 0) {
    const auto keep = static_cast<int64_t>(std::ceil(options.keep_percentile / 100.0 * static_cast<double>(scored)));
    threshold = std::bit_cast<double>(kth_smallest(bits, group, {std::max<int64_t>(keep, 1)}, comm)[0]);
  }
  std::vector<bool> drop(perplexity.size(), false);
  for (size_t i = 0; i < perplexity.size(); ++i) drop[i] = group[i] == 0 && perplexity[i] > threshold;
  if (report) {
    report->threshold = threshold;
    report->unscored = counts.back();
    report->histogram.assign(counts.begin(), counts.end() - 1);
  }
  return drop;
}

}  // namespace trident::data
