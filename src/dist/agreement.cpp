// One all-reduce to find the first failing rank, one broadcast of its message.
#include "trident/dist/agreement.hpp"

#include <string>

#include "trident/core/error.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::dist {

void throw_if_any_failed(MPI_Comm comm, std::exception_ptr error) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int mine = error ? rank : size, first = size;
  MPI_CHECK(MPI_Allreduce(&mine, &first, 1, MPI_INT, MPI_MIN, comm));
  if (first == size) return;
  // The first failing rank sends (is it a ConfigError, message) to everyone.
  int is_config = 0;
  std::string message;
  if (rank == first) {
    try {
      std::rethrow_exception(error);
    } catch (const ConfigError& e) {
      is_config = 1, message = e.what();
    } catch (const std::exception& e) {
      message = e.what();
    } catch (...) {
      message = "unknown error";
    }
  }
  int header[2] = {is_config, static_cast<int>(message.size())};
  MPI_CHECK(MPI_Bcast(header, 2, MPI_INT, first, comm));
  message.resize(static_cast<size_t>(header[1]));
  MPI_CHECK(MPI_Bcast(message.data(), header[1], MPI_CHAR, first, comm));
  if (rank != first && size > 1) message = detail::concat(message, " (on rank ", first, ")");
  if (header[0]) throw ConfigError(message);
  throw Error(message);
}

}  // namespace trident::dist
