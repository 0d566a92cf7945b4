// ParallelShardOutput: rank 0 creates each temporary file at its final size with the index
// header; then every rank pwrite()s its offsets and loss starts at the positions its prefix sums
// give, and the blocks of the .bin that start in its range (sealed: hashed or encrypted), with
// their block-table entries; rank 0 seals the index last, and the ranks agree before anything
// is renamed.
#include "prep_output.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "trident/core/file_policy.hpp"
#include "trident/core/error.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

// An fd closed on scope exit; errors are thrown with the path.
class File {
 public:
  File(const std::string& path, int flags) : path_(path), fd_(::open(path.c_str(), flags | O_CLOEXEC, 0644)) {
    TRIDENT_CONFIG_CHECK(fd_ >= 0, "cannot open ", path, " for writing: ", std::strerror(errno));
    if (flags & O_CREAT) secure_file(fd_, path);
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
  void read_at(uint64_t offset, void* data, size_t bytes) const {
    char* p = static_cast<char*>(data);
    while (bytes > 0) {
      const ssize_t n = ::pread(fd_, p, bytes, static_cast<off_t>(offset));
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) fail("reading");
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

// One file's part on this rank: its layout, the rank's bytes [begin, end) of the .bin and the
// bytes after end, up to the end of the last block starting in the range, from the ranks above.
struct ParallelShardOutput::FileState {
  size_t index = 0;
  ShardIndexLayout layout;
  uint64_t total_bytes = 0;
  uint64_t begin = 0, end = 0;
  std::vector<unsigned char> bytes;
  std::vector<unsigned char> tail;
};

ParallelShardOutput::ParallelShardOutput(std::vector<std::string> files, uint64_t vocab, const PrepComm& comm,
                                         const security::MasterKey* key)
    : files_(std::move(files)), vocab_(vocab), comm_(comm), key_(key) {}

// Rank 0 draws each file's data key and file id; every rank takes the same (collective).
void ParallelShardOutput::share_protections() {
  constexpr size_t kWords = (kShardProtectionBytes + 32 + 7) / 8;
  std::vector<int64_t> words(files_.size() * kWords, 0);
  if (comm_.rank() == 0)
    for (size_t i = 0; i < files_.size(); ++i) {
      const auto state = ShardProtection::make(key_).shared_state();
      std::memcpy(&words[i * kWords], state.data(), state.size());
    }
  comm_.broadcast(words, 0);
  protections_.clear();
  for (size_t i = 0; i < files_.size(); ++i)
    protections_.push_back(ShardProtection::from_shared_state(reinterpret_cast<const unsigned char*>(&words[i * kWords])));
}

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
    const uint32_t block_bytes = protections_[i].block_bytes();
    const ShardIndexLayout layout{kShardVersion, docs, shard_block_count(tokens * shard_token_bytes(vocab_), block_bytes)};
    idx.resize(layout.bytes());
    const ShardIndexHeader header(vocab_, docs, tokens);
    const auto protection = protections_[i].bytes();
    const uint64_t zero = 0;
    idx.write_at(0, header.bytes, sizeof(header.bytes));
    idx.write_at(kShardHeaderBytes, protection.data(), protection.size());
    idx.write_at(layout.offset_position(0), &zero, 8);
    // Synced here too: on a network file system a rank's fsync covers only its own writes.
    bin.sync();
    idx.sync();
  }
}

// Narrows this rank's tokens of the file into file.bytes and writes its offsets and loss starts.
void ParallelShardOutput::write_part(FileState& file, const LocalShardPart& part, int64_t first_doc) const {
  if (part.documents.empty()) return;
  const uint32_t token_bytes = shard_token_bytes(vocab_);
  file.bytes.resize(part.tokens * token_bytes);
  std::vector<uint64_t> ends(part.documents.size());  // offsets[first_doc + 1 ...]
  uint64_t end = file.begin / token_bytes;
  unsigned char* out = file.bytes.data();
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
  const File idx(files_[file.index] + ".idx.tmp", O_WRONLY);
  const uint64_t first = static_cast<uint64_t>(first_doc);
  idx.write_at(file.layout.offset_position(first + 1), ends.data(), ends.size() * 8);
  idx.write_at(file.layout.loss_start_position(first), part.loss_starts.data(), part.loss_starts.size() * 8);
  idx.sync();
}

// A block is sealed by the rank holding its first byte; a rank whose range starts inside a
// block sends the bytes up to the block's end (or its whole range) to that rank (collective).
void ParallelShardOutput::exchange_block_heads(std::vector<FileState>& files) const {
  const int ranks = comm_.size();
  std::vector<uint64_t> mine;
  for (const FileState& f : files) mine.insert(mine.end(), {f.begin, f.end});
  const std::vector<std::vector<uint64_t>> ranges = comm_.exchange(std::vector<std::vector<uint64_t>>(size_t(ranks), mine));
  std::vector<std::vector<uint64_t>> to_rank(static_cast<size_t>(ranks));
  for (FileState& f : files) {
    const uint64_t block_bytes = protections_[f.index].block_bytes();
    if (f.begin == f.end || f.begin % block_bytes == 0) continue;
    const uint64_t block_start = f.begin / block_bytes * block_bytes;
    const uint64_t head = std::min(f.end, block_start + block_bytes) - f.begin;
    int owner = -1;
    for (int q = 0; q < ranks && owner < 0; ++q) {
      const uint64_t b = ranges[size_t(q)][2 * f.index], e = ranges[size_t(q)][2 * f.index + 1];
      if (b <= block_start && block_start < e) owner = q;
    }
    TRIDENT_CHECK(owner >= 0 && owner < comm_.rank(), "no rank holds byte ", block_start, " of ", files_[f.index]);
    std::vector<uint64_t>& out = to_rank[size_t(owner)];
    out.insert(out.end(), {f.index, head});
    const size_t at = out.size();
    out.resize(at + (head + 7) / 8);
    std::memcpy(&out[at], f.bytes.data(), head);
  }
  const std::vector<std::vector<uint64_t>> from_rank = comm_.exchange(to_rank);
  for (const std::vector<uint64_t>& in : from_rank) {  // in rank order: the tail's byte order
    for (size_t at = 0; at < in.size();) {
      FileState& f = files[in[at]];
      const uint64_t bytes = in[at + 1];
      const auto* p = reinterpret_cast<const unsigned char*>(&in[at + 2]);
      f.tail.insert(f.tail.end(), p, p + bytes);
      at += 2 + (bytes + 7) / 8;
    }
  }
}

// Seals the blocks that start in this rank's range and writes them and their entries.
void ParallelShardOutput::seal_blocks(FileState& file) const {
  ShardProtection protection = ShardProtection::from_shared_state(protections_[file.index].shared_state().data());
  const uint64_t block_bytes = protection.block_bytes();
  const uint64_t first_block = (file.begin + block_bytes - 1) / block_bytes;
  const uint64_t start = first_block * block_bytes;
  if (file.begin == file.end || start >= file.end) return;
  std::vector<unsigned char> owned(file.bytes.begin() + long(start - file.begin), file.bytes.end());
  owned.insert(owned.end(), file.tail.begin(), file.tail.end());
  const uint64_t blocks = shard_block_count(owned.size(), block_bytes);
  TRIDENT_CHECK(start + owned.size() == std::min(file.total_bytes, (first_block + blocks) * block_bytes),
                files_[file.index], ": blocks from byte ", start, " lack ", file.total_bytes - start - owned.size(), " bytes");
  std::vector<unsigned char> entries;
  for (uint64_t k = 0; k < blocks; ++k) {
    const uint64_t at = k * block_bytes, n = std::min<uint64_t>(block_bytes, owned.size() - at);
    const ShardBlockEntry e = protection.seal_block(first_block + k, owned.data() + at, n);
    entries.insert(entries.end(), e.begin(), e.end());
  }
  const File bin(files_[file.index] + ".bin.tmp", O_WRONLY);
  bin.write_at(start, owned.data(), owned.size());
  bin.sync();
  const File idx(files_[file.index] + ".idx.tmp", O_WRONLY);
  idx.write_at(file.layout.block_entry_position(first_block), entries.data(), entries.size());
  idx.sync();
}

// Rank 0, once every rank's part is written: the trailer over each index.
void ParallelShardOutput::seal_indexes(const std::vector<FileState>& files) const {
  for (const FileState& f : files) {
    const File idx(files_[f.index] + ".idx.tmp", O_RDWR);
    std::vector<unsigned char> bytes(f.layout.trailer_position());
    idx.read_at(0, bytes.data(), bytes.size());
    ShardProtection protection = ShardProtection::from_shared_state(protections_[f.index].shared_state().data());
    const ShardTrailer trailer = protection.seal_index(bytes.data(), bytes.size());
    idx.write_at(bytes.size(), trailer.data(), trailer.size());
    idx.sync();
  }
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

  share_protections();

  // Every step can fail on some ranks only: each is followed by an agreement, so that no rank
  // goes on into the exchange (a collective) while another has given up.
  const auto agreed = [this](auto&& step) {
    std::exception_ptr error;
    try {
      step();
    } catch (...) {
      error = std::current_exception();
    }
    comm_.throw_if_any_failed(error);
  };
  agreed([&] {  // also orders the creation before every rank's writes
    if (comm_.rank() == 0) create_temporaries(totals);
  });
  const uint64_t token_bytes = shard_token_bytes(vocab_);
  std::vector<FileState> files(files_.size());
  agreed([&] {
    for (size_t i = 0; i < files_.size(); ++i) {
      FileState& f = files[i];
      f.index = i;
      f.total_bytes = uint64_t(totals[i].tokens) * token_bytes;
      f.layout = {kShardVersion, uint64_t(totals[i].documents),
                  shard_block_count(f.total_bytes, protections_[i].block_bytes())};
      f.begin = uint64_t(firsts[2 * i + 1]) * token_bytes;
      f.end = f.begin + parts[i].tokens * token_bytes;
      write_part(f, parts[i], firsts[2 * i]);
    }
  });
  exchange_block_heads(files);
  agreed([&] {
    for (FileState& f : files) seal_blocks(f);
  });
  agreed([&] {
    if (comm_.rank() == 0) seal_indexes(files);
  });
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
