// Length balance for `trident prep --length-buckets EDGES [--max-share S]`: the documents left
// after dedup are grouped by token length into buckets [0, e1), [e1, e2), ..., [ek, inf); a bucket
// holding more than S of the documents kept is down-sampled to exactly its quota, the largest
// cap m with m <= S * sum_b min(count_b, m) over the buckets, so no bucket exceeds S of what is
// written. Which documents stay is seeded and rank-free: those of the smallest priorities
// (a hash of the document's content and the seed), found by an exact radix selection over the
// ranks (8 rounds of 256-bin histograms, one sum each). Without --max-share the buckets are only
// counted. The before/after counts go to the summary and prep.json.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/data/prep_comm.hpp"

namespace trident::data {

struct LengthBalanceOptions {
  std::vector<int64_t> edges;  // strictly increasing, > 0; empty: off
  double max_share = 1.0;      // in (0, 1]; 1: count only
  uint64_t seed = 1;
  bool enabled() const { return !edges.empty(); }
};

// "128,512,2048" -> {128, 512, 2048}; ConfigError naming --length-buckets otherwise.
std::vector<int64_t> parse_length_edges(const std::string& spec);
// ConfigError for a share outside (0, 1] or one without buckets.
void check_length_balance(const LengthBalanceOptions& options);
// Index of the bucket of a document of `tokens` tokens: 0 .. edges.size().
int length_bucket(int64_t tokens, const std::vector<int64_t>& edges);
// Documents to keep per bucket so that none holds more than max_share of the total kept.
// ConfigError when no positive total can satisfy it (max_share * non-empty buckets < 1).
std::vector<int64_t> bucket_quotas(const std::vector<int64_t>& counts, double max_share);

struct LengthBalanceReport {
  std::vector<int64_t> before, after;  // documents per bucket, all ranks
};

// drop[i]: active document i (tokens[i] long, of content hash hashes[i]) is left out by the
// balance. Collective over comm.
std::vector<bool> balance_lengths(const std::vector<int64_t>& tokens, const std::vector<uint64_t>& hashes,
                                  const std::vector<bool>& active, const LengthBalanceOptions& options,
                                  const PrepComm& comm, LengthBalanceReport* report);

}  // namespace trident::data
