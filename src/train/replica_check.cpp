// Parameter digests compared across replicas (replica_check.hpp).
#include "trident/train/replica_check.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include "trident/core/timer.hpp"

namespace trident::train {

namespace {

// A 64-bit digest of a byte range: four independent multiply-xorshift lanes over 8-byte words
// (a few GB/s on one core), each word mixed with its position so that swapped or shifted values
// do not cancel; the tail zero-padded. Any one flipped bit changes it.
uint64_t mix_bytes(const void* data, int64_t bytes, uint64_t h) {
  const char* p = static_cast<const char*>(data);
  constexpr uint64_t kMul = 0x9E3779B97F4A7C15ull, kMul2 = 0xBF58476D1CE4E5B9ull;
  uint64_t lane[4] = {h, h ^ 1, h ^ 2, h ^ 3};
  const int64_t words = bytes / 8;
  int64_t i = 0;
  for (; i + 4 <= words; i += 4)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + 8 * (i + k), 8);
      lane[k] = ((lane[k] ^ w) + uint64_t(i + k)) * kMul;
      lane[k] ^= lane[k] >> 31;
    }
  for (; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, p + 8 * i, 8);
    lane[0] = ((lane[0] ^ w) + uint64_t(i)) * kMul;
    lane[0] ^= lane[0] >> 31;
  }
  uint64_t tail = 0;
  std::memcpy(&tail, p + 8 * words, size_t(bytes - 8 * words));
  uint64_t out = (lane[0] ^ tail ^ uint64_t(bytes)) * kMul2;
  for (int k = 1; k < 4; ++k) out = ((out ^ (out >> 29)) + lane[k]) * kMul2;
  return out ^ (out >> 32);
}

// Members whose digest differs from the group's majority; every member when no digest holds
// more than half the group (two replicas that disagree: either may be wrong).
std::vector<int> deviants(const std::vector<uint64_t>& digests) {
  std::map<uint64_t, int> votes;
  for (uint64_t d : digests) ++votes[d];
  if (votes.size() == 1) return {};
  const auto top = std::max_element(votes.begin(), votes.end(), [](auto& a, auto& b) { return a.second < b.second; });
  std::vector<int> out;
  for (size_t i = 0; i < digests.size(); ++i)
    if (2 * top->second <= int(digests.size()) || digests[i] != top->first) out.push_back(int(i));
  return out;
}

}  // namespace

std::string ReplicaVerdict::describe() const {
  std::string out;
  for (size_t i = 0; i < ranks.size(); ++i)
    out += (i ? ", rank " : "rank ") + std::to_string(ranks[i]) + " on " + hosts[i];
  return out;
}

ReplicaCheck::ReplicaCheck(model::ParamStore& params, Ops& ops, dist::Topology& topology)
    : params_(params), ops_(ops), topology_(topology), hosts_(topology.host_names()) {
  for (const auto& p : params_.all()) has_experts_ = has_experts_ || p->spec.expert;
}

void ReplicaCheck::digest(uint64_t out[2]) {
  out[0] = out[1] = 0x6A09E667F3BCC908ull;
  for (const auto& p : params_.all()) {
    Tensor values = p->value.flat();
    if (values.device() != Device::kCPU) {  // one parameter at a time through a host buffer
      if (!host_.defined() || host_.numel() < values.numel() || host_.dtype() != values.dtype())
        host_ = Tensor::zeros(Shape{values.numel()}, values.dtype());
      Tensor staged = host_.narrow(0, values.numel());
      ops_.copy(values, staged);
      values = staged;
    }
    uint64_t& h = out[p->spec.expert ? 1 : 0];
    h = mix_bytes(values.raw(), int64_t(values.bytes()), h ^ uint64_t(p->offset));
  }
}

ReplicaVerdict ReplicaCheck::run() {
  Stopwatch watch;
  uint64_t mine[2];
  digest(mine);
  // Each group's digests, then whether this rank deviates in either.
  int deviates = 0;
  dist::Communicator* groups[2] = {&topology_.dp(), has_experts_ ? &topology_.edp() : nullptr};
  for (int k = 0; k < 2; ++k) {
    if (!groups[k] || groups[k]->size() == 1) continue;
    std::vector<uint64_t> digests(size_t(groups[k]->size()));
    groups[k]->all_gather_bytes(&mine[k], digests.data(), sizeof(uint64_t));
    const std::vector<int> off = deviants(digests);
    if (std::find(off.begin(), off.end(), groups[k]->rank()) != off.end()) deviates = 1;
  }
  std::vector<int> flags(size_t(topology_.world_size()));
  topology_.world().all_gather_bytes(&deviates, flags.data(), sizeof(int));
  ReplicaVerdict v;
  for (int r = 0; r < topology_.world_size(); ++r)
    if (flags[size_t(r)]) v.ranks.push_back(r), v.hosts.push_back(hosts_[size_t(r)]);
  v.agree = v.ranks.empty();
  double seconds = watch.seconds();
  topology_.world().all_reduce_max(&seconds, 1);
  v.seconds = seconds;
  return v;
}

}  // namespace trident::train
