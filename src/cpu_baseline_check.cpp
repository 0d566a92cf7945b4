// The first code trident runs: before any static initialiser built for the baseline (they may
// already use its instructions), a processor that lacks part of what the build assumes gets one
// line naming what it lacks and exit status 2, instead of dying by SIGILL with no word. Built
// for the oldest processors of the architecture (CMakeLists.txt); TRIDENT_CPU_REQUIRES lists the
// features the build's flags assume, by the compiler's macro names.
#include <unistd.h>

#include <cstdio>
#include <cstring>

#include "backend/cpu_features.hpp"

namespace {

// Runs from .init_array at priority 101, ahead of every default-priority initialiser of the
// executable (the shared libraries it loads are built for their own baseline).
__attribute__((constructor(101))) void check_cpu_baseline() {
  const auto cpu = trident::cpu_features::read_features();
  char missing[256] = "";
  char required[] = TRIDENT_CPU_REQUIRES;
  for (char* name = std::strtok(required, ","); name; name = std::strtok(nullptr, ",")) {
    const trident::cpu_features::Feature* f = trident::cpu_features::find(cpu, name);
    if (!f || f->present) continue;  // a feature the table does not know cannot be checked
    if (missing[0]) std::strncat(missing, " ", sizeof missing - std::strlen(missing) - 1);
    std::strncat(missing, name, sizeof missing - std::strlen(missing) - 1);
  }
  if (!missing[0]) return;
  std::fprintf(stderr, "trident: this processor lacks %s, which this build needs (built for %s)\n", missing,
               TRIDENT_CPU_BUILT_FOR);
  std::fflush(stderr);
  _exit(2);
}

}  // namespace
