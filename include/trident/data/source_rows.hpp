// The rows of one source (shard set) as the sampler cuts them, and their per-epoch order.
//
// Rows (data.packing):
//   packed (true): row w holds stream tokens [w*T, w*T + T) and targets [w*T + 1, w*T + T + 1):
//     documents are packed back to back and cut at row ends, nothing is padded. Document
//     masking: positions restart at 0 where a document starts (and at the row start), attention
//     follows the positions (Ops::attention_forward), and the target that would cross into the
//     next document is not trained on. A document that fits in one row is thus trained exactly
//     as if it had a row of its own.
//   unpacked (false): one document per row from position 0, padded to T (padding tokens have
//     target -1); a document with more than T + 1 tokens continues in further rows of T targets,
//     each starting again at position 0.
//   bucketed (data.bucket, unpacked only): within each window of kBucketWindow global batches
//     of an epoch's order, rows are sorted by length (longest first).
// Order: the source's k-th row consumed (its ordinal) is row perm_e[k % W] of epoch e = k / W:
// a source needed beyond its size repeats in reshuffled epochs. perm_e is a Fisher-Yates shuffle
// of [0, W) driven by Philox keyed by (key, e), held as a table of the current epoch (4 bytes a
// row); with random_access (the sources of a mixture; not bucketed) a source of more than
// kFeistelMinRows rows uses a Feistel permutation keyed the same way and evaluated per row
// (feistel_permutation.hpp: no table, nothing computed at start or at an epoch's turn).
// Targets before a document's loss start are -1.
//
// Not thread-safe (it caches the current epoch's permutation).
#pragma once
#include <cstdint>
#include <vector>

#include "trident/data/document_stream.hpp"
#include "trident/data/feistel_permutation.hpp"
#include "trident/data/shard_set.hpp"

namespace trident::data {

inline constexpr int64_t kBucketWindow = 16;  // global batches sorted together by length

struct SourceRowsOptions {
  int64_t seq_len = 0;       // T
  int64_t global_batch = 0;  // G: the bucketing window is kBucketWindow * G rows
  bool packing = true;
  bool bucket = false;
  Truncate truncate = Truncate::kLeft;
  uint64_t epoch_key = 0;    // Philox key of the epochs' permutations
  bool random_access = false;  // Feistel permutations instead of Fisher-Yates tables (not with bucket)
};

class SourceRows {
 public:
  // set outlives the rows.
  SourceRows(const ShardSet& set, const SourceRowsOptions& options);

  int64_t num_rows() const { return num_rows_; }
  // The row of the source's `ordinal`-th row consumed (>= 0).
  int64_t row_of(int64_t ordinal);
  // Writes row `row` cut to length T (>= its length): tokens, targets, positions; returns its
  // number of targets >= 0. truncated (optional) counts the cut documents starting in the row,
  // starts (optional) the documents starting in it.
  int64_t fill_row(int64_t row, int64_t T, int32_t* tokens, int32_t* targets, int32_t* positions,
                   int64_t* truncated = nullptr, int64_t* starts = nullptr) const;
  // Input tokens of row `row` (<= T).
  int64_t row_length(int64_t row) const { return row_span(row).length; }
  // The document holding row `row`'s first input token, and that token's offset in it.
  std::pair<uint64_t, uint64_t> row_origin(int64_t row) const;
  const DocumentStream& documents() const { return stream_; }

 private:
  // Where a row's input tokens lie in the stream: [begin, begin + length), length <= T.
  struct RowSpan {
    uint64_t begin;
    uint32_t length;
  };
  RowSpan row_span(int64_t row) const;
  void compute_permutation(int64_t epoch);

  DocumentStream stream_;
  SourceRowsOptions options_;
  int64_t num_rows_ = 0;
  std::vector<RowSpan> unpacked_rows_;  // unpacked mode: every row's span (packed rows are computed)
  int64_t cached_epoch_ = -1;
  std::vector<uint32_t> permutation_;  // of the cached epoch
};

}  // namespace trident::data
