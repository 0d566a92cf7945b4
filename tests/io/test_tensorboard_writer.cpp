// TensorBoard event files: CRC-32C against published check values, varints and fields byte for
// byte, TFRecord framing, and files written by TensorBoardWriter parsed back by hand.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <sstream>

#include "temp_dir.hpp"
#include "trident/io/tensorboard_writer.hpp"

namespace trident::io {
namespace {

std::string bytes(std::initializer_list<int> values) {
  std::string out;
  for (int v : values) out.push_back(char(v));
  return out;
}

std::string varint(uint64_t value) {
  std::string out;
  put_varint(out, value);
  return out;
}

TEST(TensorBoardCrc32c, PublishedCheckValues) {
  EXPECT_EQ(crc32c("123456789"), 0xE3069283u);  // the CRC catalogue's check value
  EXPECT_EQ(crc32c(""), 0u);
  // RFC 3720 (iSCSI) appendix B.4: 32 bytes of zeros, of ones, ascending, descending.
  std::string zeros(32, '\0'), ones(32, '\xff'), up, down;
  for (int i = 0; i < 32; ++i) up.push_back(char(i)), down.push_back(char(31 - i));
  EXPECT_EQ(crc32c(zeros), 0x8A9136AAu);
  EXPECT_EQ(crc32c(ones), 0x62A8AB43u);
  EXPECT_EQ(crc32c(up), 0x46DD794Eu);
  EXPECT_EQ(crc32c(down), 0x113FDB5Cu);
}

TEST(TensorBoardCrc32c, Masked) {
  const uint32_t crc = 0xE3069283u;
  EXPECT_EQ(masked_crc32c("123456789"), ((crc >> 15) | (crc << 17)) + 0xa282ead8u);
}

TEST(TensorBoardProto, Varints) {
  EXPECT_EQ(varint(0), bytes({0x00}));
  EXPECT_EQ(varint(1), bytes({0x01}));
  EXPECT_EQ(varint(127), bytes({0x7f}));
  EXPECT_EQ(varint(128), bytes({0x80, 0x01}));
  EXPECT_EQ(varint(300), bytes({0xac, 0x02}));
  EXPECT_EQ(varint(UINT64_MAX), bytes({0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01}));
}

TEST(TensorBoardProto, Fields) {
  EXPECT_EQ(ProtoEncoder().varint(2, 150).str(), bytes({0x10, 0x96, 0x01}));
  EXPECT_EQ(ProtoEncoder().varint(16, 1).str(), bytes({0x80, 0x01, 0x01}));  // a two-byte tag
  EXPECT_EQ(ProtoEncoder().bytes(1, "abc").str(), bytes({0x0a, 0x03, 'a', 'b', 'c'}));
  EXPECT_EQ(ProtoEncoder().f32(2, 1.0f).str(), bytes({0x15, 0x00, 0x00, 0x80, 0x3f}));
  EXPECT_EQ(ProtoEncoder().f64(1, 1.0).str(), bytes({0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f}));
  EXPECT_EQ(ProtoEncoder().bytes(2, "").str(), bytes({0x12, 0x00}));
}

uint64_t read_le(const std::string& s, size_t at, int n) {
  uint64_t v = 0;
  for (int i = 0; i < n; ++i) v |= uint64_t(uint8_t(s[at + i])) << (8 * i);
  return v;
}

TEST(TensorBoardRecord, Framing) {
  const std::string record = tfrecord("abc");
  ASSERT_EQ(record.size(), 3u + 16u);
  EXPECT_EQ(record.substr(0, 8), bytes({3, 0, 0, 0, 0, 0, 0, 0}));
  EXPECT_EQ(read_le(record, 8, 4), masked_crc32c(record.substr(0, 8)));
  EXPECT_EQ(record.substr(12, 3), "abc");
  EXPECT_EQ(read_le(record, 15, 4), masked_crc32c("abc"));
}

// A protobuf message parsed by hand: field number -> its values in order (varints and fixed
// fields as their integer bits, length-delimited ones as bytes).
struct Fields {
  std::multimap<int, uint64_t> numbers;
  std::multimap<int, std::string> strings;
  uint64_t number(int field) const { return numbers.count(field) ? numbers.find(field)->second : 0; }
  std::string string(int field) const { return strings.count(field) ? strings.find(field)->second : ""; }
};

uint64_t parse_varint(const std::string& s, size_t& at) {
  uint64_t v = 0;
  for (int shift = 0;; shift += 7) {
    EXPECT_LT(at, s.size()) << "varint runs past the message";
    if (at >= s.size()) return v;
    const uint8_t b = uint8_t(s[at++]);
    v |= uint64_t(b & 0x7f) << shift;
    if (!(b & 0x80)) return v;
  }
}

Fields parse(const std::string& s) {
  Fields f;
  for (size_t at = 0; at < s.size();) {
    const uint64_t tag = parse_varint(s, at);
    const int field = int(tag >> 3), wire = int(tag & 7);
    switch (wire) {
      case 0:
        f.numbers.emplace(field, parse_varint(s, at));
        break;
      case 1:
      case 5: {
        const int n = wire == 1 ? 8 : 4;
        f.numbers.emplace(field, read_le(s, at, n));
        at += n;
        break;
      }
      case 2: {
        const uint64_t n = parse_varint(s, at);
        f.strings.emplace(field, s.substr(at, n));
        at += n;
        break;
      }
      default:
        ADD_FAILURE() << "unexpected wire type " << wire;
        return f;
    }
  }
  return f;
}

float as_float(uint64_t bits) {
  const uint32_t b = uint32_t(bits);
  float v;
  std::memcpy(&v, &b, sizeof v);
  return v;
}

// The records of an events file, each frame and CRC checked.
std::vector<std::string> read_records(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  const std::string s = text.str();
  std::vector<std::string> records;
  size_t at = 0;
  while (at < s.size()) {
    EXPECT_LE(at + 12, s.size()) << "a torn record header";
    if (at + 12 > s.size()) break;
    const uint64_t n = read_le(s, at, 8);
    EXPECT_EQ(read_le(s, at + 8, 4), masked_crc32c(s.substr(at, 8)));
    EXPECT_LE(at + 16 + n, s.size()) << "a torn record";
    if (at + 16 + n > s.size()) break;
    records.push_back(s.substr(at + 12, n));
    EXPECT_EQ(read_le(s, at + 12 + n, 4), masked_crc32c(records.back()));
    at += 16 + n;
  }
  return records;
}

std::vector<std::string> event_files(const std::filesystem::path& dir) {
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) files.push_back(entry.path().string());
  std::sort(files.begin(), files.end());
  return files;
}

TEST(TensorBoardWriter, RoundTrip) {
  testing::TempDir tmp;
  const Logger log(0);
  {
    TensorBoardWriter writer(tmp / "tb", log);
    EXPECT_FALSE(writer.failed());
    EXPECT_EQ(std::filesystem::path(writer.path()).filename().string().rfind("events.out.tfevents.", 0), 0u);
    writer.add_session_start(5);
    writer.add_text("config", 5, "```ini\n[train]\nsteps = 8\n```\n");
    writer.add_scalars(5, {{"loss", 5.75}, {"lr", 3e-4}});
    writer.add_scalar("eval/perplexity", 6, 123.5);
    writer.flush();
  }
  const std::vector<std::string> files = event_files(tmp.path / "tb");
  ASSERT_EQ(files.size(), 1u);
  const std::vector<std::string> records = read_records(files[0]);
  ASSERT_EQ(records.size(), 5u);

  const Fields version = parse(records[0]);
  EXPECT_EQ(version.string(3), "brain.Event:2");
  EXPECT_GT(version.number(1), 0u);  // wall_time

  const Fields start = parse(records[1]);
  EXPECT_EQ(start.number(2), 5u);
  EXPECT_EQ(parse(start.string(7)).number(1), 1u);  // SessionLog.status = START

  const Fields text = parse(records[2]);
  EXPECT_EQ(text.number(2), 5u);
  const Fields text_value = parse(parse(text.string(5)).string(1));
  EXPECT_EQ(text_value.string(1), "config");
  EXPECT_EQ(parse(parse(text_value.string(9)).string(1)).string(1), "text");  // plugin_data.plugin_name
  const Fields tensor = parse(text_value.string(8));
  EXPECT_EQ(tensor.number(1), 7u);  // DT_STRING
  EXPECT_EQ(tensor.string(8), "```ini\n[train]\nsteps = 8\n```\n");

  const Fields scalars = parse(records[3]);
  EXPECT_EQ(scalars.number(2), 5u);
  const Fields summary = parse(scalars.string(5));
  const auto values = summary.strings.equal_range(1);
  std::vector<std::pair<std::string, float>> got;
  for (auto it = values.first; it != values.second; ++it) {
    const Fields value = parse(it->second);
    got.emplace_back(value.string(1), as_float(value.number(2)));
  }
  const std::vector<std::pair<std::string, float>> want = {{"loss", 5.75f}, {"lr", 3e-4f}};
  EXPECT_EQ(got, want);

  const Fields eval = parse(records[4]);
  EXPECT_EQ(eval.number(2), 6u);
  const Fields eval_value = parse(parse(eval.string(5)).string(1));
  EXPECT_EQ(eval_value.string(1), "eval/perplexity");
  EXPECT_EQ(as_float(eval_value.number(2)), 123.5f);
}

TEST(TensorBoardWriter, EachStartANewFileTheOldOnesUntouched) {
  testing::TempDir tmp;
  const Logger log(0);
  TensorBoardWriter first(tmp / "tb", log);
  first.add_scalar("loss", 1, 2.0);
  first.flush();
  const auto size = std::filesystem::file_size(first.path());
  // Opened within the same second: a distinct name that sorts after the first.
  TensorBoardWriter second(tmp / "tb", log);
  second.add_scalar("loss", 2, 1.0);
  second.flush();
  EXPECT_NE(first.path(), second.path());
  EXPECT_LT(first.path(), second.path());
  EXPECT_EQ(std::filesystem::file_size(first.path()), size);
  EXPECT_EQ(read_records(second.path()).size(), 2u);
}

TEST(TensorBoardWriter, FailureWarnsOnceAndWritesNothingMore) {
  testing::TempDir tmp;
  std::ofstream(tmp / "file") << "not a directory";
  const Logger log(0);
  ::testing::internal::CaptureStderr();
  {
    TensorBoardWriter writer(tmp / "file/tb", log);  // cannot be created
    EXPECT_TRUE(writer.failed());
    writer.add_scalar("loss", 1, 1.0);
    writer.flush();
    writer.add_scalar("loss", 2, 1.0);
    writer.flush();
  }
  const std::string err = ::testing::internal::GetCapturedStderr();
  EXPECT_NE(err.find("TensorBoard events: cannot create"), std::string::npos) << err;
  EXPECT_EQ(err.find("warning"), err.rfind("warning")) << "warned more than once: " << err;
}

}  // namespace
}  // namespace trident::io
