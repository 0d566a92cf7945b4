// Test hook: make one rank fail at a given step, to check that a failure on any rank ends the
// whole job with its message instead of leaving the other ranks waiting in a collective.
// Set by the environment variable TRIDENT_TEST_FAIL="rank=R,step=S" (read once by the CLI).
#pragma once
#include <cstdint>
#include <string>

namespace trident::train {

struct FaultInjection {
  int rank = -1;       // -1: no fault
  int64_t step = -1;   // 1-based optimizer step at whose start the rank throws

  // Parses TRIDENT_TEST_FAIL; an unset variable means no fault, a malformed one is a ConfigError.
  static FaultInjection from_environment();
  bool fires(int world_rank, int64_t step_1based) const { return rank == world_rank && step == step_1based; }
};

}  // namespace trident::train
