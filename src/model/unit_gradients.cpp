// Per-unit squared gradient norms from activations and output gradients (ghost norms), and the
// per-unit weighting of the loss gradient.
#include "trident/model/unit_gradients.hpp"

#include <algorithm>
#include <numeric>

#include "trident/core/error.hpp"
#include "trident/model/param_store.hpp"

namespace trident::model {

namespace {
// t [..., width] as [rows, width].
Tensor as_rows(const Tensor& t) { return t.view(Shape{t.numel() / t.dim(-1), t.dim(-1)}); }
}  // namespace

void UnitGradients::start(int64_t units, bool measure, std::vector<double> weights) {
  TRIDENT_CHECK(int64_t(weights.size()) == units, "unit weights: ", weights.size(), " for ", units, " units");
  measuring_ = measure;
  weights_ = std::move(weights);
  squares_.assign(size_t(units), 0.0);
  spans_ = nullptr;
}

void UnitGradients::set_micro_batch(const std::vector<data::UnitSpan>* spans, int64_t row_length) {
  spans_ = spans;
  row_length_ = row_length;
}

int64_t UnitGradients::whole_rows(int64_t rows) const {
  TRIDENT_CHECK(row_length_ > 0 && rows >= row_length_, "a logits chunk of ", rows, " rows cannot hold a row of ",
                row_length_);
  return rows / row_length_ * row_length_;
}

bool UnitGradients::counted(const Parameter& p) const {
  return p.spec.counted_in_norm && (p.spec.split_dim >= 0 || tp_rank_ == 0);
}

bool UnitGradients::inside(const data::UnitSpan& s, int64_t first, int64_t rows) const {
  const bool starts = s.begin >= first && s.begin < first + rows;
  const bool ends = s.begin + s.count > first && s.begin + s.count <= first + rows;
  TRIDENT_CHECK(starts == ends || s.count == 0, "privacy unit ", s.unit, " crosses a chunk of rows");
  return starts && s.count > 0;
}

Tensor UnitGradients::scratch(Ops& ops, int which, Shape shape, DType dtype) {
  if (int(scratch_.size()) <= which) scratch_.resize(size_t(which) + 1);
  Tensor& t = scratch_[size_t(which)];
  if (!t.defined() || t.numel() < shape.numel() || t.dtype() != dtype) t = ops.zeros(Shape{shape.numel()}, dtype);
  return t.narrow(0, shape.numel()).view(shape);
}

double UnitGradients::read_scalar(Ops& ops, const Tensor& t) {
  if (!host_scalar_.defined()) host_scalar_ = Tensor::zeros(Shape{1}, DType::kF64);
  ops.copy(t.view(Shape{1}), host_scalar_);
  return host_scalar_.data<double>()[0];
}

void UnitGradients::add(const Parameter& p, int64_t unit, double square) {
  if (counted(p)) squares_.at(size_t(unit)) += square;
}

void UnitGradients::add_outer(Ops& ops, const Parameter& p, const Tensor& g_any, const Tensor& a_any, double scale,
                              int64_t first_row) {
  if (!counted(p)) return;
  const Tensor g = as_rows(g_any), a = as_rows(a_any);
  const int64_t rows = g.dim(0), out = g.dim(-1), in = a.dim(-1);
  const DType dtype = p.grad.dtype();
  for (const data::UnitSpan& s : *spans_) {
    if (!inside(s, first_row, rows)) continue;
    const int64_t n = s.count, begin = s.begin - first_row;
    const Tensor gu = g.narrow(begin, begin + n), au = a.narrow(begin, begin + n);
    double square;
    if (n * (in + out) < in * out) {  // ghost norm: sum of (A A^T) * (G G^T)
      Tensor ga = scratch(ops, 0, Shape{n, n}, dtype), gg = scratch(ops, 1, Shape{n, n}, dtype);
      ops.gemm(false, true, 1.0, au, au, 0.0, ga);
      ops.gemm(false, true, 1.0, gu, gu, 0.0, gg);
      Tensor dot = scratch(ops, 2, Shape{1, 1}, dtype);
      ops.gemm(false, true, 1.0, ga.view(Shape{1, n * n}), gg.view(Shape{1, n * n}), 0.0, dot);
      square = read_scalar(ops, dot);
    } else {  // the unit's gradient itself, [out, in]
      Tensor w = scratch(ops, 3, Shape{out, in}, dtype);
      ops.gemm(true, false, 1.0, gu, au, 0.0, w);
      square = ops.sum_squares(w);
    }
    squares_.at(size_t(s.unit)) += scale * scale * square;
  }
}

void UnitGradients::add_column_sums(Ops& ops, const Parameter& p, const Tensor& g_any) {
  if (!counted(p)) return;
  const Tensor g = as_rows(g_any);
  const int64_t out = g.dim(-1);
  Tensor sum = scratch(ops, 4, Shape{out}, p.grad.dtype());
  for (const data::UnitSpan& s : *spans_) {
    if (!inside(s, 0, g.dim(0))) continue;
    ops.fill(sum, 0.0);
    ops.bias_backward(g.narrow(s.begin, s.begin + s.count), sum);
    squares_.at(size_t(s.unit)) += ops.sum_squares(sum);
  }
}

void UnitGradients::add_embedding(Ops& ops, const Parameter& p, const Tensor& ids, const Tensor& g_any,
                                  int64_t id_first) {
  if (!counted(p)) return;
  const Tensor g = as_rows(g_any);
  // On the host in fp64: a unit's rows grouped by id, each group's summed row squared.
  const int64_t n = g.dim(0), width = g.dim(-1), table_rows = p.local_shape[0];
  // Host copies in buffers kept across calls (grown on demand): no allocation per backward.
  if (!host_ids_.defined() || host_ids_.numel() < n) host_ids_ = Tensor::zeros(Shape{n}, DType::kI32);
  if (!host_rows_.defined() || host_rows_.numel() < n * width) host_rows_ = Tensor::zeros(Shape{n * width}, DType::kF64);
  Tensor host_ids = host_ids_.narrow(0, n), host_g = host_rows_.narrow(0, n * width).view(Shape{n, width});
  ops.copy(ids.flat().narrow(0, n), host_ids);
  ops.copy(g, host_g);
  const int32_t* id = host_ids.data<int32_t>();
  const double* rows = host_g.data<double>();
  std::vector<int64_t> order;
  std::vector<double> sum(static_cast<size_t>(width));
  for (const data::UnitSpan& s : *spans_) {
    if (!inside(s, 0, n)) continue;
    order.clear();
    for (int64_t t = s.begin; t < s.begin + s.count; ++t)
      if (id[t] >= id_first && id[t] < id_first + table_rows) order.push_back(t);
    std::stable_sort(order.begin(), order.end(), [&](int64_t x, int64_t y) { return id[x] < id[y]; });
    double square = 0;
    for (size_t i = 0; i < order.size();) {
      std::fill(sum.begin(), sum.end(), 0.0);
      size_t j = i;
      for (; j < order.size() && id[order[j]] == id[order[i]]; ++j)
        for (int64_t c = 0; c < width; ++c) sum[size_t(c)] += rows[order[j] * width + c];
      for (const double v : sum) square += v * v;
      i = j;
    }
    squares_.at(size_t(s.unit)) += square;
  }
}

void UnitGradients::scale_rows(Ops& ops, Tensor& d_any, int64_t first_row) const {
  Tensor d = as_rows(d_any);
  for (const data::UnitSpan& s : *spans_) {
    if (!inside(s, first_row, d.dim(0))) continue;
    Tensor rows = d.narrow(s.begin - first_row, s.begin - first_row + s.count);
    ops.scale(rows, weights_.at(size_t(s.unit)));
  }
}

}  // namespace trident::model
