// BatchSampler: the rows of one source or a mixture, global row by global row, sliced by dp
// rank. Everything is a function of (seed, mix, step, j), which makes the order dp-invariant.
#include "trident/data/sampler.hpp"

#include <algorithm>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::data {

namespace {

SourceRowsOptions rows_options(const SamplerOptions& o, uint64_t epoch_key, bool random_access = false) {
  return {.seq_len = o.seq_len, .global_batch = o.global_batch, .packing = o.packing, .bucket = o.bucket,
          .truncate = o.truncate, .epoch_key = epoch_key, .random_access = random_access};
}

MixSchedule single_source_schedule() { return MixSchedule(1, {MixPhase{0, {1.0}}}); }

}  // namespace

BatchSampler::BatchSampler(const ShardSet& set, const SamplerOptions& options)
    : options_(options), names_{"train"}, schedule_(single_source_schedule()) {
  sources_.emplace_back(set, rows_options(options, rng_key(options.seed, "data.epoch")));
  const int64_t W = sources_[0].num_rows(), T = options.seq_len;
  check_options();
  const DocumentStream& docs = sources_[0].documents();
  TRIDENT_CONFIG_CHECK(W >= (options.whole_batch ? options.global_batch : 1), set.prefix(), ": ", docs.num_tokens(),
                       " tokens in ", docs.num_documents(), " documents make only ", W, " rows of model.seq_len=", T,
                       options.packing ? " (+1 target)" : " (one document per row: data.packing = false)",
                       ", fewer than train.global_batch=", options.global_batch,
                       "; use more data or a smaller global batch");
}

BatchSampler::BatchSampler(const std::vector<SamplerSource>& sources, const SamplerOptions& options,
                           MixSchedule schedule)
    : options_(options), schedule_(std::move(schedule)) {
  TRIDENT_CHECK(!sources.empty() && schedule_.sources() == sources.size(), sources.size(), " sources, a schedule of ",
                schedule_.sources());
  for (const SamplerSource& s : sources) {
    // One source keeps the key of old, so a lone prefix's data order is unchanged.
    const uint64_t key = sources.size() == 1 ? rng_key(options.seed, "data.epoch")
                                             : rng_key(options.seed, "data.epoch/" + s.name);
    // A mixture's sources: Feistel orders, no per-epoch tables (source_rows.hpp).
    sources_.emplace_back(*s.set, rows_options(options, key, sources.size() > 1));
    names_.push_back(s.name);
    const DocumentStream& docs = sources_.back().documents();
    TRIDENT_CONFIG_CHECK(sources_.back().num_rows() > 0, "data.train: source ", s.name, " (", s.set->prefix(),
                         "): ", docs.num_tokens(), " tokens in ", docs.num_documents(),
                         " documents make no row of model.seq_len=", options.seq_len);
  }
  check_options();
}

void BatchSampler::check_options() {
  const int64_t T = options_.seq_len, G = options_.global_batch, b = options_.micro_batch;
  TRIDENT_CONFIG_CHECK(T > 0, "model.seq_len must be positive (got ", T, ")");
  TRIDENT_CONFIG_CHECK(G > 0 && b > 0, "train.global_batch and train.micro_batch must be positive (got ",
                       G, " and ", b, ")");
  TRIDENT_CHECK(options_.dp_size > 0 && options_.dp_rank >= 0 && options_.dp_rank < options_.dp_size,
                "dp_rank=", options_.dp_rank, " dp_size=", options_.dp_size);
  TRIDENT_CONFIG_CHECK(!options_.bucket || !options_.packing,
                       "data.bucket groups unpacked rows by length: it needs data.packing = false");
  TRIDENT_CONFIG_CHECK(options_.length_multiple >= 1, "length multiple ", options_.length_multiple);
  TRIDENT_CONFIG_CHECK(G % (b * options_.dp_size) == 0, "train.global_batch (", G,
                       ") must be divisible by train.micro_batch * parallel.dp (", b, " * ",
                       options_.dp_size, ")");
  micro_batches_ = static_cast<int>(G / (b * options_.dp_size));
}

int64_t BatchSampler::num_rows() const {
  int64_t n = 0;
  for (const SourceRows& s : sources_) n += s.num_rows();
  return n;
}

void BatchSampler::set_schedule(MixSchedule schedule) {
  TRIDENT_CHECK(schedule.sources() == sources_.size(), "schedule of ", schedule.sources(), " sources");
  schedule_ = std::move(schedule);
  stats_step_ = -1;
}

