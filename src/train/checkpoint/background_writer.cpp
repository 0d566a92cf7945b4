// The asynchronous checkpoint writer's thread and communicator.
#include "trident/train/checkpoint/background_writer.hpp"

#include <utility>

#include "trident/core/error.hpp"

namespace trident::train {

BackgroundWriter::BackgroundWriter(const dist::Communicator& world) {
  int provided = 0;
  MPI_Query_thread(&provided);
  TRIDENT_CONFIG_CHECK(provided >= MPI_THREAD_MULTIPLE, "checkpoint.async = true needs MPI_THREAD_MULTIPLE, this MPI "
                       "provides level ", provided, "; use checkpoint.async = false");
  comm_ = std::make_unique<dist::Communicator>(world.duplicate());
}

BackgroundWriter::~BackgroundWriter() {
  if (thread_.joinable()) thread_.join();
}

void BackgroundWriter::start(std::function<void(MPI_Comm)> write) {
  TRIDENT_CHECK(!thread_.joinable(), "BackgroundWriter::start: the previous write is still in flight");
  thread_ = std::thread([this, write = std::move(write)] {
    try {
      write(comm_->comm());
    } catch (...) {
      error_ = std::current_exception();
    }
  });
}

std::exception_ptr BackgroundWriter::finish() {
  if (thread_.joinable()) thread_.join();
  return std::exchange(error_, nullptr);
}

}  // namespace trident::train
