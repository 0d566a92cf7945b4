// Temperature and top-p sampling (token_sampling.hpp).
#include "trident/data/evalgen/token_sampling.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::data::evalgen {

uint64_t sample_stream(uint64_t seed, const std::string& suite, const std::string& level, int64_t index, int sample) {
  return rng_key(
      seed, "evalgen/paraphrase/" + suite + "/" + level + "/" + std::to_string(index) + "/" + std::to_string(sample));
}

double sample_uniform(uint64_t stream, int64_t position) {
  return rng_block(stream, static_cast<uint64_t>(position))[0] * 0x1p-32;  // [0, 1)
}

int32_t sample_token(const float* logits, int64_t vocab, const SamplingOptions& o, double u) {
  TRIDENT_CHECK(vocab >= 1 && o.temperature >= 0 && o.top_p > 0 && o.top_p <= 1, "sample_token: vocab ", vocab,
                ", temperature ", o.temperature, ", top_p ", o.top_p);
  auto value = [&](int64_t i) { return std::isfinite(logits[i]) ? double(logits[i]) : -INFINITY; };
  int64_t best = 0;
  for (int64_t i = 1; i < vocab; ++i)
    if (value(i) > value(best)) best = i;
  if (o.temperature == 0 || !std::isfinite(value(best))) return static_cast<int32_t>(best);
  std::vector<double> p(static_cast<size_t>(vocab));
  double total = 0;
  for (int64_t i = 0; i < vocab; ++i) total += p[size_t(i)] = std::exp((value(i) - value(best)) / o.temperature);
  std::vector<int32_t> order(static_cast<size_t>(vocab));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int32_t a, int32_t b) { return p[size_t(a)] > p[size_t(b)]; });
  size_t kept = 0;
  double mass = 0;
  while (kept < order.size() && (kept == 0 || mass < o.top_p * total)) mass += p[size_t(order[kept++])];
  const double target = u * mass;
  double cumulative = 0;
  for (size_t k = 0; k < kept; ++k) {
    cumulative += p[size_t(order[k])];
    if (cumulative > target) return order[k];
  }
  return order[kept - 1];
}

}  // namespace trident::data::evalgen
