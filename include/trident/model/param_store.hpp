// Parameters: every weight has a global name and global shape (the checkpoint and HF contract),
// a local shard (tensor-parallel split along one dim, or replicated), and lives in one flat
// value buffer with a matching flat gradient buffer, so optimizers, gradient buckets and
// clipping work on contiguous memory. Initialisation is by global element index
// (docs/design.md section 2): a shard holds exactly the slice of the unsplit tensor.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "trident/backend/ops.hpp"

namespace trident::model {

class UnitGradients;

// kUniform: U(-init_std, init_std) (LoRA's A, PEFT's Kaiming-uniform bound 1/sqrt(fan_in)).
enum class Init { kNormal, kZeros, kOnes, kUniform };

struct ParamSpec {
  std::string name;
  Shape global_shape;
  Init init = Init::kNormal;
  double init_std = 0.02;
  bool weight_decay = false;   // decoupled decay applies (matmul weights only by default)
  int split_dim = -1;          // -1: replicated; else the dim split over split_parts ranks
  int split_parts = 1;
  int split_index = 0;
  int64_t init_rows = -1;      // >= 0: global rows from here on start at zero (vocabulary padding)
  bool counted_in_norm = true; // false for a copy whose original counts (tied table on the last stage)
  // false: frozen (the base weights under LoRA): no gradient, no optimizer state, no reduction;
  // its value lives in a separate flat buffer, outside the trainable one.
  bool trainable = true;
  bool adapter = false;  // a LoRA adapter: trainable while freeze_base() holds the rest
  // An expert's weight (MoE): under expert parallelism it lives on one rank of each ep group
  // and its gradient is reduced over the expert-data-parallel group instead of dp.
  bool expert = false;
};

struct Parameter {
  ParamSpec spec;
  Shape local_shape;
  int64_t offset = 0;  // elements into the flat buffers (the frozen buffer for frozen ones)
  Tensor value;        // view of the flat value buffer
  Tensor grad;         // view of the flat gradient buffer; undefined when frozen
  Tensor value_low;    // view of the 16-bit copy (mixed precision), else undefined
  // What GEMMs multiply by: the 16-bit copy under mixed precision, the master value otherwise.
  const Tensor& gemm_value() const { return value_low.defined() ? value_low : value; }
  bool trainable() const { return spec.trainable; }
  // LISA: a trainable parameter outside the sampled layers is idle for a while: backward
  // computes no gradient for it (its gradient stays zero) and the optimizer skips it.
  bool idle = false;
  bool needs_grad() const { return spec.trainable && !idle; }
  // Differential privacy's norm pass: backward adds the per-unit squared norms of this
  // parameter's gradient here instead of accumulating it (UnitGradients); else nullptr.
  UnitGradients* per_unit = nullptr;
  // What backward accumulates this parameter's gradient into: undefined when it needs none.
  Tensor grad_or_none() const { return needs_grad() ? grad : Tensor(); }
};

class ParamStore {
 public:
  // Registers a parameter; views become valid after allocate().
  Parameter& add(ParamSpec spec);
  // From now on every parameter added that is not an adapter is frozen (LoRA).
  void freeze_base() { freeze_base_ = true; }
  // Parameters added while experts(true) holds are experts' (ParamSpec::expert). With
  // align_experts(m), each run of trainable expert parameters and the run after it start at
  // a multiple of m in the flat buffers (zero gaps between), so that gradient buckets can be
  // cut where the reduction's group changes.
  void experts(bool on) { experts_ = on; }
  void align_experts(int64_t multiple) { expert_align_ = multiple; }
  // Elements of the trainable and frozen parameters themselves (without alignment gaps).
  int64_t parameter_elements() const { return elements_; }
  // One flat value and one flat gradient buffer for the trainable parameters, zero-padded at the
  // end to a multiple of pad_multiple elements (so data-parallel shards divide evenly), and one
  // value buffer for the frozen ones.
  void allocate(Ops& ops, DType dtype, int64_t pad_multiple = 1);
  // Fills every parameter from (seed, name, global index) by its Init rule.
  void initialize(Ops& ops, uint64_t seed);
  void zero_grads(Ops& ops);
  // Mixed precision: a 16-bit copy of every value (Parameter::value_low, what GEMMs use),
  // refreshed from the fp32 masters (frozen ones included) by refresh_low_precision() once per step.
  void allocate_low_precision(Ops& ops, DType dtype);
  void refresh_low_precision(Ops& ops);

  std::vector<std::unique_ptr<Parameter>>& all() { return params_; }
  const std::vector<std::unique_ptr<Parameter>>& all() const { return params_; }
  Parameter* find(const std::string& name);
  Parameter& at(const std::string& name);
  int64_t numel() const { return numel_; }                   // trainable parameters' elements
  int64_t frozen_numel() const { return frozen_numel_; }     // frozen parameters' elements
  int64_t padded_numel() const { return values_.numel(); }   // length of the flat buffers
  const Tensor& flat_values() const { return values_; }
  const Tensor& flat_grads() const { return grads_; }

  // Global flat index of local element i of p (row-major over the global shape).
  static int64_t global_index(const Parameter& p, int64_t i);

 private:
  std::vector<std::unique_ptr<Parameter>> params_;
  int64_t numel_ = 0;
  int64_t frozen_numel_ = 0;
  bool freeze_base_ = false;
  bool experts_ = false;
  int64_t expert_align_ = 1;
  int64_t elements_ = 0;
  bool last_expert_ = false;  // whether the last trainable parameter added is an expert's
  Tensor values_;
  Tensor grads_;
  Tensor values_low_;  // 16-bit copy of values_ (mixed precision), else undefined
  Tensor frozen_values_, frozen_low_;
};

}  // namespace trident::model
