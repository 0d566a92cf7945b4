// ShardReader: maps <prefix>.bin/.idx read-only and checks every header field and size against
// the files, so a truncated or foreign file is reported with what to do instead of misread.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <mutex>
#include <optional>
#include <utility>

#include "trident/core/error.hpp"
#include "trident/data/shard_format.hpp"
#include "trident/data/shard_protection.hpp"

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

// The decryption state of an encrypted shard: the protection and two decrypted blocks (a row
// that crosses a block boundary needs both), guarded for readers on several threads.
struct ShardReader::Decrypted {
  explicit Decrypted(ShardProtection p) : protection(std::move(p)) {}
  ShardProtection protection;
  std::mutex mutex;
  struct Slot {
    uint64_t block = ~uint64_t(0);
    std::vector<unsigned char> bytes;
  } slots[2];
  int next = 0;
};

// The sampler reads windows at random offsets, so read-ahead on .bin would be wasted;
// the .idx is read front to back once by validation and then searched.
ShardReader::ShardReader(std::string prefix, const security::MasterKey* key)
    : prefix_(std::move(prefix)), bin_(prefix_ + ".bin", MADV_SEQUENTIAL), idx_(prefix_ + ".idx", 0) {
  validate_index(key);
  validate_tokens();
  bin_.advise(MADV_RANDOM);  // training reads rows in a shuffled order
}

ShardReader::ShardReader(ShardReader&&) noexcept = default;
ShardReader& ShardReader::operator=(ShardReader&&) noexcept = default;
ShardReader::~ShardReader() = default;

bool ShardReader::encrypted() const { return decrypted_ && decrypted_->protection.encrypted(); }

void ShardReader::block_failed(uint64_t block) const {
  const uint64_t block_bytes = decrypted_->protection.block_bytes();
  const uint64_t begin = block * block_bytes, end = std::min<uint64_t>(begin + block_bytes, bin_.size());
  throw ConfigError(detail::concat(prefix_, ".bin: block ", block, " (bytes ", begin, "..", end, ") fails its ",
                                   encrypted() ? "authentication tag" : "SHA-256 digest",
                                   ": the file was changed after trident prep (corrupt or tampered), or its .idx "
                                   "belongs to another .bin; re-run trident prep"));
}

