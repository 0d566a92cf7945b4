// Collective parallel-HDF5 checkpoint writing and reading by hyperslab pieces.
#include "trident/io/checkpoint_file.hpp"

#include <fcntl.h>
#include <hdf5.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <iomanip>
#include <sstream>

#include "trident/core/error.hpp"
#include "trident/io/hdf5_file.hpp"

namespace trident::io {

namespace {

// An I/O failure is the environment's, not a bug: a plain message, no statement or file:line.
template <typename... Args>
void require_io(bool ok, const Args&... args) {
  if (!ok) throw Error(detail::concat(args...));
}

// Datasets of 4 MiB and more start on 1 MiB boundaries: the stripe size of Lustre/GPFS, so a
// rank's large hyperslab writes are stripe-aligned; smaller ones pack densely (aligning them
// all padded the demo model's file by ~27%). Locally (one disk) alignment measured no
// difference within noise.
constexpr hsize_t kAlignThreshold = hsize_t(4) << 20, kAlignment = hsize_t(1) << 20;

H5Handle file_access(MPI_Comm comm) {
  H5Handle fapl(H5Pcreate(H5P_FILE_ACCESS), H5Pclose);
  H5Pset_fapl_mpio(fapl.get(), comm, MPI_INFO_NULL);
  H5Pset_alignment(fapl.get(), kAlignThreshold, kAlignment);
  H5Pset_all_coll_metadata_ops(fapl.get(), 1);
  H5Pset_coll_metadata_write(fapl.get(), 1);
  return fapl;
}

H5Handle collective_transfer() {
  H5Handle dxpl(H5Pcreate(H5P_DATASET_XFER), H5Pclose);
  H5Pset_dxpl_mpio(dxpl.get(), H5FD_MPIO_COLLECTIVE);
  return dxpl;
}

// Elements of the piece that are stored (rows below stored_rows): a prefix of [begin, end).
int64_t stored_count(const ShardPiece& p) {
  int64_t count = 0;
  const int64_t lc = p.local_cols;
  for (int64_t i = p.begin; i < p.end;) {
    const int64_t r = i / lc, row_end = std::min(p.end, (r + 1) * lc);
    if (p.row0 + r >= p.stored_rows) break;
    count += row_end - i;
    i = row_end;
  }
  return count;
}

// Adds the piece's stored elements to the file selection: a partial first row, a block of
// whole rows, a partial last row (row-major global order, the order of the piece's data).
void select_piece(hid_t space, int rank, const ShardPiece& p) {
  const int64_t lc = p.local_cols, n = stored_count(p);
  auto select = [&](int64_t grow, int64_t gcol, int64_t rows, int64_t cols) {
    if (rows <= 0 || cols <= 0) return;
    if (rank == 1) {
      const hsize_t start[1] = {hsize_t(gcol)}, count[1] = {hsize_t(cols)};
      H5Sselect_hyperslab(space, H5S_SELECT_OR, start, nullptr, count, nullptr);
    } else {
      const hsize_t start[2] = {hsize_t(grow), hsize_t(gcol)}, count[2] = {hsize_t(rows), hsize_t(cols)};
      H5Sselect_hyperslab(space, H5S_SELECT_OR, start, nullptr, count, nullptr);
    }
  };
  int64_t i = p.begin;
  const int64_t end = p.begin + n;
  if (i < end && i % lc != 0) {  // partial first row
    const int64_t r = i / lc, stop = std::min(end, (r + 1) * lc);
    select(p.row0 + r, p.col0 + i % lc, 1, stop - i);
    i = stop;
  }
  const int64_t full_rows = (end - i) / lc;
  select(p.row0 + i / lc, p.col0, full_rows, lc);
  i += full_rows * lc;
  if (i < end) select(p.row0 + i / lc, p.col0, 1, end - i);  // partial last row
}

hid_t memory_type(const Tensor& t) { return t.dtype() == DType::kF64 ? H5T_NATIVE_DOUBLE : H5T_NATIVE_FLOAT; }

// This rank's pieces of one dataset, in increasing local order, and their stored sizes.
std::vector<const ShardPiece*> pieces_of(const std::string& name, const std::vector<ShardPiece>& pieces, bool writing) {
  std::vector<const ShardPiece*> out;
  for (const ShardPiece& p : pieces)
    if (p.dataset == name && (!writing || p.write)) {
      // HDF5 reads and writes host memory; the caller stages GPU tensors (train::Checkpointer does).
      TRIDENT_CHECK(!p.data.defined() || p.data.device() == Device::kCPU, "checkpoint: ", name,
                    " is in GPU memory; pieces must be staged in host memory");
      out.push_back(&p);
    }
  std::sort(out.begin(), out.end(), [](const ShardPiece* a, const ShardPiece* b) { return a->begin < b->begin; });
  return out;
}

void write_string_attribute(hid_t file, const std::string& name, const std::string& text) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<size_t>(text.size(), 1));
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  TRIDENT_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), type.get(), text.empty() ? " " : text.data()) >= 0,
                "cannot write attribute ", name);
}

