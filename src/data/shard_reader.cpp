// ShardReader: maps <prefix>.bin/.idx read-only and checks every header field and size against
// the files, so a truncated or foreign file is reported with what to do instead of misread.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <utility>

#include "trident/core/error.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {

// --- MappedFile ----------------------------------------------------------------------------

MappedFile::MappedFile(const std::string& path, int advice) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TRIDENT_CONFIG_CHECK(fd >= 0, "cannot open ", path, ": ", std::strerror(errno));
  struct stat st {};
  if (::fstat(fd, &st) != 0) {
    const int err = errno;
    ::close(fd);
    throw ConfigError(detail::concat("cannot stat ", path, ": ", std::strerror(err)));
  }
  size_ = static_cast<size_t>(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    const int err = errno;
    ::close(fd);  // the mapping keeps the file alive
    TRIDENT_CONFIG_CHECK(p != MAP_FAILED, "cannot mmap ", path, ": ", std::strerror(err));
    data_ = p;
    if (advice) ::madvise(data_, size_, advice);  // a hint only: failure is harmless
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(data_, size_);
}

void MappedFile::advise(int advice) const {
  if (data_) ::madvise(data_, size_, advice);
}

MappedFile::MappedFile(MappedFile&& other) noexcept
    : data_(std::exchange(other.data_, nullptr)), size_(std::exchange(other.size_, 0)) {}

MappedFile& MappedFile::operator=(MappedFile&& other) noexcept {
  if (this != &other) {
    if (data_) ::munmap(data_, size_);
    data_ = std::exchange(other.data_, nullptr);
    size_ = std::exchange(other.size_, 0);
  }
  return *this;
}

// --- ShardReader ---------------------------------------------------------------------------

namespace {

template <typename T>
T load(const unsigned char* p) {  // unaligned-safe read of a little-endian field
  T v;
  std::memcpy(&v, p, sizeof(T));
  return v;
}

}  // namespace

// The sampler reads windows at random offsets, so read-ahead on .bin would be wasted;
// the .idx is read front to back once by validation and then searched.
ShardReader::ShardReader(std::string prefix)
    : prefix_(std::move(prefix)), bin_(prefix_ + ".bin", MADV_SEQUENTIAL), idx_(prefix_ + ".idx", 0) {
  validate_index();
  validate_tokens();
  bin_.advise(MADV_RANDOM);  // training reads rows in a shuffled order
}

namespace {
// Offset of the first id >= limit among ids[0, n), or n. Blocks of ids are reduced to their
// maximum (a loop the compiler vectorises); only a failing block is searched.
template <typename Id>
uint64_t first_id_at_least(const unsigned char* bytes, uint64_t n, uint64_t limit) {
  constexpr uint64_t kBlock = 1 << 16;
  for (uint64_t begin = 0; begin < n; begin += kBlock) {
    const uint64_t end = std::min(n, begin + kBlock);
    Id most = 0;
    for (uint64_t i = begin; i < end; ++i) most = std::max(most, load<Id>(bytes + i * sizeof(Id)));
    if (most < limit) continue;
    for (uint64_t i = begin; i < end; ++i)
      if (load<Id>(bytes + i * sizeof(Id)) >= limit) return i;
  }
  return n;
}
}  // namespace

void ShardReader::validate_tokens() {
  // Every id a dtype can hold is below this vocab: nothing to check.
  if (vocab_ >= (uint64_t(1) << (8 * token_bytes_))) return;
  const uint64_t bad = token_bytes_ == 2 ? first_id_at_least<uint16_t>(bin_.data(), num_tokens_, vocab_)
                                         : first_id_at_least<uint32_t>(bin_.data(), num_tokens_, vocab_);
  if (bad == num_tokens_) return;
  const uint64_t d = document_of(bad);
  throw ConfigError(detail::concat(prefix_, ".bin: document ", d, " (token ", bad - offset(d), " of it) holds id ",
                                   token(bad), ", not below the vocab ", vocab_, " of ", prefix_,
                                   ".idx (corrupt, or .bin and .idx of different runs); re-run trident prep"));
}

