// Differential privacy's per-unit gradients (DP-SGD, Abadi et al. 2016): what backward does
// differently while a step's privacy units are measured, and how their losses are weighted.
//
// Measuring (the norm pass): every trainable parameter's backward adds, for each privacy unit
// of the micro-batch, the squared L2 norm of that unit's share of its gradient to
// squares()[unit], and accumulates no gradient. No per-unit gradient is kept:
//   a linear map's weight, dW = G^T A with G [n, out], A [n, in] the unit's rows:
//     ||dW||^2 = sum((A A^T) * (G G^T))   the ghost norm (Li et al. 2021), n^2 (in + out) flops,
//     or ||G^T A||^2 with G^T A formed     n in out flops, whichever costs less (as Opacus'
//                                          fast gradient clipping chooses by shape);
//   a bias: ||colsum(G)||^2; a norm's gain and bias: the norm's backward over the unit's rows;
//   embedding rows: the sum over token pairs with equal ids of g_t . g_t' (token-equality form).
// Both passes: the head scales each unit's rows of the loss gradient by weights()[unit] (the
// norm pass: 1 / its targets, the unit's mean loss; the clipped pass: its clip factor too).
//
// A unit never crosses a row, so the head's logits chunks (whole rows) never split one. Under
// tensor parallelism each rank adds its shards' partial squares, replicated parameters on tp
// rank 0 only; the caller sums squares() over the model-parallel group. Not supported (the run
// refuses them): sequence parallelism, MoE layers, a trainable tied token table, per-head q/k
// norms under tp > 1.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/backend/ops.hpp"
#include "trident/data/batch.hpp"

namespace trident::model {

struct Parameter;

class UnitGradients {
 public:
  explicit UnitGradients(int tp_rank = 0) : tp_rank_(tp_rank) {}

  // A pass over `units` units: measuring (squares() zeroed) or not; weights[u] scales unit u's
  // loss gradient.
  void start(int64_t units, bool measure, std::vector<double> weights);
  bool measuring() const { return measuring_; }
  const std::vector<double>& weights() const { return weights_; }
  std::vector<double>& squares() { return squares_; }

  // The micro-batch now in forward or backward: its units and its row length L.
  void set_micro_batch(const std::vector<data::UnitSpan>* spans, int64_t row_length);
  // Rows per logits chunk: whole rows of L, at most `rows` (at least one row).
  int64_t whole_rows(int64_t rows) const;

  // p's gradient is scale * G^T A: G [rows, out], A [rows, in] are rows [first_row, ...) of the micro-batch.
  void add_outer(Ops& ops, const Parameter& p, const Tensor& g, const Tensor& a, double scale = 1.0,
                 int64_t first_row = 0);
  // p's gradient is the column sums of G [N, out].
  void add_column_sums(Ops& ops, const Parameter& p, const Tensor& g);
  // p's gradient is the scatter-add of G [N, C] rows into rows ids[t] - id_first of its table,
  // ids [N] int32; only ids in [id_first, id_first + p's local rows) land on this rank.
  void add_embedding(Ops& ops, const Parameter& p, const Tensor& ids, const Tensor& g, int64_t id_first);
  // The squared norm of one unit's gradient of p, computed by the caller.
  void add(const Parameter& p, int64_t unit, double square);
  // Whether p's squares count on this rank (every parameter once over the tp group).
  bool counted(const Parameter& p) const;

  // Scales rows of the loss gradient d [rows, V]: rows [first_row, ...) of the micro-batch.
  void scale_rows(Ops& ops, Tensor& d, int64_t first_row) const;

  const std::vector<data::UnitSpan>& spans() const { return *spans_; }
  // A scratch tensor (index: which) of at least `shape`, viewed as it.
  Tensor scratch(Ops& ops, int which, Shape shape, DType dtype);

 private:
  // Whether unit s lies in rows [first, first + rows); one partly inside is an error (chunks
  // hold whole rows).
  bool inside(const data::UnitSpan& s, int64_t first, int64_t rows) const;
  double read_scalar(Ops& ops, const Tensor& t);

  int tp_rank_;
  bool measuring_ = false;
  std::vector<double> weights_, squares_;
  const std::vector<data::UnitSpan>* spans_ = nullptr;
  int64_t row_length_ = 0;
  std::vector<Tensor> scratch_;
  Tensor host_scalar_;
  Tensor host_ids_, host_rows_;  // add_embedding's host copies of ids [N] and rows [N * C] (fp64)
};

}  // namespace trident::model
