// The two hash tables on the BPE encoding path, open-addressed and allocation-free per lookup:
// merge ranks keyed by a pair of ids, and a cache from pre-token bytes to their ids.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data::detail {

class PairRankMap {
 public:
  struct Entry {
    uint64_t key = kEmpty;
    uint32_t rank = 0;
    uint32_t result = 0;
  };
  static constexpr uint64_t kEmpty = ~uint64_t{0};

  explicit PairRankMap(size_t entries) {
    size_t capacity = 16;
    while (capacity < entries * 2) capacity *= 2;
    slots_.resize(capacity);
    mask_ = capacity - 1;
  }
  // A later insert of the same pair replaces the earlier one (as `tokenizers` does).
  void insert(uint32_t left, uint32_t right, uint32_t rank, uint32_t result) {
    Entry& e = slot(key_of(left, right));
    e = {key_of(left, right), rank, result};
  }
  const Entry* find(uint32_t left, uint32_t right) const {
    const uint64_t key = key_of(left, right);
    for (size_t i = hash(key);; i = (i + 1) & mask_) {
      const Entry& e = slots_[i];
      if (e.key == key) return &e;
      if (e.key == kEmpty) return nullptr;
    }
  }

 private:
  static uint64_t key_of(uint32_t left, uint32_t right) { return (uint64_t{left} << 32) | right; }
  size_t hash(uint64_t key) const { return static_cast<size_t>((key * 0x9E3779B97F4A7C15ull) >> 20) & mask_; }
  Entry& slot(uint64_t key) {
    size_t i = hash(key);
    while (slots_[i].key != kEmpty && slots_[i].key != key) i = (i + 1) & mask_;
    return slots_[i];
  }
  std::vector<Entry> slots_;
  size_t mask_ = 0;
};

// Pre-token bytes -> ids. Bounded: when half full it starts over (text keeps repeating its
// common words, so they come back at once).
class PretokenCache {
 public:
  static constexpr size_t kMaxWordBytes = 256;

  PretokenCache() : slots_(kSlots) {}

  // Appends the cached ids of `word` to `ids`; false if it is not cached.
  bool find(std::string_view word, size_t hash, std::vector<uint32_t>& ids) const {
    for (size_t i = hash & (kSlots - 1);; i = (i + 1) & (kSlots - 1)) {
      const Slot& s = slots_[i];
      if (s.key_length == 0) return false;
      if (s.hash == static_cast<uint32_t>(hash) && std::string_view(keys_.data() + s.key_offset, s.key_length) == word) {
        ids.insert(ids.end(), ids_.begin() + s.ids_offset, ids_.begin() + s.ids_offset + s.ids_length);
        return true;
      }
    }
  }
  void insert(std::string_view word, size_t hash, const uint32_t* ids, size_t count) {
    if (word.empty() || word.size() > kMaxWordBytes || count > 0xFFFF) return;
    if (size_ >= kSlots / 2 || keys_.size() > kMaxArenaBytes) clear();
    size_t i = hash & (kSlots - 1);
    while (slots_[i].key_length != 0) i = (i + 1) & (kSlots - 1);
    slots_[i] = {static_cast<uint32_t>(hash), static_cast<uint32_t>(keys_.size()), static_cast<uint32_t>(ids_.size()),
                 static_cast<uint16_t>(word.size()), static_cast<uint16_t>(count)};
    keys_.append(word);
    ids_.insert(ids_.end(), ids, ids + count);
    ++size_;
  }

 private:
  // 2^17 slots of 16 bytes: 2 MiB, small enough to stay mostly in cache.
  static constexpr size_t kSlots = size_t{1} << 17;
  static constexpr size_t kMaxArenaBytes = size_t{32} << 20;
  struct Slot {
    uint32_t hash = 0;  // low bits of the word's hash
    uint32_t key_offset = 0, ids_offset = 0;
    uint16_t key_length = 0;  // 0: empty slot
    uint16_t ids_length = 0;  // below 2^16 (checked on insert)
  };
  void clear() {
    std::fill(slots_.begin(), slots_.end(), Slot{});
    keys_.clear();
    ids_.clear();
    size_ = 0;
  }
  std::vector<Slot> slots_;
  std::string keys_;           // the words, back to back
  std::vector<uint32_t> ids_;  // their ids, back to back
  size_t size_ = 0;
};

}  // namespace trident::data::detail
