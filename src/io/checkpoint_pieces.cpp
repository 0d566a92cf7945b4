// Checkpoint files: the HDF5 property lists and the hyperslab selection of a rank's pieces, and
// the union of every rank's datasets.
#include <algorithm>
#include <sstream>

#include "checkpoint_hdf5.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::io {

namespace detail {

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

// The piece's stored elements as blocks in the order of its data (row-major global order): a
// partial first row, a block of whole rows, a partial last row.
template <typename F>
void PieceTransfer::each_block(const std::vector<const ShardPiece*>& mine, F&& f) const {
  for (const ShardPiece* p : mine) {
    const int64_t lc = p->local_cols, end = p->begin + stored_count(*p);
    size_t at = 0;  // elements of the piece's data before the block
    auto block = [&](int64_t local_row, int64_t local_col, int64_t rows, int64_t cols) {
      if (rows <= 0 || cols <= 0) return;
      f(*p, Block{p->row0 + local_row, p->col0 + local_col, rows, cols}, at);
      at += static_cast<size_t>(rows * cols);
    };
    int64_t i = p->begin;
    if (i < end && i % lc != 0) {  // partial first row
      const int64_t stop = std::min(end, (i / lc + 1) * lc);
      block(i / lc, i % lc, 1, stop - i);
      i = stop;
    }
    const int64_t full_rows = (end - i) / lc;
    block(i / lc, 0, full_rows, lc);
    i += full_rows * lc;
    if (i < end) block(i / lc, 0, 1, end - i);  // partial last row
  }
}

PieceTransfer::PieceTransfer(hid_t file_space, int rank, const std::vector<const ShardPiece*>& mine) {
  H5Sselect_none(file_space);
  int64_t r0 = INT64_MAX, c0 = INT64_MAX, r1 = INT64_MIN, c1 = INT64_MIN;
  auto select = [rank](hid_t space, const Block& b, int64_t row, int64_t col) {
    const hsize_t start2[2] = {hsize_t(row), hsize_t(col)}, count2[2] = {hsize_t(b.rows), hsize_t(b.cols)};
    const hsize_t start1[1] = {hsize_t(col)}, count1[1] = {hsize_t(b.cols)};
    H5Sselect_hyperslab(space, H5S_SELECT_OR, rank == 1 ? start1 : start2, nullptr, rank == 1 ? count1 : count2,
                        nullptr);
  };
  each_block(mine, [&](const ShardPiece& p, const Block& b, size_t) {
    TRIDENT_CHECK(memory_type(p.data) == memory_type(mine.front()->data), p.dataset, ": pieces of mixed dtypes");
    select(file_space, b, b.row, b.col);
    count_ += b.rows * b.cols;
    r0 = std::min(r0, b.row), c0 = std::min(c0, b.col);
    r1 = std::max(r1, b.row + b.rows), c1 = std::max(c1, b.col + b.cols);
  });
  if (count_ == 0) {  // a collective transfer of nothing: still a call on every rank
    const hsize_t one[1] = {1};
    memspace_ = H5Handle(H5Screate_simple(1, one, nullptr), H5Sclose);
    H5Sselect_none(memspace_.get());
    return;
  }
  type_ = memory_type(mine.front()->data);
  elem_ = dtype_size(mine.front()->data.dtype());
  const int64_t box = (r1 - r0) * (c1 - c0);
  flat_ = box > 2 * count_;
  box_row_ = r0, box_col_ = c0, box_width_ = c1 - c0;
  if (flat_) {
    const hsize_t n[1] = {hsize_t(count_)};
    memspace_ = H5Handle(H5Screate_simple(1, n, nullptr), H5Sclose);
  } else {
    const hsize_t dims2[2] = {hsize_t(r1 - r0), hsize_t(c1 - c0)}, dims1[1] = {hsize_t(c1 - c0)};
    memspace_ = H5Handle(H5Screate_simple(rank, rank == 1 ? dims1 : dims2, nullptr), H5Sclose);
    H5Sselect_none(memspace_.get());
    each_block(mine, [&](const ShardPiece&, const Block& b, size_t) {
      select(memspace_.get(), b, b.row - r0, b.col - c0);
    });
  }
  buffer_.reset(new char[static_cast<size_t>(flat_ ? count_ : box) * elem_]);
}

// Where row `row` of block b starts in the buffer, in elements (flat: the running position).
size_t PieceTransfer::box_offset(const Block& b, int64_t row, size_t flat_at) const {
  if (flat_) return flat_at;
  return static_cast<size_t>((b.row + row - box_row_) * box_width_ + (b.col - box_col_));
}

void PieceTransfer::pack(const std::vector<const ShardPiece*>& mine) {
  size_t flat_at = 0;
  each_block(mine, [&](const ShardPiece& p, const Block& b, size_t at) {
    const char* data = static_cast<const char*>(p.data.raw());
    for (int64_t r = 0; r < b.rows; ++r, flat_at += size_t(b.cols))
      std::copy_n(data + (at + size_t(r * b.cols)) * elem_, size_t(b.cols) * elem_,
                  buffer_.get() + box_offset(b, r, flat_at) * elem_);
  });
}

void PieceTransfer::unpack(const std::vector<const ShardPiece*>& mine) const {
  size_t flat_at = 0;
  each_block(mine, [&](const ShardPiece& p, const Block& b, size_t at) {
    char* data = static_cast<char*>(p.data.raw());
    for (int64_t r = 0; r < b.rows; ++r, flat_at += size_t(b.cols))
      std::copy_n(buffer_.get() + box_offset(b, r, flat_at) * elem_, size_t(b.cols) * elem_,
                  data + (at + size_t(r * b.cols)) * elem_);
  });
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

}  // namespace detail

std::map<std::string, Shape> gather_datasets(MPI_Comm comm, const std::map<std::string, Shape>& mine) {
  std::ostringstream os;
  for (const auto& [name, shape] : mine) {
    os << name << ' ' << shape.ndim();
    for (int d = 0; d < shape.ndim(); ++d) os << ' ' << shape[d];
    os << '\n';
  }
  const std::string text = os.str();
  int size = 1;
  MPI_CHECK(MPI_Comm_size(comm, &size));
  int length = static_cast<int>(text.size());
  std::vector<int> lengths(static_cast<size_t>(size)), offsets(static_cast<size_t>(size));
  MPI_CHECK(MPI_Allgather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, comm));
  int total = 0;
  for (int r = 0; r < size; ++r) {
    offsets[r] = total;
    total += lengths[r];
  }
  std::string all(static_cast<size_t>(total), '\0');
  MPI_CHECK(MPI_Allgatherv(text.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, comm));
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

}  // namespace trident::io
