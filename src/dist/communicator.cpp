// Blocking MPI collectives with byte and time accounting.
#include "trident/dist/communicator.hpp"

#include <algorithm>
#include <utility>

#include "trident/dist/mpi_session.hpp"

namespace trident::dist {

Communicator::Communicator(MPI_Comm comm) : comm_(comm) {
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
}

Communicator::~Communicator() {
  if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
}

Communicator::Communicator(Communicator&& o) noexcept
    : comm_(std::exchange(o.comm_, MPI_COMM_NULL)), rank_(o.rank_), size_(o.size_), bytes_(o.bytes_),
      seconds_(o.seconds_) {}

Communicator& Communicator::operator=(Communicator&& o) noexcept {
  // Swap: o's destructor then frees the communicator this one held.
  std::swap(comm_, o.comm_);
  std::swap(rank_, o.rank_);
  std::swap(size_, o.size_);
  std::swap(bytes_, o.bytes_);
  std::swap(seconds_, o.seconds_);
  return *this;
}

void Communicator::all_reduce_sum(Tensor& x) {
  if (size_ == 1 || x.numel() == 0) return;
  TRIDENT_CHECK(x.device() == Device::kCPU, "MPI all-reduce needs host memory");
  const MPI_Datatype type = x.dtype() == DType::kF64 ? MPI_DOUBLE : MPI_FLOAT;
  TRIDENT_CHECK(x.dtype() == DType::kF64 || x.dtype() == DType::kF32, "all_reduce_sum of ",
                dtype_name(x.dtype()));
  const double t0 = MPI_Wtime();
  const size_t elem = dtype_size(x.dtype());
  const size_t chunk = kMaxChunkBytes / elem;
  char* base = static_cast<char*>(x.raw());
  for (size_t begin = 0, n = static_cast<size_t>(x.numel()); begin < n; begin += chunk) {
    const int count = static_cast<int>(std::min(chunk, n - begin));
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, base + begin * elem, count, type, MPI_SUM, comm_));
  }
  bytes_ += x.bytes();
  seconds_ += MPI_Wtime() - t0;
}

void Communicator::all_reduce_sum(double* values, int count) {
  if (size_ == 1) return;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_));
  bytes_ += sizeof(double) * static_cast<size_t>(count);
}

void Communicator::all_reduce_max(double* values, int count) {
  if (size_ == 1) return;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_MAX, comm_));
  bytes_ += sizeof(double) * static_cast<size_t>(count);
}

void Communicator::broadcast(void* data, size_t bytes, int root) {
  if (size_ == 1) return;
  MPI_CHECK(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, comm_));
  bytes_ += bytes;
}

void Communicator::barrier() {
  if (size_ > 1) MPI_CHECK(MPI_Barrier(comm_));
}

}  // namespace trident::dist
