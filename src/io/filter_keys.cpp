// The encryption filter's key registry: master keys by id, the data keys unwrapped from them,
// and the chunks that failed.
//
// With the filter's per-thread placeholder switch (PlaceholderScope), the only global mutable
// state in trident, and why: HDF5 calls a filter through a C function pointer with nothing but
// the dataset's cd_values (no user pointer), so the master key that opens a dataset's wrapped
// data key, and what to do with a chunk that fails, can only be found in process-wide state.
// Scopes (FilterKeyScope, held by the checkpoint code for one read or write) put keys in and take
// them out again; the mutex covers a writer thread (checkpoint.async) and the main thread.
#include <openssl/crypto.h>

#include <algorithm>
#include <map>
#include <mutex>

#include "encryption_filter.hpp"
#include "trident/core/error.hpp"

namespace trident::io::crypt {

namespace {

constexpr size_t kFailuresKept = 8;

struct Entry {
  security::MasterKey key;
  OnBadChunk mode = OnBadChunk::kFail;
  int scopes = 0;
  std::map<security::WrappedKey, security::Key> data_keys;  // unwrapped, per file
};

struct Registry {
  std::mutex mutex;
  std::map<std::string, Entry> entries;  // by key id (hex)
  std::vector<ChunkFailure> failures;
  size_t failures_seen = 0;
  KeySource fallback;
  bool fallback_tried = false;
  std::optional<security::MasterKey> fallback_key;
  std::string fallback_why;
};

Registry& registry_state() {
  static Registry r;
  return r;
}

void wipe(security::Key& k) { OPENSSL_cleanse(k.data(), k.size()); }

void wipe(Entry& e) {
  OPENSSL_cleanse(e.key.bytes.data(), e.key.bytes.size());
  for (auto& [wrapped, key] : e.data_keys) wipe(key);
  e.data_keys.clear();
}

}  // namespace

FilterKeyScope::FilterKeyScope(const security::MasterKey& key, OnBadChunk mode) : id_(key.id) {
  (void)key_id_bytes(id_);  // a malformed id is a bug of the caller: ConfigError here, not in the filter
  Registry& r = registry_state();
  std::lock_guard lock(r.mutex);
  Entry& e = r.entries[id_];
  if (e.scopes++ == 0) {
    e.key = key;
    e.mode = mode;
  } else if (mode == OnBadChunk::kRecord) {
    e.mode = mode;  // any recording scope makes the key's failures recorded
  }
}

FilterKeyScope::~FilterKeyScope() {
  Registry& r = registry_state();
  std::lock_guard lock(r.mutex);
  const auto it = r.entries.find(id_);
  if (it == r.entries.end() || --it->second.scopes > 0) return;
  wipe(it->second);
  r.entries.erase(it);
  if (r.entries.empty()) {  // the last scope: nothing is left for a reader to take
    r.failures.clear();
    r.failures_seen = 0;
  }
}

std::vector<ChunkFailure> FilterKeyScope::take_failures() const {
  Registry& r = registry_state();
  std::lock_guard lock(r.mutex);
  std::vector<ChunkFailure> out;
  out.swap(r.failures);
  if (r.failures_seen > 1) out.front().why += detail::concat(" (one of ", r.failures_seen, " chunks that failed)");
  r.failures_seen = 0;
  return out;
}

void set_fallback_key_source(KeySource source) {
  Registry& r = registry_state();
  std::lock_guard lock(r.mutex);
  r.fallback = std::move(source);
}

namespace registry {

Lookup data_key(const KeyId& key_id, const security::WrappedKey& wrapped) {
  Registry& r = registry_state();
  std::lock_guard lock(r.mutex);
  const std::string id = security::to_hex(key_id);
  Lookup out;
  Entry* entry = nullptr;
  if (const auto it = r.entries.find(id); it != r.entries.end()) entry = &it->second;
  if (!entry && r.fallback) {  // the plugin: TRIDENT_KEY_FILE, read once
    if (!r.fallback_tried) {
      r.fallback_tried = true;
      r.fallback_key = r.fallback(&r.fallback_why);
    }
    if (r.fallback_key && r.fallback_key->id == id) {
      Entry& e = r.entries[id];
      e.key = *r.fallback_key;
      e.scopes = 1;  // held for the life of the process
      entry = &e;
    } else {
      out.why = r.fallback_key ? detail::concat("the key does not match: this dataset was encrypted with key id ", id,
                                                ", the key file holds key id ", r.fallback_key->id)
                               : r.fallback_why;
      return out;
    }
  }
  if (!entry) {
    // No key of this id: a recording scope of another key still wants to hear of it.
    const bool recording = std::any_of(r.entries.begin(), r.entries.end(),
                                       [](const auto& e) { return e.second.mode == OnBadChunk::kRecord; });
    out.mode = recording ? OnBadChunk::kRecord : OnBadChunk::kFail;
    out.why = detail::concat("no key of id ", id, " is given (the key does not match)");
    return out;
  }
  out.mode = entry->mode;
  if (const auto cached = entry->data_keys.find(wrapped); cached != entry->data_keys.end()) {
    out.data_key = cached->second;
    return out;
  }
  try {
    const security::Key k = security::unwrap_key(entry->key, wrapped, "the dataset's data key");
    entry->data_keys.emplace(wrapped, k);
    out.data_key = k;
  } catch (const std::exception& e) {
    out.why = e.what();
  }
  return out;
}

void record(ChunkFailure failure) {
  Registry& r = registry_state();
  std::lock_guard lock(r.mutex);
  ++r.failures_seen;
  if (r.failures.size() < kFailuresKept) r.failures.push_back(std::move(failure));
}

}  // namespace registry

}  // namespace trident::io::crypt
