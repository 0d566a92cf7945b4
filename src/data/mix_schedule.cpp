// Integer shares, the earliest-deadline-first period and its segments (mix_schedule.hpp).
#include "trident/data/mix_schedule.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <queue>
#include <tuple>

#include "trident/core/error.hpp"

namespace trident::data {
namespace {

// Exact integers for decimal weights: the fewest places d (<= 9) that make every weight whole.
bool exact_shares(const std::vector<double>& weights, std::vector<uint32_t>* out) {
  int places = 0;
  for (const double w : weights) {
    int d = 0;
    for (; d <= 9; ++d) {
      const double scaled = w * std::pow(10.0, d);
      if (std::fabs(scaled - std::round(scaled)) <= 1e-9 * std::max(1.0, scaled)) break;
    }
    if (d > 9) return false;
    places = std::max(places, d);
  }
  std::vector<uint64_t> q;
  uint64_t g = 0;
  for (const double w : weights) {
    const double scaled = std::round(w * std::pow(10.0, places));
    if (scaled > 0x1p52) return false;
    q.push_back(static_cast<uint64_t>(scaled));
    g = std::gcd(g, q.back());
  }
  uint64_t sum = 0;
  for (uint64_t& v : q) sum += (v /= g);
  if (sum > kMaxMixPeriod) return false;
  out->assign(q.begin(), q.end());
  return true;
}

}  // namespace

std::vector<uint32_t> integer_shares(const std::vector<double>& weights) {
  TRIDENT_CHECK(!weights.empty(), "no weights");
  double total = 0;
  for (const double w : weights) {
    TRIDENT_CHECK(std::isfinite(w) && w >= 0, "weight ", w);
    total += w;
  }
  TRIDENT_CHECK(total > 0, "all weights are zero");
  std::vector<uint32_t> q;
  if (exact_shares(weights, &q)) return q;
  // Largest remainder over P; each positive weight keeps at least one row per period.
  const size_t m = weights.size();
  std::vector<double> remainder(m);
  q.assign(m, 0);
  uint64_t given = 0;
  for (size_t i = 0; i < m; ++i) {
    const double exact = weights[i] / total * kMaxMixPeriod;
    q[i] = static_cast<uint32_t>(std::floor(exact));
    if (weights[i] > 0 && q[i] == 0) q[i] = 1;
    remainder[i] = exact - std::floor(exact);
    given += q[i];
  }
  std::vector<size_t> order(m);
  std::iota(order.begin(), order.end(), size_t{0});
  std::stable_sort(order.begin(), order.end(), [&](size_t a, size_t b) { return remainder[a] > remainder[b]; });
  for (size_t k = 0; given < kMaxMixPeriod; k = (k + 1) % m)
    if (weights[order[k]] > 0) ++q[order[k]], ++given;
  // Too many minimum shares: take the excess from the largest.
  while (given > kMaxMixPeriod) {
    const size_t big = static_cast<size_t>(std::max_element(q.begin(), q.end()) - q.begin());
    --q[big], --given;
  }
  return q;
}

MixTable::MixTable(std::vector<uint32_t> shares) : shares_(std::move(shares)) {
  uint64_t sum = 0;
  for (const uint32_t q : shares_) sum += q;
  TRIDENT_CHECK(sum > 0 && sum <= kMaxMixPeriod && shares_.size() <= 65536, "mix period ", sum, " of ",
                shares_.size(), " sources");
  period_ = static_cast<uint32_t>(sum);
  source_.resize(period_);
  ordinal_.resize(period_);
  const uint64_t P = period_;
  // The k-th row (1-based) of source i: released at position (k-1)P/q + 1, due by ceil(kP/q).
  auto release = [&](uint32_t i, uint64_t k) { return (k - 1) * P / shares_[i] + 1; };
  auto deadline = [&](uint32_t i, uint64_t k) { return (k * P + shares_[i] - 1) / shares_[i]; };
  using Item = std::pair<uint64_t, uint32_t>;  // (time, source): ties go to the lower source
  std::priority_queue<Item, std::vector<Item>, std::greater<Item>> waiting, ready;
  std::vector<uint64_t> next(shares_.size(), 1);
  for (uint32_t i = 0; i < shares_.size(); ++i)
    if (shares_[i] > 0) waiting.push({release(i, 1), i});
  for (uint64_t p = 1; p <= P; ++p) {
    while (!waiting.empty() && waiting.top().first <= p) {
      const uint32_t i = waiting.top().second;
      waiting.pop();
      ready.push({deadline(i, next[i]), i});
    }
    TRIDENT_CHECK(!ready.empty() && ready.top().first >= p, "mix order: no row due in time at position ", p);
    const uint32_t i = ready.top().second;
    ready.pop();
    source_[p - 1] = static_cast<uint16_t>(i);
    ordinal_[p - 1] = static_cast<uint32_t>(next[i] - 1);
    if (++next[i] <= shares_[i]) waiting.push({release(i, next[i]), i});
  }
}

std::vector<int64_t> MixTable::counts(int64_t n) const {
  TRIDENT_CHECK(n >= 0, "rows ", n);
  std::vector<int64_t> out(shares_.size());
  const int64_t periods = n / period_;
  for (size_t i = 0; i < shares_.size(); ++i) out[i] = periods * shares_[i];
  const int64_t rest = n % period_;
  for (int64_t p = 0; p < rest; ++p) ++out[source_[p]];
  return out;
}

MixSchedule::MixSchedule(size_t sources, const std::vector<MixPhase>& phases, int64_t origin_row,
                         std::vector<int64_t> origin_base)
    : sources_(sources) {
  TRIDENT_CHECK(!phases.empty() && phases[0].first_row == 0 && origin_row >= 0, "mix phases");
  if (origin_base.empty()) origin_base.assign(sources, 0);
  TRIDENT_CHECK(origin_base.size() == sources, "origin base of ", origin_base.size(), " sources, not ", sources);
  size_t first = 0;  // the phase in force at origin_row
  while (first + 1 < phases.size() && phases[first + 1].first_row <= origin_row) ++first;
  for (size_t k = first; k < phases.size(); ++k) {
    TRIDENT_CHECK(phases[k].weights.size() == sources, "phase of ", phases[k].weights.size(), " weights");
    auto table = std::make_shared<const MixTable>(integer_shares(phases[k].weights));
    if (k == first) {
      segments_.push_back({origin_row, table, origin_base});
    } else {
      TRIDENT_CHECK(phases[k].first_row > phases[k - 1].first_row, "mix phases out of order");
      segments_.push_back({phases[k].first_row, table, cursor(phases[k].first_row)});
    }
  }
}

size_t MixSchedule::segment_of(int64_t row) const {
  TRIDENT_CHECK(row >= segments_.front().first_row, "global row ", row, " precedes the mix's origin at row ",
                segments_.front().first_row);
  size_t s = segments_.size() - 1;
  while (segments_[s].first_row > row) --s;
  return s;
}

MixSchedule::Located MixSchedule::locate(int64_t row) const {
  const Segment& seg = segments_[segment_of(row)];
  const int64_t n = row - seg.first_row;
  const MixTable& t = *seg.table;
  const uint32_t position = static_cast<uint32_t>(n % t.period());
  const uint32_t source = t.source_at(position);
  return {source, seg.base[source] + (n / t.period()) * t.shares()[source] + t.ordinal_at(position)};
}

std::vector<int64_t> MixSchedule::cursor(int64_t row) const {
  const Segment& seg = segments_[segment_of(row)];
  std::vector<int64_t> out = seg.table->counts(row - seg.first_row);
  for (size_t i = 0; i < sources_; ++i) out[i] += seg.base[i];
  return out;
}

}  // namespace trident::data
