// Reading checkpoints: the listing of any file (serial), and a collective read of a rank's
// pieces after the names, shapes and checksums are checked.
#include <filesystem>

#include "checkpoint_hdf5.hpp"

namespace trident::io {

using namespace detail;

namespace {
// H5Ovisit's callback (C code: no exception may leave it): the shape of every dataset, or the
// first error.
struct Collected {
  std::string path;
  std::map<std::string, Shape> datasets;
  std::string error;
};
herr_t collect_dataset(hid_t object, const char* name, const H5O_info_t* info, void* out) {
  auto& collected = *static_cast<Collected*>(out);
  try {
    if (info->type != H5O_TYPE_DATASET) return 0;
    const std::string dataset = std::string("/") + name;
    H5Handle ds(H5Dopen2(object, name, H5P_DEFAULT), H5Dclose);
    TRIDENT_CONFIG_CHECK(ds.get() >= 0, "checkpoint ", collected.path, ": cannot open tensor ", dataset, " (corrupt?)");
    collected.datasets[dataset] = dataset_shape(ds.get(), collected.path, dataset);
    return 0;
  } catch (const std::exception& e) {
    collected.error = e.what();
    return -1;
  }
}
}  // namespace

CheckpointListing list_checkpoint(const std::string& path) {
  TRIDENT_CONFIG_CHECK(std::filesystem::is_regular_file(path), "checkpoint ", path, " not found");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT), H5Fclose);
  TRIDENT_CONFIG_CHECK(file.get() >= 0, "checkpoint ", path, " cannot be opened as HDF5 (truncated or corrupt?)");
  CheckpointListing out;
  out.attributes = read_attributes(file.get(), path);
  Collected collected;
  collected.path = path;
  const herr_t visited = H5Ovisit(file.get(), H5_INDEX_NAME, H5_ITER_INC, collect_dataset, &collected);
  if (!collected.error.empty()) throw ConfigError(collected.error);
  TRIDENT_CONFIG_CHECK(visited >= 0, "checkpoint ", path, ": cannot list its tensors (corrupt?)");
  out.datasets = std::move(collected.datasets);
  return out;
}

CheckpointAttributes read_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected,
                                     std::vector<ShardPiece>& pieces) {
  TRIDENT_CONFIG_CHECK(std::filesystem::is_regular_file(path), "checkpoint ", path, " not found");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle file;
  CheckpointAttributes attributes;
  // Names and shapes first, then the checksums of everything, then this rank's pieces; a
  // failure anywhere is every rank's before the next collective call.
  agreed(comm, [&] {
    H5Handle fapl = file_access(comm);
    file = H5Handle(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
    TRIDENT_CONFIG_CHECK(file.get() >= 0, "checkpoint ", path, " cannot be opened as HDF5 (truncated or corrupt?)");
    attributes = read_attributes(file.get(), path);
    checkpoint_format_version(attributes, path);
    for (const auto& [name, shape] : expected) {
      H5Handle ds(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
      TRIDENT_CONFIG_CHECK(ds.get() >= 0, "checkpoint ", path, " has no tensor ", name,
                           " (written for another model or layout?)");
      const Shape found = dataset_shape(ds.get(), path, name);
      TRIDENT_CONFIG_CHECK(found == shape, "checkpoint ", path, ": tensor ", name, " has shape ", found.str(),
                           " but the model needs ", shape.str(), " (a checkpoint of another model shape)");
    }
  });
  verify_checksums(file.get(), path, comm, expected);
  H5Handle dxpl = collective_transfer();
  for (const auto& entry : expected) agreed(comm, [&] {  // the same sorted order on every rank
    const std::string& name = entry.first;
    H5Handle ds(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    H5Handle space(H5Dget_space(ds.get()), H5Sclose);
    const int nd = H5Sget_simple_extent_ndims(space.get());
    H5Sselect_none(space.get());
    const auto mine = pieces_of(name, pieces, /*writing=*/false);
    int64_t count = 0;
    for (const ShardPiece* p : mine) count += stored_count(*p);
    std::vector<char> buffer;
    hid_t type = H5T_NATIVE_FLOAT;
    if (count > 0) {
      type = memory_type(mine.front()->data);
      buffer.resize(static_cast<size_t>(count) * dtype_size(mine.front()->data.dtype()));
      for (const ShardPiece* p : mine) select_piece(space.get(), nd, *p);
    }
    const hsize_t mem_count[1] = {hsize_t(std::max<int64_t>(count, 1))};
    H5Handle memspace(H5Screate_simple(1, mem_count, nullptr), H5Sclose);
    if (count == 0) H5Sselect_none(memspace.get());
    TRIDENT_CONFIG_CHECK(H5Dread(ds.get(), type, memspace.get(), space.get(), dxpl.get(),
                                 count ? buffer.data() : nullptr) >= 0,
                         "checkpoint ", path, ": reading ", name, " failed (truncated or corrupt file?)");
    size_t at = 0;
    for (const ShardPiece* p : mine) {
      const size_t bytes = static_cast<size_t>(stored_count(*p)) * dtype_size(p->data.dtype());
      std::copy_n(buffer.data() + at, bytes, static_cast<char*>(p->data.raw()));
      at += bytes;
    }
  });
  return attributes;
}

}  // namespace trident::io
