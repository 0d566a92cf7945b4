// SourceRows: one source's rows (packed, unpacked or bucketed) and their per-epoch shuffle.
#include "trident/data/source_rows.hpp"

#include <algorithm>
#include <limits>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"

namespace trident::data {

SourceRows::SourceRows(const ShardSet& set, const SourceRowsOptions& options)
    : stream_(set, static_cast<uint64_t>(std::max<int64_t>(options.seq_len, 0)), options.truncate),
      options_(options) {
  const int64_t T = options.seq_len;
  TRIDENT_CONFIG_CHECK(T > 0, "model.seq_len must be positive (got ", T, ")");
  const uint64_t n = stream_.num_tokens();
  if (options.packing) {
    num_rows_ = n > 0 ? static_cast<int64_t>((n - 1) / static_cast<uint64_t>(T)) : 0;
  } else {
    // Each document of n >= 2 tokens gives ceil((n - 1) / T) rows of up to T targets.
    for (uint64_t d = 0; d < stream_.num_documents(); ++d) {
      const DocumentSpan doc = stream_.document(d);
      for (uint64_t begin = doc.begin; begin + 1 < doc.end; begin += static_cast<uint64_t>(T))
        unpacked_rows_.push_back({begin, static_cast<uint32_t>(std::min<uint64_t>(T, doc.end - 1 - begin))});
    }
    num_rows_ = static_cast<int64_t>(unpacked_rows_.size());
  }
  // Row indices are stored as uint32 to keep the permutation at 4 bytes per row.
  TRIDENT_CONFIG_CHECK(num_rows_ <= int64_t(std::numeric_limits<uint32_t>::max()), set.prefix(), ": ",
                       num_rows_, " rows exceed 2^32; split the data or use longer sequences");
}

// Fisher-Yates from the back: swap i with a uniform j in [0, i]. The draw for position i of
// epoch e is Philox(key, counter i, stream e), so a permutation can be recomputed anywhere.
// The 64-bit modulo's bias is below 2^-32 for any W < 2^32.
void SourceRows::compute_permutation(int64_t epoch) {
  permutation_.resize(static_cast<size_t>(num_rows_));
  std::iota(permutation_.begin(), permutation_.end(), uint32_t{0});
  for (int64_t i = num_rows_ - 1; i > 0; --i) {
    const PhiloxBlock r = rng_block(options_.epoch_key, static_cast<uint64_t>(i), static_cast<uint64_t>(epoch));
    const uint64_t bits = (uint64_t(r[1]) << 32) | r[0];
    const uint64_t j = bits % static_cast<uint64_t>(i + 1);
    std::swap(permutation_[i], permutation_[j]);
  }
  if (options_.bucket) {  // longest first within each window: neighbours have similar lengths
    const int64_t window = kBucketWindow * options_.global_batch;
    for (int64_t begin = 0; begin < num_rows_; begin += window) {
      const auto first = permutation_.begin() + begin;
      const auto last = permutation_.begin() + std::min(num_rows_, begin + window);
      std::stable_sort(first, last, [&](uint32_t a, uint32_t b) {
        return unpacked_rows_[a].length > unpacked_rows_[b].length;
      });
    }
  }
  cached_epoch_ = epoch;
}

int64_t SourceRows::row_of(int64_t ordinal) {
  TRIDENT_CHECK(ordinal >= 0 && num_rows_ > 0, "row ordinal ", ordinal, " of a source of ", num_rows_, " rows");
  const int64_t epoch = ordinal / num_rows_;
  if (options_.random_access && !options_.bucket && uint64_t(num_rows_) > kFeistelMinRows)
    return int64_t(FeistelPermutation(uint64_t(num_rows_), options_.epoch_key, uint64_t(epoch))(uint64_t(ordinal % num_rows_)));
  if (epoch != cached_epoch_) compute_permutation(epoch);
  return permutation_[ordinal % num_rows_];
}

SourceRows::RowSpan SourceRows::row_span(int64_t row) const {
  if (!options_.packing) return unpacked_rows_[static_cast<size_t>(row)];
  return {static_cast<uint64_t>(row * options_.seq_len), static_cast<uint32_t>(options_.seq_len)};
}

std::pair<uint64_t, uint64_t> SourceRows::row_origin(int64_t row) const {
  const RowSpan span = row_span(row);
  const uint64_t d = stream_.document_of(span.begin);
  return {d, span.begin - stream_.document(d).begin};
}

int64_t SourceRows::fill_row(int64_t row, int64_t T, int32_t* tokens, int32_t* targets, int32_t* positions,
                             int64_t* truncated, int64_t* starts) const {
  const RowSpan span = row_span(row);
  const int64_t length = span.length;
  stream_.copy_tokens(span.begin, span.length, tokens);
  stream_.copy_tokens(span.begin + 1, span.length, targets);
  std::fill(tokens + length, tokens + T, 0);  // padding (unpacked rows only)
  std::fill(targets + length, targets + T, -1);
  for (int64_t t = length; t < T; ++t) positions[t] = static_cast<int32_t>(t);
  // Walk the documents the row touches: positions restart at each document start, the target
  // that crosses into the next document and targets before the loss start are masked.
  int64_t doc_start_in_row = 0;
  for (uint64_t d = stream_.document_of(span.begin); d < stream_.num_documents(); ++d) {
    const DocumentSpan doc = stream_.document(d);
    if (doc.begin > span.begin + static_cast<uint64_t>(length)) break;
    const bool starts_here = doc.begin >= span.begin && doc.begin < span.begin + static_cast<uint64_t>(length);
    if (truncated && starts_here && stream_.cut(d)) ++*truncated;
    if (starts && starts_here) ++*starts;
    if (doc.begin > span.begin) {
      doc_start_in_row = static_cast<int64_t>(doc.begin - span.begin);
      targets[doc_start_in_row - 1] = -1;  // last token of the previous document predicts nothing here
      if (doc_start_in_row == length) break;  // starts right after the row: only that target was its
    }
    const int64_t end_in_row = std::min<int64_t>(length, static_cast<int64_t>(doc.end - span.begin));
    for (int64_t t = doc_start_in_row; t < end_in_row; ++t) positions[t] = static_cast<int32_t>(t - doc_start_in_row);
    // target t is token span.begin + t + 1: masked while that lies before the loss start
    const uint64_t loss_from = doc.begin + doc.loss_start;
    for (int64_t t = doc_start_in_row; t < end_in_row && span.begin + t + 1 < loss_from; ++t) targets[t] = -1;
  }
  int64_t valid = 0;
  for (int64_t t = 0; t < T; ++t) valid += targets[t] >= 0;
  return valid;
}

}  // namespace trident::data
