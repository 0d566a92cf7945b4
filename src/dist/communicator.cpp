// MPI collectives and point-to-point, blocking and non-blocking, with byte and time accounting.
#include "trident/dist/communicator.hpp"

#include <algorithm>
#include <numeric>
#include <utility>
#include <vector>

#include "trident/dist/mpi_session.hpp"

namespace trident::dist {

namespace {

// MPI here is not assumed CUDA-aware: GPU tensors go to the group's DeviceCollectives before
// reaching these MPI paths; this guards the raw-pointer ones.
void host_memory(const Tensor& x, const char* op) {
  TRIDENT_CHECK(x.device() == Device::kCPU, "Communicator::", op,
                ": the tensor is in GPU memory; MPI takes host tensors only");
}

bool on_gpu(const Tensor& x) { return x.defined() && x.device() == Device::kCUDA; }

MPI_Datatype mpi_float_type(const Tensor& x, const char* op) {
  host_memory(x, op);
  TRIDENT_CHECK(x.dtype() == DType::kF32 || x.dtype() == DType::kF64, op, " of ", dtype_name(x.dtype()),
                " (fp32 or fp64 expected)");
  return x.dtype() == DType::kF64 ? MPI_DOUBLE : MPI_FLOAT;
}

// The MPI datatype and sum operation for a reduction over x's elements: 16-bit floats travel
// as 2-byte words summed by the session's user operations (ReductionOps).
std::pair<MPI_Datatype, MPI_Op> mpi_sum(const Tensor& x, const ReductionOps* reductions, const char* op) {
  if (x.dtype() != DType::kBF16 && x.dtype() != DType::kF16) return {mpi_float_type(x, op), MPI_SUM};
  host_memory(x, op);
  TRIDENT_CHECK(reductions, "Communicator::", op, " of ", dtype_name(x.dtype()),
                ": this communicator was made without the session's 16-bit sums (ReductionOps)");
  return {MPI_UINT16_T, reductions->sum_16bit(x.dtype())};
}

// Element type for operations that only move data (gathers): 16-bit floats travel as 2-byte words.
MPI_Datatype mpi_element_type(const Tensor& x, const char* op) {
  host_memory(x, op);
  if (x.dtype() == DType::kBF16 || x.dtype() == DType::kF16) {
    return MPI_UINT16_T;
  }
  return mpi_float_type(x, op);
}

int checked_count(int64_t n, const char* op) {
  TRIDENT_CHECK(n >= 0 && n <= INT32_MAX, op, ": ", n, " elements do not fit one MPI call");
  return static_cast<int>(n);
}

}  // namespace

const char* comm_op_name(CommOp op) {
  switch (op) {
    case CommOp::kAllReduce: return "all_reduce";
    case CommOp::kReduceScatter: return "reduce_scatter";
    case CommOp::kAllGather: return "all_gather";
    case CommOp::kBroadcast: return "broadcast";
    case CommOp::kPointToPoint: return "send_recv";
    case CommOp::kAllToAll: return "all_to_all";
    case CommOp::kCount: break;
  }
  return "?";
}

// --- CommRequest --------------------------------------------------------------------------

CommRequest::~CommRequest() {
  if (device_) {
    try {
      device_->join(ticket_);
    } catch (...) {  // a failed device stays failed: the next checked call reports it
    }
    return;
  }
  int finalized = 0;
  MPI_Finalized(&finalized);
  if (!finalized && pending()) MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE);
}

CommRequest::CommRequest(CommRequest&& o) noexcept
    : owner_(o.owner_),
      op_(o.op_),
      requests_(std::exchange(o.requests_, {})),
      counts_(std::move(o.counts_)),
      device_(std::exchange(o.device_, nullptr)),
      ticket_(o.ticket_) {}

CommRequest& CommRequest::operator=(CommRequest&& o) noexcept {
  std::swap(owner_, o.owner_);
  std::swap(op_, o.op_);
  std::swap(requests_, o.requests_);
  std::swap(counts_, o.counts_);
  std::swap(device_, o.device_);
  std::swap(ticket_, o.ticket_);
  return *this;
}

