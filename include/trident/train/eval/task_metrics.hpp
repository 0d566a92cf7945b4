// The scores of a generation task (eval.metrics): exact match and token F1 (SQuAD's rules,
// answer_match.hpp), ROUGE-1/2/L/Lsum F-measures (rouge-score) and corpus BLEU (sacrebleu,
// text_overlap.hpp). Each example yields a fixed set of summable statistics, so examples scored
// on different ranks are combined by one sum over the world and any subset (a level, a
// perturbation) is scored from the sum of its examples: means for exact match, F1 and ROUGE,
// BLEU from the summed n-gram statistics (a corpus score, not a mean of sentence scores).
#pragma once
#include <string>
#include <vector>

namespace trident::train {

enum class TaskMetric { kEm, kF1, kRouge1, kRouge2, kRougeL, kRougeLsum, kBleu };

// "em,f1,rougeL" -> metrics in the given order; ConfigError naming an unknown or repeated name.
std::vector<TaskMetric> parse_task_metrics(const std::string& list);
const char* task_metric_name(TaskMetric m);  // the eval.metrics name ("em", "rouge1", ...)
// The eval.jsonl / TensorBoard name: exact_match for em (the name earlier records use), else the same.
const char* task_metric_record_name(TaskMetric m);
const char* task_metric_label(TaskMetric m);  // for the terminal: "exact match", "ROUGE-L", "BLEU"
// Values in [0, 1] except BLEU, which is on sacrebleu's 0-100 scale.
bool task_metric_is_percent(TaskMetric m);

// Per-example statistics: kExampleFields doubles, zero for metrics not asked for.
inline constexpr int kExampleFields = 16;
void example_statistics(const std::string& prediction, const std::vector<std::string>& references,
                        const std::vector<TaskMetric>& metrics, bool rouge_stem, double* out);
// A metric over examples whose statistics were summed into sum (count of them >= 1).
double task_metric_value(TaskMetric m, const double* sum, int64_t examples);

}  // namespace trident::train
