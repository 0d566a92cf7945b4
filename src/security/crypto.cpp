// AES-256-GCM, key wrapping, SHA-256 and the key file, through OpenSSL's EVP interface (which
// picks AES-NI / VAES / SHA-NI or the Arm crypto extensions at run time).
#include "trident/security/crypto.hpp"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstring>
#include <fstream>
#include <iterator>
#include <vector>

#include "trident/core/error.hpp"

namespace trident::security {
namespace {

constexpr char kWrapAad[] = "trident data key v1";
constexpr char kKeyIdLabel[] = "trident key id";

int hex_value(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

void require(bool ok, const char* what) {
  if (!ok) throw Error(detail::concat("OpenSSL: ", what, " failed"));
}

// One AES-256-GCM pass over `bytes` with the given nonce and associated data; encrypts when
// tag_out is set, else decrypts and checks tag_in. Returns false only for a failed tag.
bool gcm(EVP_CIPHER_CTX* ctx, bool encrypt, const Key& key, const unsigned char nonce[12],
         std::span<const unsigned char> aad, const void* in, size_t bytes, void* out, Tag* tag_out,
         const Tag* tag_in) {
  require(EVP_CipherInit_ex(ctx, EVP_aes_256_gcm(), nullptr, key.data(), nonce, encrypt ? 1 : 0) == 1, "GCM init");
  int len = 0;
  require(EVP_CipherUpdate(ctx, nullptr, &len, aad.data(), static_cast<int>(aad.size())) == 1, "GCM aad");
  auto* src = static_cast<const unsigned char*>(in);
  auto* dst = static_cast<unsigned char*>(out);
  // out before in, the two overlapping (a chunk opened where it lies, past its nonce): each step
  // goes through a small buffer, written back only after its input is consumed.
  const bool shifted = bytes > 0 && dst != src && dst < src + bytes && src < dst + bytes;
  require(!shifted || dst < src, "GCM with an output overlapping its input from behind");
  std::vector<unsigned char> bounce(shifted ? size_t(64) << 10 : 0);
  for (size_t done = 0; done < bytes;) {  // EVP takes int lengths
    const int n = static_cast<int>(std::min<size_t>(bytes - done, shifted ? bounce.size() : size_t(1) << 30));
    require(EVP_CipherUpdate(ctx, shifted ? bounce.data() : dst + done, &len, src + done, n) == 1, "GCM update");
    if (shifted) std::memcpy(dst + done, bounce.data(), static_cast<size_t>(n));
    done += static_cast<size_t>(n);
  }
  if (!encrypt)
    require(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, 16, const_cast<unsigned char*>(tag_in->data())) == 1,
            "GCM set tag");
  unsigned char tail[16];
  const int final_ok = EVP_CipherFinal_ex(ctx, tail, &len);
  if (encrypt) {
    require(final_ok == 1, "GCM final");
    require(EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, 16, tag_out->data()) == 1, "GCM get tag");
  }
  return final_ok == 1;
}

struct CipherContext {
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  CipherContext() { require(ctx != nullptr, "EVP_CIPHER_CTX_new"); }
  ~CipherContext() { EVP_CIPHER_CTX_free(ctx); }
  CipherContext(const CipherContext&) = delete;
  CipherContext& operator=(const CipherContext&) = delete;
};

}  // namespace

std::string to_hex(std::span<const unsigned char> bytes) {
  static const char* digits = "0123456789abcdef";
  std::string s(2 * bytes.size(), '0');
  for (size_t i = 0; i < bytes.size(); ++i) {
    s[2 * i] = digits[bytes[i] >> 4];
    s[2 * i + 1] = digits[bytes[i] & 15];
  }
  return s;
}

bool from_hex(std::string_view hex, std::span<unsigned char> out) {
  if (hex.size() != 2 * out.size()) return false;
  for (size_t i = 0; i < out.size(); ++i) {
    const int hi = hex_value(hex[2 * i]), lo = hex_value(hex[2 * i + 1]);
    if (hi < 0 || lo < 0) return false;
    out[i] = static_cast<unsigned char>(hi * 16 + lo);
  }
  return true;
}

void random_bytes(std::span<unsigned char> out) {
  require(RAND_bytes(out.data(), static_cast<int>(out.size())) == 1, "RAND_bytes");
}

Digest sha256(const void* data, size_t bytes) {
  Sha256 h;
  h.update(data, bytes);
  return h.finish();
}

Sha256::Sha256() : ctx_(EVP_MD_CTX_new()) {
  require(ctx_ != nullptr && EVP_DigestInit_ex(static_cast<EVP_MD_CTX*>(ctx_), EVP_sha256(), nullptr) == 1,
          "SHA-256 init");
}
Sha256::~Sha256() { EVP_MD_CTX_free(static_cast<EVP_MD_CTX*>(ctx_)); }
void Sha256::update(const void* data, size_t bytes) {
  require(EVP_DigestUpdate(static_cast<EVP_MD_CTX*>(ctx_), data, bytes) == 1, "SHA-256 update");
}
Digest Sha256::finish() {
  Digest d{};
  unsigned int n = 0;
  require(EVP_DigestFinal_ex(static_cast<EVP_MD_CTX*>(ctx_), d.data(), &n) == 1 && n == d.size(), "SHA-256 final");
  return d;
}