void write_number_attribute(hid_t file, const std::string& name, double value) {
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(file, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  TRIDENT_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0, "cannot write attribute ", name);
}

// The text of a string attribute, fixed-length (as trident writes it) or variable-length (as
// h5py writes it).
std::string read_text_attribute(hid_t attr, hid_t type, const std::string& path, const std::string& name) {
  if (H5Tis_variable_str(type) > 0) {
    H5Handle mem(H5Tcopy(H5T_C_S1), H5Tclose);
    H5Tset_size(mem.get(), H5T_VARIABLE);
    H5Tset_cset(mem.get(), H5Tget_cset(type));
    char* text = nullptr;
    TRIDENT_CONFIG_CHECK(H5Aread(attr, mem.get(), &text) >= 0, "checkpoint ", path, ": cannot read root attribute ",
                         name, " as text");
    std::string out = text ? text : "";
    H5free_memory(text);
    return out;
  }
  constexpr size_t kMaxText = size_t(64) << 20;
  const size_t size = H5Tget_size(type);
  TRIDENT_CONFIG_CHECK(size > 0 && size <= kMaxText, "checkpoint ", path, ": root attribute ", name, " is a text of ",
                       size, " bytes (corrupt?)");
  std::string text(size, '\0');
  TRIDENT_CONFIG_CHECK(H5Aread(attr, type, text.data()) >= 0, "checkpoint ", path, ": cannot read root attribute ", name,
                       " as text");
  return text.substr(0, text.find('\0'));
}