template <typename Visit>
void ShardReader::visit_tokens(uint64_t begin, uint64_t count, Visit&& visit) const {
  if (!encrypted()) {
    visit(begin, count, bin_.data() + begin * token_bytes_);
    return;
  }
  Decrypted& dec = *decrypted_;
  const uint64_t per_block = dec.protection.block_bytes() / token_bytes_;
  const std::lock_guard<std::mutex> lock(dec.mutex);
  for (uint64_t t = begin, end = begin + count; t < end;) {
    const uint64_t block = t / per_block, block_begin = block * per_block;
    Decrypted::Slot* slot = dec.slots[0].block == block ? &dec.slots[0] : dec.slots[1].block == block ? &dec.slots[1] : nullptr;
    if (!slot) {
      slot = &dec.slots[dec.next];
      dec.next ^= 1;
      const uint64_t bytes = (std::min(block_begin + per_block, num_tokens_) - block_begin) * token_bytes_;
      ShardBlockEntry entry;
      std::memcpy(entry.data(), idx_.data() + layout_.block_entry_position(block), entry.size());
      slot->block = ~uint64_t(0);
      slot->bytes.resize(bytes);
      if (!dec.protection.open_block(block, bin_.data() + block_begin * token_bytes_, bytes, slot->bytes.data(), entry))
        block_failed(block);
      slot->block = block;
    }
    const uint64_t n = std::min(end, block_begin + per_block) - t;
    visit(t, n, slot->bytes.data() + (t - block_begin) * token_bytes_);
    t += n;
  }
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

// One pass over the .bin: every block's digest or tag (version 2), then its token ids.
void ShardReader::validate_tokens() {
  // Every id a dtype can hold is below this vocab: no id to check.
  const bool check_ids = vocab_ < (uint64_t(1) << (8 * token_bytes_));
  const auto first_bad = [&](const unsigned char* bytes, uint64_t n) {
    return token_bytes_ == 2 ? first_id_at_least<uint16_t>(bytes, n, vocab_)
                             : first_id_at_least<uint32_t>(bytes, n, vocab_);
  };
  uint64_t bad = num_tokens_;
  if (!decrypted_) {  // version 1: ids only
    if (check_ids) bad = first_bad(bin_.data(), num_tokens_);
  } else {
    ShardProtection& protection = decrypted_->protection;
    const uint64_t per_block = protection.block_bytes() / token_bytes_;
    std::vector<unsigned char> plain(encrypted() ? protection.block_bytes() : 0);
    for (uint64_t block = 0; block < layout_.blocks && bad == num_tokens_; ++block) {
      const uint64_t begin = block * per_block, n = std::min(num_tokens_ - begin, per_block);
      const unsigned char* in = bin_.data() + begin * token_bytes_;
      unsigned char* out = encrypted() ? plain.data() : const_cast<unsigned char*>(in);  // plain: digest only
      ShardBlockEntry entry;
      std::memcpy(entry.data(), idx_.data() + layout_.block_entry_position(block), entry.size());
      if (!protection.open_block(block, in, n * token_bytes_, out, entry)) block_failed(block);
      if (!check_ids) continue;
      const uint64_t at = first_bad(out, n);
      if (at < n) bad = begin + at;
    }
  }
  if (bad == num_tokens_) return;
  const uint64_t d = document_of(bad);
  throw ConfigError(detail::concat(prefix_, ".bin: document ", d, " (token ", bad - offset(d), " of it) holds id ",
                                   token(bad), ", not below the vocab ", vocab_, " of ", prefix_,
                                   ".idx (corrupt, or .bin and .idx of different runs); re-run trident prep"));
}

void ShardReader::validate_index(const security::MasterKey* key) {
  const std::string idx_path = prefix_ + ".idx", bin_path = prefix_ + ".bin";
  const unsigned char* p = idx_.data();
  TRIDENT_CONFIG_CHECK(idx_.size() >= kShardHeaderBytes, idx_path, ": truncated index (",
                       idx_.size(), " bytes, the header alone is ", kShardHeaderBytes,
                       "); re-run trident prep");
  TRIDENT_CONFIG_CHECK(std::memcmp(p, kShardMagic, sizeof(kShardMagic)) == 0, idx_path,
                       ": not a trident token index (bad magic); re-run trident prep");
  const uint32_t version = load<uint32_t>(p + 8);
  TRIDENT_CONFIG_CHECK(version == 1 || version == kShardVersion, idx_path, ": written by shard format version ",
                       version, ", this trident reads versions 1 and ", kShardVersion,
                       "; re-run trident prep with this trident");
  layout_.version = version;
  token_bytes_ = load<uint32_t>(p + 12);
  vocab_ = load<uint64_t>(p + 16);
  num_documents_ = load<uint64_t>(p + 24);
  num_tokens_ = load<uint64_t>(p + 32);
  TRIDENT_CONFIG_CHECK(token_bytes_ == 2 || token_bytes_ == 4, idx_path, ": unknown dtype code ",
                       token_bytes_, " (2 = uint16, 4 = uint32); re-run trident prep");
  TRIDENT_CONFIG_CHECK(vocab_ > 0 && token_bytes_ >= shard_token_bytes(vocab_), idx_path,
                       ": vocab ", vocab_, " does not fit dtype code ", token_bytes_,
                       "; re-run trident prep");

  TRIDENT_CONFIG_CHECK(idx_.size() >= layout_.arrays(), idx_path, ": truncated index (", idx_.size(),
                       " bytes, the header alone is ", layout_.arrays(), "); re-run trident prep");
  std::optional<ShardProtection> protection;
  if (version >= 2) {
    protection = ShardProtection::read(p + kShardHeaderBytes, key, prefix_ + ".bin");
    // Bounded first so that the block count's product below cannot overflow.
    TRIDENT_CONFIG_CHECK(num_tokens_ <= bin_.size(), bin_path, ": ", bin_.size(), " bytes, but ", idx_path,
                         " says ", num_tokens_, " tokens (truncated, or .bin and .idx from different runs); re-run "
                         "trident prep");
    layout_.blocks = shard_block_count(num_tokens_ * token_bytes_, protection->block_bytes());
  }
  // (D+1) offsets + D loss starts (+ blocks and trailer); D is bounded first so the product
  // cannot overflow.
  const uint64_t body = idx_.size() - layout_.arrays();
  layout_.documents = num_documents_;
  const bool size_ok = num_documents_ < body / 16 + 1 && idx_.size() == layout_.bytes();
  TRIDENT_CONFIG_CHECK(size_ok, idx_path, ": ", idx_.size(), " bytes, but the header's ",
                       num_documents_, " documents need ", size_ok ? 0 : layout_.bytes(),
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
  if (!protection) return;
  ShardTrailer trailer;
  std::memcpy(trailer.data(), p + layout_.trailer_position(), trailer.size());
  TRIDENT_CONFIG_CHECK(protection->index_holds(p, layout_.trailer_position(), trailer), idx_path, ": fails its ",
                       protection->encrypted() ? "authentication tag" : "SHA-256 digest",
                       ": the file was changed after trident prep (corrupt or tampered); re-run trident prep");
  decrypted_ = std::make_unique<Decrypted>(std::move(*protection));
}

uint64_t ShardReader::offset(uint64_t d) const { return load<uint64_t>(idx_.data() + layout_.offset_position(d)); }

uint64_t ShardReader::loss_start(uint64_t d) const {
  return load<uint64_t>(idx_.data() + layout_.loss_start_position(d));
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
  uint32_t id = 0;
  visit_tokens(t, 1, [&](uint64_t, uint64_t, const unsigned char* p) {
    id = token_bytes_ == 2 ? load<uint16_t>(p) : load<uint32_t>(p);
  });
  return id;
}

void ShardReader::copy_tokens(uint64_t begin, uint64_t count, int32_t* out) const {
  TRIDENT_CHECK(begin <= num_tokens_ && count <= num_tokens_ - begin, "tokens [", begin, ", ",
                begin + count, ") of ", num_tokens_);
  visit_tokens(begin, count, [&](uint64_t first, uint64_t n, const unsigned char* p) {
    int32_t* to = out + (first - begin);
    if (token_bytes_ == 2) {
      for (uint64_t i = 0; i < n; ++i) to[i] = load<uint16_t>(p + 2 * i);
    } else {
      for (uint64_t i = 0; i < n; ++i) to[i] = static_cast<int32_t>(load<uint32_t>(p + 4 * i));
    }
  });
}

}  // namespace trident::data
