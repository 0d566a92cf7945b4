// ProfilingOps: an Ops decorator that times every kernel call by phase, for `trident bench step`.
// Kernels on the CPU backend are synchronous, so wall time around the call is the kernel's time
// (a device backend must synchronise before reading these clocks).
#pragma once
#include <array>
#include <memory>

#include "trident/backend/ops.hpp"

namespace trident {

enum class KernelPhase { kGemm, kAttention, kElementwise, kLoss, kOptimizer, kCount };
const char* kernel_phase_name(KernelPhase phase);

struct KernelTimes {
  std::array<double, static_cast<size_t>(KernelPhase::kCount)> seconds{};
  std::array<int64_t, static_cast<size_t>(KernelPhase::kCount)> calls{};
  double gemm_flops = 0;  // 2*M*N*K summed over GEMM calls
  double total() const;
};

// Wraps `inner` (not owned; must outlive this object).
std::unique_ptr<Ops> make_profiling_ops(Ops& inner, KernelTimes& times);

}  // namespace trident