// Reads every root attribute: numbers as doubles, strings as text. Each must be one value (a
// scalar, or an array of one) of an integer, float or string type (ConfigError otherwise).
CheckpointAttributes read_attributes(hid_t file, const std::string& path) {
  CheckpointAttributes out;
  H5O_info_t info;
  TRIDENT_CONFIG_CHECK(H5Oget_info(file, &info) >= 0, "checkpoint ", path, ": cannot list its root attributes (corrupt?)");
  for (hsize_t i = 0; i < info.num_attrs; ++i) {
    H5Handle attr(H5Aopen_by_idx(file, ".", H5_INDEX_NAME, H5_ITER_INC, i, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
    TRIDENT_CONFIG_CHECK(attr.get() >= 0, "checkpoint ", path, ": cannot open root attribute ", i, " (corrupt?)");
    const ssize_t length = H5Aget_name(attr.get(), 0, nullptr);
    TRIDENT_CONFIG_CHECK(length >= 0, "checkpoint ", path, ": cannot read the name of root attribute ", i);
    std::string name(static_cast<size_t>(length) + 1, '\0');
    H5Aget_name(attr.get(), name.size(), name.data());
    name.resize(static_cast<size_t>(length));
    H5Handle space(H5Aget_space(attr.get()), H5Sclose);
    const hssize_t values = H5Sget_simple_extent_npoints(space.get());
    TRIDENT_CONFIG_CHECK(values == 1, "checkpoint ", path, ": root attribute ", name, " holds ", values,
                         " values; trident stores one");
    H5Handle type(H5Aget_type(attr.get()), H5Tclose);
    const H5T_class_t type_class = H5Tget_class(type.get());
    if (type_class == H5T_STRING) {
      out.texts[name] = read_text_attribute(attr.get(), type.get(), path, name);
    } else {
      TRIDENT_CONFIG_CHECK(type_class == H5T_INTEGER || type_class == H5T_FLOAT, "checkpoint ", path,
                           ": root attribute ", name, " is neither a number nor text");
      double v = 0;
      TRIDENT_CONFIG_CHECK(H5Aread(attr.get(), H5T_NATIVE_DOUBLE, &v) >= 0, "checkpoint ", path,
                           ": cannot read root attribute ", name, " as a number");
      out.numbers[name] = v;
    }
  }
  return out;
}

// A dataset's shape, which in a checkpoint is a vector or a matrix (ConfigError otherwise).
Shape dataset_shape(hid_t dataset, const std::string& path, const std::string& name) {
  H5Handle space(H5Dget_space(dataset), H5Sclose);
  const int nd = H5Sget_simple_extent_ndims(space.get());
  TRIDENT_CONFIG_CHECK(nd == 1 || nd == 2, "checkpoint ", path, ": tensor ", name, " has ", nd,
                       " dimensions; a checkpoint holds vectors and matrices");
  hsize_t dims[2] = {0, 0};
  H5Sget_simple_extent_dims(space.get(), dims, nullptr);
  constexpr hsize_t kMaxDim = hsize_t(1) << 40, kMaxElements = hsize_t(1) << 48;
  const hsize_t cols = nd == 2 ? dims[1] : 1;
  // Divided, not multiplied: dims[0] * cols wraps around (2^32 x 2^32 is 0 in hsize_t).
  TRIDENT_CONFIG_CHECK(dims[0] <= kMaxDim && cols <= kMaxDim && (cols == 0 || dims[0] <= kMaxElements / cols),
                       "checkpoint ", path, ": tensor ", name, " claims ", dims[0], " x ", cols, " elements (corrupt?)");
  return nd == 1 ? Shape{int64_t(dims[0])} : Shape{int64_t(dims[0]), int64_t(dims[1])};
}

// Checksum of a tensor, independent of how it is sharded: the sum (mod 2^64) over its elements
// of a mix of (global index, fp32 bits), so each rank adds its own elements in any order.
uint64_t element_hash(uint64_t index, uint32_t bits) {
  uint64_t z = (index * 0x9E3779B97F4A7C15ull) ^ (uint64_t(bits) << 17) ^ bits;
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

float as_stored(const Tensor& t, int64_t i) {
  return t.dtype() == DType::kF64 ? static_cast<float>(t.data<double>()[i]) : t.data<float>()[i];
}

// This rank's share of the checksum of a dataset of `cols` columns: its written pieces.
uint64_t partial_checksum(const std::vector<const ShardPiece*>& mine, int64_t cols) {
  uint64_t sum = 0;
  for (const ShardPiece* p : mine) {
    const int64_t n = stored_count(*p);
    for (int64_t k = 0; k < n; ++k) {
      const int64_t i = p->begin + k;
      const int64_t global = (p->row0 + i / p->local_cols) * cols + p->col0 + i % p->local_cols;
      sum += element_hash(uint64_t(global), std::bit_cast<uint32_t>(as_stored(p->data, k)));
    }
  }
  return sum;
}

void write_checksum_attribute(hid_t dataset, uint64_t checksum) {
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(dataset, "checksum", H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  TRIDENT_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), H5T_NATIVE_UINT64, &checksum) >= 0, "cannot write checksum");
}

void fsync_path(const std::string& path) {
  const int fd = ::open(path.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
}

}  // namespace

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

namespace {
// A root attribute that must be a whole number in [lo, hi) (counts stay exact in the double
// they are stored as up to 2^53).
double whole_attribute(const CheckpointAttributes& attributes, const std::string& path, const std::string& name,
                       double lo, double hi) {
  const double v = attributes.numbers.at(name);
  TRIDENT_CONFIG_CHECK(std::isfinite(v) && v == std::floor(v) && v >= lo && v < hi, "checkpoint ", path,
                       ": root attribute ", name, " = ", v, " is not a whole number from ", std::fixed,
                       std::setprecision(0), lo, " below ", hi, " (corrupt?)");
  return v;
}
}  // namespace

int checkpoint_format_version(const CheckpointAttributes& attributes, const std::string& path) {
  TRIDENT_CONFIG_CHECK(attributes.numbers.count("format_version"), "checkpoint ", path,
                       " has no format_version: not a trident checkpoint");
  const double v = attributes.numbers.at("format_version");
  TRIDENT_CONFIG_CHECK(std::isfinite(v) && v == std::floor(v) && v >= 1, "checkpoint ", path, ": format_version ", v,
                       " is not a format version (corrupt, or not a trident checkpoint)");
  TRIDENT_CONFIG_CHECK(v <= kCheckpointFormatVersion, "checkpoint ", path, " was written by format version ", v,
                       "; this trident reads up to version ", kCheckpointFormatVersion, " (upgrade trident)");
  return static_cast<int>(v);
}

CheckpointState checkpoint_state(const CheckpointAttributes& attributes, const std::string& path) {
  constexpr double kMaxCount = 0x1p53;  // counts stay exact in the double they are stored as
  constexpr double kMaxRanks = 1 << 24;
  CheckpointState s;
  s.format_version = checkpoint_format_version(attributes, path);
  for (const char* required : {"step", "layout_dp", "layout_tp", "layout_pp"})
    TRIDENT_CONFIG_CHECK(attributes.numbers.count(required), "checkpoint ", path, " has no ", required,
                         " attribute (not a training checkpoint of trident)");
  auto has = [&](const char* name) { return attributes.numbers.count(name) > 0; };
  s.step = static_cast<int64_t>(whole_attribute(attributes, path, "step", 0, kMaxCount));
  if (has("tokens")) s.tokens = static_cast<int64_t>(whole_attribute(attributes, path, "tokens", 0, kMaxCount));
  if (has("sampler_step"))
    s.sampler_step = static_cast<int64_t>(whole_attribute(attributes, path, "sampler_step", 0, kMaxCount));
  if (has("seed")) s.seed = static_cast<uint64_t>(whole_attribute(attributes, path, "seed", 0, 0x1p64));
  s.layout_dp = static_cast<int>(whole_attribute(attributes, path, "layout_dp", 1, kMaxRanks));
  s.layout_tp = static_cast<int>(whole_attribute(attributes, path, "layout_tp", 1, kMaxRanks));
  s.layout_pp = static_cast<int>(whole_attribute(attributes, path, "layout_pp", 1, kMaxRanks));
  if (has("layout_zero")) s.layout_zero = static_cast<int>(whole_attribute(attributes, path, "layout_zero", 0, 2));
  if (has("loss_scale")) {
    s.loss_scale = attributes.numbers.at("loss_scale");
    TRIDENT_CONFIG_CHECK(std::isfinite(s.loss_scale) && s.loss_scale > 0, "checkpoint ", path, ": root attribute ",
                         "loss_scale = ", s.loss_scale, " is not a positive number (corrupt?)");
  }
  if (const auto config = attributes.texts.find("config"); config != attributes.texts.end()) s.config = config->second;
  return s;
}

std::map<std::string, Shape> gather_datasets(MPI_Comm comm, const std::map<std::string, Shape>& mine) {
  std::ostringstream os;
  for (const auto& [name, shape] : mine) {
    os << name << ' ' << shape.ndim();
    for (int d = 0; d < shape.ndim(); ++d) os << ' ' << shape[d];
    os << '\n';
  }
  const std::string text = os.str();
  int size = 1;
  MPI_Comm_size(comm, &size);
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm);
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm);
  std::map<std::string, Shape> out;
  std::istringstream is(all);
  std::string name;
  int ndim = 0;
  while (is >> name >> ndim) {
    Shape s;
    std::vector<int64_t> dims(static_cast<size_t>(ndim));
    for (auto& d : dims) is >> d;
    s = ndim == 1 ? Shape{dims[0]} : ndim == 2 ? Shape{dims[0], dims[1]} : Shape{};
    out[name] = s;
  }
  return out;
}

