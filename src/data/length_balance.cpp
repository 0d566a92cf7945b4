// Length balance (length_balance.hpp): bucket counts, quotas by water-filling, and the seeded
// selection of the documents each over-full bucket keeps.
#include "trident/data/length_balance.hpp"

#include <algorithm>
#include <cstdlib>
#include <sstream>

#include "rank_select.hpp"
#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::data {
namespace {

uint64_t priority_of(uint64_t hash, uint64_t seed) { return mix64(hash ^ (seed * 0x9E3779B97F4A7C15ull)); }

int64_t kept_under_cap(const std::vector<int64_t>& counts, int64_t cap) {
  int64_t total = 0;
  for (const int64_t c : counts) total += std::min(c, cap);
  return total;
}

}  // namespace

std::vector<int64_t> parse_length_edges(const std::string& spec) {
  std::vector<int64_t> edges;
  std::stringstream in(spec);
  std::string item;
  while (std::getline(in, item, ',')) {
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str(), &end, 10);
    TRIDENT_CONFIG_CHECK(!item.empty() && *end == '\0' && v > 0, "--length-buckets: \"", item,
                         "\" is not a positive token count (want increasing edges like 128,512,2048)");
    TRIDENT_CONFIG_CHECK(edges.empty() || v > edges.back(), "--length-buckets: edges must increase (", edges.back(),
                         " then ", v, ")");
    edges.push_back(v);
  }
  TRIDENT_CONFIG_CHECK(!edges.empty(), "--length-buckets: no edges in \"", spec, "\"");
  return edges;
}

void check_length_balance(const LengthBalanceOptions& o) {
  TRIDENT_CONFIG_CHECK(o.max_share > 0 && o.max_share <= 1, "--max-share must be in (0, 1] (got ", o.max_share, ")");
  TRIDENT_CONFIG_CHECK(o.enabled() || o.max_share == 1, "--max-share needs --length-buckets");
}

int length_bucket(int64_t tokens, const std::vector<int64_t>& edges) {
  return static_cast<int>(std::upper_bound(edges.begin(), edges.end(), tokens) - edges.begin());
}

std::vector<int64_t> bucket_quotas(const std::vector<int64_t>& counts, double max_share) {
  int64_t largest = 0, non_empty = 0;
  for (const int64_t c : counts) largest = std::max(largest, c), non_empty += c > 0;
  if (max_share >= 1 || largest == 0) return counts;
  // S * T(m) - m is concave in m and 0 at m = 0: the caps that hold form [0, m*].
  auto holds = [&](int64_t m) { return static_cast<double>(m) <= max_share * static_cast<double>(kept_under_cap(counts, m)); };
  int64_t lo = 0, hi = largest;
  while (lo < hi) {
    const int64_t mid = lo + (hi - lo + 1) / 2;
    if (holds(mid)) lo = mid;
    else hi = mid - 1;
  }
  if (lo == 0) {
    std::string listed;
    for (const int64_t c : counts) listed += (listed.empty() ? "" : ",") + std::to_string(c);
    throw ConfigError(detail::concat("--max-share ", max_share, " cannot hold with ", non_empty,
                                     " non-empty length buckets (documents per bucket: ", listed,
                                     "): it needs max-share * buckets >= 1"));
  }
  std::vector<int64_t> quotas;
  for (const int64_t c : counts) quotas.push_back(std::min(c, lo));
  return quotas;
}

std::vector<bool> balance_lengths(const std::vector<int64_t>& tokens, const std::vector<uint64_t>& hashes,
                                  const std::vector<bool>& active, const LengthBalanceOptions& options,
                                  const PrepComm& comm, LengthBalanceReport* report) {
  const size_t buckets = options.edges.size() + 1;
  std::vector<int> bucket(tokens.size());
  std::vector<uint64_t> priority(tokens.size());
  std::vector<int64_t> counts(buckets, 0);
  for (size_t i = 0; i < tokens.size(); ++i) {
    bucket[i] = length_bucket(tokens[i], options.edges);
    priority[i] = priority_of(hashes[i], options.seed);
    if (active[i]) ++counts[static_cast<size_t>(bucket[i])];
  }
  comm.sum(counts);
  const std::vector<int64_t> quotas = bucket_quotas(counts, options.max_share);

  // The quota-th smallest priority of each over-full bucket: documents above it go.
  std::vector<int> group(tokens.size(), -1);
  for (size_t i = 0; i < tokens.size(); ++i)
    if (active[i]) group[i] = bucket[i];
  std::vector<int64_t> want(buckets, 0);
  for (size_t b = 0; b < buckets; ++b)
    if (quotas[b] < counts[b]) want[b] = quotas[b];
  const std::vector<uint64_t> threshold = kth_smallest(priority, group, want, comm);

  std::vector<bool> drop(tokens.size(), false);
  std::vector<int64_t> after(buckets, 0);
  for (size_t i = 0; i < tokens.size(); ++i) {
    if (!active[i]) continue;
    const size_t b = static_cast<size_t>(bucket[i]);
    drop[i] = quotas[b] < counts[b] && priority[i] > threshold[b];
    if (!drop[i]) ++after[b];
  }
  comm.sum(after);
  if (report) *report = {counts, after};
  return drop;
}

}  // namespace trident::data
