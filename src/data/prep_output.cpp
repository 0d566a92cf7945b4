// ParallelShardOutput: rank 0 creates each temporary file at its final size with the index
// header; then every rank pwrite()s its tokens, offsets and loss starts at the positions its
// prefix sums give (disjoint ranges), fsyncs, and the ranks agree before anything is renamed.
#include "prep_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "trident/core/error.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

// An fd closed on scope exit; errors are thrown with the path.
class File {
 public:
  File(const std::string& path, int flags) : path_(path), fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    TRIDENT_CONFIG_CHECK(fd_ >= 0, "cannot open ", path, " for writing: ", std::strerror(errno));
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  void resize(uint64_t bytes) const {
    if (::ftruncate(fd_, static_cast<off_t>(bytes)) != 0) fail("resizing");
  }
  void write_at(uint64_t offset, const void* data, size_t bytes) const {
    const char* p = static_cast<const char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::pwrite(fd_, p, bytes, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("writing");
      p += n, offset += static_cast<uint64_t>(n), bytes -= static_cast<size_t>(n);
    }
  }
  void sync() const {
    if (::fsync(fd_) != 0) fail("syncing");
  }

 private:
  [[noreturn]] void fail(const char* what) const {
    throw Error(detail::concat(what, " ", path_, " failed: ", std::strerror(errno)));
  }
  std::string path_;
  int fd_;
};

void rename_or_throw(const std::string& from, const std::string& to) {
  if (std::rename(from.c_str(), to.c_str()) != 0)
    throw Error(detail::concat("renaming ", from, " to ", to, " failed: ", std::strerror(errno)));
}

}  // namespace

ParallelShardOutput::ParallelShardOutput(std::vector<std::string> files, uint64_t vocab, const PrepComm& comm)
    : files_(std::move(files)), vocab_(vocab), comm_(comm) {}

ParallelShardOutput::~ParallelShardOutput() {
  if (!published_ && comm_.rank() == 0) remove_temporaries();
}

void ParallelShardOutput::remove_temporaries() const {
  std::error_code ignored;
  for (const std::string& f : files_) {
    std::filesystem::remove(f + ".bin.tmp", ignored);
    std::filesystem::remove(f + ".idx.tmp", ignored);
  }
}

void ParallelShardOutput::create_temporaries(const std::vector<FileTotals>& totals) const {
  for (size_t i = 0; i < files_.size(); ++i) {
    const uint64_t docs = static_cast<uint64_t>(totals[i].documents), tokens = static_cast<uint64_t>(totals[i].tokens);
    const File bin(files_[i] + ".bin.tmp", O_WRONLY | O_CREAT | O_TRUNC);
    bin.resize(tokens * shard_token_bytes(vocab_));
    const File idx(files_[i] + ".idx.tmp", O_WRONLY | O_CREAT | O_TRUNC);
    idx.resize(shard_index_bytes(docs));
    const ShardIndexHeader header(vocab_, docs, tokens);
    const uint64_t zero = 0;
    idx.write_at(0, header.bytes, sizeof(header.bytes));
    idx.write_at(shard_offset_position(0), &zero, 8);
    // Synced here too: on a network file system a rank's fsync covers only its own writes.
    bin.sync();
    idx.sync();
  }
}

void ParallelShardOutput::write_part(size_t i, const LocalShardPart& part, int64_t first_doc,
                                     int64_t first_token, const FileTotals& totals) const {
  if (part.documents.empty()) return;
  const uint32_t token_bytes = shard_token_bytes(vocab_);
  std::vector<unsigned char> narrow(part.tokens * token_bytes);
  std::vector<uint64_t> ends(part.documents.size());  // offsets[first_doc + 1 ...]
  uint64_t end = static_cast<uint64_t>(first_token);
  unsigned char* out = narrow.data();
  for (size_t d = 0; d < part.documents.size(); ++d) {
    for (const uint32_t id : part.documents[d]) {
      TRIDENT_CHECK(id < vocab_, "token id ", id, " >= vocab ", vocab_);
      if (token_bytes == 2) {
        const uint16_t v = static_cast<uint16_t>(id);
        std::memcpy(out, &v, 2);
      } else {
        std::memcpy(out, &id, 4);
      }
      out += token_bytes;
    }
    ends[d] = end += part.documents[d].size();
  }

  const File bin(files_[i] + ".bin.tmp", O_WRONLY);
  bin.write_at(static_cast<uint64_t>(first_token) * token_bytes, narrow.data(), narrow.size());
  bin.sync();
  const File idx(files_[i] + ".idx.tmp", O_WRONLY);
  const uint64_t docs = static_cast<uint64_t>(totals.documents), first = static_cast<uint64_t>(first_doc);
  idx.write_at(shard_offset_position(first + 1), ends.data(), ends.size() * 8);
  idx.write_at(shard_loss_start_position(docs, first), part.loss_starts.data(), part.loss_starts.size() * 8);
  idx.sync();
}

std::vector<ParallelShardOutput::FileTotals> ParallelShardOutput::write(const std::vector<LocalShardPart>& parts) {
  TRIDENT_CHECK(parts.size() == files_.size(), parts.size(), " parts for ", files_.size(), " files");
  std::vector<int64_t> counts;
  for (const LocalShardPart& p : parts) {
    counts.push_back(static_cast<int64_t>(p.documents.size()));
    counts.push_back(static_cast<int64_t>(p.tokens));
  }
  std::vector<int64_t> firsts = counts, sums = counts;
  comm_.exclusive_prefix_sum(firsts);
  comm_.sum(sums);
  std::vector<FileTotals> totals(files_.size());
  for (size_t i = 0; i < files_.size(); ++i) totals[i] = {sums[2 * i], sums[2 * i + 1]};

  std::exception_ptr error;
  try {
    if (comm_.rank() == 0) create_temporaries(totals);
  } catch (...) {
    error = std::current_exception();
  }
  comm_.throw_if_any_failed(error);  // also orders the creation before every rank's writes
  try {
    for (size_t i = 0; i < files_.size(); ++i) write_part(i, parts[i], firsts[2 * i], firsts[2 * i + 1], totals[i]);
  } catch (...) {
    error = std::current_exception();
  }
  comm_.throw_if_any_failed(error);
  return totals;
}

void ParallelShardOutput::publish() {
  if (comm_.rank() == 0) {
    for (const std::string& f : files_) {
      rename_or_throw(f + ".bin.tmp", f + ".bin");
      rename_or_throw(f + ".idx.tmp", f + ".idx");
    }
  }
  published_ = true;
}

}  // namespace trident::data
