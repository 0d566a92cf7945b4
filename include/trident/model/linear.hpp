// Linear layer y = x @ W^T + b with W stored [out, in] (PyTorch's layout), and its backward.
// x: [N, in], y: [N, out]. The tensor-parallel variants split W along out (column-parallel) or
// in (row-parallel); this class holds whichever shard its ParamSpec describes.
#pragma once
#include <string>
#include <vector>

#include "trident/model/dropout_site.hpp"
#include "trident/model/param_store.hpp"
#include "trident/model/tensor_parallel.hpp"

namespace trident::model {

// How a weight is split over the tensor-parallel group.
//   kColumn: output features split; y holds this rank's features, x is whole. The input
//            gradient is partial: the caller sums it over the group.
//   kRow:    input features split; x holds this rank's features, the output is partial: the
//            caller sums it over the group, then adds the replicated bias (add_bias).
enum class Split { kNone, kColumn, kRow };

class Linear {
 public:
  // in, out: global feature counts. lora_rank > 0 adds a LoRA adapter y += lora_scale * x A^T B^T
  // (A [r, in] "NAME.lora_A.weight", Kaiming-uniform like PEFT; B [out, r] "NAME.lora_B.weight",
  // zero): for a column-parallel base B is split like the output and A replicated, for a
  // row-parallel one A is split like the input and B replicated.
  // weight: registered beforehand by add_weight (so that several projections' weights lie
  // side by side: fused GEMMs), else registered here.
  Linear(ParamStore& store, const std::string& name, int in, int out, bool bias, double init_std,
         Split split = Split::kNone, TensorParallel tp = {}, int lora_rank = 0, double lora_scale = 0,
         Parameter* weight = nullptr);
  // Registers the weight "NAME.weight" [out, in] of a Linear built with the same arguments.
  static Parameter& add_weight(ParamStore& store, const std::string& name, int in, int out, double init_std,
                               Split split = Split::kNone, TensorParallel tp = {});

  // Column-parallel projections of one input x (q, k, v; gate, up): ys[i] = parts[i](x). The
  // base GEMMs of neighbouring parts with equal weight shapes go in one Ops::gemm_parts call
  // (one batched GEMM on the GPU where weights and outputs lie one stride apart: weights
  // registered together, outputs allocated together), then each part's bias and adapter.
  static void forward_parts(Ops& ops, const std::vector<const Linear*>& parts, const Tensor& x,
                            const std::vector<Tensor>& ys, const DropoutSite& lora_dropout = {});
  // Zeroed tensors of these shapes in one allocation, side by side: outputs (or output
  // gradients) of parts that forward_parts / backward_parts can batch.
  static std::vector<Tensor> zeros_side_by_side(Ops& ops, const std::vector<Shape>& shapes, DType dtype);
  // Their backward: dx = sum over parts of their input gradients (overwritten; nullptr: none),
  // weight gradients of a group batched likewise, each part's bias and adapter gradients.
  static void backward_parts(Ops& ops, const std::vector<const Linear*>& parts, const Tensor& x,
                             const std::vector<Tensor>& dys, Tensor* dx, const DropoutSite& lora_dropout = {});

  // y = x W^T + b, or y += x W^T + b when accumulate (fuses a residual add). Row split over
  // tp > 1: y = x W^T only, a partial sum (no accumulate).
  // lora_dropout: dropout on the adapter's input (training), masks keyed by (its key and this
  // adapter's name, the step, the global element index of x) so every layout drops alike.
  // with_bias false: the caller adds the bias itself (fused into its activation).
  void forward(Ops& ops, const Tensor& x, Tensor& y, bool accumulate = false, const DropoutSite& lora_dropout = {},
               bool with_bias = true) const;
  // The bias a row-parallel forward left out, added once the output is summed.
  void add_bias(Ops& ops, Tensor& y) const;
  bool row_parallel() const { return split_ == Split::kRow; }
  // dW += dy^T x, db += colsum(dy) (not for frozen ones); dx = dy W (or dx += dy W when
  // accumulate_dx); the adapter's gradients too. dx may be nullptr when the input needs none.
  // with_bias false: the caller has accumulated the bias gradient (fused into its activation's).
  void backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, bool accumulate_dx = false,
                const DropoutSite& lora_dropout = {}, bool with_bias = true) const;

  Parameter& weight() const { return *weight_; }
  Parameter* bias() const { return bias_; }
  Parameter* lora_a() const { return lora_a_; }
  Parameter* lora_b() const { return lora_b_; }

 private:
  // What follows the base GEMM in forward: the bias (unless the caller fuses it) and the adapter.
  void finish_forward(Ops& ops, const Tensor& x, Tensor& y, const DropoutSite& lora_dropout, bool with_bias) const;
  // The bias's gradient from dy: per privacy unit in the norm pass, else accumulated.
  void bias_backward(Ops& ops, const Tensor& dy) const;
  // The adapter's part of forward (y += s * h B^T, h = x A^T) and backward; h is recomputed in
  // backward rather than kept (an [N, r] GEMM). Under tensor parallelism h of a row-parallel
  // adapter and dh of a column-parallel one are partial sums, completed by an all-reduce of
  // [N, r]; a term every rank then holds whole joins a partial output on rank 0 only.
  void lora_forward(Ops& ops, const Tensor& x, Tensor& y, const DropoutSite& d) const;
  void lora_backward(Ops& ops, const Tensor& x, const Tensor& dy, Tensor* dx, const DropoutSite& d) const;
  Tensor lora_rows(Ops& ops, Tensor& buffer, int64_t rows) const;
  // The adapter's input: x, or x with the dropout mask applied (in d's LoRA scratch).
  Tensor lora_input(Ops& ops, const Tensor& x, const DropoutSite& d) const;
  // Applies the mask of d to t [rows, this rank's input features] in place.
  void lora_mask(Ops& ops, Tensor& t, const DropoutSite& d) const;

  Parameter* weight_;
  Parameter* bias_ = nullptr;
  Split split_;
  TensorParallel tp_;
  Parameter* lora_a_ = nullptr;
  Parameter* lora_b_ = nullptr;
  double lora_scale_ = 0;
  uint64_t lora_key_ = 0;      // this adapter's part of the dropout key (from its name)
  int64_t in_ = 0, in_first_ = 0;  // global input features; this rank's first one
  mutable Tensor lora_h_, lora_dh_;  // [N, r] scratch, grown on demand
};

}  // namespace trident::model
