// Central finite differences in fp64 for layer gradients: the loss is <out, R> (plus whatever
// the layer adds to it) for a fixed random R, and each parameter and input element is
// perturbed by +-h. Shared by the layer and MoE gradient tests.
#pragma once
#include <gtest/gtest.h>

#include <functional>

#include "test_util.hpp"
#include "trident/model/param_store.hpp"

namespace trident::model::gradient_check {

using testing::fill_uniform;

constexpr double kStep = 1e-6;
constexpr double kTolerance = 1e-6;
// Gradients that are zero in exact arithmetic (a key bias shifts all scores of a query equally)
// are compared on this absolute scale: finite differences carry ~1e-9 of rounding noise.
constexpr double kGradientFloor = 1e-2;

// Randomises every parameter (biases and norm weights too, so no gradient path is trivial).
inline void randomize(ParamStore& store, uint64_t seed) {
  Tensor all = store.flat_values();
  fill_uniform(all, seed, 0.5);
  for (auto& p : store.all())
    if (p->spec.init == Init::kOnes)
      for (int64_t i = 0; i < p->value.numel(); ++i) p->value.data<double>()[i] += 1.0;
}

// Checks d<out, R>/d(theta) for every parameter element and every element of `inputs`.
// run(backward) computes the layer's output and returns <out, R>; when backward is true it also
// accumulates parameter gradients and writes input gradients. The analytic gradients are
// snapshotted first, so finite-difference passes may touch the gradient buffers freely.
inline void check_gradients(Ops& ops, ParamStore& store, std::vector<std::pair<Tensor, Tensor>> inputs_and_grads,
                            const std::function<double(bool)>& run) {
  store.zero_grads(ops);
  for (auto& [x, dx] : inputs_and_grads) ops.fill(dx, 0.0);
  run(true);
  std::vector<std::vector<double>> param_grads, input_grads;
  for (auto& p : store.all()) param_grads.push_back(testing::to_vector(p->grad));
  for (auto& [x, dx] : inputs_and_grads) input_grads.push_back(testing::to_vector(dx));

  auto numeric = [&](double* value) {
    const double saved = *value;
    *value = saved + kStep;
    const double up = run(false);
    *value = saved - kStep;
    const double down = run(false);
    *value = saved;
    return (up - down) / (2 * kStep);
  };
  for (size_t k = 0; k < store.all().size(); ++k) {
    Parameter& p = *store.all()[k];
    std::vector<double> fd(param_grads[k].size());
    for (int64_t i = 0; i < p.value.numel(); ++i) fd[i] = numeric(p.value.data<double>() + i);
    EXPECT_LT(testing::relative_error(param_grads[k], fd, kGradientFloor), kTolerance) << "parameter " << p.spec.name;
  }
  for (size_t k = 0; k < inputs_and_grads.size(); ++k) {
    Tensor& x = inputs_and_grads[k].first;
    std::vector<double> fd(input_grads[k].size());
    for (int64_t i = 0; i < x.numel(); ++i) fd[i] = numeric(x.data<double>() + i);
    EXPECT_LT(testing::relative_error(input_grads[k], fd, kGradientFloor), kTolerance) << "input gradient";
  }
}

}  // namespace trident::model::gradient_check
