// mpi-ranks: 2 4
// NCCL communicators made from MPI groups, checked like the MPI ones: all-reduce, reduce-scatter,
// all-gather, broadcast and grouped point-to-point deliver the expected values (odd sizes, fp32
// and bf16) for the world and for split groups. Skipped, saying why, without a GPU per rank.
#include <gtest/gtest.h>
#include <mpi.h>

#include <string>
#include <vector>

#include "trident/backend/cpu_ops.hpp"
#include "trident/backend/cuda_ops.hpp"
#include "trident/dist/nccl_comm.hpp"

namespace trident::dist {
namespace {

int world(int* rank = nullptr) {
  int n = 1, r = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  if (rank) *rank = r;
  return n;
}

// A GPU for this rank (ranks share devices round-robin when there are fewer), or why not.
struct Gpu {
  std::unique_ptr<Ops> ops;
  std::string why;
};
Gpu gpu_for_rank() {
  Gpu g;
  const int devices = cuda_device_count(&g.why);
  // Every rank must agree to skip, or the others would wait in a collective.
  int have = devices > 0 && nccl_built(), all = 0;
  MPI_Allreduce(&have, &all, 1, MPI_INT, MPI_MIN, MPI_COMM_WORLD);
  if (!all) {
    if (g.why.empty()) g.why = nccl_built() ? "a rank has no GPU" : "built without CUDA";
    return g;
  }
  int rank = 0;
  world(&rank);
  g.ops = make_cuda_ops(rank % devices);
  return g;
}

Tensor on_device(Ops& ops, const std::vector<float>& values, DType dtype) {
  Tensor host = Tensor::zeros(Shape{int64_t(values.size())}, DType::kF32);
  std::copy(values.begin(), values.end(), host.data<float>());
  Tensor dev = ops.zeros(Shape{int64_t(values.size())}, dtype);
  ops.copy(host, dev);
  return dev;
}

std::vector<float> to_host(Ops& ops, const Tensor& dev) {
  Tensor host = Tensor::zeros(Shape{dev.numel()}, DType::kF32);
  ops.copy(dev, host);
  return {host.data<float>(), host.data<float>() + host.numel()};
}

// Values every rank can predict: small integers, exact in bf16 and in sums of a few ranks.
float value(int rank, int64_t i) { return float((rank + 1) * 3 + i % 17); }

TEST(Nccl, CollectivesMatchTheirDefinition) {
  Gpu g = gpu_for_rank();
  if (!g.ops) GTEST_SKIP() << "no GPU: " << g.why;
  int rank = 0;
  const int n = world(&rank);
  void* stream = cuda_stream(*g.ops);
  auto comm = NcclComm::create(MPI_COMM_WORLD, "world");
  for (DType dtype : {DType::kF32, DType::kBF16}) {
    for (int64_t len : {int64_t(1), int64_t(37), int64_t(4099)}) {
      std::vector<float> mine(static_cast<size_t>(len * n));
      for (int64_t i = 0; i < len * n; ++i) mine[size_t(i)] = value(rank, i);
      // all-reduce
      Tensor x = on_device(*g.ops, mine, dtype);
      comm->all_reduce_sum(x, stream);
      comm->wait(stream, "all_reduce");
      std::vector<float> got = to_host(*g.ops, x);
      for (int64_t i = 0; i < len * n; ++i) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += value(r, i);
        ASSERT_EQ(got[size_t(i)], want) << "all_reduce " << dtype_name(dtype) << " len " << len << " at " << i;
      }
      // reduce-scatter: this rank's block of the sum
      Tensor in = on_device(*g.ops, mine, dtype);
      Tensor block = g.ops->zeros(Shape{len}, dtype);
      comm->reduce_scatter_sum(in, block, stream);
      comm->wait(stream, "reduce_scatter");
      got = to_host(*g.ops, block);
      for (int64_t i = 0; i < len; ++i) {
        float want = 0;
        for (int r = 0; r < n; ++r) want += value(r, rank * len + i);
        ASSERT_EQ(got[size_t(i)], want) << "reduce_scatter at " << i;
      }
      // all-gather: every rank's first len values, in rank order
      Tensor part = on_device(*g.ops, std::vector<float>(mine.begin(), mine.begin() + len), dtype);
      Tensor all = g.ops->zeros(Shape{len * n}, dtype);
      comm->all_gather(part, all, stream);
      comm->wait(stream, "all_gather");
      got = to_host(*g.ops, all);
      for (int r = 0; r < n; ++r)
        for (int64_t i = 0; i < len; ++i) ASSERT_EQ(got[size_t(r * len + i)], value(r, i)) << "all_gather";
      // broadcast from the last rank
      Tensor b = on_device(*g.ops, mine, dtype);
      comm->broadcast(b, n - 1, stream);
      comm->wait(stream, "broadcast");
      got = to_host(*g.ops, b);
      for (int64_t i = 0; i < len * n; ++i) ASSERT_EQ(got[size_t(i)], value(n - 1, i)) << "broadcast";
    }
  }
  comm->shutdown();
}

// Pipeline-style: every rank sends to the next and receives from the previous in one group
// (no deadlock whatever the order), over a split communicator as the pp groups are made.
TEST(Nccl, GroupedSendReceiveRingOnASplitGroup) {
  Gpu g = gpu_for_rank();
  if (!g.ops) GTEST_SKIP() << "no GPU: " << g.why;
  int rank = 0;
  const int n = world(&rank);
  MPI_Comm half;
  MPI_Comm_split(MPI_COMM_WORLD, rank % 2, rank, &half);
  int r = 0, size = 1;
  MPI_Comm_rank(half, &r);
  MPI_Comm_size(half, &size);
  if (size > 1) {
    void* stream = cuda_stream(*g.ops);
    auto comm = NcclComm::create(half, "half " + std::to_string(rank % 2));
    const int64_t len = 1000 + 3;
    std::vector<float> mine(static_cast<size_t>(len));
    for (int64_t i = 0; i < len; ++i) mine[size_t(i)] = value(r, i);
    Tensor out = on_device(*g.ops, mine, DType::kF32);
    Tensor in = g.ops->zeros(Shape{len}, DType::kF32);
    comm->exchange({{&out, (r + 1) % size, true}, {&in, (r + size - 1) % size, false}}, stream);
    comm->wait(stream, "ring exchange");
    std::vector<float> got = to_host(*g.ops, in);
    for (int64_t i = 0; i < len; ++i) ASSERT_EQ(got[size_t(i)], value((r + size - 1) % size, i));
    comm->shutdown();
  }
  MPI_Comm_free(&half);
  (void)n;
}

}  // namespace
}  // namespace trident::dist