bool CommRequest::test() {
  if (!pending()) return true;
  if (device_) return device_->done(ticket_);
  int done = 0;
  MPI_CHECK(MPI_Testall(static_cast<int>(requests_.size()), requests_.data(), &done, MPI_STATUSES_IGNORE));
  if (done) requests_.clear();
  return done != 0;
}

void CommRequest::wait() {
  if (!pending()) return;
  if (device_) {
    std::exchange(device_, nullptr)->join(ticket_);
    return;
  }
  WatchdogScope watch(owner_ ? owner_->watchdog_ : nullptr, comm_op_name(op_),
                      owner_ ? owner_->description_ : std::string());
  const double t0 = MPI_Wtime();
  MPI_CHECK(MPI_Waitall(static_cast<int>(requests_.size()), requests_.data(), MPI_STATUSES_IGNORE));
  requests_.clear();
  if (owner_) owner_->account(op_, 0, MPI_Wtime() - t0);
}

// --- Communicator -------------------------------------------------------------------------

Communicator::Communicator(MPI_Comm comm) : comm_(comm) {
  MPI_CHECK(MPI_Comm_rank(comm_, &rank_));
  MPI_CHECK(MPI_Comm_size(comm_, &size_));
  MPI_Comm_set_errhandler(comm_, MPI_ERRORS_RETURN);
}

Communicator Communicator::duplicate() const {
  MPI_Comm copy = MPI_COMM_NULL;
  MPI_CHECK(MPI_Comm_dup(comm_, &copy));
  Communicator out(copy);
  out.reductions_ = reductions_;
  return out;
}

Communicator::~Communicator() {
  if (watchdog_ && device_) watchdog_->forget(device_.get());
  if (comm_ != MPI_COMM_NULL && comm_ != MPI_COMM_WORLD && comm_ != MPI_COMM_SELF) {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }
}

Communicator::Communicator(Communicator&& o) noexcept
    : comm_(std::exchange(o.comm_, MPI_COMM_NULL)), rank_(o.rank_), size_(o.size_), watchdog_(o.watchdog_),
      reductions_(o.reductions_), description_(std::move(o.description_)), device_(std::move(o.device_)), device_what_(std::move(o.device_what_)),
      bytes_(o.bytes_), seconds_(o.seconds_) {}

Communicator& Communicator::operator=(Communicator&& o) noexcept {
  // Swap: o's destructor then frees the communicator this one held.
  std::swap(comm_, o.comm_);
  std::swap(rank_, o.rank_);
  std::swap(size_, o.size_);
  std::swap(watchdog_, o.watchdog_);
  std::swap(reductions_, o.reductions_);
  std::swap(description_, o.description_);
  std::swap(device_, o.device_);
  std::swap(device_what_, o.device_what_);
  std::swap(bytes_, o.bytes_);
  std::swap(seconds_, o.seconds_);
  return *this;
}

void Communicator::set_watchdog(Watchdog* dog, const std::string& name) {
  watchdog_ = dog;
  MPI_Group group = MPI_GROUP_NULL, world = MPI_GROUP_NULL;
  MPI_Comm_group(comm_, &group);
  MPI_Comm_group(MPI_COMM_WORLD, &world);
  std::vector<int> mine(static_cast<size_t>(size_)), theirs(static_cast<size_t>(size_));
  for (int r = 0; r < size_; ++r) mine[r] = r;
  MPI_Group_translate_ranks(group, size_, mine.data(), world, theirs.data());
  MPI_Group_free(&group);
  MPI_Group_free(&world);
  description_ = "the " + name + " (world ranks";
  for (int r = 0; r < size_; ++r) description_ += (r ? ", " : " ") + std::to_string(theirs[r]);
  description_ += ")";
  for (int k = 0; k < static_cast<int>(CommOp::kCount); ++k)
    device_what_[k] = std::make_shared<const std::string>(std::string(comm_op_name(static_cast<CommOp>(k))) + " on " +
                                                          description_ + " (GPU)");
}

void Communicator::attach_device(std::unique_ptr<DeviceCollectives> device) {
  TRIDENT_CHECK(device && device->size() == size_ && device->rank() == rank_,
                "attach_device: the device group does not match ", description_.empty() ? "this group" : description_);
  device_ = std::move(device);
}

