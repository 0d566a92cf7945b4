// Sampling privacy units per step, packing them into rows, dealing rows to micro-batches.
#include "trident/train/privacy/private_batches.hpp"

#include <algorithm>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::train {

PrivateBatches::PrivateBatches(const DataSource& source, const RunConfig& cfg, const dist::Topology& topology,
                               bool fewer_micro_batches)
    : source_(source),
      unit_(cfg.privacy.unit),
      sampling_(cfg.privacy.sampling),
      seed_(cfg.train.seed),
      T_(cfg.model.seq_len),
      G_(cfg.train.global_batch),
      b_(cfg.train.micro_batch),
      dp_(topology.layout().dp),
      dp_rank_(topology.dp_rank()),
      length_multiple_(run_sampler_options(cfg, topology).length_multiple),
      cut_rows_(topology.layout().pp == 1),
      fewer_(fewer_micro_batches) {
  const data::DocumentStream& docs = source.documents();
  units_ = unit_ == PrivacyUnit::kRow ? source.num_rows() : int64_t(docs.num_documents());
  TRIDENT_CONFIG_CHECK(units_ > 0, "privacy.enabled: data.train holds no ", privacy_unit_name(unit_));
  expected_ = G_;
  sample_rate_ = std::min(1.0, double(expected_) / double(units_));
  if (unit_ == PrivacyUnit::kDocument)
    for (uint64_t d = 0; d < docs.num_documents(); ++d) long_documents_ += docs.document(d).size() > uint64_t(T_ + 1);
  scratch_.resize(size_t(3 * T_));
}

void PrivateBatches::compute_permutation(int64_t epoch) {
  permutation_.resize(size_t(units_));
  std::iota(permutation_.begin(), permutation_.end(), uint32_t{0});
  const uint64_t key = rng_key(seed_, "privacy.shuffle");
  for (int64_t i = units_ - 1; i > 0; --i) {  // Fisher-Yates keyed by (seed, epoch)
    const PhiloxBlock r = rng_block(key, uint64_t(i), uint64_t(epoch));
    const uint64_t bits = (uint64_t(r[1]) << 32) | r[0];
    std::swap(permutation_[size_t(i)], permutation_[bits % uint64_t(i + 1)]);
  }
  cached_epoch_ = epoch;
}

std::vector<int64_t> PrivateBatches::sample(int64_t step) {
  std::vector<int64_t> chosen;
  if (sampling_ == PrivacySampling::kPoisson) {
    const uint64_t key = rng_key(seed_, "privacy.poisson");
    for (int64_t u = 0; u < units_; ++u)
      if (rng_uniform(key, uint64_t(u), uint64_t(step)) < sample_rate_) chosen.push_back(u);
    return chosen;
  }
  const int64_t take = std::min(expected_, units_);
  for (int64_t j = 0; j < take; ++j) {
    const int64_t g = step * take + j, epoch = g / units_;
    if (epoch != cached_epoch_) compute_permutation(epoch);
    chosen.push_back(permutation_[size_t(g % units_)]);
  }
  return chosen;
}

int64_t PrivateBatches::piece_targets(const Piece& p) const {
  if (unit_ == PrivacyUnit::kRow) {
    return source_.sampler().fill_row(p.source, T_, scratch_.data(), scratch_.data() + T_, scratch_.data() + 2 * T_);
  }
  const data::DocumentSpan doc = source_.documents().document(uint64_t(p.source));
  const int64_t n = int64_t(doc.size()), first = std::max<int64_t>(0, int64_t(doc.loss_start) - 1);
  return std::max<int64_t>(0, std::min(p.length, n - 1) - first);
}

int64_t PrivateBatches::write_piece(const Piece& p, int32_t* tokens, int32_t* targets, int32_t* positions,
                                    int64_t L) const {
  if (unit_ == PrivacyUnit::kRow) return source_.sampler().fill_row(p.source, L, tokens, targets, positions);
  const data::DocumentStream& docs = source_.documents();
  const data::DocumentSpan doc = docs.document(uint64_t(p.source));
  const int64_t n = int64_t(doc.size());
  docs.copy_tokens(doc.begin, uint64_t(p.length), tokens + p.at);
  // Target i is token i + 1 of the document: none past its end or before its loss start.
  const int64_t with_next = std::min(p.length, n - 1);
  docs.copy_tokens(doc.begin + 1, uint64_t(with_next), targets + p.at);
  int64_t valid = 0;
  for (int64_t i = 0; i < p.length; ++i) {
    positions[p.at + i] = int32_t(i);
    if (i >= with_next || i + 1 < int64_t(doc.loss_start)) targets[p.at + i] = -1;
    valid += targets[p.at + i] >= 0;
  }
  return valid;
}