MasterKey master_key_from_bytes(const Key& bytes) {
  std::vector<unsigned char> labelled(std::begin(kKeyIdLabel), std::end(kKeyIdLabel) - 1);
  labelled.insert(labelled.end(), bytes.begin(), bytes.end());
  const Digest d = sha256(labelled.data(), labelled.size());
  return {bytes, to_hex(std::span(d.data(), 8))};
}

MasterKey load_key_file(const std::string& path) {
  struct stat st {};
  TRIDENT_CONFIG_CHECK(::stat(path.c_str(), &st) == 0, "key file ", path, ": ", std::strerror(errno));
  TRIDENT_CONFIG_CHECK(S_ISREG(st.st_mode), "key file ", path, " is not a regular file");
  const unsigned mode = st.st_mode & 07777;
  char mode_text[8];
  std::snprintf(mode_text, sizeof mode_text, "%04o", mode);
  TRIDENT_CONFIG_CHECK(mode == 0600 || mode == 0400, "key file ", path, " has mode ", mode_text,
                       "; it must be 0600 or 0400 (chmod 600 ", path, ")");
  TRIDENT_CONFIG_CHECK(st.st_uid == ::geteuid(), "key file ", path, " is owned by uid ", st.st_uid,
                       ", not by this user (uid ", ::geteuid(), ")");
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in.good(), "key file ", path, ": cannot read it");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  Key key{};
  if (text.size() == key.size()) {
    std::memcpy(key.data(), text.data(), key.size());
  } else {
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    TRIDENT_CONFIG_CHECK(text.size() == 2 * key.size(), "key file ", path, " holds ", text.size(),
                         " bytes; it must hold a 32-byte key, raw (32 bytes) or as 64 hex digits");
    for (size_t i = 0; i < key.size(); ++i) {
      const int hi = hex_value(text[2 * i]), lo = hex_value(text[2 * i + 1]);
      TRIDENT_CONFIG_CHECK(hi >= 0 && lo >= 0, "key file ", path, ": character ", 2 * i + (hi < 0 ? 0 : 1),
                           " is not a hex digit");
      key[i] = static_cast<unsigned char>(hi * 16 + lo);
    }
  }
  return master_key_from_bytes(key);
}

WrappedKey wrap_key(const MasterKey& master, const Key& data_key) {
  WrappedKey w{};
  random_bytes(std::span(w.data(), 12));
  Tag tag{};
  CipherContext c;
  gcm(c.ctx, true, master.bytes, w.data(), std::span(reinterpret_cast<const unsigned char*>(kWrapAad), sizeof kWrapAad - 1),
      data_key.data(), data_key.size(), w.data() + 12, &tag, nullptr);
  std::memcpy(w.data() + 44, tag.data(), tag.size());
  return w;
}

Key unwrap_key(const MasterKey& master, const WrappedKey& wrapped, const std::string& what) {
  Tag tag{};
  std::memcpy(tag.data(), wrapped.data() + 44, tag.size());
  Key key{};
  CipherContext c;
  const bool ok = gcm(c.ctx, false, master.bytes, wrapped.data(),
                      std::span(reinterpret_cast<const unsigned char*>(kWrapAad), sizeof kWrapAad - 1),
                      wrapped.data() + 12, key.size(), key.data(), nullptr, &tag);
  TRIDENT_CONFIG_CHECK(ok, what, ": the key does not match (key id ", master.id,
                       " cannot open this file's data key: another key, or the file was changed)");
  return key;
}

Tag gcm_seal(const Key& key, const unsigned char nonce[12], std::span<const unsigned char> aad, const void* in,
             size_t bytes, void* out) {
  CipherContext c;
  Tag tag{};
  gcm(c.ctx, true, key, nonce, aad, in, bytes, out, &tag, nullptr);
  return tag;
}

bool gcm_open(const Key& key, const unsigned char nonce[12], std::span<const unsigned char> aad, const void* in,
              size_t bytes, void* out, const Tag& tag) {
  CipherContext c;
  return gcm(c.ctx, false, key, nonce, aad, in, bytes, out, nullptr, &tag);
}

struct BlockCipher::Context : CipherContext {};

BlockCipher::BlockCipher(const Key& data_key, const FileId& file)
    : ctx_(std::make_unique<Context>()), key_(data_key), file_(file) {}
BlockCipher::~BlockCipher() = default;
BlockCipher::BlockCipher(BlockCipher&&) noexcept = default;
BlockCipher& BlockCipher::operator=(BlockCipher&&) noexcept = default;

namespace {
struct BlockNonce {
  unsigned char nonce[12];
  unsigned char aad[24];
  BlockNonce(const FileId& file, uint64_t block) {
    std::memcpy(nonce, "TBLK", 4);
    std::memcpy(nonce + 4, &block, 8);
    std::memcpy(aad, file.data(), 16);
    std::memcpy(aad + 16, &block, 8);
  }
};
}  // namespace

Tag BlockCipher::seal(uint64_t block, const void* in, size_t bytes, void* out) {
  const BlockNonce n(file_, block);
  Tag tag{};
  gcm(ctx_->ctx, true, key_, n.nonce, n.aad, in, bytes, out, &tag, nullptr);
  return tag;
}

bool BlockCipher::open(uint64_t block, const void* in, size_t bytes, void* out, const Tag& tag) {
  const BlockNonce n(file_, block);
  return gcm(ctx_->ctx, false, key_, n.nonce, n.aad, in, bytes, out, nullptr, &tag);
}

}  // namespace trident::security