void Communicator::shutdown_device() {
  if (!device_) return;
  WatchdogScope watch(watchdog_, "shutdown", description_);
  if (watchdog_) watchdog_->forget(device_.get());
  device_->shutdown();
  device_.reset();
}

DeviceCollectives& Communicator::device_for(const char* op) {
  TRIDENT_CHECK(device_, "Communicator::", op, " on ", description_.empty() ? "a group" : description_,
                ": the tensor is in GPU memory and the group has no device communicator (NCCL) attached");
  return *device_;
}

CommRequest Communicator::device_request(CommOp op, uint64_t bytes) {
  const uint64_t ticket = device_->mark();
  account(op, bytes, 0);
  if (watchdog_) {
    DeviceCollectives* device = device_.get();
    watchdog_->track(device, [device, ticket] { return device->done(ticket); }, device_what_[static_cast<int>(op)]);
  }
  return CommRequest(this, op, device_.get(), ticket);
}

void Communicator::account(CommOp op, uint64_t bytes, double seconds) {
  bytes_[static_cast<int>(op)] += bytes;
  seconds_[static_cast<int>(op)] += seconds;
}

uint64_t Communicator::bytes_moved() const { return std::accumulate(bytes_.begin(), bytes_.end(), uint64_t(0)); }
double Communicator::seconds() const { return std::accumulate(seconds_.begin(), seconds_.end(), 0.0); }

CommRequest Communicator::iall_reduce_sum(Tensor& x) {
  if (on_gpu(x)) {
    if (size_ == 1 || x.numel() == 0) return {};
    DeviceCollectives& device = device_for("all_reduce_sum");
    {
      WatchdogScope watch(watchdog_, "all_reduce", description_);  // NCCL may connect peers here
      device.all_reduce_sum(x);
    }
    return device_request(CommOp::kAllReduce, x.bytes());
  }
  const auto [type, sum] = mpi_sum(x, reductions_, "all_reduce_sum");
  std::vector<MPI_Request> requests;
  if (size_ > 1 && x.numel() > 0) {
    const size_t elem = dtype_size(x.dtype()), chunk = kMaxChunkBytes / elem, n = static_cast<size_t>(x.numel());
    char* base = static_cast<char*>(x.raw());
    for (size_t begin = 0; begin < n; begin += chunk) {
      requests.emplace_back();
      MPI_CHECK(MPI_Iallreduce(MPI_IN_PLACE, base + begin * elem, static_cast<int>(std::min(chunk, n - begin)), type,
                               sum, comm_, &requests.back()));
    }
    account(CommOp::kAllReduce, x.bytes(), 0);
  }
  return CommRequest(this, CommOp::kAllReduce, std::move(requests));
}

void Communicator::all_reduce_sum(Tensor& x) {
  if (on_gpu(x)) return iall_reduce_sum(x).wait();
  const auto [type, sum] = mpi_sum(x, reductions_, "all_reduce_sum");
  if (size_ == 1 || x.numel() == 0) return;
  WatchdogScope watch(watchdog_, "all_reduce", description_);
  const double t0 = MPI_Wtime();
  const size_t elem = dtype_size(x.dtype()), chunk = kMaxChunkBytes / elem, n = static_cast<size_t>(x.numel());
  char* base = static_cast<char*>(x.raw());
  for (size_t begin = 0; begin < n; begin += chunk)
    MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, base + begin * elem, static_cast<int>(std::min(chunk, n - begin)), type,
                            sum, comm_));
  account(CommOp::kAllReduce, x.bytes(), MPI_Wtime() - t0);
}

void Communicator::all_reduce_sum(double* values, int count) {
  if (size_ == 1) return;
  WatchdogScope watch(watchdog_, "all_reduce", description_);
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, comm_));
  account(CommOp::kAllReduce, sizeof(double) * static_cast<size_t>(count), 0);
}

void Communicator::all_reduce_max(double* values, int count) {
  if (size_ == 1) return;
  WatchdogScope watch(watchdog_, "all_reduce", description_);
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_MAX, comm_));
  account(CommOp::kAllReduce, sizeof(double) * static_cast<size_t>(count), 0);
}

