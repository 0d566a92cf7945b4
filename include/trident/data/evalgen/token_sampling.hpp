// Temperature and nucleus (top-p) sampling of one token, for `trident evalgen --paraphrase`.
// The uniform draw of token t of sample k of case i of (suite, level) is Philox's value at
// (key of (seed, suite, level, i, k), index t) (core/rng.hpp): it depends on nothing else, so a
// rewrite does not depend on how the prompts are batched, on the order of the calls, on the
// thread count or on which other suites and levels the command writes.
#pragma once
#include <cstdint>
#include <string>

namespace trident::data::evalgen {

struct SamplingOptions {
  double temperature = 0.8;  // 0: greedy
  double top_p = 0.95;       // in (0, 1]
};

// The stream of sample `sample` of case `index` (0-based, in its (suite, level)) under `seed`.
uint64_t sample_stream(uint64_t seed, const std::string& suite, const std::string& level, int64_t index, int sample);
// The draw in [0, 1) for the token at `position` (0: the first generated) of a stream.
double sample_uniform(uint64_t stream, int64_t position);

// One id of [0, vocab). temperature 0: the largest logit (the lowest id on ties). Else
// p = softmax(logits / temperature) in double; ids by p descending (ties: the lower id first);
// the smallest prefix whose mass reaches top_p is kept; the id is the first of that prefix whose
// cumulative p passes u * (the prefix's mass). Non-finite logits count as -infinity.
int32_t sample_token(const float* logits, int64_t vocab, const SamplingOptions& o, double u);

}  // namespace trident::data::evalgen
