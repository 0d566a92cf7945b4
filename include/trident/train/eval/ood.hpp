// Out-of-distribution detection (eval.ood, `trident eval --ood DATA`): samples of the
// in-distribution validation set (data.valid) and of DATA — every document cut into pieces of
// seq_len + 1 tokens, up to eval.ood_samples pieces per side spread evenly over the set — each get
// two scores from the model: the mean token negative log-likelihood and 1 - the mean max softmax
// probability, a higher score meaning "more likely out of distribution" (OOD is the positive
// class). Reported per score: AUROC, AUPR (average precision) and the false-positive rate at 95%
// true-positive rate. The scores go to <run_dir>/ood/step_<8 digits>.json so others can check or
// plot them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "trident/dist/topology.hpp"
#include "trident/train/eval/evaluator.hpp"
#include "trident/train/eval/loglikelihood.hpp"
#include "trident/train/pipeline/pipeline_executor.hpp"
#include "trident/train/run_config.hpp"

namespace trident::train {

struct DetectionMetrics {
  double auroc = 0, aupr = 0, fpr95 = 0;
};
// in: scores of in-distribution samples, ood: of OOD ones (the positives). AUROC counts ties as
// half; AUPR is the average precision over the distinct thresholds (as scikit-learn's
// average_precision_score); fpr95: the in-distribution share at or above the highest threshold
// that catches >= 95% of the OOD samples. Both sets non-empty.
DetectionMetrics detection_metrics(const std::vector<double>& in, const std::vector<double>& ood);

struct OodResult {
  int64_t step = 0;
  std::string in_dataset, ood_dataset;
  std::vector<double> nll_in, nll_ood, msp_in, msp_ood;  // per sample
  DetectionMetrics nll, msp;
  double seconds = 0;
};

class OodEvaluator {
 public:
  OodEvaluator(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline);
  ~OodEvaluator();
  // Collective over the world; every rank returns the same result.
  OodResult run(int64_t step);

 private:
  std::vector<LoglikelihoodRequest> requests(const std::string& key, const std::string& prefix) const;

  const RunConfig& cfg_;
  LoglikelihoodScorer scorer_;
  std::vector<LoglikelihoodRequest> in_, ood_;
};

std::vector<MetricLine> ood_metric_lines(const OodResult& r);
// Writes <run_dir>/ood/step_<8 digits>.json (scores and metrics); rank 0.
void write_ood_scores(const std::string& run_dir, const OodResult& r);
std::string format_ood(const OodResult& r);

}  // namespace trident::train
