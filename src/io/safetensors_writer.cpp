// Writing safetensors: JSON header padded to 8 bytes, aligned F32 or BF16 data, .tmp then rename.
#include <cstring>
#include <filesystem>
#include <fstream>

#include "trident/core/file_policy.hpp"
#include "trident/core/dtype.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/io/safetensors.hpp"

namespace trident::io {

void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata, StoredFloat stored) {
  const uint64_t width = stored == StoredFloat::kBF16 ? 2 : 4;
  Json header = Json::object();
  if (!metadata.empty()) {
    Json meta = Json::object();
    for (const auto& [k, v] : metadata) meta.set(k, Json(v));
    header.append("__metadata__", std::move(meta));
  }
  uint64_t offset = 0;
  for (const SafetensorsTensor& t : tensors) {
    int64_t numel = 1;
    Json shape = Json::array();
    for (int64_t d : t.shape) {
      numel *= d;
      shape.push_back(Json(d));
    }
    TRIDENT_CHECK(numel == int64_t(t.values.size()), t.name, ": ", t.values.size(), " values for ", numel, " elements");
    Json entry = Json::object();
    entry.append("dtype", Json(stored == StoredFloat::kBF16 ? "BF16" : "F32"));
    entry.append("shape", std::move(shape));
    Json offsets = Json::array();
    offsets.push_back(Json(offset));
    offsets.push_back(Json(offset + uint64_t(numel) * width));
    entry.append("data_offsets", std::move(offsets));
    header.append(t.name, std::move(entry));
    offset += uint64_t(numel) * width;  // element-aligned: every tensor's size is a multiple of its width
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out = create_file(tmp, std::ios::binary | std::ios::trunc);
    TRIDENT_CONFIG_CHECK(out.good(), "cannot create ", tmp);
    const uint64_t n = text.size();
    out.write(reinterpret_cast<const char*>(&n), 8);
    out.write(text.data(), std::streamsize(text.size()));
    std::vector<uint16_t> half;
    for (const SafetensorsTensor& t : tensors) {
      if (stored == StoredFloat::kF32) {
        out.write(reinterpret_cast<const char*>(t.values.data()), std::streamsize(t.values.size() * 4));
        continue;
      }
      half.resize(t.values.size());
      for (size_t i = 0; i < half.size(); ++i) half[i] = fp32_to_bf16_bits(t.values[i]);
      out.write(reinterpret_cast<const char*>(half.data()), std::streamsize(half.size() * 2));
    }
    out.flush();
    TRIDENT_CONFIG_CHECK(out.good(), "writing ", tmp, " failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  TRIDENT_CHECK(!ec, "cannot rename ", tmp, " to ", path, ": ", ec.message());
}

}  // namespace trident::io
