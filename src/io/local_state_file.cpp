// The local tier's per-rank state file: header, raw (or sealed) pieces, checksum; atomic by rename.
#include "trident/core/file_policy.hpp"
#include "trident/io/local_state_file.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <algorithm>
#include <filesystem>
#include <memory>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "local_state_crypto.hpp"

namespace trident::io {

namespace {

constexpr char kMagic[8] = {'T', 'R', 'D', 'L', 'O', 'C', 'A', 'L'};
constexpr uint64_t kMaxHeaderBytes = uint64_t(256) << 20;
constexpr uint64_t kBlockBytes = uint64_t(16) << 20;  // checksum blocks: a reader verifies in these
constexpr int kPlainVersion = 1, kSealedVersion = 2;

using File = std::unique_ptr<FILE, int (*)(FILE*)>;

uint64_t rotl(uint64_t x, int r) { return (x << r) | (x >> (64 - r)); }

Json header_json(const CheckpointAttributes& attributes, const std::vector<LocalPiece>& pieces,
                 const sealed::LocalEncryption* encryption) {
  Json numbers = Json::object(), texts = Json::object();
  for (const auto& [k, v] : attributes.numbers) numbers.append(k, v);
  for (const auto& [k, v] : attributes.texts) texts.append(k, v);
  Json attrs = Json::object();
  attrs.append("numbers", std::move(numbers));
  attrs.append("texts", std::move(texts));
  Json list = Json::array();
  for (const LocalPiece& p : pieces) {
    Json entry = Json::array();
    entry.push_back(p.dataset);
    entry.push_back(p.begin);
    entry.push_back(p.data.numel());
    entry.push_back(dtype_name(p.data.dtype()));
    list.push_back(std::move(entry));
  }
  Json h = Json::object();
  h.append("version", encryption ? kSealedVersion : kPlainVersion);
  h.append("attributes", std::move(attrs));
  h.append("pieces", std::move(list));
  if (encryption) h.append("encryption", encryption->header());
  return h;
}

// The header's text, and the checksum so far (magic, length, header).
struct Header {
  Json json;
  uint64_t checksum = 0;
  bool sealed = false;  // version 2: the payload encrypted
};

Header read_header(FILE* f, const std::string& path) {
  char magic[8];
  uint64_t bytes = 0;
  TRIDENT_CONFIG_CHECK(std::fread(magic, 1, 8, f) == 8 && std::memcmp(magic, kMagic, 8) == 0, path,
                       ": not a local-tier state file (no TRDLOCAL magic)");
  TRIDENT_CONFIG_CHECK(std::fread(&bytes, sizeof bytes, 1, f) == 1 && bytes <= kMaxHeaderBytes, path,
                       ": truncated or corrupt local-tier header");
  std::string text(bytes, '\0');
  TRIDENT_CONFIG_CHECK(std::fread(text.data(), 1, bytes, f) == bytes, path, ": truncated local-tier header");
  Header h;
  h.checksum = local_checksum(kMagic, 8, 0);
  h.checksum = local_checksum(&bytes, sizeof bytes, h.checksum);
  h.checksum = local_checksum(text.data(), text.size(), h.checksum);
  try {
    h.json = Json::parse(text);
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(path, ": corrupt local-tier header: ", e.what()));
  }
  const Json* version = h.json.find("version");
  TRIDENT_CONFIG_CHECK(version && (version->as_int() == kPlainVersion || version->as_int() == kSealedVersion), path,
                       ": local-tier format version is not 1 or 2 (written by a newer trident?)");
  h.sealed = version->as_int() == kSealedVersion;
  return h;
}

CheckpointAttributes attributes_of(const Json& header) {
  CheckpointAttributes a;
  const Json& attrs = header.at("attributes");
  for (const auto& [k, v] : attrs.at("numbers").as_object()) a.numbers[k] = v.as_number();
  for (const auto& [k, v] : attrs.at("texts").as_object()) a.texts[k] = v.as_string();
  return a;
}

// A piece's bytes checksummed in blocks of kBlockBytes, as a reader streaming them sees them.
uint64_t checksum_blocks(const char* data, uint64_t bytes, uint64_t seed) {
  for (uint64_t done = 0; done < bytes; done += kBlockBytes)
    seed = local_checksum(data + done, static_cast<size_t>(std::min<uint64_t>(kBlockBytes, bytes - done)), seed);
  return seed;
}

File open_file(const std::string& path, const char* mode) { return File(std::fopen(path.c_str(), mode), std::fclose); }

}  // namespace

