// ProfilingOps: an Ops decorator that times every kernel call by phase, for `trident bench step`.
// Kernels on the CPU backend are synchronous, so wall time around the call is the kernel's time;
// on a device backend each call is bracketed by synchronize() (which serialises the stream: the
// step is slower profiled, the per-kernel times are right).
#pragma once
#include <array>
#include <memory>
#include <vector>

#include "trident/backend/ops.hpp"

namespace trident {

enum class KernelPhase { kGemm, kAttention, kElementwise, kLoss, kOptimizer, kCount };
const char* kernel_phase_name(KernelPhase phase);

struct KernelTimes {
  std::array<double, static_cast<size_t>(KernelPhase::kCount)> seconds{};
  std::array<int64_t, static_cast<size_t>(KernelPhase::kCount)> calls{};
  double gemm_flops = 0;  // 2*M*N*K summed over GEMM calls
  bool enabled = true;    // false: calls pass straight through, untimed
  // Per Ops method, in order of first call (a few dozen rows: found by a linear scan).
  struct Kernel {
    const char* name = nullptr;
    KernelPhase phase = KernelPhase::kElementwise;
    double seconds = 0;
    int64_t calls = 0;
  };
  std::vector<Kernel> kernels;
  Kernel& kernel(const char* name, KernelPhase phase);
  double total() const;
};

// Wraps `inner` (not owned; must outlive this object).
std::unique_ptr<Ops> make_profiling_ops(Ops& inner, KernelTimes& times);

}  // namespace trident
