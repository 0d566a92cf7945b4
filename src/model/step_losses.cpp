// Per-step token losses on the device, read back once.
#include "trident/model/step_losses.hpp"

#include <algorithm>

namespace trident::model {

Tensor StepLosses::next(Ops& ops, int64_t rows, DType dtype) {
  const int64_t used = ends_.empty() ? 0 : ends_.back();
  if (!device_.defined() || device_.numel() < used + rows || device_.dtype() != dtype) {
    // Grown by doubling; what earlier micro-batches wrote moves along (a rare copy: the
    // capacity settles after the first step).
    Tensor bigger = ops.zeros(Shape{std::max<int64_t>(used + rows, device_.defined() ? 2 * device_.numel() : 0)}, dtype);
    if (used > 0) {
      Tensor kept = bigger.narrow(0, used);
      ops.copy(device_.narrow(0, used), kept);
    }
    device_ = bigger;
  }
  ends_.push_back(used + rows);
  return device_.narrow(used, used + rows);
}

double StepLosses::take(Ops& ops) {
  double total = host_sum_;
  host_sum_ = 0;
  if (ends_.empty()) return total;
  const int64_t used = ends_.back();
  if (!host_.defined() || host_.numel() < used) host_ = Tensor::zeros(Shape{device_.numel()}, DType::kF64);
  Tensor read = host_.narrow(0, used);
  ops.copy(device_.narrow(0, used), read);
  const double* l = read.data<double>();
  int64_t begin = 0;
  for (const int64_t end : ends_) {
    double micro_batch = 0;
    for (int64_t i = begin; i < end; ++i) micro_batch += l[i];
    total += micro_batch;
    begin = end;
  }
  ends_.clear();
  return total;
}

}  // namespace trident::model