uint64_t local_checksum(const void* data, size_t bytes, uint64_t seed) {
  constexpr uint64_t kP1 = 0x9E3779B185EBCA87ull, kP2 = 0xC2B2AE3D27D4EB4Full;
  uint64_t lane[4] = {seed + kP1 + kP2, seed + kP2, seed, seed - kP1};
  const auto* p = static_cast<const unsigned char*>(data);
  size_t i = 0;
  for (; i + 32 <= bytes; i += 32)
    for (int k = 0; k < 4; ++k) {
      uint64_t w;
      std::memcpy(&w, p + i + 8 * k, 8);
      lane[k] = rotl(lane[k] + w * kP2, 31) * kP1;
    }
  unsigned char tail[32] = {};
  std::memcpy(tail, p + i, bytes - i);
  for (int k = 0; k < 4; ++k) {
    uint64_t w;
    std::memcpy(&w, tail + 8 * k, 8);
    lane[k] = rotl(lane[k] + w * kP2, 31) * kP1;
  }
  uint64_t h = rotl(lane[0], 1) + rotl(lane[1], 7) + rotl(lane[2], 12) + rotl(lane[3], 18) + uint64_t(bytes);
  h ^= h >> 33;
  h *= kP2;
  h ^= h >> 29;
  return h;
}

void write_local_state(const std::string& path, const CheckpointAttributes& attributes,
                       const std::vector<LocalPiece>& pieces, const security::MasterKey* key) {
  std::unique_ptr<sealed::LocalEncryption> encryption;
  if (key) encryption = std::make_unique<sealed::LocalEncryption>(*key);
  const std::string tmp = path + ".tmp", text = header_json(attributes, pieces, encryption.get()).dump();
  const uint64_t bytes = text.size();
  File f = open_file(tmp, "wb");
  if (!f) throw Error(detail::concat("local checkpoint: cannot create ", tmp, ": ", std::strerror(errno)));
  secure_file(fileno(f.get()), tmp);
  uint64_t checksum = local_checksum(kMagic, 8, 0);
  checksum = local_checksum(&bytes, sizeof bytes, checksum);
  checksum = local_checksum(text.data(), text.size(), checksum);
  bool ok = std::fwrite(kMagic, 1, 8, f.get()) == 8 && std::fwrite(&bytes, sizeof bytes, 1, f.get()) == 1 &&
            std::fwrite(text.data(), 1, text.size(), f.get()) == text.size();
  if (encryption) {  // the sealed payload, then its tags; the checksum covers header and tags
    std::vector<security::Tag> tags;
    ok = ok && encryption->write(f.get(), pieces, tags);
    for (const security::Tag& tag : tags) {
      checksum = local_checksum(tag.data(), tag.size(), checksum);
      ok = ok && std::fwrite(tag.data(), 1, tag.size(), f.get()) == tag.size();
    }
  }
  for (const LocalPiece& p : pieces) {
    if (!ok || encryption) break;
    TRIDENT_CHECK(p.data.device() == Device::kCPU, "local checkpoint: ", p.dataset,
                  " is not a contiguous host tensor");
    checksum = checksum_blocks(static_cast<const char*>(p.data.raw()), p.data.bytes(), checksum);
    ok = std::fwrite(p.data.raw(), 1, p.data.bytes(), f.get()) == p.data.bytes();
  }
  ok = ok && std::fwrite(&checksum, sizeof checksum, 1, f.get()) == 1 && std::fflush(f.get()) == 0 &&
       ::fsync(fileno(f.get())) == 0;
  const int error = errno;
  ok = std::fclose(f.release()) == 0 && ok;
  if (!ok) {
    std::filesystem::remove(tmp);
    throw Error(detail::concat("local checkpoint: cannot write ", tmp, " (disk full?): ", std::strerror(error)));
  }
  std::filesystem::rename(tmp, path);
}

CheckpointAttributes read_local_attributes(const std::string& path) {
  File f = open_file(path, "rb");
  TRIDENT_CONFIG_CHECK(f != nullptr, path, ": cannot be opened: ", std::strerror(errno));
  return attributes_of(read_header(f.get(), path).json);
}

namespace {

// Opens path, reads its header and checks that it holds exactly `pieces`; f is left at the payload.
Header open_checked(const std::string& path, const std::vector<LocalPiece>& pieces, File& f) {
  f = open_file(path, "rb");
  TRIDENT_CONFIG_CHECK(f != nullptr, path, ": cannot be opened: ", std::strerror(errno));
  Header h = read_header(f.get(), path);
  const Json::Array& stored = h.json.at("pieces").as_array();
  TRIDENT_CONFIG_CHECK(stored.size() == pieces.size(), path, ": holds ", stored.size(), " pieces, this run has ",
                       pieces.size(), " (another layout or model)");
  for (size_t i = 0; i < pieces.size(); ++i) {
    const LocalPiece& p = pieces[i];
    const Json::Array& s = stored[i].as_array();
    TRIDENT_CONFIG_CHECK(s.size() == 4 && s[0].as_string() == p.dataset && s[1].as_int() == p.begin &&
                             s[2].as_int() == p.data.numel() && s[3].as_string() == dtype_name(p.data.dtype()),
                         path, ": piece ", i, " is not ", p.dataset, " [", p.begin, ", +", p.data.numel(),
                         ") as this run holds it (another layout or model)");
  }
  return h;
}

}  // namespace

