// Radix selection over the ranks (rank_select.hpp).
#include "rank_select.hpp"

namespace trident::data {

std::vector<uint64_t> kth_smallest(const std::vector<uint64_t>& values, const std::vector<int>& group,
                                   const std::vector<int64_t>& want, const PrepComm& comm) {
  const size_t groups = want.size();
  std::vector<uint64_t> prefix(groups, 0);
  std::vector<int64_t> rank = want;  // rank of the wanted value among those matching prefix
  for (int round = 0; round < 8; ++round) {
    const int shift = 56 - 8 * round;
    std::vector<int64_t> histogram(groups * 256, 0);
    for (size_t i = 0; i < values.size(); ++i) {
      if (group[i] < 0 || want[static_cast<size_t>(group[i])] == 0) continue;
      const size_t g = static_cast<size_t>(group[i]);
      const bool matches = round == 0 || (values[i] >> (shift + 8)) == (prefix[g] >> (shift + 8));
      if (matches) ++histogram[g * 256 + ((values[i] >> shift) & 255)];
    }
    comm.sum(histogram);
    for (size_t g = 0; g < groups; ++g) {
      if (want[g] == 0) continue;
      int64_t below = 0;
      size_t digit = 0;
      while (digit < 255 && below + histogram[g * 256 + digit] < rank[g]) below += histogram[g * 256 + digit++];
      rank[g] -= below;
      prefix[g] |= static_cast<uint64_t>(digit) << shift;
    }
  }
  return prefix;
}

}  // namespace trident::data
