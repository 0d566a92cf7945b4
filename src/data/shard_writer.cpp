// ShardWriter: streams token ids to <prefix>.bin.tmp, then writes the index and publishes
// both files by fsync + rename, so a crash or error never leaves a half-written shard behind.
#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "trident/core/error.hpp"
#include "trident/data/shard_format.hpp"

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

ShardWriter::ShardWriter(std::string prefix, uint64_t vocab)
    : prefix_(std::move(prefix)), vocab_(vocab), token_bytes_(shard_token_bytes(vocab)) {
  TRIDENT_CHECK(vocab > 0 && vocab <= (uint64_t(1) << 32), "vocab=", vocab);
  const std::string path = prefix_ + ".bin.tmp";
  bin_ = std::fopen(path.c_str(), "wb");
  TRIDENT_CONFIG_CHECK(bin_ != nullptr, "cannot create ", path, ": ", std::strerror(errno));
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
  write_all(bin_, buffer_.data(), buffer_.size(), prefix_ + ".bin.tmp");
}

void ShardWriter::finish() {
  TRIDENT_CHECK(!finished_, "finish called twice on ", prefix_);
  const std::string bin_tmp = prefix_ + ".bin.tmp", idx_tmp = prefix_ + ".idx.tmp";
  sync_and_close(bin_, bin_tmp);

  std::FILE* idx = std::fopen(idx_tmp.c_str(), "wb");
  TRIDENT_CONFIG_CHECK(idx != nullptr, "cannot create ", idx_tmp, ": ", std::strerror(errno));
  try {
    const ShardIndexHeader header(vocab_, num_documents(), num_tokens());
    write_all(idx, header.bytes, sizeof(header.bytes), idx_tmp);
    write_all(idx, offsets_.data(), offsets_.size() * 8, idx_tmp);
    write_all(idx, loss_starts_.data(), loss_starts_.size() * 8, idx_tmp);
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