Communicator::Block Communicator::block(int64_t n, int r) const {
  const int64_t base = n / size_, extra = n % size_;
  const int64_t begin = r * base + std::min<int64_t>(r, extra);
  return {begin, begin + base + (r < extra ? 1 : 0)};
}

namespace {
// counts[0..size) then displacements[0..size) of the blocks of n elements.
std::vector<int> block_layout(const Communicator& c, int64_t n, const char* op) {
  std::vector<int> layout(2 * static_cast<size_t>(c.size()));
  for (int r = 0; r < c.size(); ++r) {
    const Communicator::Block b = c.block(n, r);
    layout[r] = checked_count(b.end - b.begin, op);
    layout[c.size() + r] = checked_count(b.begin, op);
  }
  return layout;
}
}  // namespace

CommRequest Communicator::ireduce_scatter_sum(const Tensor& in, Tensor& out) {
  if (on_gpu(in)) {
    TRIDENT_CHECK(out.dtype() == in.dtype() && out.numel() * size_ == in.numel(), "reduce_scatter_sum on the GPU: ",
                  in.numel(), " elements do not split into ", size_, " blocks of out's ", out.numel());
    DeviceCollectives& device = device_for("reduce_scatter_sum");  // groups of one have none: callers skip them
    {
      WatchdogScope watch(watchdog_, "reduce_scatter", description_);
      device.reduce_scatter_sum(in, out);
    }
    return device_request(CommOp::kReduceScatter, in.bytes());
  }
  const auto [type, sum] = mpi_sum(in, reductions_, "reduce_scatter_sum");
  const Block mine = block(in.numel(), rank_);
  TRIDENT_CHECK(out.dtype() == in.dtype() && out.numel() == mine.end - mine.begin, "reduce_scatter_sum: rank ",
                rank_, " owns ", mine.end - mine.begin, " of ", in.numel(), " elements, out has ", out.numel());
  std::vector<int> layout = block_layout(*this, in.numel(), "reduce_scatter_sum");
  std::vector<MPI_Request> requests(1);
  MPI_CHECK(MPI_Ireduce_scatter(in.raw(), out.raw(), layout.data(), type, sum, comm_, &requests[0]));
  account(CommOp::kReduceScatter, in.bytes(), 0);
  return CommRequest(this, CommOp::kReduceScatter, std::move(requests), std::move(layout));
}

void Communicator::reduce_scatter_sum(const Tensor& in, Tensor& out) { ireduce_scatter_sum(in, out).wait(); }

CommRequest Communicator::iall_gather_in_place(Tensor& x) {
  if (on_gpu(x)) {
    if (size_ == 1 || x.numel() == 0) return {};
    TRIDENT_CHECK(x.numel() % size_ == 0, "all_gather on the GPU: ", x.numel(), " elements do not split into ", size_,
                  " equal blocks");
    DeviceCollectives& device = device_for("all_gather");
    const int64_t n = x.numel() / size_;
    Tensor flat = x.flat();
    {
      WatchdogScope watch(watchdog_, "all_gather", description_);
      device.all_gather(flat.narrow(rank_ * n, (rank_ + 1) * n), flat);
    }
    return device_request(CommOp::kAllGather, x.bytes());
  }
  const MPI_Datatype type = mpi_element_type(x, "all_gather");
  std::vector<int> layout = block_layout(*this, x.numel(), "all_gather");
  std::vector<MPI_Request> requests(1);
  MPI_CHECK(MPI_Iallgatherv(MPI_IN_PLACE, 0, type, x.raw(), layout.data(), layout.data() + size_, type, comm_,
                            &requests[0]));
  account(CommOp::kAllGather, x.bytes(), 0);
  return CommRequest(this, CommOp::kAllGather, std::move(requests), std::move(layout));
}

void Communicator::all_gather_in_place(Tensor& x) { iall_gather_in_place(x).wait(); }

CommRequest Communicator::iall_to_all_bytes(const void* send, void* recv, int64_t bytes) {
  const int count = checked_count(bytes, "all_to_all");
  std::vector<MPI_Request> requests(1);
  MPI_CHECK(MPI_Ialltoall(send, count, MPI_BYTE, recv, count, MPI_BYTE, comm_, &requests[0]));
  account(CommOp::kAllToAll, static_cast<uint64_t>(bytes) * static_cast<uint64_t>(size_), 0);
  return CommRequest(this, CommOp::kAllToAll, std::move(requests));
}