void write_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                      const std::vector<ShardPiece>& pieces, const CheckpointAttributes& attributes) {
  int rank = 0;
  MPI_Comm_rank(comm, &rank);
  const std::string tmp = path + ".tmp";
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  try {
    H5Handle fapl = file_access(comm);
    H5Handle file(H5Fcreate(tmp.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), H5Fclose);
    require_io(file.get() >= 0, "checkpoint: cannot create ", tmp, " (directory missing, read-only or full?)");
    write_number_attribute(file.get(), "format_version", kCheckpointFormatVersion);
    for (const auto& [name, v] : attributes.numbers) write_number_attribute(file.get(), name, v);
    for (const auto& [name, text] : attributes.texts) write_string_attribute(file.get(), name, text);
    H5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
    H5Pset_create_intermediate_group(lcpl.get(), 1);
    H5Handle dxpl = collective_transfer();
    // Checksums of the whole tensors, from every rank's written pieces, summed in one call.
    std::vector<uint64_t> checksums;
    for (const auto& [name, shape] : datasets)
      checksums.push_back(partial_checksum(pieces_of(name, pieces, /*writing=*/true), shape.ndim() > 1 ? shape[1] : shape[0]));
    MPI_Allreduce(MPI_IN_PLACE, checksums.data(), static_cast<int>(checksums.size()), MPI_UINT64_T, MPI_SUM, comm);
    size_t checksum_index = 0;
    std::vector<char> buffer;
    for (const auto& [name, shape] : datasets) {  // the same sorted order on every rank
      hsize_t dims[2] = {hsize_t(shape[0]), shape.ndim() > 1 ? hsize_t(shape[1]) : 1};
      H5Handle space(H5Screate_simple(shape.ndim(), dims, nullptr), H5Sclose);
      H5Handle ds(H5Dcreate2(file.get(), name.c_str(), H5T_IEEE_F32LE, space.get(), lcpl.get(), H5P_DEFAULT,
                             H5P_DEFAULT),
                  H5Dclose);
      TRIDENT_CHECK(ds.get() >= 0, "cannot create dataset ", name, " in ", tmp);
      write_checksum_attribute(ds.get(), checksums[checksum_index++]);
      // Collective transfer: every rank writes every dataset, possibly an empty selection.
      H5Sselect_none(space.get());
      const auto mine = pieces_of(name, pieces, /*writing=*/true);
      int64_t count = 0;
      hid_t type = H5T_NATIVE_FLOAT;
      for (const ShardPiece* p : mine) count += stored_count(*p);
      if (count > 0) {
        type = memory_type(mine.front()->data);
        const size_t elem = dtype_size(mine.front()->data.dtype());
        buffer.resize(static_cast<size_t>(count) * elem);
        size_t at = 0;
        for (const ShardPiece* p : mine) {
          TRIDENT_CHECK(memory_type(p->data) == type, name, ": pieces of mixed dtypes");
          select_piece(space.get(), shape.ndim(), *p);
          const size_t bytes = static_cast<size_t>(stored_count(*p)) * elem;
          std::copy_n(static_cast<const char*>(p->data.raw()), bytes, buffer.data() + at);
          at += bytes;
        }
      }
      const hsize_t mem_count[1] = {hsize_t(std::max<int64_t>(count, 1))};
      H5Handle memspace(H5Screate_simple(1, mem_count, nullptr), H5Sclose);
      if (count == 0) H5Sselect_none(memspace.get());
      require_io(H5Dwrite(ds.get(), type, memspace.get(), space.get(), dxpl.get(), count ? buffer.data() : nullptr) >= 0,
                 "checkpoint: writing ", name, " to ", tmp, " failed (disk full or I/O error); the previous checkpoint "
                 "is untouched");
    }
    require_io(H5Fflush(file.get(), H5F_SCOPE_GLOBAL) >= 0, "checkpoint: flushing ", tmp,
               " failed (disk full or I/O error); the previous checkpoint is untouched");
  } catch (...) {
    std::error_code ignored;
    std::filesystem::remove(tmp, ignored);  // free the space a partial file holds
    throw;
  }
  MPI_Barrier(comm);
  // Test hook TRIDENT_TEST_CHECKPOINT_DELAY="SECONDS:FILE_NAME": hold that checkpoint's finished
  // .tmp file before the rename, so a test can kill the job mid-checkpoint and check that the
  // previous checkpoint stays the one resumed from.
  if (const char* hook = std::getenv("TRIDENT_TEST_CHECKPOINT_DELAY")) {
    const std::string spec = hook;
    const size_t colon = spec.find(':');
    if (colon != std::string::npos && std::filesystem::path(path).filename() == spec.substr(colon + 1))
      ::usleep(useconds_t(std::atof(spec.substr(0, colon).c_str()) * 1e6));
  }
  if (rank == 0) {
    fsync_path(tmp);
    std::error_code ec;
    std::filesystem::rename(tmp, path, ec);
    TRIDENT_CHECK(!ec, "cannot rename ", tmp, " to ", path, ": ", ec.message());
    fsync_path(std::filesystem::path(path).parent_path().string());
  }
  MPI_Barrier(comm);
}

