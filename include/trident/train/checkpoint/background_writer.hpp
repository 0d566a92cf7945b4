// BackgroundWriter: one checkpoint write at a time on its own thread, over its own duplicate of
// the world communicator, while training goes on (checkpoint.async; needs
// MPI_THREAD_MULTIPLE, checked at construction: a ConfigError otherwise). Every rank starts its
// part of the same write, so the write's collectives match across ranks on the duplicate.
#pragma once
#include <mpi.h>

#include <exception>
#include <functional>
#include <memory>
#include <thread>

#include "trident/dist/communicator.hpp"

namespace trident::train {

class BackgroundWriter {
 public:
  // Collective over world (duplicates it).
  explicit BackgroundWriter(const dist::Communicator& world);
  // Joins a write in flight: its collectives finish on every rank.
  ~BackgroundWriter();
  BackgroundWriter(const BackgroundWriter&) = delete;
  BackgroundWriter& operator=(const BackgroundWriter&) = delete;

  // Runs write(comm of the duplicate) on the thread; the previous write must be finished
  // (finish()).
  void start(std::function<void(MPI_Comm)> write);
  // Waits for the write in flight (if any); returns its error (null: none or it succeeded).
  std::exception_ptr finish();

 private:
  std::unique_ptr<dist::Communicator> comm_;
  std::thread thread_;
  std::exception_ptr error_;
};

}  // namespace trident::train