void ShardReader::validate_index() {
  const std::string idx_path = prefix_ + ".idx", bin_path = prefix_ + ".bin";
  const unsigned char* p = idx_.data();
  TRIDENT_CONFIG_CHECK(idx_.size() >= kShardHeaderBytes, idx_path, ": truncated index (",
                       idx_.size(), " bytes, the header alone is ", kShardHeaderBytes,
                       "); re-run trident prep");
  TRIDENT_CONFIG_CHECK(std::memcmp(p, kShardMagic, sizeof(kShardMagic)) == 0, idx_path,
                       ": not a trident token index (bad magic); re-run trident prep");
  const uint32_t version = load<uint32_t>(p + 8);
  TRIDENT_CONFIG_CHECK(version == kShardVersion, idx_path, ": written by shard format version ",
                       version, ", this trident reads version ", kShardVersion,
                       "; re-run trident prep with this trident");
  token_bytes_ = load<uint32_t>(p + 12);
  vocab_ = load<uint64_t>(p + 16);
  num_documents_ = load<uint64_t>(p + 24);
  num_tokens_ = load<uint64_t>(p + 32);
  TRIDENT_CONFIG_CHECK(token_bytes_ == 2 || token_bytes_ == 4, idx_path, ": unknown dtype code ",
                       token_bytes_, " (2 = uint16, 4 = uint32); re-run trident prep");
  TRIDENT_CONFIG_CHECK(vocab_ > 0 && token_bytes_ >= shard_token_bytes(vocab_), idx_path,
                       ": vocab ", vocab_, " does not fit dtype code ", token_bytes_,
                       "; re-run trident prep");

  // (D+1) offsets + D loss starts; D is bounded first so the product cannot overflow.
  const uint64_t body = idx_.size() - kShardHeaderBytes;
  const bool size_ok = num_documents_ < body / 16 + 1 && body == (2 * num_documents_ + 1) * 8;
  TRIDENT_CONFIG_CHECK(size_ok, idx_path, ": ", idx_.size(), " bytes, but the header's ",
                       num_documents_, " documents need ",
                       kShardHeaderBytes + (2 * num_documents_ + 1) * 8,
                       " (truncated or corrupt); re-run trident prep");
  TRIDENT_CONFIG_CHECK(bin_.size() / token_bytes_ == num_tokens_ && bin_.size() % token_bytes_ == 0,
                       bin_path, ": ", bin_.size(), " bytes, but ", idx_path, " says ",
                       num_tokens_, " tokens of ", token_bytes_,
                       " bytes (truncated, or .bin and .idx from different runs); re-run trident prep");

  TRIDENT_CONFIG_CHECK(offset(0) == 0, idx_path, ": first document offset is ", offset(0),
                       ", not 0; re-run trident prep");
  for (uint64_t d = 0; d < num_documents_; ++d) {
    const uint64_t begin = offset(d), end = offset(d + 1);
    TRIDENT_CONFIG_CHECK(begin <= end, idx_path, ": document offsets not monotone at document ",
                         d, " (", begin, " > ", end, "); re-run trident prep");
    TRIDENT_CONFIG_CHECK(loss_start(d) <= end - begin, idx_path, ": document ", d,
                         " has loss start ", loss_start(d), " beyond its ", end - begin,
                         " tokens; re-run trident prep");
    has_loss_starts_ |= loss_start(d) > 0;
  }
  TRIDENT_CONFIG_CHECK(offset(num_documents_) == num_tokens_, idx_path,
                       ": last document offset ", offset(num_documents_), " != total tokens ",
                       num_tokens_, "; re-run trident prep");
}

uint64_t ShardReader::offset(uint64_t d) const {
  return load<uint64_t>(idx_.data() + kShardHeaderBytes + 8 * d);
}

uint64_t ShardReader::loss_start(uint64_t d) const {
  return load<uint64_t>(idx_.data() + kShardHeaderBytes + 8 * (num_documents_ + 1 + d));
}

DocumentSpan ShardReader::document(uint64_t d) const {
  TRIDENT_CHECK(d < num_documents_, "document ", d, " of ", num_documents_);
  return {offset(d), offset(d + 1), loss_start(d)};
}

uint64_t ShardReader::document_of(uint64_t t) const {
  TRIDENT_CHECK(t < num_tokens_, "token ", t, " of ", num_tokens_);
  // Last d with offsets[d] <= t; empty documents (equal offsets) are skipped over.
  uint64_t lo = 0, hi = num_documents_;  // invariant: offsets[lo] <= t < offsets[hi]
  while (hi - lo > 1) {
    const uint64_t mid = lo + (hi - lo) / 2;
    if (offset(mid) <= t)
      lo = mid;
    else
      hi = mid;
  }
  return lo;
}

uint32_t ShardReader::token(uint64_t t) const {
  TRIDENT_CHECK(t < num_tokens_, "token ", t, " of ", num_tokens_);
  const unsigned char* p = bin_.data() + t * token_bytes_;
  return token_bytes_ == 2 ? load<uint16_t>(p) : load<uint32_t>(p);
}

void ShardReader::copy_tokens(uint64_t begin, uint64_t count, int32_t* out) const {
  TRIDENT_CHECK(begin <= num_tokens_ && count <= num_tokens_ - begin, "tokens [", begin, ", ",
                begin + count, ") of ", num_tokens_);
  const unsigned char* p = bin_.data() + begin * token_bytes_;
  if (token_bytes_ == 2) {
    for (uint64_t i = 0; i < count; ++i) out[i] = load<uint16_t>(p + 2 * i);
  } else {
    for (uint64_t i = 0; i < count; ++i) out[i] = static_cast<int32_t>(load<uint32_t>(p + 4 * i));
  }
}

}  // namespace trident::data
