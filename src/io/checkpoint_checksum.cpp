// Checkpoint checksums: per tensor, independent of how it is sharded, so a file written under
// one layout is verified under any other.
#include <algorithm>
#include <bit>

#include "checkpoint_crypto.hpp"
#include "trident/core/rng.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::io::detail {

namespace {
// Checksum of a tensor, independent of how it is sharded: the sum (mod 2^64) over its elements
// of a mix of (global index, fp32 bits), so each rank adds its own elements in any order.
uint64_t element_hash(uint64_t index, uint32_t bits) {
  return mix64((index * 0x9E3779B97F4A7C15ull) ^ (uint64_t(bits) << 17) ^ bits);
}

// The sum of element_hash over n values stored from `data` (fp32, or fp64 stored as fp32) at
// global indices first, first + 1, ...
template <typename T>
uint64_t run_checksum(const T* data, int64_t n, uint64_t first) {
  uint64_t sum = 0;
  for (int64_t j = 0; j < n; ++j)
    sum += element_hash(first + uint64_t(j), std::bit_cast<uint32_t>(static_cast<float>(data[j])));
  return sum;
}
}  // namespace

// This rank's share of the checksum of a dataset of `cols` columns: its written pieces, a run of
// consecutive global indices (a local row's stored part) at a time.
uint64_t partial_checksum(const std::vector<const ShardPiece*>& mine, int64_t cols) {
  uint64_t sum = 0;
  for (const ShardPiece* p : mine) {
    const int64_t n = stored_count(*p), lc = p->local_cols;
    for (int64_t k = 0; k < n;) {
      const int64_t i = p->begin + k, run = std::min(n - k, lc - i % lc);
      const uint64_t global = uint64_t((p->row0 + i / lc) * cols + p->col0 + i % lc);
      sum += p->data.dtype() == DType::kF64 ? run_checksum(p->data.data<double>() + k, run, global)
                                            : run_checksum(p->data.data<float>() + k, run, global);
      k += run;
    }
  }
  return sum;
}

void write_checksum_attribute(hid_t dataset, uint64_t checksum) {
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(dataset, "checksum", H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  TRIDENT_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), H5T_NATIVE_UINT64, &checksum) >= 0, "cannot write checksum");
}

// Reads every expected dataset once, split by rows over the ranks, and compares the summed
// checksum with the one stored at write time.
void verify_checksums(hid_t file, const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected,
                      const CheckpointTagCheck* tags) {
  int rank = 0, size = 1;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  MPI_CHECK(MPI_Comm_size(comm, &size));
  H5Handle dxpl = collective_transfer();
  std::vector<uint64_t> computed, stored;
  std::vector<float> buffer;
  for (const auto& entry : expected) {
    agreed(comm, [&] {  // a failed read is every rank's
      const std::string& name = entry.first;
      const Shape& shape = entry.second;
      H5Handle ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
      stored.push_back(stored_checksum(ds.get(), path, name));
      // Rows [first, last) of this rank (a vector is one row, split by columns instead).
      const bool matrix = shape.ndim() > 1;
      const int64_t rows = matrix ? shape[0] : 1, cols = matrix ? shape[1] : shape[0];
      const int64_t units = matrix ? rows : cols;
      const int64_t first = units * rank / size, last = units * (rank + 1) / size;
      H5Handle space(H5Dget_space(ds.get()), H5Sclose);
      const int64_t count = (last - first) * (matrix ? cols : 1);
      if (count > 0) {
        const hsize_t start[2] = {hsize_t(first), 0}, extent[2] = {hsize_t(last - first), hsize_t(cols)};
        const hsize_t start1[1] = {hsize_t(first)}, extent1[1] = {hsize_t(last - first)};
        H5Sselect_hyperslab(space.get(), H5S_SELECT_SET, matrix ? start : start1, nullptr, matrix ? extent : extent1,
                            nullptr);
      } else {
        H5Sselect_none(space.get());
      }
      // The memory space the shape of the selection: HDF5 then maps chunks block by block.
      const hsize_t mem_dims[2] = {hsize_t(std::max<int64_t>(last - first, 1)), hsize_t(matrix ? cols : 1)};
      H5Handle memspace(H5Screate_simple(count > 0 && matrix ? 2 : 1, mem_dims, nullptr), H5Sclose);
      if (count == 0) H5Sselect_none(memspace.get());
      buffer.resize(static_cast<size_t>(std::max<int64_t>(count, 1)));
      TRIDENT_CONFIG_CHECK(H5Dread(ds.get(), H5T_NATIVE_FLOAT, memspace.get(), space.get(), dxpl.get(), buffer.data()) >= 0,
                           "checkpoint ", path, ": reading ", name, " failed (truncated or corrupt file?)");
      uint64_t sum = 0;
      const int64_t base = matrix ? first * cols : first;
      for (int64_t k = 0; k < count; ++k) sum += element_hash(uint64_t(base + k), std::bit_cast<uint32_t>(buffer[k]));
      computed.push_back(sum);
    });
    if (tags) tags->agree(file, path, entry.first, comm);  // a failed tag before a checksum mismatch
  }
  compare_checksums(path, comm, expected, computed, stored);
}

uint64_t stored_checksum(hid_t dataset, const std::string& path, const std::string& name) {
  uint64_t want = 0;
  H5Handle attr(H5Aopen(dataset, "checksum", H5P_DEFAULT), H5Aclose);
  H5Handle attr_space(H5Aget_space(attr.get()), H5Sclose);
  H5Handle attr_type(H5Aget_type(attr.get()), H5Tclose);
  // One unsigned integer: reading an array or another type into `want` would overrun it.
  TRIDENT_CONFIG_CHECK(attr.get() >= 0 && H5Sget_simple_extent_npoints(attr_space.get()) == 1 &&
                           H5Tget_class(attr_type.get()) == H5T_INTEGER &&
                           H5Aread(attr.get(), H5T_NATIVE_UINT64, &want) >= 0,
                       "checkpoint ", path, ": tensor ", name, " has no checksum (not written by trident, or corrupt)");
  return want;
}

void compare_checksums(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                       std::vector<uint64_t>& computed, const std::vector<uint64_t>& stored) {
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, computed.data(), static_cast<int>(computed.size()), MPI_UINT64_T, MPI_SUM, comm));
  size_t i = 0;
  for (const auto& entry : datasets) {
    TRIDENT_CONFIG_CHECK(computed[i] == stored[i], "checkpoint ", path, ": tensor ", entry.first,
                         " fails its checksum (the file is corrupt; resume from an older checkpoint)");
    ++i;
  }
}

std::map<std::string, Shape> covered_once(MPI_Comm comm, const std::map<std::string, Shape>& expected,
                                          const std::vector<ShardPiece>& pieces) {
  std::vector<int64_t> counts;
  for (const auto& entry : expected) {
    int64_t n = 0;
    for (const ShardPiece* p : pieces_of(entry.first, pieces, /*writing=*/true)) n += stored_count(*p);
    counts.push_back(n);
  }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, counts.data(), static_cast<int>(counts.size()), MPI_INT64_T, MPI_SUM, comm));
  std::map<std::string, Shape> out;
  size_t i = 0;
  for (const auto& [name, shape] : expected)
    if (counts[i++] == shape.numel()) out[name] = shape;
  return out;
}

}  // namespace trident::io::detail
