// Serial HDF5 reads and writes with errors that name the file and dataset.
#include "trident/core/file_policy.hpp"
#include "trident/io/hdf5_file.hpp"

#include <filesystem>

namespace trident::io {

namespace {
// Create the intermediate groups of "/a/b/c" so that "c" can be created.
H5Handle link_creation_with_parents() {
  hid_t lcpl = H5Pcreate(H5P_LINK_CREATE);
  H5Pset_create_intermediate_group(lcpl, 1);
  return H5Handle(lcpl, H5Pclose);
}
}  // namespace

H5File H5File::open_read(const std::string& path) {
  TRIDENT_CONFIG_CHECK(std::filesystem::exists(path), "HDF5 file not found: ", path);
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);  // we report errors ourselves
  hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
  TRIDENT_CONFIG_CHECK(f >= 0, "cannot open ", path, " as HDF5 (truncated or not an HDF5 file?)");
  return H5File(H5Handle(f, H5Fclose), path);
}

H5File H5File::create(const std::string& path) {
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  hid_t f = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  TRIDENT_CHECK(f >= 0, "cannot create HDF5 file ", path);
  secure_file(path);
  return H5File(H5Handle(f, H5Fclose), path);
}

bool H5File::has(const std::string& dataset) const {
  // H5Lexists fails on a missing intermediate group, so walk the path.
  size_t pos = 0;
  while ((pos = dataset.find('/', pos + 1)) != std::string::npos)
    if (H5Lexists(file_.get(), dataset.substr(0, pos).c_str(), H5P_DEFAULT) <= 0) return false;
  return H5Lexists(file_.get(), dataset.c_str(), H5P_DEFAULT) > 0;
}

std::vector<double> H5File::read(const std::string& dataset, Shape* shape) const {
  TRIDENT_CONFIG_CHECK(has(dataset), path_, ": dataset ", dataset, " is missing");
  H5Handle ds(H5Dopen2(file_.get(), dataset.c_str(), H5P_DEFAULT), H5Dclose);
  TRIDENT_CHECK(ds.get() >= 0, path_, ": cannot open ", dataset);
  H5Handle space(H5Dget_space(ds.get()), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(space.get());
  TRIDENT_CHECK(nd >= 0 && nd <= Shape::kMaxDims, path_, ": ", dataset, " has ", nd, " dims");
  hsize_t dims[Shape::kMaxDims] = {};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  size_t n = 1;
  for (int i = 0; i < nd; ++i) n *= dims[i];
  if (shape) {
    Shape out;
    switch (nd) {
      case 0: out = Shape{}; break;
      case 1: out = Shape{int64_t(dims[0])}; break;
      case 2: out = Shape{int64_t(dims[0]), int64_t(dims[1])}; break;
      case 3: out = Shape{int64_t(dims[0]), int64_t(dims[1]), int64_t(dims[2])}; break;
      case 4: out = Shape{int64_t(dims[0]), int64_t(dims[1]), int64_t(dims[2]), int64_t(dims[3])}; break;
      default: out = Shape{int64_t(dims[0]), int64_t(dims[1]), int64_t(dims[2]), int64_t(dims[3]), int64_t(dims[4])};
    }
    *shape = out;
  }
  std::vector<double> values(n);
  TRIDENT_CHECK(H5Dread(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0,
                path_, ": cannot read ", dataset, " as numbers");
  return values;
}

void H5File::write(const std::string& dataset, const std::vector<double>& values, const Shape& shape,
                   DType stored) {
  TRIDENT_CHECK(static_cast<int64_t>(values.size()) == shape.numel(), dataset, ": ", values.size(),
                " values for shape ", shape.str());
  hsize_t dims[Shape::kMaxDims];
  for (int i = 0; i < shape.ndim(); ++i) dims[i] = static_cast<hsize_t>(shape[i]);
  H5Handle space(H5Screate_simple(shape.ndim(), dims, nullptr), H5Sclose);
  const hid_t type = stored == DType::kF64 ? H5T_IEEE_F64LE : H5T_IEEE_F32LE;
  H5Handle lcpl = link_creation_with_parents();
  H5Handle ds(H5Dcreate2(file_.get(), dataset.c_str(), type, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT),
              H5Dclose);
  TRIDENT_CHECK(ds.get() >= 0, path_, ": cannot create ", dataset);
  TRIDENT_CHECK(H5Dwrite(ds.get(), H5T_NATIVE_DOUBLE, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()) >= 0,
                path_, ": cannot write ", dataset);
}

namespace {
// An attribute read into one value must hold one: H5Aread writes every element it has.
void check_single(hid_t attr, const std::string& path, const std::string& name) {
  H5Handle space(H5Aget_space(attr), H5Sclose);
  const hssize_t values = H5Sget_simple_extent_npoints(space.get());
  TRIDENT_CONFIG_CHECK(values == 1, path, ": attribute ", name, " holds ", values, " values, expected one");
}
}  // namespace

double H5File::read_attribute(const std::string& name) const {
  TRIDENT_CONFIG_CHECK(H5Aexists(file_.get(), name.c_str()) > 0, path_, ": attribute ", name, " is missing");
  H5Handle attr(H5Aopen(file_.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
  check_single(attr.get(), path_, name);
  double v = 0;
  TRIDENT_CHECK(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &v) >= 0, path_, ": cannot read attribute ", name);
  return v;
}

std::string H5File::read_string_attribute(const std::string& name) const {
  TRIDENT_CONFIG_CHECK(H5Aexists(file_.get(), name.c_str()) > 0, path_, ": attribute ", name, " is missing");
  H5Handle attr(H5Aopen(file_.get(), name.c_str(), H5P_DEFAULT), H5Aclose);
  check_single(attr.get(), path_, name);
  H5Handle type(H5Aget_type(attr.get()), H5Tclose);
  TRIDENT_CONFIG_CHECK(H5Tget_class(type.get()) == H5T_STRING, path_, ": attribute ", name, " is not a string");
  if (H5Tis_variable_str(type.get()) > 0) {
    char* text = nullptr;
    H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    TRIDENT_CHECK(H5Aread(attr.get(), mem.get(), &text) >= 0, path_, ": cannot read attribute ", name);
    std::string out = text ? text : "";
    H5free_memory(text);
    return out;
  }
  std::string out(H5Tget_size(type.get()), '\0');
  TRIDENT_CHECK(H5Aread(attr.get(), type.get(), out.data()) >= 0, path_, ": cannot read attribute ", name);
  return out.substr(0, out.find('\0'));
}

}  // namespace trident::io