void Communicator::all_to_all_bytes(const void* send, void* recv, int64_t bytes) {
  iall_to_all_bytes(send, recv, bytes).wait();
}

CommRequest Communicator::iall_gather_bytes(const void* send, void* recv, int64_t bytes) {
  const int count = checked_count(bytes, "all_gather");
  std::vector<MPI_Request> requests(1);
  MPI_CHECK(MPI_Iallgather(send, count, MPI_BYTE, recv, count, MPI_BYTE, comm_, &requests[0]));
  account(CommOp::kAllGather, static_cast<uint64_t>(bytes) * static_cast<uint64_t>(size_), 0);
  return CommRequest(this, CommOp::kAllGather, std::move(requests));
}

void Communicator::all_gather_bytes(const void* send, void* recv, int64_t bytes) {
  iall_gather_bytes(send, recv, bytes).wait();
}

void Communicator::broadcast(Tensor& x, int root) {
  if (on_gpu(x)) {
    if (size_ == 1) return;
    DeviceCollectives& device = device_for("broadcast");
    {
      WatchdogScope watch(watchdog_, "broadcast", description_);
      device.broadcast(x, root);
    }
    return device_request(CommOp::kBroadcast, x.bytes()).wait();
  }
  host_memory(x, "broadcast");
  broadcast(x.raw(), x.bytes(), root);
}

void Communicator::broadcast(void* data, size_t bytes, int root) {
  if (size_ == 1) return;
  WatchdogScope watch(watchdog_, "broadcast", description_);
  const double t0 = MPI_Wtime();
  MPI_CHECK(MPI_Bcast(data, checked_count(static_cast<int64_t>(bytes), "broadcast"), MPI_BYTE, root, comm_));
  account(CommOp::kBroadcast, bytes, MPI_Wtime() - t0);
}

CommRequest Communicator::isend(const Tensor& x, int peer, int tag) {
  if (on_gpu(x)) return device_exchange({{const_cast<Tensor*>(&x), peer, true, tag}});
  host_memory(x, "send");
  std::vector<MPI_Request> requests(1);
  MPI_CHECK(MPI_Isend(x.raw(), checked_count(static_cast<int64_t>(x.bytes()), "send"), MPI_BYTE, peer, tag, comm_,
                      &requests[0]));
  account(CommOp::kPointToPoint, x.bytes(), 0);
  return CommRequest(this, CommOp::kPointToPoint, std::move(requests));
}

CommRequest Communicator::irecv(Tensor& x, int peer, int tag) {
  if (on_gpu(x)) return device_exchange({{&x, peer, false, tag}});
  host_memory(x, "recv");
  std::vector<MPI_Request> requests(1);
  MPI_CHECK(MPI_Irecv(x.raw(), checked_count(static_cast<int64_t>(x.bytes()), "recv"), MPI_BYTE, peer, tag, comm_,
                      &requests[0]));
  return CommRequest(this, CommOp::kPointToPoint, std::move(requests));
}

void Communicator::send(const Tensor& x, int peer, int tag) { isend(x, peer, tag).wait(); }
void Communicator::recv(Tensor& x, int peer, int tag) { irecv(x, peer, tag).wait(); }

void Communicator::exchange(const std::vector<Transfer>& transfers) {
  if (transfers.empty()) return;
  if (on_gpu(*transfers.front().tensor)) return device_exchange(transfers).wait();
  std::vector<CommRequest> requests;
  for (const Transfer& t : transfers)  // receives first: a matching send then needs no buffering
    if (!t.send) requests.push_back(irecv(*t.tensor, t.peer, t.tag));
  for (const Transfer& t : transfers)
    if (t.send) requests.push_back(isend(*t.tensor, t.peer, t.tag));
  for (CommRequest& r : requests) r.wait();
}

