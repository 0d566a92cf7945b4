// OOD detection: documents of both sets scored by the model, then ranking metrics.
#include "trident/core/file_policy.hpp"
#include "trident/train/eval/ood.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/core/timer.hpp"
#include "trident/data/mix_spec.hpp"
#include "trident/data/shard_set.hpp"
#include "trident/train/data_source.hpp"

namespace trident::train {

DetectionMetrics detection_metrics(const std::vector<double>& in, const std::vector<double>& ood) {
  TRIDENT_CHECK(!in.empty() && !ood.empty(), "detection metrics need samples of both kinds");
  // (score, is_ood) sorted by descending score; thresholds at each distinct score.
  std::vector<std::pair<double, bool>> all;
  for (double s : in) all.push_back({s, false});
  for (double s : ood) all.push_back({s, true});
  std::sort(all.begin(), all.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  const double P = double(ood.size()), N = double(in.size());
  DetectionMetrics m;
  double tp = 0, fp = 0, prev_tpr = 0, prev_fpr = 0, auc = 0;
  bool fpr95_set = false;
  for (size_t i = 0; i < all.size();) {
    size_t j = i;
    while (j < all.size() && all[j].first == all[i].first) (all[j].second ? tp : fp) += 1, ++j;
    const double tpr = tp / P, fpr = fp / N;
    auc += (fpr - prev_fpr) * (tpr + prev_tpr) / 2;  // trapezoid: ties count as half
    m.aupr += (tpr - prev_tpr) * (tp / (tp + fp));
    if (!fpr95_set && tpr >= 0.95) m.fpr95 = fpr, fpr95_set = true;
    prev_tpr = tpr, prev_fpr = fpr;
    i = j;
  }
  m.auroc = auc;
  return m;
}

OodEvaluator::OodEvaluator(const RunConfig& cfg, dist::Topology& topology, PipelineExecutor& pipeline)
    : cfg_(cfg), scorer_(cfg, topology, pipeline) {
  TRIDENT_CONFIG_CHECK(!cfg.data.valid.empty(), "eval.ood needs data.valid: the in-distribution documents it is "
                       "compared with");
  in_ = requests("data.valid", data::first_prefix(cfg.data.valid));  // the first of several
  ood_ = requests("eval.ood", cfg.eval.ood);
}

OodEvaluator::~OodEvaluator() = default;

std::vector<LoglikelihoodRequest> OodEvaluator::requests(const std::string& key, const std::string& prefix) const {
  const std::unique_ptr<data::ShardSet> shards = open_run_shards(cfg_, key.c_str(), prefix);
  const uint64_t piece = uint64_t(cfg_.model.seq_len) + 1;
  // Every document cut into pieces of seq_len + 1 tokens (a last piece of fewer than two
  // dropped); first[d] = pieces before document d.
  std::vector<uint64_t> first{0};
  for (uint64_t d = 0; d < shards->num_documents(); ++d) {
    const uint64_t n = shards->document(d).size();
    first.push_back(first.back() + n / piece + (n % piece >= 2 ? 1 : 0));
  }
  const uint64_t total = first.back();
  TRIDENT_CONFIG_CHECK(total >= 2, key, " = ", prefix, ": fewer than two pieces of two tokens or more");
  const uint64_t take = std::min<uint64_t>(total, uint64_t(cfg_.eval.ood_samples));
  std::vector<LoglikelihoodRequest> out;
  for (uint64_t i = 0; i < take; ++i) {
    const uint64_t p = i * total / take;  // spread evenly over the set
    const uint64_t d = uint64_t(std::upper_bound(first.begin(), first.end(), p) - first.begin()) - 1;
    const data::DocumentSpan span = shards->document(d);
    const uint64_t begin = span.begin + (p - first[d]) * piece, n = std::min(piece, span.end - begin);
    std::vector<int32_t> tokens(static_cast<size_t>(n));
    shards->copy_tokens(begin, n, tokens.data());
    out.push_back({{tokens.front()}, std::vector<int32_t>(tokens.begin() + 1, tokens.end())});
  }
  return out;
}

OodResult OodEvaluator::run(int64_t step) {
  Stopwatch watch;
  std::vector<LoglikelihoodRequest> all(in_);
  all.insert(all.end(), ood_.begin(), ood_.end());
  const std::vector<LoglikelihoodResult> scored = scorer_.score(all);
  OodResult r;
  r.step = step;
  r.in_dataset = data::first_prefix(cfg_.data.valid);
  r.ood_dataset = cfg_.eval.ood;
  for (size_t i = 0; i < scored.size(); ++i) {
    const double tokens = double(std::max<int64_t>(scored[i].tokens, 1));
    const double nll = -scored[i].logprob / tokens, msp = 1.0 - scored[i].max_prob_sum / tokens;
    (i < in_.size() ? r.nll_in : r.nll_ood).push_back(nll);
    (i < in_.size() ? r.msp_in : r.msp_ood).push_back(msp);
  }
  r.nll = detection_metrics(r.nll_in, r.nll_ood);
  r.msp = detection_metrics(r.msp_in, r.msp_ood);
  r.seconds = watch.seconds();
  return r;
}

std::vector<MetricLine> ood_metric_lines(const OodResult& r) {
  std::vector<MetricLine> out;
  for (const auto& [name, m] : {std::pair<const char*, DetectionMetrics>{"nll", r.nll}, {"msp", r.msp}}) {
    auto lines = metric_lines(r.step, r.ood_dataset, {{"ood_auroc", m.auroc}, {"ood_aupr", m.aupr}, {"ood_fpr95", m.fpr95}},
                              "", "", name);
    out.insert(out.end(), lines.begin(), lines.end());
  }
  return out;
}

void write_ood_scores(const std::string& run_dir, const OodResult& r) {
  auto array = [](const std::vector<double>& v) {
    Json a = Json::array();
    for (double x : v) a.push_back(Json(x));
    return a;
  };
  auto metrics = [](const DetectionMetrics& m) {
    Json o = Json::object();
    o.set("auroc", Json(m.auroc));
    o.set("aupr", Json(m.aupr));
    o.set("fpr95", Json(m.fpr95));
    return o;
  };
  Json scores = Json::object(), all_metrics = Json::object();
  for (const auto& [name, in, ood, m] : {std::tuple{"nll", &r.nll_in, &r.nll_ood, &r.nll},
                                         std::tuple{"msp", &r.msp_in, &r.msp_ood, &r.msp}}) {
    Json pair = Json::object();
    pair.set("in", array(*in));
    pair.set("ood", array(*ood));
    scores.set(name, std::move(pair));
    all_metrics.set(name, metrics(*m));
  }
  Json root = Json::object();
  root.set("step", Json(r.step));
  root.set("in_dataset", Json(r.in_dataset));
  root.set("ood_dataset", Json(r.ood_dataset));
  root.set("scores", std::move(scores));
  root.set("metrics", std::move(all_metrics));
  const std::filesystem::path dir = std::filesystem::path(run_dir) / "ood";
  make_directories(dir);
  char name[32];
  std::snprintf(name, sizeof name, "step_%08lld.json", (long long)r.step);
  // Written aside and renamed: a reader never sees half a file, an earlier one is replaced whole.
  const std::filesystem::path path = dir / name, tmp = dir / (std::string(name) + ".tmp");
  {
    std::ofstream out = create_file(tmp.string(), std::ios::binary | std::ios::trunc);
    out << root.dump() << "\n";
    out.flush();
    TRIDENT_CHECK(out.good(), "cannot write ", tmp.string());
  }
  std::filesystem::rename(tmp, path);
}

std::string format_ood(const OodResult& r) {
  char text[640];
  std::snprintf(text, sizeof text,
                "OOD detection at step %lld: %s (%zu samples) vs %s (%zu samples as OOD)\n"
                "  mean token NLL:            AUROC %.4f   AUPR %.4f   FPR at 95%% TPR %.4f\n"
                "  max softmax probability:   AUROC %.4f   AUPR %.4f   FPR at 95%% TPR %.4f\n"
                "  mean NLL in %.3f, OOD %.3f; %.2f s",
                (long long)r.step, r.in_dataset.c_str(), r.nll_in.size(), r.ood_dataset.c_str(), r.nll_ood.size(),
                r.nll.auroc, r.nll.aupr, r.nll.fpr95, r.msp.auroc, r.msp.aupr, r.msp.fpr95,
                [&] { double s = 0; for (double x : r.nll_in) s += x; return s / double(r.nll_in.size()); }(),
                [&] { double s = 0; for (double x : r.nll_ood) s += x; return s / double(r.nll_ood.size()); }(),
                r.seconds);
  return text;
}

}  // namespace trident::train