namespace {

// Reads every expected dataset once, split by rows over the ranks, and compares the summed
// checksum with the one stored at write time.
void verify_checksums(hid_t file, const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected) {
  int rank = 0, size = 1;
  MPI_Comm_rank(comm, &rank);
  MPI_Comm_size(comm, &size);
  H5Handle dxpl = collective_transfer();
  std::vector<uint64_t> computed, stored;
  std::vector<float> buffer;
  for (const auto& [name, shape] : expected) {
    H5Handle ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
    uint64_t want = 0;
    H5Handle attr(H5Aopen(ds.get(), "checksum", H5P_DEFAULT), H5Aclose);
    H5Handle attr_space(H5Aget_space(attr.get()), H5Sclose);
    H5Handle attr_type(H5Aget_type(attr.get()), H5Tclose);
    // One unsigned integer: reading an array or another type into `want` would overrun it.
    TRIDENT_CONFIG_CHECK(attr.get() >= 0 && H5Sget_simple_extent_npoints(attr_space.get()) == 1 &&
                             H5Tget_class(attr_type.get()) == H5T_INTEGER &&
                             H5Aread(attr.get(), H5T_NATIVE_UINT64, &want) >= 0,
                         "checkpoint ", path, ": tensor ", name, " has no checksum (not written by trident, or corrupt)");
    stored.push_back(want);
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
    const hsize_t mem_count[1] = {hsize_t(std::max<int64_t>(count, 1))};
    H5Handle memspace(H5Screate_simple(1, mem_count, nullptr), H5Sclose);
    if (count == 0) H5Sselect_none(memspace.get());
    buffer.resize(static_cast<size_t>(std::max<int64_t>(count, 1)));
    TRIDENT_CONFIG_CHECK(H5Dread(ds.get(), H5T_NATIVE_FLOAT, memspace.get(), space.get(), dxpl.get(), buffer.data()) >= 0,
                         "checkpoint ", path, ": reading ", name, " failed (truncated or corrupt file?)");
    uint64_t sum = 0;
    const int64_t base = matrix ? first * cols : first;
    for (int64_t k = 0; k < count; ++k) sum += element_hash(uint64_t(base + k), std::bit_cast<uint32_t>(buffer[k]));
    computed.push_back(sum);
  }
  MPI_Allreduce(MPI_IN_PLACE, computed.data(), static_cast<int>(computed.size()), MPI_UINT64_T, MPI_SUM, comm);
  size_t i = 0;
  for (const auto& entry : expected) {
    TRIDENT_CONFIG_CHECK(computed[i] == stored[i], "checkpoint ", path, ": tensor ", entry.first,
                         " fails its checksum (the file is corrupt; resume from an older checkpoint)");
    ++i;
  }
}

}  // namespace

