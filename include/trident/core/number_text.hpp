// The shortest decimal text that reads back as the same double ("1e-05", "0.1", "8"): how
// config values computed or read elsewhere are written into config text.
#pragma once
#include <charconv>
#include <string>

namespace trident {

inline std::string number_text(double v) {
  char buf[32];
  const auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}

}  // namespace trident
