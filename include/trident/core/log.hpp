// A logger owned by main and passed by reference: rank 0 prints by default, every rank prints
// warnings and errors tagged with its rank.
#pragma once
#include <cstdio>
#include <string>

#include "trident/core/error.hpp"

namespace trident {

class Logger {
 public:
  explicit Logger(int rank = 0, bool all_ranks = false) : rank_(rank), all_ranks_(all_ranks) {}
  // A logger whose info() prints nothing (warnings still do): for commands whose stdout is data.
  static Logger quiet(int rank) {
    Logger log(rank);
    log.quiet_ = true;
    return log;
  }
  int rank() const { return rank_; }
  bool prints() const { return !quiet_ && (rank_ == 0 || all_ranks_); }

  template <typename... Args>
  void info(const Args&... args) const {
    if (prints()) emit(stdout, detail::concat(args...));
  }
  template <typename... Args>
  void warn(const Args&... args) const {
    emit(stderr, detail::concat("[rank ", rank_, "] warning: ", args...));
  }
  // The progress line of a training step (one line each, so logs and terminals read the same).
  void progress(const std::string& line) const;

 private:
  static void emit(FILE* f, const std::string& s) {
    std::fputs(s.c_str(), f);
    std::fputc('\n', f);
    std::fflush(f);
  }
  int rank_;
  bool all_ranks_;
  bool quiet_ = false;
};

}  // namespace trident
