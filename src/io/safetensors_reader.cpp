// Reading safetensors: mmap, header validation, sharded indexes, fp32 copies of blocks.
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "trident/core/dtype.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/io/safetensors.hpp"

namespace trident::io {

namespace fs = std::filesystem;

namespace {

// Bytes per element of every dtype the format defines (so any valid file's offsets can be
// checked); 0 for a name the format does not know.
uint64_t element_size(const std::string& dtype) {
  static const std::map<std::string, uint64_t> sizes = {
      {"BOOL", 1}, {"U8", 1},  {"I8", 1},  {"F8_E4M3", 1}, {"F8_E5M2", 1}, {"I16", 2}, {"U16", 2}, {"F16", 2},
      {"BF16", 2}, {"I32", 4}, {"U32", 4}, {"F32", 4},     {"F64", 8},     {"I64", 8}, {"U64", 8}};
  const auto it = sizes.find(dtype);
  return it == sizes.end() ? 0 : it->second;
}

// Header lengths above this are not a header (a guard against reading garbage as a length).
constexpr uint64_t kMaxHeaderBytes = uint64_t(100) << 20;

SafetensorsView parse_entry(const std::string& path, const std::string& name, const Json& entry, const uint8_t* base,
                            uint64_t data_bytes) {
  auto bad = [&](const std::string& what) {
    return ConfigError(detail::concat(path, ": tensor ", name, ": ", what, " (a malformed safetensors header)"));
  };
  if (!entry.is_object()) throw bad("entry is not an object");
  const Json* dtype = entry.find("dtype");
  const Json* shape = entry.find("shape");
  const Json* offsets = entry.find("data_offsets");
  if (!dtype || !dtype->is_string()) throw bad("no \"dtype\" string");
  if (!shape || !shape->is_array()) throw bad("no \"shape\" array");
  if (!offsets || !offsets->is_array() || offsets->as_array().size() != 2) throw bad("no \"data_offsets\" [begin, end]");
  SafetensorsView v;
  v.name = name;
  v.file = path;
  v.dtype = dtype->as_string();
  const uint64_t elem = element_size(v.dtype);
  if (elem == 0) throw bad("unknown dtype \"" + v.dtype + "\"");
  uint64_t numel = 1;
  for (const Json& d : shape->as_array()) {
    if (!d.is_number() || d.as_number() < 0 || d.as_number() != double(int64_t(d.as_number())))
      throw bad("shape holds something other than a non-negative integer");
    v.shape.push_back(d.as_int());
    numel *= uint64_t(v.shape.back());
  }
  int64_t range[2];
  for (int i = 0; i < 2; ++i) {
    const Json& o = offsets->as_array()[size_t(i)];
    if (!o.is_number() || o.as_number() < 0 || o.as_number() != double(int64_t(o.as_number())))
      throw bad("data_offsets hold something other than non-negative integers");
    range[i] = o.as_int();
  }
  if (range[0] > range[1] || uint64_t(range[1]) > data_bytes)
    throw bad(detail::concat("data_offsets [", range[0], ", ", range[1], "] outside the ", data_bytes,
                             " data bytes (truncated file?)"));
  if (uint64_t(range[1] - range[0]) != numel * elem)
    throw bad(detail::concat("data_offsets span ", range[1] - range[0], " bytes but ", v.dtype, " ", v.shape_str(),
                             " needs ", numel * elem));
  v.data = base + range[0];
  v.bytes = uint64_t(range[1] - range[0]);
  return v;
}

}  // namespace

int64_t SafetensorsView::numel() const {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return n;
}

std::string SafetensorsView::shape_str() const {
  std::ostringstream os;
  os << '[';
  for (size_t i = 0; i < shape.size(); ++i) os << (i ? ", " : "") << shape[i];
  os << ']';
  return os.str();
}

MappedFile::MappedFile(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  TRIDENT_CONFIG_CHECK(fd >= 0, path, ": cannot open (", std::strerror(errno), ")");
  struct stat st {};
  ::fstat(fd, &st);
  size_ = uint64_t(st.st_size);
  if (size_ > 0) {
    void* p = ::mmap(nullptr, size_, PROT_READ, MAP_SHARED, fd, 0);
    ::close(fd);
    TRIDENT_CONFIG_CHECK(p != MAP_FAILED, path, ": cannot map (", std::strerror(errno), ")");
    data_ = static_cast<const uint8_t*>(p);
  } else {
    ::close(fd);
  }
}

MappedFile::~MappedFile() {
  if (data_) ::munmap(const_cast<uint8_t*>(data_), size_);
}

MappedFile::MappedFile(MappedFile&& o) noexcept : data_(o.data_), size_(o.size_) {
  o.data_ = nullptr;
  o.size_ = 0;
}

SafetensorsFile::SafetensorsFile(const std::string& path) : path_(path), map_(path) {
  TRIDENT_CONFIG_CHECK(map_.size() >= 8, path, ": ", map_.size(),
                       " bytes, too short for a safetensors header length (truncated file?)");
  uint64_t header = 0;
  std::memcpy(&header, map_.data(), 8);  // little-endian, as x86 and ARM read it
  TRIDENT_CONFIG_CHECK(header <= kMaxHeaderBytes && header <= map_.size() - 8, path, ": header length ", header,
                       " does not fit the file's ", map_.size(), " bytes (truncated, or not a safetensors file)");
  const std::string_view text(reinterpret_cast<const char*>(map_.data()) + 8, header);
  Json json;
  try {
    json = Json::parse(text);
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(path, ": safetensors header is not valid JSON: ", e.what()));
  }
  TRIDENT_CONFIG_CHECK(json.is_object(), path, ": safetensors header is not a JSON object");
  const uint8_t* base = map_.data() + 8 + header;
  const uint64_t data_bytes = map_.size() - 8 - header;
  for (const auto& [name, entry] : json.as_object()) {
    if (name == "__metadata__") {
      TRIDENT_CONFIG_CHECK(entry.is_object(), path, ": __metadata__ is not an object");
      for (const auto& [k, v] : entry.as_object()) {
        TRIDENT_CONFIG_CHECK(v.is_string(), path, ": __metadata__ value of \"", k, "\" is not a string");
        metadata_[k] = v.as_string();
      }
      continue;
    }
    TRIDENT_CONFIG_CHECK(!tensors_.count(name), path, ": tensor ", name, " appears twice in the header");
    tensors_[name] = parse_entry(path, name, entry, base, data_bytes);
  }
  // No two tensors may share bytes.
  std::vector<const SafetensorsView*> by_offset;
  for (const auto& [name, v] : tensors_) by_offset.push_back(&v);
  std::sort(by_offset.begin(), by_offset.end(), [](auto* a, auto* b) { return a->data < b->data; });
  for (size_t i = 1; i < by_offset.size(); ++i)
    TRIDENT_CONFIG_CHECK(by_offset[i - 1]->data + by_offset[i - 1]->bytes <= by_offset[i]->data, path, ": tensors ",
                         by_offset[i - 1]->name, " and ", by_offset[i]->name,
                         " overlap in the data section (a malformed safetensors header)");
}

