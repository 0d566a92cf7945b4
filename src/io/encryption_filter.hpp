// The trident AES-256-GCM HDF5 filter (docs/design.md section 7, encrypted checkpoints) and the
// key registry it reads its master keys from. Shared by trident_io (registered in-process) and
// the plugin build/hdf5_plugins/libtrident_h5crypt.so (h5py, h5dump); it calls no HDF5
// function, so the plugin resolves no symbol of whichever libhdf5 loads it.
//
// cd_values (kParameterWords 32-bit words; byte strings packed 4 to a word, little-endian):
//   [0]       kFilterVersion (1)
//   [1]       plain chunk bytes (what HDF5 hands the filter to encode)
//   [2, 4)    key id: the 8 bytes of the master key's id (security::MasterKey::id, 16 hex digits)
//   [4, 19)   the file's data key wrapped under the master key (security::wrap_key, 60 bytes)
//   [19, 23)  file id (16 random bytes, one per file)
//   [23, 25)  dataset id: the first 8 bytes of SHA-256(dataset name)
// A stored chunk: nonce (12 random bytes) | AES-256-GCM ciphertext (plain chunk bytes) | tag (16),
// with associated data file id | dataset id | uint64 plain chunk bytes (little-endian), so a
// chunk moved to another dataset or file fails its tag. (Moves within a dataset are found by
// the per-tensor checksums every load verifies.) A placeholder (PlaceholderScope) is nonce | tag
// (28 bytes), sealing no ciphertext with the plain size's top bit set: a chunk of zeros.
#pragma once
#include <hdf5.h>

#include <array>
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "trident/security/crypto.hpp"

namespace trident::io::crypt {

inline constexpr H5Z_filter_t kFilterId = 32769;  // private-use range 32768-65535
inline constexpr const char* kFilterName = "trident AES-256-GCM";
inline constexpr unsigned kFilterVersion = 1;
inline constexpr size_t kParameterWords = 25;
inline constexpr size_t kNonceBytes = 12, kTagBytes = 16, kChunkOverhead = kNonceBytes + kTagBytes;

using KeyId = std::array<unsigned char, 8>;
using DatasetId = std::array<unsigned char, 8>;
using Nonce = std::array<unsigned char, kNonceBytes>;

// What every encrypted dataset of one file carries (its cd_values), but for the dataset id.
struct FileSecret {
  KeyId key_id{};
  security::WrappedKey wrapped{};
  security::FileId file{};
};

// The 8 bytes of a key id written as 16 hex digits (ConfigError for anything else).
KeyId key_id_bytes(const std::string& hex);
DatasetId dataset_id(const std::string& dataset);
std::vector<unsigned> filter_parameters(const FileSecret& secret, const std::string& dataset, size_t chunk_bytes);

// The filter class for H5Zregister and H5PLget_plugin_info.
const H5Z_class2_t* filter_class();

// What the filter does with a chunk that fails its tag (or cannot be sealed). kFail: returns
// failure (HDF5 then fails the read; the plugin's mode). kRecord: hands HDF5 zeros instead and
// records the failure, to be taken by the reader after its collective H5Dread: a filter failing
// on one rank only would leave that rank out of the rest of a collective transfer (HDF5's
// filtered collective I/O has collective steps after the filter), so trident's ranks always
// finish the transfer and then agree on the failure.
enum class OnBadChunk { kFail, kRecord };

// Placeholders. HDF5 1.10 writes a sealed fill chunk to every chunk of a filtered dataset of a
// parallel file when the dataset is created (early allocation, forced), which the data then
// overwrites: sealing that fill chunk as a 28-byte placeholder instead saves writing the whole
// file twice (measured: 2x the bytes written). While a kSeal scope is alive on a thread, the
// filter seals placeholders; while a kOpen scope is, it opens them as zeros (HDF5 reads one back
// only to merge a partly written chunk, during the write). Anywhere else a placeholder is a chunk
// that was never written, refused like a failed tag: a complete file holds none.
enum class Placeholders { kSeal, kOpen };
class PlaceholderScope {
 public:
  explicit PlaceholderScope(Placeholders what);
  ~PlaceholderScope();
  PlaceholderScope(const PlaceholderScope&) = delete;
  PlaceholderScope& operator=(const PlaceholderScope&) = delete;

 private:
  Placeholders what_;
};

// A chunk the filter could not open (or seal): its stored nonce (to find it in the file) and why
// ("fails its authentication tag (...)": a sentence with "a chunk" before it).
struct ChunkFailure {
  Nonce nonce{};
  size_t stored_bytes = 0;
  std::string why;
};

// While alive, the filter finds `key` by its id (RAII over a registry entry; several scopes of
// one key share it). The data keys the filter unwraps are cached in the entry and wiped with it.
class FilterKeyScope {
 public:
  FilterKeyScope(const security::MasterKey& key, OnBadChunk mode);
  ~FilterKeyScope();
  FilterKeyScope(const FilterKeyScope&) = delete;
  FilterKeyScope& operator=(const FilterKeyScope&) = delete;

  const std::string& key_id() const { return id_; }
  // The chunks of this key that failed since the last call (at most a few kept, all counted).
  std::vector<ChunkFailure> take_failures() const;

 private:
  std::string id_;
};

// The plugin's source of a master key when no scope holds the id a dataset asks for (it reads
// TRIDENT_KEY_FILE); registered once, for the life of the process. Returns the key, or a
// message saying why there is none.
using KeySource = std::function<std::optional<security::MasterKey>(std::string* why)>;
void set_fallback_key_source(KeySource source);

// The registry as the filter sees it (filter_keys.cpp).
namespace registry {
struct Lookup {
  std::optional<security::Key> data_key;  // absent: no key of that id, or it does not open `wrapped`
  OnBadChunk mode = OnBadChunk::kFail;
  std::string why;                        // when there is no data key
};
Lookup data_key(const KeyId& key_id, const security::WrappedKey& wrapped);
void record(ChunkFailure failure);
}  // namespace registry

}  // namespace trident::io::crypt
