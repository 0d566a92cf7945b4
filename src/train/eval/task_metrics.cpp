// Generation-task metrics: names, per-example statistics and their aggregation.
#include "trident/train/eval/task_metrics.hpp"

#include <algorithm>
#include <array>

#include "trident/core/error.hpp"
#include "trident/train/eval/answer_match.hpp"
#include "trident/train/eval/text_overlap.hpp"

namespace trident::train {

namespace {
struct MetricInfo {
  TaskMetric metric;
  const char *name, *record, *label;
};
constexpr std::array<MetricInfo, 7> kMetrics{{
    {TaskMetric::kEm, "em", "exact_match", "exact match"},
    {TaskMetric::kF1, "f1", "f1", "F1"},
    {TaskMetric::kRouge1, "rouge1", "rouge1", "ROUGE-1"},
    {TaskMetric::kRouge2, "rouge2", "rouge2", "ROUGE-2"},
    {TaskMetric::kRougeL, "rougeL", "rougeL", "ROUGE-L"},
    {TaskMetric::kRougeLsum, "rougeLsum", "rougeLsum", "ROUGE-Lsum"},
    {TaskMetric::kBleu, "bleu", "bleu", "BLEU"},
}};
const MetricInfo& info(TaskMetric m) { return kMetrics[static_cast<size_t>(m)]; }

// Field layout: em, f1, rouge1, rouge2, rougeL, rougeLsum, then BLEU's 10 statistics.
constexpr int kBleuFields = 6;
static_assert(kBleuFields + BleuStats::kFields == kExampleFields);

bool wants(const std::vector<TaskMetric>& metrics, TaskMetric m) {
  return std::find(metrics.begin(), metrics.end(), m) != metrics.end();
}
}  // namespace

std::vector<TaskMetric> parse_task_metrics(const std::string& list) {
  std::vector<TaskMetric> out;
  size_t begin = 0;
  while (begin <= list.size()) {
    size_t end = list.find(',', begin);
    if (end == std::string::npos) end = list.size();
    std::string name = list.substr(begin, end - begin);
    name.erase(0, name.find_first_not_of(" \t"));
    name.erase(name.find_last_not_of(" \t") + 1);
    begin = end + 1;
    if (name.empty()) continue;
    const auto it = std::find_if(kMetrics.begin(), kMetrics.end(), [&](const MetricInfo& i) { return name == i.name; });
    TRIDENT_CONFIG_CHECK(it != kMetrics.end(), "eval.metrics: unknown metric '", name,
                         "' (em, f1, rouge1, rouge2, rougeL, rougeLsum, bleu)");
    TRIDENT_CONFIG_CHECK(!wants(out, it->metric), "eval.metrics: '", name, "' is named twice");
    out.push_back(it->metric);
  }
  TRIDENT_CONFIG_CHECK(!out.empty(), "eval.metrics: no metric named (em, f1, rouge1, rouge2, rougeL, rougeLsum, bleu)");
  return out;
}

const char* task_metric_name(TaskMetric m) { return info(m).name; }
const char* task_metric_record_name(TaskMetric m) { return info(m).record; }
const char* task_metric_label(TaskMetric m) { return info(m).label; }
bool task_metric_is_percent(TaskMetric m) { return m != TaskMetric::kBleu; }

void example_statistics(const std::string& prediction, const std::vector<std::string>& references,
                        const std::vector<TaskMetric>& metrics, bool rouge_stem, double* out) {
  std::fill(out, out + kExampleFields, 0.0);
  if (wants(metrics, TaskMetric::kEm) || wants(metrics, TaskMetric::kF1)) {
    const AnswerScore s = score_answer(prediction, references);
    out[0] = s.exact_match, out[1] = s.f1;
  }
  if (wants(metrics, TaskMetric::kRouge1) || wants(metrics, TaskMetric::kRouge2) ||
      wants(metrics, TaskMetric::kRougeL) || wants(metrics, TaskMetric::kRougeLsum)) {
    const RougeScores r = rouge(prediction, references, rouge_stem);
    out[2] = r.rouge1, out[3] = r.rouge2, out[4] = r.rougeL, out[5] = r.rougeLsum;
  }
  if (wants(metrics, TaskMetric::kBleu)) BleuStats::of(prediction, references).to(out + kBleuFields);
}

double task_metric_value(TaskMetric m, const double* sum, int64_t examples) {
  if (m == TaskMetric::kBleu) return BleuStats::from(sum + kBleuFields).score();
  return examples > 0 ? sum[static_cast<int>(m)] / double(examples) : 0.0;
}

}  // namespace trident::train
