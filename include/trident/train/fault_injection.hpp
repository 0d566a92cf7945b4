// Test hooks, set by environment variables read once by the CLI:
//   TRIDENT_TEST_FAIL="rank=R,step=S": rank R throws at the start of step S (a failure on any
//     rank must end the whole job with its message, not leave the others in a collective);
//   TRIDENT_TEST_PREEMPT=S: after step S the run behaves as if SIGTERM had arrived
//     (checkpoint, exit 0), at a step chosen exactly;
//   TRIDENT_TEST_HANG="rank=R,step=S": rank R stops responding at the start of step S (the
//     others' watchdogs must report it and end the job);
//   TRIDENT_TEST_NONFINITE="rank=R,step=S,count=C,value=nan|inf": one of rank R's gradients is
//     NaN or inf (an fp16 overflow) in steps S..S+C-1; every rank must skip those steps together.
#pragma once
#include <cstdint>
#include <string>

namespace trident::train {

struct FaultInjection {
  int rank = -1;       // -1: no fault
  int64_t step = -1;   // 1-based optimizer step at whose start the rank throws
  int64_t preempt_after = -1;  // 1-based step after which to act as preempted
  int nan_rank = -1;
  int64_t nan_step = -1, nan_count = 0;
  double nan_value = 0;
  int hang_rank = -1;
  int64_t hang_step = -1;

  // Parses TRIDENT_TEST_FAIL; an unset variable means no fault, a malformed one is a ConfigError.
  static FaultInjection from_environment();
  bool fires(int world_rank, int64_t step_1based) const { return rank == world_rank && step == step_1based; }
  bool poisons(int world_rank, int64_t step_1based) const {
    return nan_rank == world_rank && step_1based >= nan_step && step_1based < nan_step + nan_count;
  }
};

}  // namespace trident::train
