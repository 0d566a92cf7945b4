// Perplexity filter for `trident prep --ppl-model M (--ppl-max X | --ppl-keep-percentile P)`
// (CCNet-style quality filtering with a reference model): every document that passed the
// heuristic filters is scored on its own rank by `score` (the perplexity of its content under
// the model, with the model's tokenizer; the CLI's scorer is a trident model); after dedup,
// documents above X, or above the P-th percentile of the documents left (exact over all ranks),
// are dropped and counted as `perplexity`. Documents too short to score (fewer than two tokens)
// are kept. The histogram of the scores goes to the summary and prep.json.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trident/data/prep_comm.hpp"

namespace trident::data {

struct PerplexityOptions {
  // Perplexity of each text (0: too short to score); empty: the filter is off.
  std::function<std::vector<double>(const std::vector<std::string>&)> score;
  std::string model;            // what scores, for prep.json
  double max = 0;               // drop above this (0: not by value)
  double keep_percentile = 0;   // keep this percentage of the lowest (0: not by percentile)
  int batch = 8;                // texts per score call
  bool enabled() const { return static_cast<bool>(score); }
};

// ConfigError naming the option: exactly one of max and keep_percentile with a model, in range.
void check_perplexity(const PerplexityOptions& options);

// Upper edges of the summary's histogram buckets: 2, 5, 10, 20, 50, ... 10000, then the rest.
const std::vector<double>& perplexity_histogram_edges();

struct PerplexityReport {
  double threshold = 0;            // the perplexity above which documents went
  std::vector<int64_t> histogram;  // scored documents left after dedup, per bucket (all ranks)
  int64_t unscored = 0;            // too short to score (kept)
};

// drop[i]: active document i scored above the threshold. Collective over comm.
std::vector<bool> filter_perplexity(const std::vector<double>& perplexity, const std::vector<bool>& active,
                                    const PerplexityOptions& options, const PrepComm& comm, PerplexityReport* report);

}  // namespace trident::data
