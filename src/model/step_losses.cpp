// Per-step token losses on the device, read back once.
#include "trident/model/step_losses.hpp"

#include <algorithm>

#include "trident/core/error.hpp"

namespace trident::model {

Tensor StepLosses::next(Ops& ops, int64_t rows, DType dtype) {
  TRIDENT_CHECK(slices_.empty() || !on_host_, "a step's losses live on one side");
  on_host_ = false;
  const int64_t used = slices_.empty() ? 0 : slices_.back().end;
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
  slices_.push_back({used + rows, first_, sequences_});
  return device_.narrow(used, used + rows);
}

double* StepLosses::next_host(int64_t rows) {
  TRIDENT_CHECK(slices_.empty() || on_host_, "a step's losses live on one side");
  on_host_ = true;
  const int64_t used = slices_.empty() ? 0 : slices_.back().end;
  host_tokens_.resize(static_cast<size_t>(used + rows));
  slices_.push_back({used + rows, first_, sequences_});
  return host_tokens_.data() + used;
}

double StepLosses::take(Ops& ops, std::vector<double>* per_sequence) {
  if (slices_.empty()) return 0;
  const int64_t used = slices_.back().end;
  const double* l = host_tokens_.data();
  if (!on_host_) {
    if (!host_.defined() || host_.numel() < used) host_ = Tensor::zeros(Shape{device_.numel()}, DType::kF64);
    Tensor read = host_.narrow(0, used);
    ops.copy(device_.narrow(0, used), read);
    l = read.data<double>();
  }
  double total = 0;
  int64_t begin = 0;
  for (const Slice& s : slices_) {
    double micro_batch = 0;
    for (int64_t i = begin; i < s.end; ++i) micro_batch += l[i];
    total += micro_batch;
    if (per_sequence) {  // [sequences, L] tokens, L = the micro-batch's (maybe bucketed) length
      const int64_t length = (s.end - begin) / s.sequences;
      for (int64_t q = 0; q < s.sequences; ++q) {
        double sum = 0;
        for (int64_t i = begin + q * length; i < begin + (q + 1) * length; ++i) sum += l[i];
        per_sequence->at(static_cast<size_t>(s.first_sequence + q)) += sum;
      }
    }
    begin = s.end;
  }
  slices_.clear();
  host_tokens_.clear();
  return total;
}

}  // namespace trident::model
