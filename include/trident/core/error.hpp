// Errors that name what went wrong: the failed statement, file:line and the values involved.
// trident::Error is a bug or runtime failure; trident::ConfigError is bad user input (exit 2).
#pragma once
#include <sstream>
#include <stdexcept>
#include <string>

namespace trident {

class Error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Bad input from the user (config, command line, data files): the CLI exits with code 2.
class ConfigError : public Error {
 public:
  using Error::Error;
};

// A stop every rank agreed on, with an exit code of its own (docs/design.md section 4): the CLI
// reports it once and every rank exits with the code, MPI finished cleanly.
class AgreedStop : public Error {
 public:
  AgreedStop(int code, const std::string& what) : Error(what), code_(code) {}
  int code() const { return code_; }

 private:
  int code_;
};

namespace detail {
template <typename... Args>
std::string concat(const Args&... args) {
  std::ostringstream os;
  (os << ... << args);
  return os.str();
}
[[noreturn]] void throw_check_failure(const char* expr, const char* file, int line,
                                      const std::string& message);
}  // namespace detail

}  // namespace trident

// TRIDENT_CHECK(n % 8 == 0, "n=", n, " must be a multiple of 8");
#define TRIDENT_CHECK(cond, ...)                                                            \
  do {                                                                                      \
    if (!(cond)) [[unlikely]]                                                               \
      ::trident::detail::throw_check_failure(#cond, __FILE__, __LINE__,                     \
                                             ::trident::detail::concat("" __VA_OPT__(, ) __VA_ARGS__)); \
  } while (0)

// Throws ConfigError with a message for the user (no file:line: it is their input, not our bug).
#define TRIDENT_CONFIG_CHECK(cond, ...)                                        \
  do {                                                                         \
    if (!(cond)) [[unlikely]]                                                  \
      throw ::trident::ConfigError(::trident::detail::concat(__VA_ARGS__));    \
  } while (0)
