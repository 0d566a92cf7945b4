// Writing a checkpoint collectively: every dataset created by every rank in one order, each
// rank's pieces as hyperslabs (sealed in chunks when encrypted), checksums, then fsync and an
// atomic rename.
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <memory>

#include "checkpoint_crypto.hpp"
#include "trident/core/file_policy.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::io {

using namespace detail;

namespace {
void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}
}  // namespace

namespace {

// Datasets and attributes of the file, in the same order on every rank (encryption: null for a plain file).
void write_contents(hid_t file, const std::string& tmp, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                    const std::vector<ShardPiece>& pieces, CheckpointAttributes attributes,
                    const CheckpointEncryption* encryption) {
  if (encryption) encryption->add_attributes(attributes);
  agreed(comm, [&] { write_attributes(file, attributes); });
  H5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Handle dxpl = collective_transfer();
  // Checksums of the whole tensors, from every rank's written pieces, summed in one call.
  std::vector<uint64_t> checksums;
  for (const auto& [name, shape] : datasets)
    checksums.push_back(partial_checksum(pieces_of(name, pieces, /*writing=*/true), shape.ndim() > 1 ? shape[1] : shape[0]));
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, checksums.data(), static_cast<int>(checksums.size()), MPI_UINT64_T, MPI_SUM, comm));
  size_t checksum_index = 0;
  for (const auto& entry : datasets) {  // the same sorted order on every rank
    const std::string& name = entry.first;
    const Shape& shape = entry.second;
    agreed(comm, [&] {
      hsize_t dims[2] = {hsize_t(shape[0]), shape.ndim() > 1 ? hsize_t(shape[1]) : 1};
      H5Handle space(H5Screate_simple(shape.ndim(), dims, nullptr), H5Sclose);
      H5Handle dcpl = encryption ? encryption->creation_properties(name, shape)
                                 : H5Handle(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
      H5Handle ds;
      {
        const crypt::PlaceholderScope fill(crypt::Placeholders::kSeal);  // HDF5's fill chunks: overwritten below
        ds = H5Handle(H5Dcreate2(file, name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), dcpl.get(), H5P_DEFAULT),
                      H5Dclose);
      }
      require_io(ds.get() >= 0, "checkpoint: cannot create tensor ", name, " in ", tmp,
                 " (disk full or I/O error); the previous checkpoint is untouched");
      write_checksum_attribute(ds.get(), checksums[checksum_index++]);
      // Collective transfer: every rank writes every dataset, possibly an empty selection.
      const auto mine = pieces_of(name, pieces, /*writing=*/true);
      PieceTransfer transfer(space.get(), shape.ndim(), mine);
      transfer.pack(mine);
      const crypt::PlaceholderScope merge(crypt::Placeholders::kOpen);  // partly written chunks (edges)
      require_io(H5Dwrite(ds.get(), transfer.type(), transfer.memspace(), space.get(), dxpl.get(),
                          transfer.buffer()) >= 0,
                 "checkpoint: writing ", name, " to ", tmp, " failed (disk full or I/O error); the previous checkpoint "
                 "is untouched");
      if (encryption) encryption->check_written(tmp, name);
    });
  }
  agreed(comm, [&] {
    require_io(H5Fflush(file, H5F_SCOPE_GLOBAL) >= 0, "checkpoint: flushing ", tmp,
               " failed (disk full or I/O error); the previous checkpoint is untouched");
  });
}

}  // namespace

void write_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                      const std::vector<ShardPiece>& pieces, const CheckpointAttributes& attributes,
                      const security::MasterKey* key, const std::function<void()>& before_rename) {
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  const std::string tmp = path + ".tmp";
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle file;
  // Before the file: its data key and chunk shapes (collective), and the key registered with the
  // filter for as long as HDF5 may seal chunks (dataset creation writes sealed fill chunks).
  std::unique_ptr<CheckpointEncryption> encryption;
  if (key) encryption = std::make_unique<CheckpointEncryption>(*key, comm, datasets, pieces);
  try {
    agreed(comm, [&] {
      H5Handle fapl = file_access(comm);
      file = H5Handle(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
      require_io(file.get() >= 0, "checkpoint: cannot create ", tmp, " (directory missing, read-only or full?)");
      if (rank == 0) secure_file(tmp);  // its group and mode before any tensor is in it
    });
    write_contents(file.get(), tmp, comm, datasets, pieces, attributes, encryption.get());
    agreed(comm, [&] {
      require_io(file.close(), "checkpoint: closing ", tmp, " failed (disk full or I/O error); the previous checkpoint "
                 "is untouched");
    });
  } catch (...) {
    // Every rank is here together. The file's space is freed first, so that HDF5 can write what
    // closing it writes and close it cleanly (a file left open breaks HDF5's shutdown at exit);
    // then the partial file goes.
    if (rank == 0) (void)::truncate(tmp.c_str(), 0);
    MPI_Barrier(comm);
    (void)file.close();
    MPI_Barrier(comm);
    if (rank == 0) {
      std::error_code ignored;
      std::filesystem::remove(tmp, ignored);
    }
    throw;
  }
  MPI_CHECK(MPI_Barrier(comm));
  if (before_rename) before_rename();
  agreed(comm, [&] {
    if (rank != 0) return;
    fsync_path(tmp);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    require_io(!ec, "checkpoint: cannot rename ", tmp, " to ", path, ": ", ec.message());
    fsync_path(std::filesystem::path(path).parent_path().string());
  });
}

}  // namespace trident::io