namespace {

// A sealed file (version 2): its encryption (the key checked), and its tags, read from after the
// payload and checked against the file's checksum; f is left at the payload.
std::unique_ptr<sealed::LocalEncryption> sealed_payload(std::FILE* f, const Header& h, const std::string& path,
                                                       const std::vector<LocalPiece>& pieces,
                                                       const security::MasterKey* key,
                                                       std::vector<security::Tag>& tags) {
  auto encryption = std::make_unique<sealed::LocalEncryption>(h.json, path, key);
  uint64_t payload = 0;
  for (const LocalPiece& p : pieces) payload += p.data.bytes();
  const off_t start = ::ftello(f);
  tags.resize(static_cast<size_t>(encryption->blocks(payload)));
  uint64_t sum = h.checksum, stored_sum = 0;
  char extra = 0;
  TRIDENT_CONFIG_CHECK(::fseeko(f, start + static_cast<off_t>(payload), SEEK_SET) == 0 &&
                           std::fread(tags.data(), sizeof(security::Tag), tags.size(), f) == tags.size(),
                       path, ": truncated (no block tags)");
  for (const security::Tag& tag : tags) sum = local_checksum(tag.data(), tag.size(), sum);
  TRIDENT_CONFIG_CHECK(std::fread(&stored_sum, sizeof stored_sum, 1, f) == 1, path, ": truncated (no checksum)");
  TRIDENT_CONFIG_CHECK(std::fread(&extra, 1, 1, f) == 0, path, ": bytes after the checksum");
  TRIDENT_CONFIG_CHECK(stored_sum == sum, path, ": checksum mismatch (corrupt local-tier file)");
  TRIDENT_CONFIG_CHECK(::fseeko(f, start, SEEK_SET) == 0, path, ": cannot seek back to its payload");
  return encryption;
}

}  // namespace

CheckpointAttributes verify_local_state(const std::string& path, const std::vector<LocalPiece>& pieces,
                                        const security::MasterKey* key) {
  File f(nullptr, std::fclose);
  Header h = open_checked(path, pieces, f);
  if (h.sealed) {  // every block's tag (decrypting into scratch); plain files need no key
    std::vector<security::Tag> tags;
    sealed_payload(f.get(), h, path, pieces, key, tags)->read(f.get(), path, pieces, tags, /*into=*/false);
    return attributes_of(h.json);
  }
  {
    uint64_t sum = h.checksum;
    std::vector<char> buf(kBlockBytes);
    for (const LocalPiece& p : pieces)
      for (uint64_t done = 0; done < p.data.bytes();) {
        const size_t n = static_cast<size_t>(std::min<uint64_t>(kBlockBytes, p.data.bytes() - done));
        TRIDENT_CONFIG_CHECK(std::fread(buf.data(), 1, n, f.get()) == n, path, ": truncated (", p.dataset, ")");
        sum = local_checksum(buf.data(), n, sum);
        done += n;
      }
    uint64_t stored_sum = 0;
    char extra = 0;
    TRIDENT_CONFIG_CHECK(std::fread(&stored_sum, sizeof stored_sum, 1, f.get()) == 1, path,
                         ": truncated (no checksum)");
    TRIDENT_CONFIG_CHECK(std::fread(&extra, 1, 1, f.get()) == 0, path, ": bytes after the checksum");
    TRIDENT_CONFIG_CHECK(stored_sum == sum, path, ": checksum mismatch (corrupt local-tier file)");
  }
  return attributes_of(h.json);
}

CheckpointAttributes read_local_state(const std::string& path, const std::vector<LocalPiece>& pieces,
                                      const security::MasterKey* key) {
  File f(nullptr, std::fclose);
  Header h = open_checked(path, pieces, f);
  if (h.sealed) {
    std::vector<security::Tag> tags;
    sealed_payload(f.get(), h, path, pieces, key, tags)->read(f.get(), path, pieces, tags, /*into=*/true);
    return attributes_of(h.json);
  }
  for (const LocalPiece& p : pieces) {
    TRIDENT_CHECK(p.data.device() == Device::kCPU, "local checkpoint: ", p.dataset, " is not a host tensor");
    TRIDENT_CONFIG_CHECK(std::fread(p.data.raw(), 1, p.data.bytes(), f.get()) == p.data.bytes(), path,
                         ": truncated (", p.dataset, ")");
  }
  return attributes_of(h.json);
}

}  // namespace trident::io
