// The local tier's state files encrypted (format version 2): pieces round-trip bit-equal across
// block boundaries, no tensor byte is stored in the clear, the key is checked (none, another: a
// CheckpointKeyError naming the file), a flipped byte anywhere in the payload or the tags is
// found by verify before any tensor is written (naming the file and the block), and plain
// version 1 files still read, with or without a key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <fstream>
#include <functional>
#include <iterator>
#include <vector>

#include "temp_dir.hpp"
#include "trident/io/local_state_file.hpp"

namespace trident::io {
namespace {

security::MasterKey key_of(unsigned char seed) {
  security::Key bytes{};
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(seed * 17 + i);
  return security::master_key_from_bytes(bytes);
}

// Pieces of 4, 8 and 6 MiB and odd sizes (18 MiB: two 16 MiB blocks, the first ending inside
// the last piece); values distinct.
std::vector<LocalPiece> pieces(bool fill) {
  std::vector<LocalPiece> out;
  const int64_t sizes[] = {int64_t(1) << 20, 3, int64_t(2) << 20, 1001, int64_t(3) << 19};  // elements
  int64_t g = 0;
  for (size_t i = 0; i < std::size(sizes); ++i) {
    LocalPiece p{"/model/p" + std::to_string(i), int64_t(i) * 10, Tensor::zeros(Shape{sizes[i]}, DType::kF32)};
    for (int64_t k = 0; k < sizes[i]; ++k, ++g) p.data.data<float>()[k] = fill ? float(g % 100003) + 0.25f : 0.0f;
    out.push_back(std::move(p));
  }
  return out;
}

CheckpointAttributes attributes() {
  CheckpointAttributes a;
  a.numbers = {{"step", 12}, {"format_version", 1}};
  a.texts = {{"local_key", "abc"}};
  return a;
}

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::vector<char>(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void flip(const std::string& path, size_t offset) {
  std::vector<char> b = bytes_of(path);
  b.at(offset) ^= 0x04;
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
}

bool same(const std::vector<LocalPiece>& a, const std::vector<LocalPiece>& b) {
  for (size_t i = 0; i < a.size(); ++i)
    if (std::memcmp(a[i].data.raw(), b[i].data.raw(), a[i].data.bytes()) != 0) return false;
  return true;
}

template <typename E>
std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  }
  return "";
}

TEST(LocalStateEncryption, RoundTripsAndStoresNoPlainBytes) {
  testing::TempDir dir;
  const security::MasterKey key = key_of(1);
  const std::string path = dir / "step.bin";
  const std::vector<LocalPiece> written = pieces(true);
  write_local_state(path, attributes(), written, &key);
  EXPECT_EQ(read_local_attributes(path).numbers.at("step"), 12);  // the header needs no key
  const std::vector<LocalPiece> back = pieces(false);
  EXPECT_EQ(verify_local_state(path, back, &key).numbers.at("step"), 12);
  read_local_state(path, back, &key);
  EXPECT_TRUE(same(written, back));
  // No 64-byte run of any piece appears in the file.
  const std::vector<char> file = bytes_of(path);
  for (const LocalPiece& p : written) {
    const char* probe = static_cast<const char*>(p.data.raw()) + p.data.bytes() / 2 - 32;
    if (p.data.bytes() < 64) continue;
    EXPECT_EQ(std::search(file.begin(), file.end(), probe, probe + 64), file.end()) << p.dataset;
  }
  // Two files of the same state differ (a data key and file id each).
  write_local_state(dir / "again.bin", attributes(), written, &key);
  EXPECT_NE(bytes_of(dir / "again.bin"), file);
}

TEST(LocalStateEncryption, NeedsItsKey) {
  testing::TempDir dir;
  const security::MasterKey key = key_of(1), other = key_of(2);
  const std::string path = dir / "step.bin";
  write_local_state(path, attributes(), pieces(true), &key);
  const std::vector<LocalPiece> back = pieces(false);
  const std::string none = error_of<CheckpointKeyError>([&] { verify_local_state(path, back, nullptr); });
  EXPECT_NE(none.find("local checkpoint " + path + " is encrypted (key id " + key.id + "): a key is needed"),
            std::string::npos) << none;
  const std::string wrong = error_of<CheckpointKeyError>([&] { read_local_state(path, back, &other); });
  EXPECT_NE(wrong.find("local checkpoint " + path + ": the key does not match"), std::string::npos) << wrong;
  EXPECT_TRUE(same(back, pieces(false)));  // nothing written into the tensors
}

TEST(LocalStateEncryption, FlippedByteIsFoundBeforeAnyTensorIsWritten) {
  testing::TempDir dir;
  const security::MasterKey key = key_of(1);
  const std::string path = dir / "step.bin";
  write_local_state(path, attributes(), pieces(true), &key);
  const size_t size = bytes_of(path).size();
  const size_t tags = 16 * 2 + 8;  // two 16 MiB blocks' tags, then the checksum
  const size_t payload_end = size - tags;
  // In the second block (the payload's last byte), in the first block, in a tag.
  const struct {
    size_t offset;
    const char* want;
  } cases[] = {{payload_end - 1, ": block 1 (payload bytes 16777216 to "},
               {payload_end - (size_t(18) << 20),
                ": block 0 (payload bytes 0 to 16777216: /model/p0, /model/p1, /model/p2, /model/p3, /model/p4)"},
               {payload_end + 3, ": checksum mismatch"}};
  for (const auto& c : cases) {
    write_local_state(path, attributes(), pieces(true), &key);
    flip(path, c.offset);
    const std::vector<LocalPiece> back = pieces(false);
    const std::string error = error_of<ConfigError>([&] { verify_local_state(path, back, &key); });
    EXPECT_NE(error.find(path + c.want), std::string::npos) << error;
    EXPECT_TRUE(same(back, pieces(false)));
  }
}

TEST(LocalStateEncryption, PlainFilesStayVersionOneAndReadWithAKey) {
  testing::TempDir dir;
  const security::MasterKey key = key_of(1);
  const std::string path = dir / "step.bin";
  const std::vector<LocalPiece> written = pieces(true);
  write_local_state(path, attributes(), written, nullptr);
  const std::vector<char> file = bytes_of(path);
  EXPECT_NE(std::string(file.begin(), file.begin() + 64).find("{\"version\":1,"), std::string::npos);
  const std::vector<LocalPiece> back = pieces(false);
  verify_local_state(path, back, &key);
  read_local_state(path, back, &key);
  EXPECT_TRUE(same(written, back));
}

}  // namespace
}  // namespace trident::io
