// MPI start-up and shutdown.
#include "trident/dist/mpi_session.hpp"

#include <cstdio>
#include <cstdlib>

namespace trident::dist {

MpiSession::MpiSession(int* argc, char*** argv) {
  int provided = 0;
  // MULTIPLE: an asynchronous checkpoint writes from its own thread while training communicates.
  MPI_Init_thread(argc, argv, MPI_THREAD_MULTIPLE, &provided);
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
  MPI_Comm_rank(MPI_COMM_WORLD, &rank_);
  MPI_Comm_size(MPI_COMM_WORLD, &size_);
  char name[MPI_MAX_PROCESSOR_NAME];
  int len = 0;
  MPI_Get_processor_name(name, &len);
  host_.assign(name, static_cast<size_t>(len));
  reductions_ = std::make_unique<ReductionOps>();
}

MpiSession::~MpiSession() {
  reductions_.reset();
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized) MPI_Finalize();
}

void MpiSession::abort(int code, const std::string& message) const {
  std::fprintf(stderr, "[rank %d on %s] %s\n", rank_, host_.c_str(), message.c_str());
  std::fflush(stderr);
  if (size_ > 1) MPI_Abort(MPI_COMM_WORLD, code);
  std::exit(code);
}

int ranks_on_this_node() {
  MPI_Comm node = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node));
  int size = 1;
  MPI_Comm_size(node, &size);
  MPI_Comm_free(&node);
  return size;
}

std::string mpi_error_string(int code) {
  char text[MPI_MAX_ERROR_STRING];
  int len = 0;
  if (MPI_Error_string(code, text, &len) != MPI_SUCCESS) return "MPI error " + std::to_string(code);
  return std::string(text, static_cast<size_t>(len));
}

}  // namespace trident::dist
