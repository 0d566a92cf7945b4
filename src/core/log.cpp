// Progress line handling.
#include "trident/core/log.hpp"

#include <unistd.h>

namespace trident {

void Logger::progress(const std::string& line) const {
  if (!prints()) return;
  std::fputs(line.c_str(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

}  // namespace trident
