// Parsing the fault-injection test hook.
#include "trident/train/fault_injection.hpp"

#include <cstdio>
#include <cstdlib>

#include "trident/core/error.hpp"

namespace trident::train {

FaultInjection FaultInjection::from_environment() {
  FaultInjection f;
  if (const char* preempt = std::getenv("TRIDENT_TEST_PREEMPT"); preempt && *preempt) {
    char* end = nullptr;
    f.preempt_after = std::strtoll(preempt, &end, 10);
    TRIDENT_CONFIG_CHECK(*end == '\0' && f.preempt_after >= 1, "TRIDENT_TEST_PREEMPT='", preempt,
                         "': expected a step number >= 1");
  }
  if (const char* nan = std::getenv("TRIDENT_TEST_NAN"); nan && *nan) {
    long long step = -1, count = 1;
    const int fields = std::sscanf(nan, "rank=%d,step=%lld,count=%lld", &f.nan_rank, &step, &count);
    TRIDENT_CONFIG_CHECK(fields >= 2 && f.nan_rank >= 0 && step >= 1 && count >= 1, "TRIDENT_TEST_NAN='", nan,
                         "': expected rank=R,step=S[,count=C]");
    f.nan_step = step;
    f.nan_count = count;
  }
  const char* text = std::getenv("TRIDENT_TEST_FAIL");
  if (!text || !*text) return f;
  long long step = -1;
  TRIDENT_CONFIG_CHECK(std::sscanf(text, "rank=%d,step=%lld", &f.rank, &step) == 2 && f.rank >= 0 && step >= 1,
                       "TRIDENT_TEST_FAIL='", text, "': expected rank=R,step=S");
  f.step = step;
  return f;
}

}  // namespace trident::train
