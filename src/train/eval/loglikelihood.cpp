// Scoring log-likelihood requests: rows built from the requests, forward through the pipeline,
// per-target scores summed per request on the last stage, results combined over the world.
#include "trident/train/eval/loglikelihood.hpp"

#include <algorithm>
#include <numeric>

#include "trident/core/error.hpp"

namespace trident::train {

LoglikelihoodScorer::LoglikelihoodScorer(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline)
    : cfg_(cfg), topology_(topology), pipeline_(pipeline) {
  const Shape shape{cfg.train.micro_batch, cfg.model.seq_len};
  batch_.tokens = batch_.tokens_buffer = Tensor::zeros(shape, DType::kI32);
  batch_.targets = batch_.targets_buffer = Tensor::zeros(shape, DType::kI32);
  batch_.positions = batch_.positions_buffer = Tensor::zeros(shape, DType::kI32);
}

std::vector<LoglikelihoodResult> LoglikelihoodScorer::score(const std::vector<LoglikelihoodRequest>& requests) {
  const int64_t T = cfg_.model.seq_len, B = cfg_.train.micro_batch;
  const int dp = topology_.layout().dp, me = topology_.dp_rank();
  const int64_t n = static_cast<int64_t>(requests.size());
  auto row_length = [&](const LoglikelihoodRequest& r) {
    return std::min<int64_t>(T, int64_t(r.context.size() + r.continuation.size()) - 1);
  };
  for (const LoglikelihoodRequest& r : requests)
    TRIDENT_CHECK(!r.context.empty() && !r.continuation.empty() && int64_t(r.continuation.size()) <= T,
                  "loglikelihood request of ", r.context.size(), " + ", r.continuation.size(), " tokens for seq_len ", T);
  // Longest first (ties in request order): neighbours in a batch have similar lengths.
  std::vector<int64_t> order(static_cast<size_t>(n));
  std::iota(order.begin(), order.end(), 0);
  std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    return row_length(requests[size_t(a)]) > row_length(requests[size_t(b)]);
  });
  const int64_t per_round = B * dp, rounds = (n + per_round - 1) / per_round;
  const int64_t multiple = std::lcm<int64_t>(8, topology_.layout().tp);
  // This rank's share of the sums: logprob, greedy, max_prob_sum, tokens per request (only the
  // last stage's tensor-parallel rank 0 contributes).
  const bool counts = topology_.tp_rank() == 0 && topology_.pp_rank() == topology_.layout().pp - 1;
  std::vector<double> sums(size_t(4 * n), 0.0);
  std::vector<model::TokenScores> scores;
  for (int64_t round = 0; round < rounds; ++round) {
    const int64_t first = (round * dp + me) * B;
    const int64_t rows = std::clamp<int64_t>(n - first, 0, B);
    int64_t longest = 1;
    for (int64_t i = 0; i < rows; ++i) longest = std::max(longest, row_length(requests[size_t(order[size_t(first + i)])]));
    // Rows shorter than seq_len need the whole model on the rank (pipeline stages pass [B*T] rows).
    const int64_t L = topology_.layout().pp > 1 ? T : std::min(T, (longest + multiple - 1) / multiple * multiple);
    data::Batch& b = batch_;
    auto cut = [&](const Tensor& buffer) { return L == T ? buffer : buffer.flat().narrow(0, B * L).view(Shape{B, L}); };
    b.tokens = cut(b.tokens_buffer), b.targets = cut(b.targets_buffer), b.positions = cut(b.positions_buffer);
    int32_t* tok = b.tokens.data<int32_t>();
    int32_t* tgt = b.targets.data<int32_t>();
    int32_t* pos = b.positions.data<int32_t>();
    std::fill(tok, tok + B * L, 0);
    std::fill(tgt, tgt + B * L, -1);
    for (int64_t j = 0; j < B * L; ++j) pos[j] = static_cast<int32_t>(j % L);
    b.valid_tokens = 0;
    for (int64_t i = 0; i < rows; ++i) {
      const LoglikelihoodRequest& r = requests[size_t(order[size_t(first + i)])];
      std::vector<int32_t> whole(r.context);
      whole.insert(whole.end(), r.continuation.begin(), r.continuation.end());
      const int64_t len = row_length(r), skip = int64_t(whole.size()) - (len + 1);  // tokens cut from the left
      const int64_t cont = int64_t(r.continuation.size());
      for (int64_t j = 0; j < len; ++j) {
        tok[i * L + j] = whole[size_t(skip + j)];
        if (j >= len - cont) tgt[i * L + j] = whole[size_t(skip + j + 1)];
      }
      b.valid_tokens += cont;
    }
    pipeline_.run_eval({b}, &scores);
    if (!counts) continue;
    const model::TokenScores& s = scores.front();
    for (int64_t i = 0; i < rows; ++i) {
      const int64_t id = order[size_t(first + i)];
      const int64_t len = row_length(requests[size_t(id)]), cont = int64_t(requests[size_t(id)].continuation.size());
      double logprob = 0, max_prob = 0;
      bool greedy = true;
      for (int64_t j = len - cont; j < len; ++j) {
        logprob += s.logprob[size_t(i * L + j)];
        max_prob += s.max_prob[size_t(i * L + j)];
        greedy = greedy && s.greedy[size_t(i * L + j)];
      }
      sums[size_t(4 * id)] = logprob;
      sums[size_t(4 * id + 1)] = greedy ? 1.0 : 0.0;
      sums[size_t(4 * id + 2)] = max_prob;
      sums[size_t(4 * id + 3)] = double(cont);
    }
  }
  if (n > 0) topology_.world().all_reduce_sum(sums.data(), static_cast<int>(sums.size()));
  std::vector<LoglikelihoodResult> out(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i)
    out[size_t(i)] = {sums[size_t(4 * i)], sums[size_t(4 * i + 1)] > 0.5, sums[size_t(4 * i + 2)],
                      static_cast<int64_t>(sums[size_t(4 * i + 3)])};
  return out;
}

}  // namespace trident::train
