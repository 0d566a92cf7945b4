// The local tier's encrypted payload: header fields, sealing the pieces in blocks, opening them.
#include "local_state_crypto.hpp"

#include <openssl/crypto.h>

#include <algorithm>
#include <cstring>

#include "trident/core/error.hpp"

namespace trident::io::sealed {

namespace {

constexpr const char* kCipher = "aes-256-gcm";
constexpr uint64_t kMinBlockBytes = 4096, kMaxBlockBytes = uint64_t(1) << 30;

uint64_t payload_bytes(const std::vector<LocalPiece>& pieces) {
  uint64_t total = 0;
  for (const LocalPiece& p : pieces) total += p.data.bytes();
  return total;
}

// Calls f(piece, offset in the piece, offset in [from, to), bytes) for the pieces' part of the
// payload bytes [from, to).
template <typename F>
void segments(const std::vector<LocalPiece>& pieces, uint64_t from, uint64_t to, F&& f) {
  uint64_t at = 0;
  for (size_t i = 0; i < pieces.size() && at < to; ++i) {
    const uint64_t n = pieces[i].data.bytes(), lo = std::max(from, at), hi = std::min(to, at + n);
    if (lo < hi) f(pieces[i], lo - at, lo - from, hi - lo);
    at += n;
  }
}

// The datasets a block holds, for messages.
std::string block_contents(const std::vector<LocalPiece>& pieces, uint64_t from, uint64_t to) {
  std::string names;
  segments(pieces, from, to, [&](const LocalPiece& p, uint64_t, uint64_t, uint64_t) {
    names += (names.empty() ? "" : ", ") + p.dataset;
  });
  return names;
}

}  // namespace

LocalEncryption::LocalEncryption(const security::MasterKey& master) : key_id_(master.id) {
  security::random_bytes(data_key_);
  security::random_bytes(file_);
  wrapped_ = security::wrap_key(master, data_key_);
}

LocalEncryption::LocalEncryption(const Json& header, const std::string& path, const security::MasterKey* master) {
  const Json& e = header.at("encryption");
  TRIDENT_CONFIG_CHECK(e.at("cipher").as_string() == kCipher, path, ": encrypted with ", e.at("cipher").as_string(),
                       ", which this trident does not read");
  key_id_ = e.at("key_id").as_string();
  if (!master)
    throw CheckpointKeyError(detail::concat("local checkpoint ", path, " is encrypted (key id ", key_id_,
                                            "): a key is needed: give its key file as security.key_file"));
  if (master->id != key_id_)
    throw CheckpointKeyError(detail::concat("local checkpoint ", path, ": the key does not match: it was encrypted ",
                                            "with key id ", key_id_, ", the key given (security.key_file) has key id ",
                                            master->id));
  block_bytes_ = static_cast<uint64_t>(e.at("block_bytes").as_int());
  TRIDENT_CONFIG_CHECK(security::from_hex(e.at("wrapped_key").as_string(), wrapped_) &&
                           security::from_hex(e.at("file_id").as_string(), file_) && block_bytes_ >= kMinBlockBytes &&
                           block_bytes_ <= kMaxBlockBytes,
                       path, ": corrupt local-tier header (its encryption fields)");
  data_key_ = security::unwrap_key(*master, wrapped_, path);
}

LocalEncryption::~LocalEncryption() { OPENSSL_cleanse(data_key_.data(), data_key_.size()); }

Json LocalEncryption::header() const {
  Json e = Json::object();
  e.append("cipher", kCipher);
  e.append("key_id", key_id_);
  e.append("wrapped_key", security::to_hex(wrapped_));
  e.append("file_id", security::to_hex(file_));
  e.append("block_bytes", block_bytes_);
  return e;
}

bool LocalEncryption::write(std::FILE* f, const std::vector<LocalPiece>& pieces, std::vector<security::Tag>& tags) {
  const uint64_t total = payload_bytes(pieces);
  std::vector<unsigned char> block(static_cast<size_t>(std::min(block_bytes_, std::max<uint64_t>(total, 1))));
  security::BlockCipher cipher(data_key_, file_);
  for (uint64_t b = 0; b < blocks(total); ++b) {
    const uint64_t from = b * block_bytes_, to = std::min(total, from + block_bytes_);
    segments(pieces, from, to, [&](const LocalPiece& p, uint64_t offset, uint64_t at, uint64_t n) {
      TRIDENT_CHECK(p.data.device() == Device::kCPU, "local checkpoint: ", p.dataset, " is not a host tensor");
      std::memcpy(block.data() + at, static_cast<const char*>(p.data.raw()) + offset, n);
    });
    tags.push_back(cipher.seal(b, block.data(), to - from, block.data()));
    if (std::fwrite(block.data(), 1, to - from, f) != to - from) return false;
  }
  return true;
}

void LocalEncryption::read(std::FILE* f, const std::string& path, const std::vector<LocalPiece>& pieces,
                           const std::vector<security::Tag>& tags, bool into) {
  const uint64_t total = payload_bytes(pieces);
  TRIDENT_CONFIG_CHECK(tags.size() == blocks(total), path, ": ", tags.size(), " block tags for ", blocks(total),
                       " blocks (corrupt local-tier file)");
  std::vector<unsigned char> block(static_cast<size_t>(std::min(block_bytes_, std::max<uint64_t>(total, 1))));
  security::BlockCipher cipher(data_key_, file_);
  for (uint64_t b = 0; b < tags.size(); ++b) {
    const uint64_t from = b * block_bytes_, to = std::min(total, from + block_bytes_);
    TRIDENT_CONFIG_CHECK(std::fread(block.data(), 1, to - from, f) == to - from, path, ": truncated (block ", b, ")");
    TRIDENT_CONFIG_CHECK(cipher.open(b, block.data(), to - from, block.data(), tags[b]), path, ": block ", b,
                         " (payload bytes ", from, " to ", to, ": ", block_contents(pieces, from, to),
                         ") fails its authentication tag (corrupt local-tier file, or changed)");
    if (!into) continue;
    segments(pieces, from, to, [&](const LocalPiece& p, uint64_t offset, uint64_t at, uint64_t n) {
      TRIDENT_CHECK(p.data.device() == Device::kCPU, "local checkpoint: ", p.dataset, " is not a host tensor");
      std::memcpy(static_cast<char*>(p.data.raw()) + offset, block.data() + at, n);
    });
  }
}

}  // namespace trident::io::sealed
