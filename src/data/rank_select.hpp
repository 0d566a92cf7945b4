// Exact order statistics over the ranks of a prep: the k-th smallest value of each group of
// items spread over every rank, by radix selection on 8-bit digits (8 rounds, one sum of
// 256 counters per group each), so no rank gathers the values. Length balance and the
// perplexity percentile use it; the result depends on the values alone, not on the rank count.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/data/prep_comm.hpp"

namespace trident::data {

// For each group g with want[g] >= 1: the want[g]-th smallest (1-based) of values[i] over the
// items i of every rank with group[i] == g (group -1: no group); 0 where want[g] is 0.
// Collective; want must be the same on every rank and at most the group's size.
std::vector<uint64_t> kth_smallest(const std::vector<uint64_t>& values, const std::vector<int>& group,
                                   const std::vector<int64_t>& want, const PrepComm& comm);

}  // namespace trident::data
