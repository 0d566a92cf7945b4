// Reading checkpoints: the listing of any file (serial; an encrypted one's too: names, shapes
// and attributes are plain), and a collective read of a rank's pieces after the names, shapes,
// key, checksums and (encrypted) tags are checked.
#include <filesystem>
#include <memory>
#include <optional>

#include "checkpoint_crypto.hpp"

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
                                     std::vector<ShardPiece>& pieces, const security::MasterKey* key) {
  TRIDENT_CONFIG_CHECK(std::filesystem::is_regular_file(path), "checkpoint ", path, " not found");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle file;
  CheckpointAttributes attributes;
  // Names and shapes first, then the key, then the checksums (and tags) of everything, then this
  // rank's pieces; a failure anywhere is every rank's before the next collective call.
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
  // The same attributes and key on every rank: every rank throws alike, outside an agreement,
  // so that the error stays a CheckpointKeyError (a resume does not skip past it).
  const std::unique_ptr<CheckpointTagCheck> tags = tag_check_for(attributes, path, key);
  // Plain: every checksum first (a pass over the whole file), then the pieces. Encrypted: every
  // chunk's tag is checked as it is read, before any of it reaches a piece, so one pass does:
  // the checksums of the tensors the written pieces cover once are summed from the pieces and
  // compared at the end (they catch chunks moved within a tensor); the rest get the pass first.
  const std::map<std::string, Shape> from_pieces = tags ? covered_once(comm, expected, pieces)
                                                        : std::map<std::string, Shape>{};
  std::map<std::string, Shape> rest = expected;
  std::erase_if(rest, [&](const auto& d) { return from_pieces.count(d.first) > 0; });
  verify_checksums(file.get(), path, comm, rest, tags.get());
  std::vector<uint64_t> computed, stored;
  H5Handle dxpl = collective_transfer();
  for (const auto& entry : expected) {  // the same sorted order on every rank
    const std::string& name = entry.first;
    const auto mine = pieces_of(name, pieces, /*writing=*/false);
    const bool summed = from_pieces.count(name) > 0;
    std::optional<PieceTransfer> transfer;
    agreed(comm, [&] {
      H5Handle ds(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
      if (summed) stored.push_back(stored_checksum(ds.get(), path, name));
      H5Handle space(H5Dget_space(ds.get()), H5Sclose);
      transfer.emplace(space.get(), H5Sget_simple_extent_ndims(space.get()), mine);
      TRIDENT_CONFIG_CHECK(H5Dread(ds.get(), transfer->type(), transfer->memspace(), space.get(), dxpl.get(),
                                   transfer->buffer()) >= 0,
                           "checkpoint ", path, ": reading ", name, " failed (truncated or corrupt file?)");
    });
    if (tags) tags->agree(file.get(), path, name, comm);  // before any of it reaches the pieces
    transfer->unpack(mine);
    if (summed) {
      const Shape& shape = entry.second;
      computed.push_back(partial_checksum(pieces_of(name, pieces, /*writing=*/true), shape[shape.ndim() - 1]));
    }
  }
  compare_checksums(path, comm, from_pieces, computed, stored);
  return attributes;
}

}  // namespace trident::io
