// Evaluation pass: forward only over the validation rows, sums combined over the world.
#include "trident/core/file_policy.hpp"
#include "trident/train/eval/evaluator.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/core/timer.hpp"
#include "trident/io/jsonl_file.hpp"
#include "trident/train/data_source.hpp"

namespace trident::train {

Evaluator::Evaluator(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline,
                     const std::string& prefix)
    : cfg_(cfg), topology_(topology), pipeline_(pipeline), data_(cfg, topology, "data.valid", prefix) {
  // The first eval_batches global batches of the fixed epoch-0 order; never a row twice.
  batches_ = std::clamp<int64_t>(cfg.log.eval_batches, 1, data_.num_rows() / cfg.train.global_batch);
}

Evaluator::~Evaluator() = default;

EvalResult Evaluator::run(int64_t step) {
  topology_.world().barrier();
  Stopwatch watch;
  model::EvalSums sums;
  for (int64_t b = 0; b < batches_; ++b) sums += pipeline_.run_eval(data_.load(b));
  // Each dp group's last stage holds its rows' sums, identically on every tp rank: count tp rank 0.
  const bool counts = topology_.tp_rank() == 0 && topology_.pp_rank() == topology_.layout().pp - 1;
  double totals[3] = {counts ? sums.loss_sum : 0.0, counts ? double(sums.correct) : 0.0,
                      counts ? double(sums.count) : 0.0};
  topology_.world().all_reduce_sum(totals, 3);
  double peak[2] = {watch.seconds(), peak_rss_mb()};
  topology_.world().all_reduce_max(peak, 2);

  EvalResult r;
  r.step = step;
  r.batches = batches_;
  r.tokens = static_cast<int64_t>(totals[2]);
  r.loss = totals[2] > 0 ? totals[0] / totals[2] : 0.0;
  r.perplexity = std::exp(r.loss);
  r.accuracy = totals[2] > 0 ? totals[1] / totals[2] : 0.0;
  r.seconds = peak[0];
  const double rows = double(batches_) * double(cfg_.train.global_batch);
  r.tokens_per_s = rows * double(cfg_.model.seq_len) / r.seconds;
  r.samples_per_s = rows / r.seconds;
  r.mem_mb = peak[1];
  return r;
}

std::vector<MetricLine> metric_lines(int64_t step, const std::string& dataset,
                                     std::initializer_list<std::pair<const char*, double>> metrics,
                                     const std::string& level, const std::string& perturbation,
                                     const std::string& score) {
  std::vector<MetricLine> out;
  for (const auto& [name, value] : metrics) out.push_back({step, name, value, dataset, level, perturbation, score});
  return out;
}

void write_predictions_file(const std::string& run_dir, int64_t step, const std::vector<std::string>& lines) {
  const std::filesystem::path dir = std::filesystem::path(run_dir) / "predictions";
  make_directories(dir);
  char name[40];
  std::snprintf(name, sizeof name, "step_%08lld.jsonl", (long long)step);
  const std::filesystem::path path = dir / name, tmp = dir / (std::string(name) + ".tmp");
  {
    std::ofstream out = create_file(tmp.string(), std::ios::binary | std::ios::trunc);
    for (const std::string& line : lines) out << line << "\n";
    out.flush();
    TRIDENT_CHECK(out.good(), "cannot write ", tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

void append_metric_lines(const std::string& path, const std::vector<MetricLine>& lines) {
  io::JsonlAppender out(path);
  for (const MetricLine& m : lines) {
    Json line = Json::object();
    line.set("step", Json(m.step));
    line.set("metric", Json(m.metric));
    line.set("value", Json(m.value));
    line.set("dataset", Json(m.dataset));
    if (!m.level.empty()) line.set("level", Json(m.level));
    if (!m.perturbation.empty()) line.set("perturbation", Json(m.perturbation));
    if (!m.score.empty()) line.set("score", Json(m.score));
    out.append(line.dump());
  }
}

std::vector<MetricLine> eval_metric_lines(const EvalResult& r, const std::string& dataset) {
  return metric_lines(r.step, dataset,
                      {{"perplexity", r.perplexity}, {"loss", r.loss}, {"accuracy", r.accuracy},
                       {"tokens", double(r.tokens)}, {"tokens_per_s", r.tokens_per_s},
                       {"samples_per_s", r.samples_per_s}, {"mem_mb", r.mem_mb}});
}

std::string format_eval(const EvalResult& r, const std::string& dataset) {
  char text[512];
  std::snprintf(text, sizeof text,
                "eval at step %lld on %s (%lld batches, %lld targets):\n"
                "  loss %.4f   perplexity %.3f   token accuracy %.2f%%\n"
                "  %.0f tokens/s, %.1f samples/s, %.2f s, peak RSS %.0f MiB",
                (long long)r.step, dataset.c_str(), (long long)r.batches, (long long)r.tokens, r.loss, r.perplexity,
                100 * r.accuracy, r.tokens_per_s, r.samples_per_s, r.seconds, r.mem_mb);
  return text;
}

}  // namespace trident::train