CheckpointAttributes read_checkpoint(const std::string& path, MPI_Comm comm, const std::map<std::string, Shape>& expected,
                                     std::vector<ShardPiece>& pieces) {
  TRIDENT_CONFIG_CHECK(std::filesystem::is_regular_file(path), "checkpoint ", path, " not found");
  H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  H5Handle fapl = file_access(comm);
  H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDONLY, fapl.get()), H5Fclose);
  TRIDENT_CONFIG_CHECK(file.get() >= 0, "checkpoint ", path, " cannot be opened as HDF5 (truncated or corrupt?)");
  CheckpointAttributes attributes = read_attributes(file.get(), path);
  checkpoint_format_version(attributes, path);
  // Names and shapes first, then the checksums of everything, then this rank's pieces.
  for (const auto& [name, shape] : expected) {
    H5Handle ds(H5Dopen2(file.get(), name.c_str(), H5P_DEFAULT), H5Dclose);
    TRIDENT_CONFIG_CHECK(ds.get() >= 0, "checkpoint ", path, " has no tensor ", name,
                         " (written for another model or layout?)");
    const Shape found = dataset_shape(ds.get(), path, name);
    TRIDENT_CONFIG_CHECK(found == shape, "checkpoint ", path, ": tensor ", name, " has shape ", found.str(),
                         " but the model needs ", shape.str(), " (a checkpoint of another model shape)");
  }
  verify_checksums(file.get(), path, comm, expected);
  H5Handle dxpl = collective_transfer();
  for (const auto& [name, shape] : expected) {  // the same sorted order on every rank
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
  }
  return attributes;
}

}  // namespace trident::io
