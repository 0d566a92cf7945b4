// The counter-based RNG (known-answer values, independence from call order) and tensor views.
#include <gtest/gtest.h>

#include <cmath>
#include <set>

#include "trident/core/error.hpp"
#include "trident/core/rng.hpp"
#include "trident/core/tensor.hpp"

namespace trident {
namespace {

// Known answer shared with utils/make_fixtures.py's independent numpy port of the generator.
TEST(Rng, KnownAnswers) {
  const uint64_t key = rng_key(1234, "embed.tok.weight");
  EXPECT_EQ(key, 0xa55818fbd13c973bull);
  EXPECT_NEAR(rng_normal(key, 0), -0.15170354155694063, 1e-15);
  EXPECT_NEAR(rng_normal(key, 1), 0.2580738811058567, 1e-15);
  EXPECT_NEAR(rng_normal(key, 2), 0.5582119789100516, 1e-15);
  EXPECT_NEAR(rng_normal(key, 3), -0.36203248733341725, 1e-15);
}

TEST(Rng, NormalMomentsAndDistinctKeys) {
  const uint64_t key = rng_key(7, "w");
  double sum = 0, sq = 0;
  const int n = 200000;
  for (int i = 0; i < n; ++i) {
    const double z = rng_normal(key, static_cast<uint64_t>(i));
    sum += z;
    sq += z * z;
  }
  EXPECT_NEAR(sum / n, 0.0, 0.01);
  EXPECT_NEAR(sq / n, 1.0, 0.01);
  EXPECT_NE(rng_key(7, "w"), rng_key(8, "w"));
  EXPECT_NE(rng_key(7, "w"), rng_key(7, "v"));
  // Streams give independent values for the same index.
  EXPECT_NE(rng_block(key, 5, 0)[0], rng_block(key, 5, 1)[0]);
}

TEST(Rng, UniformIsOpenInterval) {
  const uint64_t key = rng_key(1, "u");
  for (uint64_t i = 0; i < 10000; ++i) {
    const double u = rng_uniform(key, i);
    EXPECT_GT(u, 0.0);
    EXPECT_LT(u, 1.0);
  }
}

TEST(Tensor, ViewsShareStorage) {
  Tensor t = Tensor::zeros(Shape{4, 3}, DType::kF32);
  EXPECT_EQ(reinterpret_cast<uintptr_t>(t.raw()) % 64, 0u);
  Tensor rows = t.narrow(1, 3);
  EXPECT_EQ(rows.shape(), (Shape{2, 3}));
  rows.data<float>()[0] = 5.0f;
  EXPECT_EQ(t.data<float>()[3], 5.0f);
  Tensor flat = t.view(Shape{12});
  EXPECT_EQ(flat.data<float>()[3], 5.0f);
  EXPECT_THROW(t.view(Shape{5}), Error);
  EXPECT_THROW(t.narrow(2, 5), Error);
  EXPECT_THROW(t.data<double>(), Error);
  EXPECT_EQ(t.shape().str(), "(4, 3)");
}

TEST(Tensor, ZerosAreZero) {
  Tensor t = Tensor::zeros(Shape{1000}, DType::kF64);
  for (int64_t i = 0; i < t.numel(); ++i) ASSERT_EQ(t.data<double>()[i], 0.0);
}

}  // namespace
}  // namespace trident
