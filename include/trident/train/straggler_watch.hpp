// StragglerWatch: the slow rank named. Each rank sums its steps' sections (TrainingStep's
// StepSections: data, compute, optimizer, checkpoint are its own work; comm is waiting for the
// others, which a straggler makes everyone else do). Every log.straggler_interval steps the sums
// are gathered (one all-gather of 5 doubles a rank) and scored after NVIDIA's resiliency
// extension: relative score = the median rank's work / this rank's (capped at 1; the extension
// divides the fastest rank's, but one lucky rank then makes stragglers of typical ones: on
// shared cores ranks 10% above the median scored 0.7); individual score = this rank's best
// interval / its current one. A rank whose relative score is below log.straggler_threshold is
// reported with its host, its section furthest above the median rank's, and both scores.
// Every rank computes the same reports from the same gathered figures.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "trident/dist/topology.hpp"
#include "trident/train/training_step.hpp"

namespace trident::train {

struct StragglerReport {
  int rank = 0;
  std::string host;
  double relative = 1, individual = 1;  // scores
  std::string section;                  // its section furthest above the median
  double section_s = 0, median_s = 0;   // that section's seconds per step: this rank's, the median rank's
  std::string describe() const;
};

struct StragglerCheck {
  int64_t step = 0;
  std::vector<StragglerReport> reports;  // ranks below the threshold, lowest relative score first
  int slowest_rank = 0;                  // the lowest relative score (reported or not)
  double slowest_relative = 1, lowest_individual = 1;
  int lowest_individual_rank = 0;
};

class StragglerWatch {
 public:
  // Collective over the world (host names).
  StragglerWatch(dist::Topology& topology, double threshold);
  void add(const StepSections& s);
  // Collective over the world: scores the sums since the last check, then starts new ones.
  StragglerCheck check(int64_t step);

 private:
  dist::Topology& topology_;
  double threshold_;
  std::vector<std::string> hosts_;
  StepSections sum_;
  int64_t steps_ = 0;
  double best_work_ = 0;  // this rank's best work per step over earlier intervals
};

}  // namespace trident::train