const SafetensorsView* SafetensorsFile::find(const std::string& name) const {
  const auto it = tensors_.find(name);
  return it == tensors_.end() ? nullptr : &it->second;
}

SafetensorsModel::SafetensorsModel(const std::string& path) : path_(path) {
  std::vector<std::string> files;
  if (fs::is_directory(path)) {
    const fs::path index = fs::path(path) / "model.safetensors.index.json";
    const fs::path single = fs::path(path) / "model.safetensors";
    if (fs::is_regular_file(index)) {
      std::ifstream in(index);
      std::stringstream text;
      text << in.rdbuf();
      Json json;
      try {
        json = Json::parse(text.str());
      } catch (const ConfigError& e) {
        throw ConfigError(detail::concat(index.string(), ": not valid JSON: ", e.what()));
      }
      const Json* map = json.find("weight_map");
      TRIDENT_CONFIG_CHECK(map && map->is_object(), index.string(), ": no \"weight_map\" object");
      std::map<std::string, std::string> wanted;  // tensor -> shard file
      for (const auto& [name, file] : map->as_object()) {
        TRIDENT_CONFIG_CHECK(file.is_string(), index.string(), ": weight_map entry ", name, " is not a file name");
        wanted[name] = file.as_string();
        if (std::find(files.begin(), files.end(), file.as_string()) == files.end()) files.push_back(file.as_string());
      }
      for (const std::string& f : files) {
        TRIDENT_CONFIG_CHECK(f.find('/') == std::string::npos, index.string(), ": shard ", f, " is not a file name");
        files_.push_back(std::make_unique<SafetensorsFile>((fs::path(path) / f).string()));
      }
      for (const auto& [name, file] : wanted) {
        const SafetensorsFile* shard = nullptr;
        for (const auto& sf : files_)
          if (fs::path(sf->path()).filename() == file) shard = sf.get();
        const SafetensorsView* v = shard->find(name);
        TRIDENT_CONFIG_CHECK(v != nullptr, index.string(), " puts tensor ", name, " in ", file,
                             ", which does not hold it");
        index_[name] = v;
      }
      return;
    }
    TRIDENT_CONFIG_CHECK(fs::is_regular_file(single), path, ": no model.safetensors or model.safetensors.index.json ",
                         "(not a Hugging Face model directory, or a model saved without safe_serialization)");
    files_.push_back(std::make_unique<SafetensorsFile>(single.string()));
  } else {
    TRIDENT_CONFIG_CHECK(fs::is_regular_file(path), path, " not found");
    files_.push_back(std::make_unique<SafetensorsFile>(path));
  }
  for (const auto& f : files_)
    for (const auto& [name, v] : f->tensors()) index_[name] = &v;
}

