// Shape, host allocation and tensor views.
#include "trident/core/tensor.hpp"

#include <sys/mman.h>

#include <cstdlib>
#include <cstring>
#include <sstream>

namespace trident {

Shape::Shape(std::initializer_list<int64_t> dims) {
  TRIDENT_CHECK(dims.size() <= kMaxDims, "at most ", kMaxDims, " dims");
  for (int64_t d : dims) dims_[ndim_++] = d;
}

int64_t Shape::numel() const {
  int64_t n = 1;
  for (int i = 0; i < ndim_; ++i) n *= dims_[i];
  return n;
}

bool Shape::operator==(const Shape& o) const {
  if (ndim_ != o.ndim_) return false;
  for (int i = 0; i < ndim_; ++i)
    if (dims_[i] != o.dims_[i]) return false;
  return true;
}

std::string Shape::str() const {
  std::ostringstream os;
  os << "(";
  for (int i = 0; i < ndim_; ++i) os << (i ? ", " : "") << dims_[i];
  os << ")";
  return os.str();
}

std::shared_ptr<Storage> allocate_host(size_t bytes) {
  constexpr size_t kAlign = 64;
  constexpr size_t kHuge = size_t(2) << 20;
  if (bytes >= kHuge) {
    // Fresh anonymous pages read as zero and are committed when first touched: a buffer sized
    // for the worst case (training activations during an evaluation that never runs them)
    // costs no page clearing and no resident memory until it is used.
    const size_t rounded = (bytes + kHuge - 1) / kHuge * kHuge;
    void* p = mmap(nullptr, rounded, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    TRIDENT_CHECK(p != MAP_FAILED, "out of host memory allocating ", bytes, " bytes");
    madvise(p, rounded, MADV_HUGEPAGE);
    return std::make_shared<Storage>(p, bytes, Device::kCPU, [rounded](void* q) { munmap(q, rounded); });
  }
  const size_t rounded = (std::max<size_t>(bytes, 1) + kAlign - 1) / kAlign * kAlign;
  void* p = std::aligned_alloc(kAlign, rounded);
  TRIDENT_CHECK(p != nullptr, "out of host memory allocating ", bytes, " bytes");
  std::memset(p, 0, rounded);
  return std::make_shared<Storage>(p, bytes, Device::kCPU, [](void* q) { std::free(q); });
}

Tensor::Tensor(std::shared_ptr<Storage> storage, size_t offset_bytes, Shape shape, DType dtype)
    : storage_(std::move(storage)), offset_(offset_bytes), shape_(shape), dtype_(dtype) {
  TRIDENT_CHECK(offset_ + bytes() <= storage_->bytes(), "view ", shape_.str(), " at offset ",
                offset_, " exceeds its storage of ", storage_->bytes(), " bytes");
}

Tensor Tensor::zeros(Shape shape, DType dtype) {
  return Tensor(allocate_host(static_cast<size_t>(shape.numel()) * dtype_size(dtype)), 0, shape, dtype);
}

Tensor Tensor::view(Shape shape) const {
  TRIDENT_CHECK(shape.numel() == numel(), "cannot view ", shape_.str(), " as ", shape.str());
  return Tensor(storage_, offset_, shape, dtype_);
}

Tensor Tensor::narrow(int64_t begin, int64_t end) const {
  TRIDENT_CHECK(ndim() >= 1 && 0 <= begin && begin <= end && end <= dim(0), "narrow [", begin,
                ", ", end, ") of ", shape_.str());
  const int64_t row = numel() / std::max<int64_t>(dim(0), 1);
  Shape s = shape_;
  s[0] = end - begin;
  return Tensor(storage_, offset_ + static_cast<size_t>(begin * row) * dtype_size(dtype_), s, dtype_);
}

}  // namespace trident
