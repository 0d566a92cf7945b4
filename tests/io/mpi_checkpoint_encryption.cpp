// mpi-ranks: 1 2 4
// Encrypted checkpoints (global tier): written under one sharding (rows, columns, ZeRO-like flat
// segments, replicas) and read under another, bit-equal to what was written and to the same
// checkpoint written plain; the key is checked before any tensor is read (none, another: a
// CheckpointKeyError); a flipped byte in one chunk is a ConfigError on every rank naming the file,
// the tensor and the chunk; a flipped byte in a plain checkpoint's tensor fails its checksum.
#include <gtest/gtest.h>
#include <hdf5.h>
#include <mpi.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "mpi_job_dir.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/security/crypto.hpp"

namespace trident::io {
namespace {

int rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}
int size() {
  int s = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &s);
  return s;
}

security::MasterKey key_of(unsigned char seed) {
  security::Key bytes{};
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<unsigned char>(seed * 31 + i);
  return security::master_key_from_bytes(bytes);
}

// The value stored at global element g of a dataset: distinct, never NaN.
float value_at(const std::string& name, int64_t g) {
  const uint64_t h = (uint64_t(g) + name.size() * 1000003ull) * 0x9E3779B97F4A7C15ull;
  return float(int64_t(h >> 40) % 2000001 - 1000000) * 1e-3f;
}

// The datasets: a matrix of several 2 MiB chunks, small ones, and a vector whose second chunk is
// an edge chunk (HDF5 merges what is written into what the chunk held: a placeholder).
const std::map<std::string, Shape>& datasets() {
  static const std::map<std::string, Shape> d = {
      {"/model/a", Shape{300, 70}},
      {"/model/big", Shape{1100, 1024}},
      {"/model/edge", Shape{700001}},
      {"/model/v", Shape{1000}},
      {"/optim/b", Shape{64, 96}}};
  return d;
}

enum class Split { kRows, kCols, kFlat, kReplicated };

// This rank's piece of a dataset under a split; data holds the values (or zeros to read into).
ShardPiece piece(const std::string& name, Split split, bool fill, int r = rank(), int n = size()) {
  const Shape& s = datasets().at(name);
  const int64_t rows = s.ndim() == 2 ? s[0] : 1, cols = s.ndim() == 2 ? s[1] : s[0];
  ShardPiece p;
  p.dataset = name;
  p.stored_rows = rows;
  p.local_cols = cols;
  if (split == Split::kRows) {
    p.row0 = rows * r / n;
    p.end = (rows * (r + 1) / n - p.row0) * cols;
  } else if (split == Split::kCols) {
    p.col0 = cols * r / n;
    p.local_cols = cols * (r + 1) / n - p.col0;
    p.end = rows * p.local_cols;
  } else if (split == Split::kFlat) {  // ZeRO-like: a segment of the whole tensor, any boundaries
    p.begin = rows * cols * r / n;
    p.end = rows * cols * (r + 1) / n;
  } else {  // every rank holds it all; rank 0 writes
    p.end = rows * cols;
    p.write = r == 0;
  }
  p.data = Tensor::zeros(Shape{std::max<int64_t>(p.end - p.begin, 1)}, DType::kF32);
  if (fill)
    for (int64_t k = 0; k < p.end - p.begin; ++k) {
      const int64_t i = p.begin + k;
      p.data.data<float>()[k] = value_at(name, (p.row0 + i / p.local_cols) * cols + p.col0 + i % p.local_cols);
    }
  return p;
}

std::vector<ShardPiece> write_layout() {
  return {piece("/model/a", Split::kRows, true), piece("/model/big", Split::kFlat, true),
          piece("/model/edge", Split::kReplicated, true), piece("/model/v", Split::kReplicated, true),
          piece("/optim/b", Split::kCols, true)};
}
// Another layout, ranks in reverse order.
std::vector<ShardPiece> read_layout() {
  const int r = size() - 1 - rank();
  return {piece("/model/a", Split::kCols, false, r), piece("/model/big", Split::kRows, false, r),
          piece("/model/edge", Split::kFlat, false, r), piece("/model/v", Split::kFlat, false, r),
          piece("/optim/b", Split::kFlat, false, r)};
}