BatchSampler::RowRef BatchSampler::locate(int64_t global_sequence) {
  TRIDENT_CHECK(global_sequence >= 0, "global sequence ", global_sequence);
  const MixSchedule::Located at = schedule_.locate(global_sequence);
  return {at.source, at.ordinal, sources_[at.source].row_of(at.ordinal)};
}

Batch BatchSampler::make_batch() const {
  const Shape shape{options_.micro_batch, options_.seq_len};
  Batch batch;
  batch.tokens = batch.tokens_buffer = Tensor::zeros(shape, DType::kI32);
  batch.targets = batch.targets_buffer = Tensor::zeros(shape, DType::kI32);
  batch.positions = batch.positions_buffer = Tensor::zeros(shape, DType::kI32);
  return batch;
}

int64_t BatchSampler::micro_batch_length(int64_t first_global_sequence) {
  const int64_t T = options_.seq_len;
  if (!options_.bucket) return T;
  int64_t longest = 1;
  for (int64_t i = 0; i < options_.micro_batch; ++i)
  {
    const RowRef at = locate(first_global_sequence + i);
    longest = std::max<int64_t>(longest, sources_[at.source].row_length(at.row));
  }
  const int64_t m = options_.length_multiple;
  return std::min(T, (longest + m - 1) / m * m);
}

void BatchSampler::fill(int64_t step, int micro_index, Batch& out) {
  TRIDENT_CHECK(step >= 0 && micro_index >= 0 && micro_index < micro_batches_, "step=", step,
                " micro_index=", micro_index, " of ", micro_batches_);
  if (!out.tokens_buffer.defined()) out = make_batch();
  const int64_t T = options_.seq_len, b = options_.micro_batch;
  const Shape shape{b, T};
  TRIDENT_CHECK(out.tokens_buffer.shape() == shape && out.targets_buffer.shape() == shape &&
                    out.positions_buffer.shape() == shape,
                "batch tensors must be ", shape.str(), ", got ", out.tokens_buffer.shape().str());
  const int64_t rank_begin = options_.dp_rank * (options_.global_batch / options_.dp_size);
  const int64_t first = step * options_.global_batch + rank_begin + micro_index * b;
  const int64_t L = micro_batch_length(first);
  auto cut = [&](const Tensor& buffer) { return L == T ? buffer : buffer.flat().narrow(0, b * L).view(Shape{b, L}); };
  out.tokens = cut(out.tokens_buffer);
  out.targets = cut(out.targets_buffer);
  out.positions = cut(out.positions_buffer);
  out.valid_tokens = 0;
  out.padding_tokens = 0;
  for (int64_t i = 0; i < b; ++i) {
    const RowRef at = locate(first + i);
    const SourceRows& source = sources_[at.source];
    // rows shorter than L lose nothing by the cut: it removes only padding
    out.valid_tokens += source.fill_row(at.row, L, out.tokens.data<int32_t>() + i * L,
                                        out.targets.data<int32_t>() + i * L, out.positions.data<int32_t>() + i * L);
    out.padding_tokens += L - source.row_length(at.row);
  }
  out.first_sequence = rank_begin + micro_index * b;
}

GlobalBatchStats BatchSampler::global_batch_stats(int64_t step) {
  if (step == stats_step_) return stats_;
  const int64_t G = options_.global_batch, T = options_.seq_len;
  scratch_.resize(static_cast<size_t>(3 * T));
  GlobalBatchStats stats;
  const size_t m = sources_.size();
  stats.source_targets.assign(m, 0);
  stats.source_rows.assign(m, 0);
  stats.source_documents.assign(m, 0);
  int64_t L = T;
  for (int64_t j = 0; j < G; ++j) {
    if (j % options_.micro_batch == 0) {  // micro-batches are consecutive rows whatever dp is
      L = micro_batch_length(step * G + j);
      stats.computed_tokens += options_.micro_batch * L;
    }
    const RowRef at = locate(step * G + j);
    const SourceRows& source = sources_[at.source];
    const int64_t valid = source.fill_row(at.row, L, scratch_.data(), scratch_.data() + T, scratch_.data() + 2 * T,
                                          &stats.truncated_documents, &stats.source_documents[at.source]);
    stats.valid_targets += valid;
    stats.source_targets[at.source] += valid;
    ++stats.source_rows[at.source];
    stats.row_source.push_back(static_cast<int32_t>(at.source));
    stats.padding_tokens += L - source.row_length(at.row);
  }
  stats_step_ = step;
  stats_ = stats;
  return stats;
}

}  // namespace trident::data