CommRequest Communicator::device_exchange(const std::vector<Transfer>& transfers) {
  DeviceCollectives& device = device_for("exchange");
  std::vector<DeviceCollectives::Transfer> moves;
  uint64_t bytes = 0;
  for (const Transfer& t : transfers) {
    TRIDENT_CHECK(on_gpu(*t.tensor), "Communicator::exchange: host and GPU tensors in one exchange");
    moves.push_back({t.tensor, t.peer, t.send});
    if (t.send) bytes += t.tensor->bytes();
  }
  {
    WatchdogScope watch(watchdog_, "send_recv", description_);
    device.exchange(moves);
  }
  return device_request(CommOp::kPointToPoint, bytes);
}

void Communicator::all_to_all_rows(const Tensor& send, const std::vector<int64_t>& send_rows, Tensor& recv,
                                   const std::vector<int64_t>& recv_rows) {
  TRIDENT_CHECK(send_rows.size() == size_t(size_) && recv_rows.size() == size_t(size_),
                "all_to_all_rows: row counts for ", send_rows.size(), "/", recv_rows.size(), " ranks in a group of ",
                size_);
  TRIDENT_CHECK(send.dtype() == recv.dtype() && send.ndim() == 2 && recv.ndim() == 2 && send.dim(1) == recv.dim(1),
                "all_to_all_rows: send ", send.shape().str(), " and recv ", recv.shape().str(), " differ");
  int64_t sent = 0, received = 0;
  for (int r = 0; r < size_; ++r) sent += send_rows[size_t(r)], received += recv_rows[size_t(r)];
  TRIDENT_CHECK(sent <= send.dim(0) && received <= recv.dim(0), "all_to_all_rows: ", sent, " rows from ",
                send.dim(0), ", ", received, " into ", recv.dim(0));
  if (on_gpu(send) || on_gpu(recv)) {
    std::vector<Tensor> views;
    views.reserve(2 * size_t(size_));
    std::vector<Transfer> transfers;
    int64_t s_at = 0, r_at = 0;
    for (int r = 0; r < size_; ++r) {
      if (recv_rows[size_t(r)] > 0) {
        views.push_back(recv.narrow(r_at, r_at + recv_rows[size_t(r)]));
        transfers.push_back({&views.back(), r, false, 0});
      }
      if (send_rows[size_t(r)] > 0) {
        views.push_back(send.narrow(s_at, s_at + send_rows[size_t(r)]));
        transfers.push_back({&views.back(), r, true, 0});
      }
      s_at += send_rows[size_t(r)], r_at += recv_rows[size_t(r)];
    }
    if (!transfers.empty()) device_exchange(transfers).wait();
    return;
  }
  host_memory(send, "all_to_all_rows");
  host_memory(recv, "all_to_all_rows");
  const int64_t row_bytes = send.dim(1) * int64_t(dtype_size(send.dtype()));
  const size_t n = static_cast<size_t>(size_);
  std::vector<int> s_counts(n), s_displs(n), r_counts(n), r_displs(n);
  int64_t s_at = 0, r_at = 0;
  for (int r = 0; r < size_; ++r) {
    s_counts[size_t(r)] = checked_count(send_rows[size_t(r)] * row_bytes, "all_to_all_rows");
    r_counts[size_t(r)] = checked_count(recv_rows[size_t(r)] * row_bytes, "all_to_all_rows");
    s_displs[size_t(r)] = checked_count(s_at, "all_to_all_rows");
    r_displs[size_t(r)] = checked_count(r_at, "all_to_all_rows");
    s_at += send_rows[size_t(r)] * row_bytes, r_at += recv_rows[size_t(r)] * row_bytes;
  }
  WatchdogScope watch(watchdog_, "all_to_all_rows", description_);
  const double t0 = MPI_Wtime();
  MPI_CHECK(MPI_Alltoallv(send.raw(), s_counts.data(), s_displs.data(), MPI_BYTE, recv.raw(), r_counts.data(),
                          r_displs.data(), MPI_BYTE, comm_));
  account(CommOp::kAllToAll, static_cast<uint64_t>(s_at), MPI_Wtime() - t0);
}

void Communicator::barrier() {
  if (size_ == 1) return;
  WatchdogScope watch(watchdog_, "barrier", description_);
  MPI_CHECK(MPI_Barrier(comm_));
}

}  // namespace trident::dist
