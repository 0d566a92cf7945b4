// Parsing the fault-injection test hook.
#include "trident/train/fault_injection.hpp"

#include <cstdio>
#include <cstdlib>
#include <limits>
#include <string>

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
  if (const char* spec = std::getenv("TRIDENT_TEST_NONFINITE"); spec && *spec) {
    long long step = -1, count = 1;
    char value[8] = "nan";
    const int fields = std::sscanf(spec, "rank=%d,step=%lld,count=%lld,value=%3s", &f.nan_rank, &step, &count, value);
    const std::string v = value;
    TRIDENT_CONFIG_CHECK(fields >= 2 && f.nan_rank >= 0 && step >= 1 && count >= 1 && (v == "nan" || v == "inf"),
                         "TRIDENT_TEST_NONFINITE='", spec, "': expected rank=R,step=S[,count=C[,value=nan|inf]]");
    f.nan_step = step;
    f.nan_count = count;
    f.nan_value = v == "inf" ? std::numeric_limits<double>::infinity() : std::numeric_limits<double>::quiet_NaN();
  }
  if (const char* hang = std::getenv("TRIDENT_TEST_HANG"); hang && *hang) {
    long long step = -1;
    TRIDENT_CONFIG_CHECK(std::sscanf(hang, "rank=%d,step=%lld", &f.hang_rank, &step) == 2 && f.hang_rank >= 0 && step >= 1,
                         "TRIDENT_TEST_HANG='", hang, "': expected rank=R,step=S");
    f.hang_step = step;
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
