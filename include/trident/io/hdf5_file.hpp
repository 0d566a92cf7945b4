// RAII over HDF5 handles and the few serial operations fixtures and tools need: read a dataset
// of any float type as double, write one, test for existence. (Collective checkpoint I/O
// builds on the same handles.)
#pragma once
#include <hdf5.h>

#include <string>
#include <vector>

#include "trident/core/tensor.hpp"

namespace trident::io {

// One hid_t with its matching close function; non-copyable, movable.
class H5Handle {
 public:
  H5Handle() = default;
  H5Handle(hid_t id, herr_t (*close)(hid_t)) : id_(id), close_(close) {}
  ~H5Handle() { reset(); }
  H5Handle(H5Handle&& o) noexcept : id_(o.id_), close_(o.close_) { o.id_ = -1; }
  H5Handle& operator=(H5Handle&& o) noexcept {
    if (this != &o) { reset(); id_ = o.id_; close_ = o.close_; o.id_ = -1; }
    return *this;
  }
  H5Handle(const H5Handle&) = delete;
  H5Handle& operator=(const H5Handle&) = delete;
  hid_t get() const { return id_; }
  void reset() { (void)close(); }
  // Closes now; false when HDF5 reports a failure (a file whose last flush could not be written).
  bool close() {
    const bool ok = id_ < 0 || !close_ || close_(id_) >= 0;
    id_ = -1;
    return ok;
  }

 private:
  hid_t id_ = -1;
  herr_t (*close_)(hid_t) = nullptr;
};

class H5File {
 public:
  static H5File open_read(const std::string& path);
  static H5File create(const std::string& path);  // truncates

  bool has(const std::string& dataset) const;
  // Values converted to double, row-major; shape returned through *shape.
  std::vector<double> read(const std::string& dataset, Shape* shape = nullptr) const;
  void write(const std::string& dataset, const std::vector<double>& values, const Shape& shape,
             DType stored = DType::kF32);
  double read_attribute(const std::string& name) const;              // numeric root attribute
  std::string read_string_attribute(const std::string& name) const;  // string root attribute
  const std::string& path() const { return path_; }

 private:
  H5File(H5Handle h, std::string path) : file_(std::move(h)), path_(std::move(path)) {}
  H5Handle file_;
  std::string path_;
};

}  // namespace trident::io
