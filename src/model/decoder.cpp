// KV-cache generation over this rank's chunks: per-layer caches, one set of shared buffers cut
// to the call's rows, embedding / blocks / greedy head in the order of the model.
#include "trident/model/decoder.hpp"

#include <cstring>
#include <set>
#include <tuple>

namespace trident::model {

Decoder::Decoder(const GPTModel& model, Ops& ops, int batch, int length, int max_new_rows, int64_t call_rows)
    : model_(model), ops_(ops), batch_(batch), length_(length), max_rows_(max_new_rows),
      call_rows_(call_rows > 0 ? call_rows : int64_t(batch) * max_new_rows) {
  const ModelConfig& cfg = model.config();
  TRIDENT_CHECK(batch >= 1 && max_new_rows >= 1 && max_new_rows <= length && length <= cfg.seq_len,
                "decoder: batch ", batch, ", ", max_new_rows, " new rows and length ", length,
                " must be positive with rows <= length <= seq_len ", cfg.seq_len);
  const DType dtype = model.dtype();
  const int64_t rows = call_rows_;
  caches_.resize(model.num_chunks());
  for (int c = 0; c < model.num_chunks(); ++c)
    for (const auto& block : model.blocks(c)) caches_[c].push_back(block->make_cache(ops, batch, length, dtype));
  // One set of buffers for all blocks: the parts of every kind held (attention and MLP halves,
  // dense and MoE layers).
  std::set<std::tuple<bool, bool, bool>> kinds;
  for (int c = 0; c < model.num_chunks(); ++c)
    for (const auto& block : model.blocks(c))
      if (kinds.insert(block->kind()).second)
        overlay(scratch_, block->make_decode_scratch(ops, rows, dtype));
  if (model.head()) {
    greedy_ = model.head()->make_greedy_buffers(ops, batch, dtype);
    picked_ = ops.zeros(Shape{batch, cfg.hidden}, dtype);
  }
  hidden_ = ops.zeros(Shape{rows, cfg.hidden}, dtype);
  tokens_ = ops.zeros(Shape{rows}, DType::kI32);
  positions_ = ops.zeros(Shape{rows}, DType::kI32);
  host_tokens_ = Tensor::zeros(Shape{rows}, DType::kI32);
  host_positions_ = Tensor::zeros(Shape{rows}, DType::kI32);
  start_ = Tensor::zeros(Shape{batch}, DType::kI32);
}

void Decoder::begin(const std::vector<int32_t>& tokens, const std::vector<int32_t>& start, int new_rows, int first) {
  const int sequences = static_cast<int>(start.size());
  TRIDENT_CHECK(first >= 0 && first + sequences <= batch_, "decoder: sequences ", first, " .. ", first + sequences - 1,
                " of a batch of ", batch_);
  TRIDENT_CHECK(new_rows >= 1 && new_rows <= max_rows_ && sequences >= 1 && sequences <= batch_ &&
                    tokens.size() == size_t(sequences) * new_rows && int64_t(tokens.size()) <= call_rows_,
                "decoder: a call of ", new_rows, " rows per sequence (", tokens.size(), " tokens, ", start.size(),
                " starts) for batch ", batch_, ", at most ", max_rows_, " rows per sequence and ", call_rows_, " in all");
  new_rows_ = new_rows;
  sequences_ = sequences;
  first_ = first;
  const int64_t n = int64_t(sequences) * new_rows;
  int32_t* pos = host_positions_.data<int32_t>();
  for (int b = 0; b < sequences; ++b) {
    TRIDENT_CHECK(start[b] >= 0 && start[b] + new_rows <= length_, "decoder: sequence ", b, " at ", start[b], " + ",
                  new_rows, " passes its length ", length_);
    for (int s = 0; s < new_rows; ++s) pos[b * new_rows + s] = start[b] + s;
  }
  std::memcpy(start_.data<int32_t>(), start.data(), start.size() * sizeof(int32_t));
  std::memcpy(host_tokens_.data<int32_t>(), tokens.data(), tokens.size() * sizeof(int32_t));
  Tensor pos_dst = positions_.narrow(0, n), tok_dst = tokens_.narrow(0, n);
  ops_.copy(host_positions_.narrow(0, n), pos_dst);
  ops_.copy(host_tokens_.narrow(0, n), tok_dst);
  hidden_view_ = hidden_.narrow(0, n);
}

void Decoder::embed() {
  TRIDENT_CHECK(model_.embedding(), "decoder: this rank holds no embedding");
  const int64_t n = hidden_view_.dim(0);
  model_.embedding()->forward_whole(ops_, tokens_.narrow(0, n), positions_.narrow(0, n), hidden_view_);
}

void Decoder::run_chunk(int chunk) {
  const int64_t n = hidden_view_.dim(0);
  DecodeScratch s = scratch_.rows(n);
  const Tensor positions = positions_.narrow(0, n);
  const Tensor start = start_.narrow(0, sequences_);
  const auto& blocks = model_.blocks(chunk);
  for (size_t l = 0; l < blocks.size(); ++l) {
    // The caches of the call's sequences (all of them unless fewer were begun).
    const KvCache& all = caches_[chunk][l];
    KvCache cache = all;
    if (all.k.defined() && sequences_ < batch_)
      cache = {all.k.narrow(first_, first_ + sequences_), all.v.narrow(first_, first_ + sequences_)};
    blocks[l]->decode(ops_, hidden_view_, positions, start, cache, s);
  }
}

void Decoder::copy_sequence(int from, int to, int positions) {
  TRIDENT_CHECK(from >= 0 && from < batch_ && to >= 0 && to < batch_ && positions >= 0 && positions <= length_,
                "decoder: copy of ", positions, " positions from sequence ", from, " to ", to, " of ", batch_);
  if (from == to || positions == 0) return;
  for (auto& chunk : caches_)
    for (KvCache& c : chunk) {
      if (!c.k.defined()) continue;
      for (Tensor* t : {&c.k, &c.v}) {
        const Tensor source = t->narrow(from, from + 1).view(Shape{length_, t->dim(2)}).narrow(0, positions);
        Tensor target = t->narrow(to, to + 1).view(Shape{length_, t->dim(2)}).narrow(0, positions);
        ops_.copy(source, target);
      }
    }
}

// One gather for all rows (one kernel on a GPU, not one copy per row): into[i] = hidden[rows[i]].
void Decoder::gather_rows(const std::vector<int32_t>& rows, Tensor& into) {
  const int64_t n = hidden_view_.dim(0), m = int64_t(rows.size());
  for (const int32_t r : rows) TRIDENT_CHECK(r >= 0 && r < n, "decoder: row ", r, " of ", n);
  if (!row_index_.defined() || row_index_.dim(0) < m) {
    const int64_t capacity = std::max(m, hidden_.dim(0));
    row_index_ = ops_.zeros(Shape{capacity}, DType::kI32);
    host_row_index_ = Tensor::zeros(Shape{capacity}, DType::kI32);
  }
  std::memcpy(host_row_index_.data<int32_t>(), rows.data(), rows.size() * sizeof(int32_t));
  Tensor index = row_index_.narrow(0, m), out = into.narrow(0, m);
  ops_.copy(host_row_index_.narrow(0, m), index);
  ops_.gather_rows(hidden_view_, index, Tensor{}, out);
}

namespace {
// Each sequence's picked row as an index into the call's rows.
std::vector<int32_t> picked_rows(const std::vector<int32_t>& pick, int sequences, int new_rows) {
  TRIDENT_CHECK(pick.size() == size_t(sequences), "decoder: ", pick.size(), " picked rows for ", sequences,
                " sequences");
  std::vector<int32_t> rows(pick.size());
  for (int b = 0; b < sequences; ++b) {
    TRIDENT_CHECK(pick[b] >= 0 && pick[b] < new_rows, "decoder: row ", pick[b], " of ", new_rows);
    rows[b] = b * new_rows + pick[b];
  }
  return rows;
}
}  // namespace

std::vector<int32_t> Decoder::greedy(const std::vector<int32_t>& pick) {
  TRIDENT_CHECK(model_.head(), "decoder: this rank holds no output head");
  gather_rows(picked_rows(pick, sequences_, new_rows_), picked_);
  std::vector<int32_t> ids = model_.head()->greedy(ops_, picked_, greedy_);  // rows past n: stale, unused
  ids.resize(size_t(sequences_));
  return ids;
}

const Tensor& Decoder::logits(const std::vector<int32_t>& pick) {
  TRIDENT_CHECK(model_.head(), "decoder: this rank holds no output head");
  gather_rows(picked_rows(pick, sequences_, new_rows_), picked_);
  return model_.head()->host_logits(ops_, picked_, greedy_);
}

TokenScores Decoder::score(const std::vector<int32_t>& rows, const std::vector<int32_t>& targets) {
  TRIDENT_CHECK(model_.head(), "decoder: this rank holds no output head");
  TRIDENT_CHECK(rows.size() == targets.size() && !rows.empty(), "decoder: ", rows.size(), " scored rows, ",
                targets.size(), " targets");
  const int64_t n = static_cast<int64_t>(rows.size());
  if (!scored_.defined()) {  // made on first use: generation never scores
    const int64_t capacity = hidden_.dim(0);
    scored_ = ops_.zeros(Shape{capacity, hidden_.dim(1)}, hidden_.dtype());
    targets_ = ops_.zeros(Shape{capacity}, DType::kI32);
    host_targets_ = Tensor::zeros(Shape{capacity}, DType::kI32);
    scoring_ = model_.head()->make_scoring_buffers(ops_, capacity, hidden_.dtype());
  }
  gather_rows(rows, scored_);
  std::memcpy(host_targets_.data<int32_t>(), targets.data(), targets.size() * sizeof(int32_t));
  Tensor t = targets_.narrow(0, n);
  ops_.copy(host_targets_.narrow(0, n), t);
  TokenScores out;
  model_.head()->score_rows(ops_, scored_.narrow(0, n), t, scoring_, out);
  return out;
}

size_t Decoder::cache_bytes() const {
  size_t n = 0;
  for (const auto& chunk : caches_)
    for (const KvCache& c : chunk)
      if (c.k.defined()) n += c.k.bytes() + c.v.bytes();
  return n;
}

}  // namespace trident::model
