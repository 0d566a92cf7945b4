// safetensors reading and writing: round trip, blocks (transposed, fp16/bf16 widened), sharded
// indexes, and malformed files rejected with a ConfigError that names the file and the tensor.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <regex>

#include "temp_dir.hpp"
#include "trident/core/dtype.hpp"
#include "trident/core/error.hpp"
#include "trident/io/safetensors.hpp"

namespace trident::io {
namespace {

// A file with this header text and data section, written byte for byte.
void write_raw(const std::string& path, const std::string& header, const std::string& data, int64_t length = -1) {
  std::ofstream out(path, std::ios::binary);
  const uint64_t n = length >= 0 ? uint64_t(length) : header.size();
  out.write(reinterpret_cast<const char*>(&n), 8);
  out << header << data;
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Safetensors, WriteThenRead) {
  testing::TempDir tmp;
  const std::string path = tmp / "m.safetensors";
  write_safetensors(path, {{"b", {3}, {1, 2, 3}}, {"a.weight", {2, 3}, {1, 2, 3, 4, 5, 6}}}, {{"format", "pt"}});
  EXPECT_FALSE(std::filesystem::exists(path + ".tmp"));
  uint64_t header = 0;
  std::ifstream(path, std::ios::binary).read(reinterpret_cast<char*>(&header), 8);
  EXPECT_EQ(header % 8, 0u) << "data must start 8-byte aligned";
  const SafetensorsFile f(path);
  EXPECT_EQ(f.metadata().at("format"), "pt");
  const SafetensorsView& a = *f.find("a.weight");
  EXPECT_EQ(a.dtype, "F32");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  float block[4];
  read_block(a, 0, 2, 1, 2, false, block);  // columns 1..2 of both rows
  EXPECT_EQ(std::vector<float>(block, block + 4), (std::vector<float>{2, 3, 5, 6}));
  read_block(a, 0, 2, 1, 2, true, block);  // the same block transposed: [2 cols, 2 rows]
  EXPECT_EQ(std::vector<float>(block, block + 4), (std::vector<float>{2, 5, 3, 6}));
  read_block(*f.find("b"), 0, 1, 1, 2, false, block);
  EXPECT_EQ(block[0], 2);
  EXPECT_EQ(block[1], 3);
}

TEST(Safetensors, HalfPrecisionWidensExactly) {
  testing::TempDir tmp;
  const std::string path = tmp / "h.safetensors";
  const float values[2] = {1.5f, -0.09375f};
  std::string data;
  for (float v : values) {
    const uint16_t h = fp32_to_fp16_bits(v);
    data.append(reinterpret_cast<const char*>(&h), 2);
  }
  for (float v : values) {
    const uint16_t b = fp32_to_bf16_bits(v);
    data.append(reinterpret_cast<const char*>(&b), 2);
  }
  write_raw(path, R"({"h":{"dtype":"F16","shape":[2],"data_offsets":[0,4]},"b":{"dtype":"BF16","shape":[2],"data_offsets":[4,8]}})",
            data);
  const SafetensorsModel m(path);
  float out[2];
  read_block(m.at("h", {2}), 0, 1, 0, 2, false, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -0.09375f);
  read_block(m.at("b", {2}), 0, 1, 0, 2, false, out);
  EXPECT_EQ(out[0], 1.5f);
  EXPECT_EQ(out[1], -0.09375f);
}

TEST(Safetensors, ShardedIndex) {
  testing::TempDir tmp;
  write_safetensors(tmp / "s1.safetensors", {{"x", {2}, {1, 2}}});
  write_safetensors(tmp / "s2.safetensors", {{"y", {1}, {3}}});
  std::ofstream(tmp / "model.safetensors.index.json")
      << R"({"metadata": {"total_size": 12}, "weight_map": {"x": "s1.safetensors", "y": "s2.safetensors"}})";
  const SafetensorsModel m(tmp.path.string());
  EXPECT_EQ(m.names(), (std::vector<std::string>{"x", "y"}));
  EXPECT_NE(m.at("y", {1}).file.find("s2.safetensors"), std::string::npos);
  std::ofstream(tmp / "model.safetensors.index.json") << R"({"weight_map": {"x": "s2.safetensors"}})";
  EXPECT_NE(error_of([&] { SafetensorsModel bad(tmp.path.string()); }).find("does not hold it"), std::string::npos);
}

struct BadCase {
  const char* name;
  std::string header;
  std::string data;
  int64_t length;
  const char* expect;
};

TEST(Safetensors, MalformedFilesNameTheFileAndTensor) {
  testing::TempDir tmp;
  const std::string ok8(8, '\0');
  const BadCase cases[] = {
      {"not json", "{\"w\": [1, 2", ok8, -1, "not valid JSON"},
      {"not an object", "[1, 2]", ok8, -1, "not a JSON object"},
      {"length past the end", R"({})", "", 1000, "does not fit the file"},
      {"unknown dtype", R"({"w":{"dtype":"F7","shape":[2],"data_offsets":[0,8]}})", ok8, -1, "tensor w: unknown dtype"},
      {"offsets outside", R"({"w":{"dtype":"F32","shape":[4],"data_offsets":[0,16]}})", ok8, -1,
       "tensor w: data_offsets \\[0, 16\\] outside the 8 data bytes"},
      {"size mismatch", R"({"w":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}})", ok8, -1, "tensor w: data_offsets span 8"},
      {"overlap", R"({"v":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})",
       ok8, -1, "tensors v and w overlap"},
      {"negative shape", R"({"w":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}})", ok8, -1, "tensor w: shape"},
      {"no offsets", R"({"w":{"dtype":"F32","shape":[2]}})", ok8, -1, "tensor w: no \"data_offsets\""},
  };
  for (const BadCase& c : cases) {
    const std::string path = tmp / "bad.safetensors";
    write_raw(path, c.header, c.data, c.length);
    const std::string message = error_of([&] { SafetensorsFile f(path); });
    EXPECT_NE(message.find(path), std::string::npos) << c.name << ": " << message;
    EXPECT_TRUE(std::regex_search(message, std::regex(c.expect))) << c.name << ": " << message;
  }
  std::ofstream(tmp / "short.safetensors") << "abc";
  EXPECT_NE(error_of([&] { SafetensorsFile f(tmp / "short.safetensors"); }).find("too short"), std::string::npos);
}

TEST(Safetensors, WrongShapeOrDtypeNamesTheTensor) {
  testing::TempDir tmp;
  const std::string path = tmp / "m.safetensors";
  write_raw(path, R"({"ids":{"dtype":"I64","shape":[1],"data_offsets":[0,8]},"w":{"dtype":"F32","shape":[2],"data_offsets":[8,16]}})",
            std::string(16, '\0'));
  const SafetensorsModel m(path);
  EXPECT_NE(error_of([&] { m.at("ids", {1}); }).find("tensor ids has dtype I64; trident reads F32, F16 and BF16"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.at("w", {3}); }).find("tensor w has shape [2] but config.json implies [3]"),
            std::string::npos);
  EXPECT_NE(error_of([&] { m.at("missing", {1}); }).find("no tensor missing"), std::string::npos);
}

}  // namespace
}  // namespace trident::io
