// ShardSet: finds the shards of a prefix (single or "-i-of-N"), opens each with ShardReader and
// maps set-wide document and token offsets to (shard, local offset) by binary search.
#include "trident/data/shard_set.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>

#include "trident/core/error.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;

// N from any "<base>-iiiii-of-NNNNN.idx" beside the prefix; 0 when there is none.
int find_shard_count(const std::string& prefix) {
  const fs::path p(prefix);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string base = p.filename().string() + "-";
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator(dir, ec)) {
    const std::string name = entry.path().filename().string();
    int index = 0, count = 0, used = 0;
    if (name.size() <= base.size() || name.compare(0, base.size(), base) != 0) continue;
    const std::string rest = name.substr(base.size());
    if (std::sscanf(rest.c_str(), "%5d-of-%5d.idx%n", &index, &count, &used) == 2 &&
        used == static_cast<int>(rest.size()) && rest.size() == 18 && count > 1)
      return count;
  }
  return 0;
}

}  // namespace

std::string shard_file_prefix(const std::string& prefix, int index, int count) {
  if (count == 1) return prefix;
  char suffix[32];
  std::snprintf(suffix, sizeof(suffix), "-%05d-of-%05d", index, count);
  return prefix + suffix;
}

std::vector<std::string> shard_files(const std::string& prefix) {
  const int count = fs::exists(prefix + ".idx") ? 1 : find_shard_count(prefix);
  std::vector<std::string> files;
  for (int s = 0; s < count; ++s)
    for (const char* ext : {".idx", ".bin"}) {
      const std::string file = shard_file_prefix(prefix, s, count) + ext;
      if (fs::exists(file)) files.push_back(file);
    }
  return files;
}

ShardSet::ShardSet(std::string prefix, const security::MasterKey* key) : prefix_(std::move(prefix)) {
  int count = 1;
  if (!fs::exists(prefix_ + ".idx")) {
    count = find_shard_count(prefix_);
    TRIDENT_CONFIG_CHECK(count > 0, "no token shards at ", prefix_, ": neither ", prefix_, ".idx nor ", prefix_,
                         "-00000-of-NNNNN.idx exists; run trident prep --output ", prefix_);
  }
  shards_.reserve(static_cast<size_t>(count));
  for (int s = 0; s < count; ++s) {
    const std::string file = shard_file_prefix(prefix_, s, count);
    TRIDENT_CONFIG_CHECK(count == 1 || fs::exists(file + ".idx"), "shard ", s, " of ", count, " (", file,
                         ".idx) is missing; re-run trident prep");
    shards_.emplace_back(file, key);
    const ShardReader& shard = shards_.back();
    TRIDENT_CONFIG_CHECK(shard.vocab() == shards_.front().vocab(), file, ".idx: vocab ", shard.vocab(),
                         " but shard 0 has ", shards_.front().vocab(),
                         " (shards from different preps); re-run trident prep");
    doc_begin_.push_back(doc_begin_.back() + shard.num_documents());
    token_begin_.push_back(token_begin_.back() + shard.num_tokens());
    has_loss_starts_ |= shard.has_loss_starts();
  }
}

DocumentSpan ShardSet::document(uint64_t d) const {
  TRIDENT_CHECK(d < num_documents(), "document ", d, " of ", num_documents());
  // Last shard whose first document is <= d: among shards with equal starts (empty ones) the
  // last, which is the one holding d.
  const size_t s = static_cast<size_t>(std::upper_bound(doc_begin_.begin(), doc_begin_.end(), d) -
                                       doc_begin_.begin()) - 1;
  DocumentSpan span = shards_[s].document(d - doc_begin_[s]);
  span.begin += token_begin_[s];
  span.end += token_begin_[s];
  return span;
}

size_t ShardSet::shard_of_token(uint64_t t) const {
  TRIDENT_CHECK(t < num_tokens(), "token ", t, " of ", num_tokens());
  return static_cast<size_t>(std::upper_bound(token_begin_.begin(), token_begin_.end(), t) -
                             token_begin_.begin()) - 1;
}

uint64_t ShardSet::document_of(uint64_t t) const {
  const size_t s = shard_of_token(t);
  return doc_begin_[s] + shards_[s].document_of(t - token_begin_[s]);
}

uint32_t ShardSet::token(uint64_t t) const {
  const size_t s = shard_of_token(t);
  return shards_[s].token(t - token_begin_[s]);
}

void ShardSet::copy_tokens(uint64_t begin, uint64_t count, int32_t* out) const {
  TRIDENT_CHECK(begin <= num_tokens() && count <= num_tokens() - begin, "tokens [", begin, ", ",
                begin + count, ") of ", num_tokens());
  while (count > 0) {
    const size_t s = shard_of_token(begin);
    const uint64_t local = begin - token_begin_[s];
    const uint64_t n = std::min(count, shards_[s].num_tokens() - local);
    shards_[s].copy_tokens(local, n, out);
    begin += n;
    count -= n;
    out += n;
  }
}

}  // namespace trident::data
