// Initialisation by global coordinates (docs/design.md section 2): every shard of a split weight
// holds exactly its slice of the unsplit weight, for splits along either dimension.
#include <gtest/gtest.h>

#include "trident/backend/cpu_ops.hpp"
#include "trident/model/param_store.hpp"

namespace trident::model {
namespace {

TEST(ParamStore, ShardsHoldTheSliceOfTheUnsplitWeight) {
  auto ops = make_cpu_ops(1);
  const Shape global{6, 10};
  ParamStore whole;
  whole.add({.name = "w", .global_shape = global, .init = Init::kNormal, .init_std = 0.5});
  whole.allocate(*ops, DType::kF32);
  whole.initialize(*ops, 99);
  const float* full = whole.at("w").value.data<float>();

  for (int dim : {0, 1}) {
    for (int parts : {2, 3}) {
      if (global[dim] % parts) continue;
      for (int index = 0; index < parts; ++index) {
        ParamStore shard;
        shard.add({.name = "w", .global_shape = global, .init = Init::kNormal, .init_std = 0.5, .split_dim = dim,
                   .split_parts = parts, .split_index = index});
        shard.allocate(*ops, DType::kF32);
        shard.initialize(*ops, 99);
        const Parameter& p = shard.at("w");
        const int64_t rows = p.local_shape[0], cols = p.local_shape[1];
        for (int64_t r = 0; r < rows; ++r)
          for (int64_t c = 0; c < cols; ++c) {
            const int64_t gr = dim == 0 ? index * rows + r : r, gc = dim == 1 ? index * cols + c : c;
            ASSERT_EQ(p.value.data<float>()[r * cols + c], full[gr * global[1] + gc])
                << "dim " << dim << " parts " << parts << " shard " << index;
          }
      }
    }
  }
}

TEST(ParamStore, FlatBuffersAndInitRules) {
  auto ops = make_cpu_ops(1);
  ParamStore store;
  store.add({.name = "a", .global_shape = Shape{3}, .init = Init::kOnes});
  store.add({.name = "b", .global_shape = Shape{2, 2}, .init = Init::kZeros});
  EXPECT_THROW(store.add({.name = "a", .global_shape = Shape{1}}), Error);
  store.allocate(*ops, DType::kF32);
  store.initialize(*ops, 1);
  EXPECT_EQ(store.numel(), 7);
  EXPECT_EQ(store.at("b").offset, 3);
  EXPECT_EQ(store.flat_values().data<float>()[2], 1.0f);
  EXPECT_EQ(store.flat_values().data<float>()[3], 0.0f);
  store.at("b").grad.data<float>()[0] = 2.0f;
  EXPECT_EQ(store.flat_grads().data<float>()[3], 2.0f);
}

}  // namespace
}  // namespace trident::model
