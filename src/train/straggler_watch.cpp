// Per-rank section times gathered and scored (straggler_watch.hpp).
#include "trident/train/straggler_watch.hpp"

#include <algorithm>
#include <cstdio>

namespace trident::train {

namespace {

constexpr int kFields = 5;  // data, compute, optimizer, checkpoint (work) and individual score
const char* const kSections[] = {"data", "compute", "optimizer", "checkpoint"};

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

}  // namespace

std::string StragglerReport::describe() const {
  char line[256];
  std::snprintf(line, sizeof line, "rank %d on %s: relative score %.2f, individual %.2f; %s %.4g s/step against the median %.4g s",
                rank, host.c_str(), relative, individual, section.c_str(), section_s, median_s);
  return line;
}

StragglerWatch::StragglerWatch(dist::Topology& topology, double threshold)
    : topology_(topology), threshold_(threshold), hosts_(topology.host_names()) {}

void StragglerWatch::add(const StepSections& s) {
  sum_.data += s.data, sum_.compute += s.compute, sum_.comm += s.comm;
  sum_.optimizer += s.optimizer, sum_.checkpoint += s.checkpoint;
  ++steps_;
}

StragglerCheck StragglerWatch::check(int64_t step) {
  const double n = double(std::max<int64_t>(steps_, 1));
  const double work = sum_.work() / n;
  const double individual = work > 0 && best_work_ > 0 ? std::min(1.0, best_work_ / work) : 1.0;
  best_work_ = best_work_ > 0 ? std::min(best_work_, work) : work;
  const double mine[kFields] = {sum_.data / n, sum_.compute / n, sum_.optimizer / n, sum_.checkpoint / n, individual};
  const int ranks = topology_.world_size();
  std::vector<double> all(size_t(ranks) * kFields);
  topology_.world().all_gather_bytes(mine, all.data(), sizeof mine);
  sum_ = {};
  steps_ = 0;

  auto at = [&](int r, int f) { return all[size_t(r) * kFields + size_t(f)]; };
  std::vector<double> works(static_cast<size_t>(ranks), 0.0);
  for (int r = 0; r < ranks; ++r) works[size_t(r)] = at(r, 0) + at(r, 1) + at(r, 2) + at(r, 3);
  // The median rank is the typical one; of two ranks, the faster is.
  const double typical = ranks >= 3 ? median(works) : *std::min_element(works.begin(), works.end());
  std::vector<double> medians(4);
  for (int f = 0; f < 4; ++f) {
    std::vector<double> column;
    for (int r = 0; r < ranks; ++r) column.push_back(at(r, f));
    medians[size_t(f)] = median(column);
  }
  StragglerCheck c;
  c.step = step;
  for (int r = 0; r < ranks; ++r) {
    const double relative = works[size_t(r)] > 0 ? std::min(1.0, typical / works[size_t(r)]) : 1.0;
    if (relative < c.slowest_relative) c.slowest_relative = relative, c.slowest_rank = r;
    if (at(r, 4) < c.lowest_individual) c.lowest_individual = at(r, 4), c.lowest_individual_rank = r;
    if (relative >= threshold_) continue;
    int worst = 1;  // the section furthest above the median rank's
    for (int f = 0; f < 4; ++f)
      if (at(r, f) - medians[size_t(f)] > at(r, worst) - medians[size_t(worst)]) worst = f;
    c.reports.push_back({.rank = r, .host = hosts_[size_t(r)], .relative = relative, .individual = at(r, 4),
                         .section = kSections[worst], .section_s = at(r, worst), .median_s = medians[size_t(worst)]});
  }
  std::sort(c.reports.begin(), c.reports.end(), [](auto& a, auto& b) { return a.relative < b.relative; });
  return c;
}

}  // namespace trident::train