const PrivateStepBatches& PrivateBatches::load(int64_t step) {
  PrivateStepBatches& s = step_;
  const std::vector<int64_t> chosen = sample(step);
  s.units = int64_t(chosen.size());
  // Rows of pieces, in sample order.
  std::vector<std::vector<Piece>> rows;
  for (int64_t k = 0; k < s.units; ++k) {
    const int64_t source = chosen[size_t(k)];
    const int64_t length = unit_ == PrivacyUnit::kRow
                               ? source_.sampler().row_length(source)
                               : std::min<int64_t>(T_, int64_t(source_.documents().document(uint64_t(source)).size()));
    const int64_t used = rows.empty() ? T_ : rows.back().back().at + rows.back().back().length;
    if (unit_ == PrivacyUnit::kRow || used + length > T_) rows.emplace_back();
    const int64_t at = rows.back().empty() ? 0 : rows.back().back().at + rows.back().back().length;
    rows.back().push_back({.unit_index = k, .source = source, .at = at, .length = length});
  }
  s.rows = int64_t(rows.size());
  s.unit_targets.assign(size_t(s.units), 0);
  for (const auto& row : rows)
    for (const Piece& p : row) s.unit_targets[size_t(p.unit_index)] = piece_targets(p);

  // Micro-batches per replica: as many as the rows need, in rounds of at most the schedule's m
  // (all m in every round where the schedule takes no fewer).
  const int64_t m = G_ / (dp_ * b_), needed = std::max<int64_t>(1, (s.rows + b_ * dp_ - 1) / (b_ * dp_));
  const int64_t rounds = (needed + m - 1) / m;
  auto round_size = [&](int64_t r) { return fewer_ ? std::min(m, needed - r * m) : m; };
  // A micro-batch's length: its longest row rounded up (pp = 1), else seq_len.
  auto length_of = [&](int64_t first) {
    if (!cut_rows_) return T_;
    int64_t longest = 1;
    for (int64_t i = first; i < first + b_ && i < s.rows; ++i)
      longest = std::max(longest, rows[size_t(i)].back().at + rows[size_t(i)].back().length);
    return std::min(T_, (longest + length_multiple_ - 1) / length_multiple_ * length_multiple_);
  };
  s.rounds.resize(size_t(rounds));
  s.stats = {};
  int64_t round_start = 0;  // the round's first row of the step
  for (int64_t r = 0; r < rounds; ++r) {
    std::vector<data::Batch>& round = s.rounds[size_t(r)];
    const int64_t size = round_size(r);
    round.resize(size_t(size));
    for (int64_t k = 0; k < size; ++k) {
      const int64_t first = round_start + (dp_rank_ * size + k) * b_;  // the micro-batch's first row of the step
      data::Batch& batch = round[size_t(k)];
      if (!batch.tokens_buffer.defined()) {
        const Shape shape{b_, T_};
        batch.tokens_buffer = Tensor::zeros(shape, DType::kI32);
        batch.targets_buffer = Tensor::zeros(shape, DType::kI32);
        batch.positions_buffer = Tensor::zeros(shape, DType::kI32);
      }
      const int64_t L = length_of(first);
      const Shape shape{b_, L};
      batch.tokens = batch.tokens_buffer.flat().narrow(0, b_ * L).view(shape);
      batch.targets = batch.targets_buffer.flat().narrow(0, b_ * L).view(shape);
      batch.positions = batch.positions_buffer.flat().narrow(0, b_ * L).view(shape);
      batch.first_sequence = first;
      batch.units.clear();
      batch.valid_tokens = batch.padding_tokens = 0;
      for (int64_t i = 0; i < b_; ++i) {
        int32_t* tokens = batch.tokens.data<int32_t>() + i * L;
        int32_t* targets = batch.targets.data<int32_t>() + i * L;
        int32_t* positions = batch.positions.data<int32_t>() + i * L;
        std::fill(tokens, tokens + L, 0);
        std::fill(targets, targets + L, -1);
        for (int64_t t = 0; t < L; ++t) positions[t] = int32_t(t);
        int64_t used = 0;
        if (first + i < s.rows)
          for (const Piece& p : rows[size_t(first + i)]) {
            batch.valid_tokens += write_piece(p, tokens, targets, positions, L);
            batch.units.push_back({.unit = p.unit_index, .begin = i * L + p.at, .count = p.length});
            used = p.at + p.length;
          }
        // Padding after the last unit: a document of its own (positions from 0), no targets.
        if (unit_ == PrivacyUnit::kDocument)
          for (int64_t t = used; t < L; ++t) positions[t] = int32_t(t - used);
        batch.padding_tokens += L - used;
      }
    }
    for (int64_t first = round_start; first < round_start + size * b_ * dp_; first += b_)
      s.stats.computed_tokens += b_ * length_of(first);
    round_start += size * b_ * dp_;
  }
  // The whole step's statistics (every rank's rows): what the metrics report.
  for (const auto& row : rows) {
    s.stats.padding_tokens -= row.back().at + row.back().length;
    for (const Piece& p : row) s.stats.valid_targets += s.unit_targets[size_t(p.unit_index)];
  }
  s.stats.padding_tokens += s.stats.computed_tokens;
  return s;
}

const char* privacy_unit_name(PrivacyUnit u) { return u == PrivacyUnit::kRow ? "row" : "document"; }
const char* privacy_sampling_name(PrivacySampling s) { return s == PrivacySampling::kShuffle ? "shuffle" : "poisson"; }

}  // namespace trident::train