void expect_values(const std::vector<ShardPiece>& pieces) {
  for (const ShardPiece& p : pieces) {
    const Shape& s = datasets().at(p.dataset);
    const int64_t cols = s[s.ndim() - 1];
    int64_t wrong = 0;
    for (int64_t k = 0; k < p.end - p.begin; ++k) {
      const int64_t i = p.begin + k;
      const float want = value_at(p.dataset, (p.row0 + i / p.local_cols) * cols + p.col0 + i % p.local_cols);
      wrong += std::memcmp(&want, p.data.data<float>() + k, 4) != 0;
    }
    EXPECT_EQ(wrong, 0) << p.dataset << " on rank " << rank();
  }
}

CheckpointAttributes attributes() {
  CheckpointAttributes a;
  a.numbers = {{"step", 7}};
  a.texts = {{"config", "[model]\nlayers = 1\n"}};
  return a;
}

// The ConfigError message of a collective read (empty: none thrown), the same on every rank.
std::string read_error(const std::string& path, const security::MasterKey* key, bool* key_error = nullptr) {
  std::vector<ShardPiece> pieces = read_layout();
  try {
    read_checkpoint(path, MPI_COMM_WORLD, datasets(), pieces, key);
  } catch (const CheckpointKeyError& e) {
    if (key_error) *key_error = true;
    return e.what();
  } catch (const ConfigError& e) {
    return e.what();
  }
  return "";
}

// Flips one byte of the file at offset (rank 0), while every rank waits.
void flip_byte(const std::string& path, haddr_t offset) {
  if (rank() == 0) {
    std::fstream f(path, std::ios::in | std::ios::out | std::ios::binary);
    f.seekg(static_cast<std::streamoff>(offset));
    char c = 0;
    f.read(&c, 1);
    c = static_cast<char>(c ^ 0x20);
    f.seekp(static_cast<std::streamoff>(offset));
    f.write(&c, 1);
  }
  MPI_Barrier(MPI_COMM_WORLD);
}

// The file offset and size of chunk `index` of a dataset, and its filter (serial, rank 0's view
// broadcast).
struct ChunkInfo {
  haddr_t addr = 0;
  hsize_t bytes = 0, chunks = 0;
  int filtered = 0;
};
ChunkInfo chunk_info(const std::string& path, const std::string& dataset, hsize_t index) {
  ChunkInfo info;
  if (rank() == 0) {
    const hid_t f = H5Fopen(path.c_str(), H5F_ACC_RDONLY, H5P_DEFAULT);
    const hid_t d = H5Dopen2(f, dataset.c_str(), H5P_DEFAULT);
    const hid_t space = H5Dget_space(d), dcpl = H5Dget_create_plist(d);
    info.filtered = H5Pget_nfilters(dcpl) == 1 &&
                    H5Pget_filter_by_id2(dcpl, 32769, nullptr, nullptr, nullptr, 0, nullptr, nullptr) >= 0;
    if (info.filtered) {
      hsize_t offset[2];
      unsigned mask = 0;
      H5Dget_num_chunks(d, space, &info.chunks);
      H5Dget_chunk_info(d, space, index, offset, &mask, &info.addr, &info.bytes);
    } else {
      info.addr = H5Dget_offset(d);
      info.bytes = H5Dget_storage_size(d);
    }
    H5Pclose(dcpl);
    H5Sclose(space);
    H5Dclose(d);
    H5Fclose(f);
  }
  MPI_Bcast(&info, sizeof info, MPI_BYTE, 0, MPI_COMM_WORLD);
  return info;
}

