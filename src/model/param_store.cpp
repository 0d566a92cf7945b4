// Flat parameter/gradient buffers and initialisation by global coordinates.
#include "trident/model/param_store.hpp"

#include <algorithm>
#include <vector>

#include "trident/core/rng.hpp"

namespace trident::model {

Parameter& ParamStore::add(ParamSpec spec) {
  TRIDENT_CHECK(!values_.defined(), "parameter ", spec.name, " added after allocate()");
  TRIDENT_CHECK(find(spec.name) == nullptr, "duplicate parameter name ", spec.name);
  auto p = std::make_unique<Parameter>();
  p->local_shape = spec.global_shape;
  if (spec.split_dim >= 0) {
    const int64_t extent = spec.global_shape[spec.split_dim];
    TRIDENT_CHECK(extent % spec.split_parts == 0, spec.name, ": dim ", spec.split_dim, " = ", extent,
                  " not divisible into ", spec.split_parts, " shards");
    p->local_shape[spec.split_dim] = extent / spec.split_parts;
  }
  if (freeze_base_ && !spec.adapter) spec.trainable = false;
  if (experts_) spec.expert = true;
  if (spec.trainable && spec.expert != last_expert_) {
    numel_ = (numel_ + expert_align_ - 1) / expert_align_ * expert_align_;
    last_expert_ = spec.expert;
  }
  elements_ += p->local_shape.numel();
  int64_t& region = spec.trainable ? numel_ : frozen_numel_;
  p->offset = region;
  region += p->local_shape.numel();
  p->spec = std::move(spec);
  params_.push_back(std::move(p));
  return *params_.back();
}

void ParamStore::allocate(Ops& ops, DType dtype, int64_t pad_multiple) {
  TRIDENT_CHECK(pad_multiple >= 1, "pad_multiple ", pad_multiple);
  const int64_t padded = (numel_ + pad_multiple - 1) / pad_multiple * pad_multiple;
  values_ = ops.zeros(Shape{padded}, dtype);
  grads_ = ops.zeros(Shape{padded}, dtype);
  if (frozen_numel_ > 0) frozen_values_ = ops.zeros(Shape{frozen_numel_}, dtype);
  for (auto& p : params_) {
    const int64_t n = p->local_shape.numel();
    if (!p->trainable()) {
      p->value = frozen_values_.narrow(p->offset, p->offset + n).view(p->local_shape);
      continue;
    }
    p->value = values_.narrow(p->offset, p->offset + n).view(p->local_shape);
    p->grad = grads_.narrow(p->offset, p->offset + n).view(p->local_shape);
  }
}

void ParamStore::allocate_low_precision(Ops& ops, DType dtype) {
  TRIDENT_CHECK(values_.defined(), "allocate() before allocate_low_precision()");
  TRIDENT_CHECK(dtype == DType::kBF16 || dtype == DType::kF16, "low-precision copy in ", dtype_name(dtype));
  values_low_ = ops.zeros(values_.shape(), dtype);
  if (frozen_numel_ > 0) frozen_low_ = ops.zeros(frozen_values_.shape(), dtype);
  for (auto& p : params_) {
    const int64_t n = p->local_shape.numel();
    const Tensor& region = p->trainable() ? values_low_ : frozen_low_;
    p->value_low = region.narrow(p->offset, p->offset + n).view(p->local_shape);
  }
}

void ParamStore::refresh_low_precision(Ops& ops) {
  if (!values_low_.defined()) return;
  ops.copy(values_, values_low_);
  // Frozen values change only when loaded; copying them every step keeps that simple and
  // costs one pass over the weights (small beside a step's GEMMs).
  if (frozen_numel_ > 0) ops.copy(frozen_values_, frozen_low_);
}

int64_t ParamStore::global_index(const Parameter& p, int64_t i) {
  const ParamSpec& s = p.spec;
  if (s.split_dim < 0) return i;
  // Unravel i over the local shape, shift the split coordinate, ravel over the global shape.
  const Shape& local = p.local_shape;
  int64_t coords[Shape::kMaxDims];
  for (int d = local.ndim() - 1; d >= 0; --d) {
    coords[d] = i % local[d];
    i /= local[d];
  }
  coords[s.split_dim] += static_cast<int64_t>(s.split_index) * local[s.split_dim];
  int64_t g = 0;
  for (int d = 0; d < local.ndim(); ++d) g = g * s.global_shape[d] + coords[d];
  return g;
}

void ParamStore::initialize(Ops& ops, uint64_t seed) {
  for (auto& p : params_) {
    const int64_t n = p->local_shape.numel();
    std::vector<double> host(static_cast<size_t>(n));
    if (p->spec.init == Init::kNormal) {
      const uint64_t key = rng_key(seed, p->spec.name);
      const int64_t row_elems = p->spec.global_shape.numel() / std::max<int64_t>(1, p->spec.global_shape[0]);
      // Rounded to fp32 first so every dtype starts from the same fp32 values. Each element is a
      // pure function of (key, global index): the threads split them in any way.
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const int64_t g = global_index(*p, i);
        const bool padding = p->spec.init_rows >= 0 && g / row_elems >= p->spec.init_rows;
        host[i] = padding ? 0.0 : static_cast<float>(p->spec.init_std * rng_normal(key, static_cast<uint64_t>(g)));
      }
    } else if (p->spec.init == Init::kUniform) {
      const uint64_t key = rng_key(seed, p->spec.name);
#pragma omp parallel for schedule(static)
      for (int64_t i = 0; i < n; ++i) {
        const double u = rng_uniform(key, static_cast<uint64_t>(ParamStore::global_index(*p, i)));
        host[i] = static_cast<float>(p->spec.init_std * (2.0 * u - 1.0));
      }
    } else {
      std::fill(host.begin(), host.end(), p->spec.init == Init::kOnes ? 1.0 : 0.0);
    }
    Tensor staged = Tensor::zeros(p->local_shape, DType::kF64);
    std::copy(host.begin(), host.end(), staged.data<double>());
    ops.copy(staged, p->value);
  }
}

void ParamStore::zero_grads(Ops& ops) { ops.fill(grads_, 0.0); }

Parameter* ParamStore::find(const std::string& name) {
  for (auto& p : params_)
    if (p->spec.name == name) return p.get();
  return nullptr;
}

Parameter& ParamStore::at(const std::string& name) {
  Parameter* p = find(name);
  TRIDENT_CHECK(p != nullptr, "no parameter named ", name);
  return *p;
}

}  // namespace trident::model