const SafetensorsView* SafetensorsModel::find(const std::string& name) const {
  const auto it = index_.find(name);
  return it == index_.end() ? nullptr : it->second;
}

const SafetensorsView& SafetensorsModel::at(const std::string& name, const std::vector<int64_t>& shape) const {
  const SafetensorsView* v = find(name);
  TRIDENT_CONFIG_CHECK(v != nullptr, path_, ": no tensor ", name, " (a model of another architecture?)");
  TRIDENT_CONFIG_CHECK(v->dtype == "F32" || v->dtype == "F16" || v->dtype == "BF16", v->file, ": tensor ", name,
                       " has dtype ", v->dtype, "; trident reads F32, F16 and BF16 weights");
  SafetensorsView want;
  want.shape = shape;
  TRIDENT_CONFIG_CHECK(v->shape == shape, v->file, ": tensor ", name, " has shape ", v->shape_str(), " but config.json ",
                       "implies ", want.shape_str());
  return *v;
}

std::vector<std::string> SafetensorsModel::names() const {
  std::vector<std::string> out;
  for (const auto& [name, v] : index_) out.push_back(name);
  return out;
}

namespace {
template <typename Convert>
void copy_block(const uint8_t* data, size_t elem, int64_t ld, int64_t row0, int64_t rows, int64_t col0, int64_t cols,
                bool transpose, float* out, Convert convert) {
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* row = data + (size_t(row0 + r) * size_t(ld) + size_t(col0)) * elem;
    for (int64_t c = 0; c < cols; ++c) {
      const float v = convert(row + size_t(c) * elem);
      out[transpose ? c * rows + r : r * cols + c] = v;
    }
  }
}
}  // namespace

void read_block(const SafetensorsView& t, int64_t row0, int64_t rows, int64_t col0, int64_t cols, bool transpose,
                float* out) {
  TRIDENT_CONFIG_CHECK(t.shape.size() == 1 || t.shape.size() == 2, t.file, ": tensor ", t.name, " has ",
                       t.shape.size(), " dimensions; trident reads vectors and matrices");
  const int64_t nrows = t.shape.size() == 2 ? t.shape[0] : 1, ncols = t.shape.back();
  TRIDENT_CHECK(row0 >= 0 && col0 >= 0 && row0 + rows <= nrows && col0 + cols <= ncols, t.name, ": block rows [", row0,
                ", ", row0 + rows, ") cols [", col0, ", ", col0 + cols, ") outside ", t.shape_str());
  if (t.dtype == "F32") {
    copy_block(t.data, 4, ncols, row0, rows, col0, cols, transpose, out, [](const uint8_t* p) {
      float f;
      std::memcpy(&f, p, 4);
      return f;
    });
  } else if (t.dtype == "BF16" || t.dtype == "F16") {
    const bool bf16 = t.dtype == "BF16";
    copy_block(t.data, 2, ncols, row0, rows, col0, cols, transpose, out, [bf16](const uint8_t* p) {
      uint16_t h;
      std::memcpy(&h, p, 2);
      return bf16 ? bf16_bits_to_fp32(h) : fp16_bits_to_fp32(h);
    });
  } else {
    throw ConfigError(detail::concat(t.file, ": tensor ", t.name, " has dtype ", t.dtype,
                                     "; trident reads F32, F16 and BF16 weights"));
  }
}

}  // namespace trident::io
