// Names of schedules and recompute modes, and a layout's one-line description.
#include "trident/plan/layout.hpp"

#include <sstream>

#include "trident/core/error.hpp"

namespace trident::plan {

const char* schedule_name(Schedule s) {
  return s == Schedule::kGPipe ? "gpipe" : s == Schedule::kOneFOneB ? "1f1b" : "interleaved";
}

const char* recompute_name(Recompute r) {
  return r == Recompute::kNone ? "none" : r == Recompute::kSelective ? "selective" : "full";
}

Schedule schedule_from_name(const std::string& name) {
  if (name == "gpipe") return Schedule::kGPipe;
  if (name == "1f1b") return Schedule::kOneFOneB;
  if (name == "interleaved") return Schedule::kInterleaved;
  throw ConfigError(detail::concat("unknown schedule '", name, "' (expected gpipe, 1f1b or interleaved)"));
}

Recompute recompute_from_name(const std::string& name) {
  if (name == "none") return Recompute::kNone;
  if (name == "selective") return Recompute::kSelective;
  if (name == "full") return Recompute::kFull;
  throw ConfigError(detail::concat("--recompute: unknown mode '", name, "' (expected none, selective or full)"));
}

std::string Layout::describe() const {
  std::ostringstream os;
  os << "dp=" << dp << " tp=" << tp << " pp=" << pp;
  if (ep > 1) os << " ep=" << ep;
  os << " mb=" << micro_batch;
  if (pp > 1) os << " " << schedule_name(schedule) << (schedule == Schedule::kInterleaved ? detail::concat(" v=", virtual_stages) : "");
  if (sequence_parallel) os << " sp";
  os << " recompute=" << recompute_name(recompute);
  if (zero) os << " zero1";
  return os.str();
}

}  // namespace trident::plan
