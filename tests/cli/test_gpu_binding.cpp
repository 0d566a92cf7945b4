// Which GPU a rank takes (device_for_rank) and the check that no two ranks of a node share one
// (first_shared_gpu), for the launchers' two ways of showing GPUs: every rank sees all of the
// node's (mpirun), or each rank sees only its own (Slurm --gpus-per-task=1).
#include <gtest/gtest.h>

#include "../../src/cli/backend_select.hpp"

namespace trident::cli {
namespace {

TEST(GpuBinding, EveryRankSeesAllGpusTakesItsLocalIndex) {
  for (int r = 0; r < 4; ++r) EXPECT_EQ(device_for_rank({r, 4}, 4), r);
  EXPECT_EQ(device_for_rank({1, 2}, 8), 1);  // more GPUs than ranks
}

TEST(GpuBinding, EachRankSeesItsOwnGpuTakesDeviceZero) {
  for (int r = 0; r < 8; ++r) EXPECT_EQ(device_for_rank({r, 8}, 1), 0);
}

TEST(GpuBinding, TooFewGpusWrapAroundAndAreThenReportedAsShared) {
  std::vector<std::string> ids;
  const std::vector<std::string> node = {"GPU-a", "GPU-b", "GPU-c", "GPU-d"};
  for (int r = 0; r < 8; ++r) ids.push_back(node[size_t(device_for_rank({r, 8}, 4))]);
  EXPECT_EQ(first_shared_gpu(ids), std::make_pair(0, 4));
}

TEST(GpuBinding, SharedGpusAreFoundAndRanksWithoutOneIgnored) {
  EXPECT_EQ(first_shared_gpu({"GPU-a", "GPU-b", "GPU-c"}), std::make_pair(-1, -1));
  EXPECT_EQ(first_shared_gpu({"GPU-a", "GPU-b", "GPU-b"}), std::make_pair(1, 2));
  EXPECT_EQ(first_shared_gpu({"", ""}), std::make_pair(-1, -1));  // no GPU anywhere: the CPU
  // One GPU seen by both ranks of a one-GPU machine, with no per-rank binding.
  EXPECT_EQ(first_shared_gpu({"GPU-x", "GPU-x"}), std::make_pair(0, 1));
}

}  // namespace
}  // namespace trident::cli
