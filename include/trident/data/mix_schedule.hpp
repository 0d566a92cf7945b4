// Which source each global row of a mixture comes from, exactly and as a pure function of the
// row (docs/design.md section 5).
//
// Shares: the weights become integers q_i summing to a period P (exact for decimal weights
// such as 0.6/0.3/0.1 -> 6/3/1, P = 10; otherwise the largest-remainder apportionment of
// P = 2^20). Within one period the rows are ordered by earliest deadline first: the k-th row
// of source i may take any position p (1-based) with (k-1)P/q_i < p <= ceil(kP/q_i), which is
// exactly |c_i(n) - n q_i/P| < 1 for every prefix of n rows; such an order exists for any
// weights (Tijdeman's chairman assignment theorem) and EDF, optimal for unit jobs with release
// times and deadlines, finds it. After P rows every source has had exactly q_i, so the order
// repeats with period P: row r is period r / P, position r % P, an O(1) table lookup (6 bytes
// a position, built once in O(P log m); no index over the run's rows).
//
// Segments: a mixture with data.mix_stages, or one changed on resume (data.mix_change =
// continue), is a list of segments, each a table from its first global row on; a segment's
// base is each source's rows consumed before it, so every source goes on from its cursor:
// nothing repeated, nothing skipped.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

namespace trident::data {

inline constexpr uint32_t kMaxMixPeriod = 1u << 20;

// Integer shares of the weights (>= 0, some > 0): exact where every weight is a decimal of at
// most 9 places and their reduced sum is <= kMaxMixPeriod, else apportioned over kMaxMixPeriod
// by largest remainder (each positive weight keeps at least 1).
std::vector<uint32_t> integer_shares(const std::vector<double>& weights);

// One period of the earliest-deadline-first order of shares q (sum P <= kMaxMixPeriod).
class MixTable {
 public:
  explicit MixTable(std::vector<uint32_t> shares);

  uint32_t period() const { return period_; }
  const std::vector<uint32_t>& shares() const { return shares_; }
  uint32_t source_at(uint32_t position) const { return source_[position]; }
  // The source's rows before this position within the period.
  uint32_t ordinal_at(uint32_t position) const { return ordinal_[position]; }
  // Rows of each source among the first n rows (n >= 0) of the repeated order.
  std::vector<int64_t> counts(int64_t n) const;

 private:
  std::vector<uint32_t> shares_;
  uint32_t period_ = 0;
  std::vector<uint16_t> source_;
  std::vector<uint32_t> ordinal_;
};

// A weight vector that applies from a global row on (data.train's at row 0, each stage's at
// step * global_batch).
struct MixPhase {
  int64_t first_row = 0;
  std::vector<double> weights;
};

class MixSchedule {
 public:
  // phases: increasing first_row, the first at row 0. origin_row: where the schedule starts
  // (0; a resume under data.mix_change = continue: its step's first row), with each source's
  // rows consumed before it (origin_base, one per source; empty: zeros). The phase in force at
  // origin_row starts there; later phases start at their own rows.
  MixSchedule(size_t sources, const std::vector<MixPhase>& phases, int64_t origin_row = 0,
              std::vector<int64_t> origin_base = {});

  struct Located {
    uint32_t source;
    int64_t ordinal;  // the source's rows before this one, over the whole run (its cursor)
  };
  // Global row `row` >= origin_row.
  Located locate(int64_t row) const;
  // Each source's rows before global row `row` (>= origin_row): its cursor there.
  std::vector<int64_t> cursor(int64_t row) const;
  size_t sources() const { return sources_; }
  int64_t origin_row() const { return segments_.front().first_row; }
  // The integer shares in force at `row` and their period (the resolved weights).
  const MixTable& table_at(int64_t row) const { return *segments_[segment_of(row)].table; }

 private:
  struct Segment {
    int64_t first_row;
    std::shared_ptr<const MixTable> table;
    std::vector<int64_t> base;
  };
  size_t segment_of(int64_t row) const;

  size_t sources_ = 0;
  std::vector<Segment> segments_;
};

}  // namespace trident::data
