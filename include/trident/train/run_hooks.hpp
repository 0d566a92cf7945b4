// RunHooks: the points where a run lets code outside the training layer look in or act, with
// nothing done by default. The CLI's fault injection (trident's own end-to-end tests of
// failure handling: a rank that throws, hangs, overflows or is preempted at a chosen step, a
// checkpoint held before its rename) implements them; the training layer knows no such faults.
#pragma once
#include <cstdint>
#include <string>

#include "trident/backend/ops.hpp"
#include "trident/model/param_store.hpp"

namespace trident::train {

class RunHooks {
 public:
  virtual ~RunHooks() = default;
  // At the start of optimizer step `step` (1-based), before any of its work.
  virtual void step_starting(int64_t step) {}
  // As step `step`'s compute starts (timed as compute: the straggler watch sees it).
  virtual void computing(int64_t step) {}
  // After step `step`'s gradients were zeroed, before backward: grads is this rank's flat
  // gradient buffer (on ops' device).
  virtual void gradients_zeroed(int64_t step, Ops& ops, Tensor grads) {}
  // After step `step`'s update (1-based), before anything reads the new parameters: params are
  // this rank's (values on ops' device).
  virtual void parameters_updated(int64_t step, Ops& ops, model::ParamStore& params) {}
  // Whether the run stops after step `step` as if preempted (checkpoint, exit 0).
  virtual bool stop_after(int64_t step) { return false; }
  // A checkpoint file is complete under its temporary name, before it is renamed to `path`
  // (called on every rank).
  virtual void checkpoint_written(const std::string& path) {}
};

}  // namespace trident::train