TEST(CheckpointEncryption, ReadsUnderAnotherLayoutBitEqualToPlain) {
  testing::MpiJobDir dir("trident_ckpt_crypt");
  if (rank() == 0) std::filesystem::create_directories(dir.path);
  MPI_Barrier(MPI_COMM_WORLD);
  const security::MasterKey key = key_of(1);
  const std::string sealed = dir.path + "/sealed.h5", plain = dir.path + "/plain.h5";
  write_checkpoint(sealed, MPI_COMM_WORLD, datasets(), write_layout(), attributes(), &key);
  write_checkpoint(plain, MPI_COMM_WORLD, datasets(), write_layout(), attributes(), nullptr);

  std::vector<ShardPiece> from_sealed = read_layout(), from_plain = read_layout();
  const CheckpointAttributes a = read_checkpoint(sealed, MPI_COMM_WORLD, datasets(), from_sealed, &key);
  read_checkpoint(plain, MPI_COMM_WORLD, datasets(), from_plain, &key);  // a plain file reads with a key too
  expect_values(from_sealed);
  expect_values(from_plain);
  EXPECT_EQ(a.numbers.at("step"), 7);
  EXPECT_EQ(a.numbers.at("format_version"), 2);
  EXPECT_EQ(a.texts.at("encryption"), "aes-256-gcm");
  EXPECT_EQ(a.texts.at("encryption_key_id"), key.id);

  // Every tensor chunked through the filter, a chunk holding nonce | ciphertext | tag.
  for (const auto& [name, shape] : datasets()) {
    const ChunkInfo info = chunk_info(sealed, name, 0);
    EXPECT_TRUE(info.filtered) << name;
  }
  const ChunkInfo big = chunk_info(sealed, "/model/big", 0);
  EXPECT_GE(big.chunks, 2u);
  EXPECT_LE(big.bytes, (hsize_t(2) << 20) + 28);
  const ChunkInfo edge = chunk_info(sealed, "/model/edge", 1);  // the edge chunk: sealed whole
  EXPECT_EQ(edge.chunks, 2u);
  EXPECT_EQ(edge.bytes, (hsize_t(2) << 20) + 28);
  // The listing needs no key: names, shapes and attributes are plain.
  EXPECT_EQ(list_checkpoint(sealed).datasets, datasets());
}

TEST(CheckpointEncryption, KeyIsCheckedBeforeAnyTensor) {
  testing::MpiJobDir dir("trident_ckpt_crypt_key");
  if (rank() == 0) std::filesystem::create_directories(dir.path);
  MPI_Barrier(MPI_COMM_WORLD);
  const security::MasterKey key = key_of(1), other = key_of(2);
  const std::string sealed = dir.path + "/sealed.h5";
  write_checkpoint(sealed, MPI_COMM_WORLD, datasets(), write_layout(), attributes(), &key);
  bool key_error = false;
  const std::string none = read_error(sealed, nullptr, &key_error);
  EXPECT_TRUE(key_error);
  EXPECT_NE(none.find(sealed + " is encrypted (key id " + key.id + "): a key is needed"), std::string::npos) << none;
  key_error = false;
  const std::string wrong = read_error(sealed, &other, &key_error);
  EXPECT_TRUE(key_error);
  EXPECT_NE(wrong.find("the key does not match: it was encrypted with key id " + key.id), std::string::npos) << wrong;
  EXPECT_NE(wrong.find(other.id), std::string::npos) << wrong;
  EXPECT_EQ(read_error(sealed, &key), "");
}

