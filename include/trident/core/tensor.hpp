// Tensor: shape + dtype + device + a reference-counted owning buffer (64-byte aligned).
// Views (reshape, narrow along dim 0) share the buffer; all tensors are row-major contiguous.
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>

#include "trident/core/dtype.hpp"
#include "trident/core/error.hpp"

namespace trident {

enum class Device : uint8_t { kCPU, kCUDA };

// Up to kMaxDims extents, stored inline so that taking views never touches the heap.
class Shape {
 public:
  static constexpr int kMaxDims = 5;
  Shape() = default;
  Shape(std::initializer_list<int64_t> dims);
  int ndim() const { return ndim_; }
  int64_t operator[](int i) const { return dims_[i]; }
  int64_t& operator[](int i) { return dims_[i]; }
  int64_t numel() const;
  bool operator==(const Shape& o) const;
  std::string str() const;  // "(2, 64, 128)"

 private:
  std::array<int64_t, kMaxDims> dims_{};
  int ndim_ = 0;
};

// One allocation. The deleter knows the device (CPU: free; CUDA: the backend's allocator).
class Storage {
 public:
  Storage(void* data, size_t bytes, Device device, std::function<void(void*)> deleter)
      : data_(data), bytes_(bytes), device_(device), deleter_(std::move(deleter)) {}
  ~Storage() { if (data_ && deleter_) deleter_(data_); }
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  void* data() const { return data_; }
  size_t bytes() const { return bytes_; }
  Device device() const { return device_; }

 private:
  void* data_;
  size_t bytes_;
  Device device_;
  std::function<void(void*)> deleter_;
};

// Zero-filled, 64-byte aligned host memory; large buffers are advised to use huge pages
// (first touch of a 4 KiB page is expensive on the target VMs).
std::shared_ptr<Storage> allocate_host(size_t bytes);

class Tensor {
 public:
  Tensor() = default;
  Tensor(std::shared_ptr<Storage> storage, size_t offset_bytes, Shape shape, DType dtype);

  // A new zero-filled host tensor.
  static Tensor zeros(Shape shape, DType dtype);

  bool defined() const { return storage_ != nullptr; }
  const Shape& shape() const { return shape_; }
  int ndim() const { return shape_.ndim(); }
  int64_t dim(int i) const { return shape_[i < 0 ? i + shape_.ndim() : i]; }
  int64_t numel() const { return shape_.numel(); }
  DType dtype() const { return dtype_; }
  Device device() const { return storage_->device(); }
  size_t bytes() const { return static_cast<size_t>(numel()) * dtype_size(dtype_); }

  void* raw() const { return static_cast<char*>(storage_->data()) + offset_; }
  template <typename T>
  T* data() const {
    TRIDENT_CHECK(DTypeOf<T>::value == dtype_, "tensor holds ", dtype_name(dtype_));
    return static_cast<T*>(raw());
  }

  // Same elements, another shape (numel must match).
  Tensor view(Shape shape) const;
  // Rows [begin, end) of dim 0.
  Tensor narrow(int64_t begin, int64_t end) const;
  // All elements as a 1-D tensor.
  Tensor flat() const { return view(Shape{numel()}); }

 private:
  std::shared_ptr<Storage> storage_;
  size_t offset_ = 0;
  Shape shape_;
  DType dtype_ = DType::kF32;
};

}  // namespace trident
