// safetensors files (Hugging Face's weight format): an 8-byte little-endian header length N, N
// bytes of JSON {"name": {"dtype", "shape", "data_offsets": [begin, end]}, "__metadata__": {...}},
// then the tensors' bytes (offsets relative to the end of the header). Reading maps the file
// read-only: a tensor is a view of its bytes, and a rank copies only the block it needs
// (its tensor-parallel rows or columns) converted to fp32, so no rank ever holds the whole model.
// Sharded models (model.safetensors.index.json + shards) read as one.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace trident::io {

// One tensor inside a mapped file. dtype is the header's string ("F32", "BF16", ...); reading
// accepts F32, F16 and BF16 only.
struct SafetensorsView {
  std::string name;
  std::string file;
  std::string dtype;
  std::vector<int64_t> shape;
  const uint8_t* data = nullptr;
  uint64_t bytes = 0;

  int64_t numel() const;
  std::string shape_str() const;  // "[3, 4]"
};

// Read-only mmap of one file; non-copyable, movable.
class MappedFile {
 public:
  explicit MappedFile(const std::string& path);  // ConfigError when it cannot be opened
  ~MappedFile();
  MappedFile(MappedFile&& o) noexcept;
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  MappedFile& operator=(MappedFile&&) = delete;
  const uint8_t* data() const { return data_; }
  uint64_t size() const { return size_; }

 private:
  const uint8_t* data_ = nullptr;
  uint64_t size_ = 0;
};

// One .safetensors file, header validated on open: a length that fits the file, JSON that is an
// object, every tensor with a known dtype, non-negative shape and data_offsets inside the data
// section matching its size, no two tensors overlapping. ConfigError naming the file (and the
// tensor) otherwise.
class SafetensorsFile {
 public:
  explicit SafetensorsFile(const std::string& path);
  const std::string& path() const { return path_; }
  const SafetensorsView* find(const std::string& name) const;
  const std::map<std::string, SafetensorsView>& tensors() const { return tensors_; }
  const std::map<std::string, std::string>& metadata() const { return metadata_; }

 private:
  std::string path_;
  MappedFile map_;
  std::map<std::string, SafetensorsView> tensors_;
  std::map<std::string, std::string> metadata_;
};

// The weights of a model: a directory with model.safetensors or model.safetensors.index.json
// (weight_map: tensor -> shard file), or one .safetensors file.
class SafetensorsModel {
 public:
  explicit SafetensorsModel(const std::string& path);
  const SafetensorsView* find(const std::string& name) const;
  // The tensor, checked to have this shape and a readable dtype (ConfigError naming the file and
  // the tensor otherwise).
  const SafetensorsView& at(const std::string& name, const std::vector<int64_t>& shape) const;
  std::vector<std::string> names() const;
  const std::string& path() const { return path_; }

 private:
  std::string path_;
  std::vector<std::unique_ptr<SafetensorsFile>> files_;
  std::map<std::string, const SafetensorsView*> index_;
};

// Copies rows [row0, row0 + rows) x columns [col0, col0 + cols) of t (a 1-D tensor is one row)
// into out as fp32: row-major [rows, cols], or [cols, rows] when transpose. ConfigError for a
// dtype other than F32, F16, BF16.
void read_block(const SafetensorsView& t, int64_t row0, int64_t rows, int64_t col0, int64_t cols, bool transpose,
                float* out);

// A tensor to write (its values in fp32).
struct SafetensorsTensor {
  std::string name;
  std::vector<int64_t> shape;
  std::vector<float> values;
};

// How write_safetensors stores the values: F32, or BF16 (rounded to nearest even).
enum class StoredFloat { kF32, kBF16 };

// Writes path + ".tmp" (header padded with spaces to a multiple of 8 bytes, tensors in the given
// order, each 8-byte aligned), then renames it to path.
void write_safetensors(const std::string& path, const std::vector<SafetensorsTensor>& tensors,
                       const std::map<std::string, std::string>& metadata = {{"format", "pt"}},
                       StoredFloat stored = StoredFloat::kF32);

}  // namespace trident::io