TEST(CheckpointEncryption, FlippedByteInAChunkIsFoundOnEveryRank) {
  testing::MpiJobDir dir("trident_ckpt_crypt_flip");
  if (rank() == 0) std::filesystem::create_directories(dir.path);
  MPI_Barrier(MPI_COMM_WORLD);
  const security::MasterKey key = key_of(1);
  const std::string sealed = dir.path + "/sealed.h5";
  write_checkpoint(sealed, MPI_COMM_WORLD, datasets(), write_layout(), attributes(), &key);
  // A middle chunk of the big matrix: under several ranks only some of them read it.
  const ChunkInfo info = chunk_info(sealed, "/model/big", 1);
  ASSERT_GT(info.bytes, 1000u);
  flip_byte(sealed, info.addr + info.bytes / 2);
  bool key_error = false;
  const std::string error = read_error(sealed, &key, &key_error);
  EXPECT_FALSE(key_error);
  EXPECT_NE(error.find("checkpoint " + sealed + ": tensor /model/big: the chunk at ("), std::string::npos) << error;
  EXPECT_NE(error.find("(file bytes " + std::to_string(info.addr) + " to "), std::string::npos) << error;
  EXPECT_NE(error.find("fails its authentication tag"), std::string::npos) << error;
  // The same message on every rank (the agreement; the others add " (on rank N)"), not a hang.
  const std::string own = error.substr(0, error.find(" (on rank "));
  int length = static_cast<int>(own.size()), longest = 0;
  MPI_Allreduce(&length, &longest, 1, MPI_INT, MPI_MAX, MPI_COMM_WORLD);
  EXPECT_EQ(length, longest);

  // A flipped tag (the chunk's last byte) fails the same way.
  write_checkpoint(sealed, MPI_COMM_WORLD, datasets(), write_layout(), attributes(), &key);
  const ChunkInfo a = chunk_info(sealed, "/model/a", 0);
  flip_byte(sealed, a.addr + a.bytes - 1);
  EXPECT_NE(read_error(sealed, &key).find("tensor /model/a: the chunk at (0, 0)"), std::string::npos);
}

TEST(CheckpointEncryption, ChunksSwappedWithinATensorFailItsChecksum) {
  testing::MpiJobDir dir("trident_ckpt_crypt_swap");
  if (rank() == 0) std::filesystem::create_directories(dir.path);
  MPI_Barrier(MPI_COMM_WORLD);
  const security::MasterKey key = key_of(1);
  const std::string sealed = dir.path + "/sealed.h5";
  write_checkpoint(sealed, MPI_COMM_WORLD, datasets(), write_layout(), attributes(), &key);
  // Two whole chunks of one tensor trade places: each still opens (same file, tensor and size).
  const ChunkInfo first = chunk_info(sealed, "/model/big", 0), second = chunk_info(sealed, "/model/big", 1);
  ASSERT_EQ(first.bytes, second.bytes);
  if (rank() == 0) {
    std::fstream f(sealed, std::ios::in | std::ios::out | std::ios::binary);
    std::vector<char> a(first.bytes), b(second.bytes);
    f.seekg(static_cast<std::streamoff>(first.addr)).read(a.data(), static_cast<std::streamsize>(a.size()));
    f.seekg(static_cast<std::streamoff>(second.addr)).read(b.data(), static_cast<std::streamsize>(b.size()));
    f.seekp(static_cast<std::streamoff>(first.addr)).write(b.data(), static_cast<std::streamsize>(b.size()));
    f.seekp(static_cast<std::streamoff>(second.addr)).write(a.data(), static_cast<std::streamsize>(a.size()));
  }
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string error = read_error(sealed, &key);
  EXPECT_NE(error.find("checkpoint " + sealed + ": tensor /model/big fails its checksum"), std::string::npos) << error;
  // Nothing read covers it (inspect's read): the checksum pass finds it all the same.
  std::vector<ShardPiece> none;
  try {
    read_checkpoint(sealed, MPI_COMM_WORLD, datasets(), none, &key);
    ADD_FAILURE() << "a swapped chunk read";
  } catch (const ConfigError& e) {
    EXPECT_NE(std::string(e.what()).find("tensor /model/big fails its checksum"), std::string::npos) << e.what();
  }
}

TEST(CheckpointEncryption, FlippedByteInAPlainTensorFailsItsChecksum) {
  testing::MpiJobDir dir("trident_ckpt_plain_flip");
  if (rank() == 0) std::filesystem::create_directories(dir.path);
  MPI_Barrier(MPI_COMM_WORLD);
  const std::string plain = dir.path + "/plain.h5";
  write_checkpoint(plain, MPI_COMM_WORLD, datasets(), write_layout(), attributes(), nullptr);
  const ChunkInfo info = chunk_info(plain, "/model/a", 0);
  ASSERT_FALSE(info.filtered);
  flip_byte(plain, info.addr + 4 * 1234 + 1);
  const std::string error = read_error(plain, nullptr);
  EXPECT_NE(error.find("checkpoint " + plain + ": tensor /model/a fails its checksum"), std::string::npos) << error;
}

}  // namespace
}  // namespace trident::io
