// ShardWriter: streams token ids to <prefix>.bin.tmp, then writes the index and publishes
// both files by fsync + rename, so a crash or error never leaves a half-written shard behind.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "trident/core/file_policy.hpp"
#include "trident/core/error.hpp"
#include "trident/data/shard_format.hpp"
#include "trident/data/shard_protection.hpp"

namespace trident::data {
namespace {

void write_all(std::FILE* f, const void* data, size_t bytes, const std::string& path) {
  if (bytes && std::fwrite(data, 1, bytes, f) != bytes)
    throw Error(detail::concat("writing ", path, " failed: ", std::strerror(errno)));
}

// fflush moves stdio's buffer to the kernel, fsync the kernel's to the disk: both are needed
// before the rename, or a crash could publish a name pointing at missing data.
void sync_and_close(std::FILE*& f, const std::string& path) {
  const bool ok = std::fflush(f) == 0 && ::fsync(fileno(f)) == 0;
  const int err = errno;
  const bool closed = std::fclose(f) == 0;
  f = nullptr;
  if (!ok || !closed) throw Error(detail::concat("flushing ", path, " failed: ", std::strerror(err)));
}

void rename_or_throw(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw Error(detail::concat("renaming ", from, " to ", to, " failed: ", std::strerror(errno)));
}

// Makes the renames themselves durable; best effort (some file systems refuse fsync on a
// directory, and the data is already safe at this point).
void sync_directory_of(const std::string& path) {
  std::filesystem::path dir = std::filesystem::path(path).parent_path();
  if (dir.empty()) dir = ".";
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}

}  // namespace

ShardWriter::ShardWriter(std::string prefix, uint64_t vocab, const security::MasterKey* key)
    : prefix_(std::move(prefix)), vocab_(vocab), token_bytes_(shard_token_bytes(vocab)),
      protection_(std::make_unique<ShardProtection>(ShardProtection::make(key))) {
  TRIDENT_CHECK(vocab > 0 && vocab <= (uint64_t(1) << 32), "vocab=", vocab);
  const std::string path = prefix_ + ".bin.tmp";
  bin_ = std::fopen(path.c_str(), "wb");
  TRIDENT_CONFIG_CHECK(bin_ != nullptr, "cannot create ", path, ": ", std::strerror(errno));
  secure_file(fileno(bin_), path);
}

ShardWriter::~ShardWriter() {
  if (!finished_) discard_temporaries();
}

void ShardWriter::discard_temporaries() {
  if (bin_) std::fclose(bin_);
  bin_ = nullptr;
  std::error_code ignored;
  std::filesystem::remove(prefix_ + ".bin.tmp", ignored);
  std::filesystem::remove(prefix_ + ".idx.tmp", ignored);
}

void ShardWriter::add_document(std::span<const uint32_t> tokens, uint64_t loss_start) {
  TRIDENT_CHECK(!finished_, "add_document after finish on ", prefix_);
  TRIDENT_CHECK(loss_start <= tokens.size(), "loss_start=", loss_start, " beyond a document of ",
                tokens.size(), " tokens");
  write_tokens(tokens);
  offsets_.push_back(offsets_.back() + tokens.size());
  loss_starts_.push_back(loss_start);
}

void ShardWriter::write_tokens(std::span<const uint32_t> tokens) {
  buffer_.resize(tokens.size() * token_bytes_);
  for (size_t i = 0; i < tokens.size(); ++i) {
    const uint32_t id = tokens[i];
    TRIDENT_CHECK(id < vocab_, "token id ", id, " >= vocab ", vocab_);
    if (token_bytes_ == 2) {
      const uint16_t narrow = static_cast<uint16_t>(id);
      std::memcpy(&buffer_[2 * i], &narrow, 2);
    } else {
      std::memcpy(&buffer_[4 * i], &id, 4);
    }
  }
  const size_t block_bytes = protection_->block_bytes();
  for (size_t at = 0; at < buffer_.size();) {
    const size_t n = std::min(buffer_.size() - at, block_bytes - block_.size());
    block_.insert(block_.end(), buffer_.begin() + long(at), buffer_.begin() + long(at + n));
    at += n;
    if (block_.size() == block_bytes) seal_block();
  }
}

void ShardWriter::seal_block() {
  const uint64_t index = entries_.size() / kShardBlockEntryBytes;
  const ShardBlockEntry entry = protection_->seal_block(index, block_.data(), block_.size());
  entries_.insert(entries_.end(), entry.begin(), entry.end());
  write_all(bin_, block_.data(), block_.size(), prefix_ + ".bin.tmp");
  block_.clear();
}

void ShardWriter::finish() {
  TRIDENT_CHECK(!finished_, "finish called twice on ", prefix_);
  const std::string bin_tmp = prefix_ + ".bin.tmp", idx_tmp = prefix_ + ".idx.tmp";
  if (!block_.empty()) seal_block();
  sync_and_close(bin_, bin_tmp);

  // The whole index in memory (it is 16 bytes per document), then its trailer over it.
  const ShardIndexHeader header(vocab_, num_documents(), num_tokens());
  const auto protection = protection_->bytes();
  std::vector<unsigned char> index(header.bytes, header.bytes + sizeof(header.bytes));
  index.insert(index.end(), protection.begin(), protection.end());
  const auto append = [&index](const std::vector<uint64_t>& v) {
    const auto* p = reinterpret_cast<const unsigned char*>(v.data());
    index.insert(index.end(), p, p + v.size() * 8);
  };
  append(offsets_);
  append(loss_starts_);
  index.insert(index.end(), entries_.begin(), entries_.end());
  const ShardTrailer trailer = protection_->seal_index(index.data(), index.size());
  index.insert(index.end(), trailer.begin(), trailer.end());

  std::FILE* idx = std::fopen(idx_tmp.c_str(), "wb");
  TRIDENT_CONFIG_CHECK(idx != nullptr, "cannot create ", idx_tmp, ": ", std::strerror(errno));
  try {
    secure_file(fileno(idx), idx_tmp);
    write_all(idx, index.data(), index.size(), idx_tmp);
    sync_and_close(idx, idx_tmp);
  } catch (...) {
    if (idx) std::fclose(idx);
    throw;
  }
  // .bin first: a reader that sees a new .bin with an old .idx fails the size check and says
  // "re-run trident prep" rather than reading wrong tokens.
  rename_or_throw(bin_tmp, prefix_ + ".bin");
  rename_or_throw(idx_tmp, prefix_ + ".idx");
  finished_ = true;
  sync_directory_of(prefix_);
}

}  // namespace trident::data
