// The AES-256-GCM HDF5 filter: cd_values in and out, and the filter callback that seals and
// opens one chunk (layouts in encryption_filter.hpp).
#include "encryption_filter.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "trident/core/error.hpp"

namespace trident::io::crypt {

namespace {

// Word offsets in cd_values.
constexpr size_t kVersionWord = 0, kChunkBytesWord = 1, kKeyIdWord = 2, kWrappedWord = 4, kFileWord = 19,
                 kDatasetWord = 23;
static_assert(kWrappedWord + security::kWrappedKeyBytes / 4 == kFileWord && kFileWord + 4 == kDatasetWord &&
              kDatasetWord + 2 == kParameterWords);

void pack(const unsigned char* bytes, size_t n, unsigned* words) {
  for (size_t w = 0; w < n / 4; ++w)
    words[w] = unsigned(bytes[4 * w]) | unsigned(bytes[4 * w + 1]) << 8 | unsigned(bytes[4 * w + 2]) << 16 |
               unsigned(bytes[4 * w + 3]) << 24;
}

void unpack(const unsigned* words, size_t n, unsigned char* bytes) {
  for (size_t i = 0; i < n; ++i) bytes[i] = static_cast<unsigned char>(words[i / 4] >> (8 * (i % 4)));
}

struct Parameters {
  size_t chunk_bytes = 0;
  KeyId key_id{};
  security::WrappedKey wrapped{};
  security::FileId file{};
  DatasetId dataset{};
};

bool decode(size_t n, const unsigned* cd, Parameters* p) {
  if (n != kParameterWords || cd[kVersionWord] != kFilterVersion || cd[kChunkBytesWord] == 0) return false;
  p->chunk_bytes = cd[kChunkBytesWord];
  unpack(cd + kKeyIdWord, p->key_id.size(), p->key_id.data());
  unpack(cd + kWrappedWord, p->wrapped.size(), p->wrapped.data());
  unpack(cd + kFileWord, p->file.size(), p->file.data());
  unpack(cd + kDatasetWord, p->dataset.size(), p->dataset.data());
  return true;
}

// Associated data of every chunk: file id | dataset id | plain bytes (uint64, little-endian; a
// placeholder's with the top bit set).
constexpr uint64_t kPlaceholderBit = uint64_t(1) << 63;
std::array<unsigned char, 32> associated_data(const Parameters& p, uint64_t plain_bytes) {
  std::array<unsigned char, 32> aad{};
  std::memcpy(aad.data(), p.file.data(), 16);
  std::memcpy(aad.data() + 16, p.dataset.data(), 8);
  for (int i = 0; i < 8; ++i) aad[24 + i] = static_cast<unsigned char>(plain_bytes >> (8 * i));
  return aad;
}

thread_local int sealing_placeholders = 0, opening_placeholders = 0;  // PlaceholderScopes on this thread

// Replaces HDF5's buffer. The filter protocol hands buffers over by malloc / free (what
// H5allocate_memory and H5free_memory are in a release build): no HDF5 call, see the header.
size_t replace(void** buf, size_t* buf_size, void* out, size_t bytes) {
  std::free(*buf);
  *buf = out;
  *buf_size = bytes;
  return bytes;
}

// A chunk that cannot be opened or sealed: recorded, with `bytes` zeros handed to HDF5, or (kFail,
// or no size to hand over) the filter fails.
size_t bad_chunk(OnBadChunk mode, const void* stored, size_t stored_bytes, size_t bytes, std::string why,
                 void** buf, size_t* buf_size) {
  ChunkFailure failure;
  std::memcpy(failure.nonce.data(), stored, std::min(stored_bytes, kNonceBytes));
  failure.stored_bytes = stored_bytes;
  failure.why = std::move(why);
  if (mode == OnBadChunk::kFail || bytes == 0) {
    static std::atomic<int> printed = 0;  // the plugin's only voice (h5py says "filter returned failure")
    if (printed++ < 8) std::fprintf(stderr, "%s filter: a chunk %s\n", kFilterName, failure.why.c_str());
    if (mode == OnBadChunk::kRecord) registry::record(std::move(failure));
    return 0;
  }
  registry::record(std::move(failure));
  void* zeros = std::calloc(bytes, 1);
  return zeros ? replace(buf, buf_size, zeros, bytes) : 0;
}

size_t seal(const Parameters& p, const security::Key& key, size_t nbytes, size_t* buf_size, void** buf) {
  Nonce nonce{};
  security::random_bytes(nonce);
  if (sealing_placeholders > 0) {  // nonce | tag over nothing
    auto* out = static_cast<unsigned char*>(std::malloc(kChunkOverhead));
    if (!out) return 0;
    const auto aad = associated_data(p, nbytes | kPlaceholderBit);
    const security::Tag tag = security::gcm_seal(key, nonce.data(), aad, nullptr, 0, nullptr);
    std::memcpy(out, nonce.data(), kNonceBytes);
    std::memcpy(out + kNonceBytes, tag.data(), kTagBytes);
    return replace(buf, buf_size, out, kChunkOverhead);
  }
  // Sealed where it lies: HDF5's buffer grown by 28 bytes (no fresh chunk-sized allocation, whose
  // page faults cost more than the move), the plain chunk moved past the nonce, sealed in place.
  if (*buf_size < nbytes + kChunkOverhead) {
    void* grown = std::realloc(*buf, nbytes + kChunkOverhead);
    if (!grown) return 0;
    *buf = grown;
    *buf_size = nbytes + kChunkOverhead;
  }
  auto* data = static_cast<unsigned char*>(*buf);
  std::memmove(data + kNonceBytes, data, nbytes);
  std::memcpy(data, nonce.data(), kNonceBytes);
  const auto aad = associated_data(p, nbytes);
  const security::Tag tag = security::gcm_seal(key, nonce.data(), aad, data + kNonceBytes, nbytes, data + kNonceBytes);
  std::memcpy(data + kNonceBytes + nbytes, tag.data(), kTagBytes);
  return nbytes + kChunkOverhead;
}

size_t open(const Parameters& p, const security::Key& key, OnBadChunk mode, size_t nbytes, size_t* buf_size,
            void** buf) {
  auto* in = static_cast<unsigned char*>(*buf);
  const bool placeholder = nbytes == kChunkOverhead;
  if (placeholder && opening_placeholders == 0)
    return bad_chunk(mode, in, nbytes, p.chunk_bytes,
                     "was never written (a placeholder: the file is incomplete or was changed)", buf, buf_size);
  if (nbytes != p.chunk_bytes + kChunkOverhead && !placeholder)
    return bad_chunk(mode, in, nbytes, p.chunk_bytes,
                     detail::concat("holds ", nbytes, " stored bytes where its dataset's chunks hold ",
                                    p.chunk_bytes + kChunkOverhead, " (the file is corrupt)"),
                     buf, buf_size);
  const size_t sealed = placeholder ? 0 : p.chunk_bytes;
  Nonce nonce{};
  security::Tag tag{};
  std::memcpy(nonce.data(), in, kNonceBytes);
  std::memcpy(tag.data(), in + kNonceBytes + sealed, kTagBytes);
  const auto aad = associated_data(p, placeholder ? (p.chunk_bytes | kPlaceholderBit) : p.chunk_bytes);
  // Opened where it lies: the plain chunk moves to the buffer's start, over the nonce.
  if (!security::gcm_open(key, nonce.data(), aad, in + kNonceBytes, sealed, in, tag)) {
    std::memset(in, 0, nbytes);  // no unverified plaintext left behind
    return bad_chunk(mode, nonce.data(), nbytes, p.chunk_bytes,
                     "fails its authentication tag (the file is corrupt or was changed)", buf, buf_size);
  }
  if (!placeholder) return p.chunk_bytes;
  void* zeros = std::calloc(p.chunk_bytes, 1);  // a chunk of zeros no data was written over
  return zeros ? replace(buf, buf_size, zeros, p.chunk_bytes) : 0;
}

// H5Z_func_t: C calls it, so no exception may leave it.
size_t filter(unsigned flags, size_t cd_nelmts, const unsigned cd_values[], size_t nbytes, size_t* buf_size,
              void** buf) {
  try {
    Parameters p;
    if (!decode(cd_nelmts, cd_values, &p)) {
      std::fprintf(stderr, "%s filter: parameters of another format (version %u, %zu words); upgrade trident\n",
                   kFilterName, cd_nelmts ? cd_values[0] : 0u, cd_nelmts);
      return 0;
    }
    const bool reading = (flags & H5Z_FLAG_REVERSE) != 0;
    registry::Lookup found = registry::data_key(p.key_id, p.wrapped);
    if (!found.data_key)
      return bad_chunk(found.mode, *buf, reading ? nbytes : 0, reading ? p.chunk_bytes : nbytes + kChunkOverhead,
                       "cannot be " + std::string(reading ? "opened: " : "sealed: ") + found.why, buf, buf_size);
    const size_t n = reading ? open(p, *found.data_key, found.mode, nbytes, buf_size, buf)
                             : seal(p, *found.data_key, nbytes, buf_size, buf);
    OPENSSL_cleanse(found.data_key->data(), found.data_key->size());
    return n;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s filter: %s\n", kFilterName, e.what());
    return 0;
  }
}

const H5Z_class2_t kClass = {
    H5Z_CLASS_T_VERS, kFilterId, /*encoder_present=*/1, /*decoder_present=*/1, kFilterName,
    /*can_apply=*/nullptr, /*set_local=*/nullptr, filter,
};

}  // namespace

KeyId key_id_bytes(const std::string& hex) {
  KeyId id{};
  TRIDENT_CONFIG_CHECK(security::from_hex(hex, id), "key id '", hex, "' is not 16 hex digits");
  return id;
}

DatasetId dataset_id(const std::string& dataset) {
  const security::Digest d = security::sha256(dataset.data(), dataset.size());
  DatasetId id{};
  std::memcpy(id.data(), d.data(), id.size());
  return id;
}

std::vector<unsigned> filter_parameters(const FileSecret& secret, const std::string& dataset, size_t chunk_bytes) {
  TRIDENT_CHECK(chunk_bytes > 0 && chunk_bytes <= 0xFFFFFFFFu - kChunkOverhead, "chunk of ", chunk_bytes, " bytes");
  std::vector<unsigned> cd(kParameterWords, 0);
  cd[kVersionWord] = kFilterVersion;
  cd[kChunkBytesWord] = static_cast<unsigned>(chunk_bytes);
  pack(secret.key_id.data(), secret.key_id.size(), cd.data() + kKeyIdWord);
  pack(secret.wrapped.data(), secret.wrapped.size(), cd.data() + kWrappedWord);
  pack(secret.file.data(), secret.file.size(), cd.data() + kFileWord);
  const DatasetId id = dataset_id(dataset);
  pack(id.data(), id.size(), cd.data() + kDatasetWord);
  return cd;
}

const H5Z_class2_t* filter_class() { return &kClass; }

PlaceholderScope::PlaceholderScope(Placeholders what) : what_(what) {
  ++(what_ == Placeholders::kSeal ? sealing_placeholders : opening_placeholders);
}
PlaceholderScope::~PlaceholderScope() { --(what_ == Placeholders::kSeal ? sealing_placeholders : opening_placeholders); }

}  // namespace trident::io::crypt
