// Encrypted checkpoints, the global tier's side: the file's secret, chunk shapes, root
// attributes, the key check before any tensor is read, and the agreement on failed chunks.
#include "checkpoint_crypto.hpp"

#include <fcntl.h>
#include <openssl/crypto.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>

#include "trident/dist/mpi_session.hpp"

namespace trident::io {

namespace detail {

namespace {

// A chunk length along a dimension of `extent` elements whose writers own blocks of `block`,
// at most `target`: the block when it fits (and is `least` or more: a ZeRO segment that happens
// to end on a row is not followed into chunks of a few KiB), else a divisor of the block near the
// target, else the target.
hsize_t fit(int64_t extent, int64_t block, int64_t target, int64_t least) {
  target = std::clamp<int64_t>(target, 1, extent);
  block = std::min(block, extent);
  if (block <= target) return hsize_t(block >= least ? block : target);
  const int64_t parts = (block + target - 1) / target;  // blocks of at most target need this many parts
  for (int64_t k = parts; k <= 2 * parts; ++k)
    if (block % k == 0) return hsize_t(block / k);
  return hsize_t(target);
}

// This rank's hint for one dataset of `cols` columns (a vector: its length) from its written pieces.
ChunkHint local_hint(const std::vector<const ShardPiece*>& mine, int64_t cols) {
  ChunkHint h;
  for (const ShardPiece* p : mine) {
    h.cols = std::min(h.cols, std::min(p->local_cols, cols));
    const int64_t n = stored_count(*p);
    if (n > 0 && p->begin % p->local_cols == 0 && n % p->local_cols == 0) h.rows = std::min(h.rows, n / p->local_cols);
  }
  return h;
}

std::map<std::string, ChunkHint> gather_chunk_hints(MPI_Comm comm, const std::map<std::string, Shape>& datasets,
                                                    const std::vector<ShardPiece>& pieces) {
  std::vector<int64_t> values;
  for (const auto& [name, shape] : datasets) {
    const ChunkHint h = local_hint(pieces_of(name, pieces, /*writing=*/true), shape[shape.ndim() - 1]);
    values.push_back(h.cols);
    values.push_back(h.rows);
  }
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, values.data(), static_cast<int>(values.size()), MPI_INT64_T, MPI_MIN, comm));
  std::map<std::string, ChunkHint> out;
  size_t i = 0;
  for (const auto& entry : datasets) {
    out[entry.first] = {values[i], values[i + 1]};
    i += 2;
  }
  return out;
}

// "the chunk at (r, c) (file bytes A to B)": the chunk of `ds` whose stored nonce is the failed one's.
// Collective over the file's communicator (collective metadata reads): every rank walks every chunk.
std::string locate_chunk(hid_t ds, const std::string& path, const std::vector<crypt::ChunkFailure>& failures) {
  // The dataset's own space (every element selected): HDF5 1.10 refuses H5S_ALL here.
  H5Handle space(H5Dget_space(ds), H5Sclose);
  hsize_t chunks = 0;
  if (H5Dget_num_chunks(ds, space.get(), &chunks) < 0) return "";
  const int nd = H5Sget_simple_extent_ndims(space.get());
  const int fd = failures.empty() ? -1 : ::open(path.c_str(), O_RDONLY);
  std::string where;
  for (hsize_t i = 0; i < chunks; ++i) {
    hsize_t offset[2] = {0, 0}, size = 0;
    unsigned mask = 0;
    haddr_t addr = 0;
    if (H5Dget_chunk_info(ds, space.get(), i, offset, &mask, &addr, &size) < 0) break;  // alike on every rank
    crypt::Nonce stored{};
    if (fd < 0 || !where.empty() ||
        ::pread(fd, stored.data(), stored.size(), static_cast<off_t>(addr)) != static_cast<ssize_t>(stored.size()) ||
        stored != failures.front().nonce)
      continue;
    where = trident::detail::concat("the chunk at (", offset[0],
                                    nd > 1 ? trident::detail::concat(", ", offset[1]) : std::string(), ") (file bytes ",
                                    addr, " to ", addr + size, ")");
  }
  if (fd >= 0) ::close(fd);
  return where;
}

}  // namespace

void register_encryption_filter() {
  // Every time, not once: cheap, and right after an H5close / H5open too. (Never H5Zfilter_avail
  // first: it would load libtrident_h5crypt.so from HDF5_PLUGIN_PATH, with a registry of its own.)
  TRIDENT_CHECK(H5Zregister(crypt::filter_class()) >= 0, "cannot register the HDF5 filter ", crypt::kFilterName);
}

std::vector<hsize_t> chunk_dims(const Shape& shape, const ChunkHint& hint) {
  const int64_t target = kChunkBytes / int64_t(sizeof(float));
  if (shape.numel() == 0) return {};
  if (shape.ndim() == 1) return {fit(shape[0], hint.cols, target, target / 8)};
  const hsize_t cols = fit(shape[1], hint.cols, target, 1);  // a tensor-parallel rank's columns, however few
  const int64_t rows = target / int64_t(cols);
  return {fit(shape[0], hint.rows, rows, rows / 8), cols};
}

CheckpointEncryption::CheckpointEncryption(const security::MasterKey& key, MPI_Comm comm,
                                           const std::map<std::string, Shape>& datasets,
                                           const std::vector<ShardPiece>& pieces)
    : scope_(key, crypt::OnBadChunk::kRecord) {
  register_encryption_filter();
  int rank = 0;
  MPI_CHECK(MPI_Comm_rank(comm, &rank));
  secret_.key_id = crypt::key_id_bytes(key.id);
  // Rank 0 draws the file's data key and id; the data key leaves it only wrapped (each rank
  // unwraps it in the filter), never in the clear over the network.
  unsigned char shared[security::kWrappedKeyBytes + sizeof(security::FileId)] = {};
  agreed(comm, [&] {
    if (rank != 0) return;
    security::Key data_key{};
    security::random_bytes(data_key);
    const security::WrappedKey wrapped = security::wrap_key(key, data_key);
    OPENSSL_cleanse(data_key.data(), data_key.size());
    std::memcpy(shared, wrapped.data(), wrapped.size());
    security::random_bytes(std::span(shared + wrapped.size(), sizeof(security::FileId)));
  });
  MPI_CHECK(MPI_Bcast(shared, sizeof shared, MPI_BYTE, 0, comm));
  std::memcpy(secret_.wrapped.data(), shared, secret_.wrapped.size());
  std::memcpy(secret_.file.data(), shared + secret_.wrapped.size(), secret_.file.size());
  hints_ = gather_chunk_hints(comm, datasets, pieces);
}

void CheckpointEncryption::add_attributes(CheckpointAttributes& attributes) const {
  attributes.numbers["format_version"] = kEncryptedFormatVersion;
  attributes.texts[kEncryptionAttribute] = kCipherName;
  attributes.texts[kEncryptionKeyAttribute] = scope_.key_id();
}

H5Handle CheckpointEncryption::creation_properties(const std::string& name, const Shape& shape) const {
  H5Handle dcpl(H5Pcreate(H5P_DATASET_CREATE), H5Pclose);
  const auto hint = hints_.find(name);
  const std::vector<hsize_t> dims = chunk_dims(shape, hint == hints_.end() ? ChunkHint{} : hint->second);
  if (dims.empty()) return dcpl;  // no elements: nothing to encrypt (contiguous)
  size_t chunk_bytes = sizeof(float);
  for (const hsize_t d : dims) chunk_bytes *= d;
  const std::vector<unsigned> cd = crypt::filter_parameters(secret_, name, chunk_bytes);
  TRIDENT_CHECK(H5Pset_chunk(dcpl.get(), static_cast<int>(dims.size()), dims.data()) >= 0 &&
                    H5Pset_filter(dcpl.get(), crypt::kFilterId, H5Z_FLAG_MANDATORY, cd.size(), cd.data()) >= 0,
                "checkpoint: cannot set up the encryption of ", name);
  return dcpl;
}

void CheckpointEncryption::check_written(const std::string& tmp, const std::string& name) const {
  const std::vector<crypt::ChunkFailure> failed = scope_.take_failures();
  require_io(failed.empty(), "checkpoint: encrypting ", name, " for ", tmp, " failed: a chunk ",
             failed.empty() ? "" : failed.front().why, "; the previous checkpoint is untouched");
}

CheckpointTagCheck::CheckpointTagCheck(const security::MasterKey& key) : scope_(key, crypt::OnBadChunk::kRecord) {
  register_encryption_filter();
  (void)scope_.take_failures();  // none of an earlier reader's
}

void CheckpointTagCheck::agree(hid_t file, const std::string& path, const std::string& name, MPI_Comm comm) const {
  const std::vector<crypt::ChunkFailure> failed = scope_.take_failures();
  int any = failed.empty() ? 0 : 1;
  MPI_CHECK(MPI_Allreduce(MPI_IN_PLACE, &any, 1, MPI_INT, MPI_MAX, comm));
  if (!any) return;
  std::string where;
  {
    H5Handle ds(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);  // collective, as every rank is here
    if (ds.get() >= 0) where = locate_chunk(ds.get(), path, failed);
  }
  agreed(comm, [&] {
    TRIDENT_CONFIG_CHECK(failed.empty(), "checkpoint ", path, ": tensor ", name, ": ",
                         where.empty() ? "a chunk" : where, " ", failed.front().why,
                         "; resume from an older checkpoint");
  });
}

std::unique_ptr<CheckpointTagCheck> tag_check_for(const CheckpointAttributes& attributes, const std::string& path,
                                                  const security::MasterKey* key) {
  if (!check_checkpoint_key(attributes, path, key)) return nullptr;
  return std::make_unique<CheckpointTagCheck>(*key);
}

}  // namespace detail

bool check_checkpoint_key(const CheckpointAttributes& attributes, const std::string& path,
                          const security::MasterKey* key) {
  const auto cipher = attributes.texts.find(detail::kEncryptionAttribute);
  if (cipher == attributes.texts.end()) return false;  // plain: read with or without a key
  TRIDENT_CONFIG_CHECK(cipher->second == detail::kCipherName, "checkpoint ", path, " is encrypted with ",
                       cipher->second, ", which this trident does not read (upgrade trident)");
  const auto id = attributes.texts.find(detail::kEncryptionKeyAttribute);
  TRIDENT_CONFIG_CHECK(id != attributes.texts.end(), "checkpoint ", path,
                       " is encrypted but names no key id (corrupt?)");
  if (!key)
    throw CheckpointKeyError(trident::detail::concat("checkpoint ", path, " is encrypted (key id ", id->second,
                                                     "): a key is needed: give its key file as security.key_file "
                                                     "(--key-file for inspect and convert)"));
  if (key->id != id->second)
    throw CheckpointKeyError(
        trident::detail::concat("checkpoint ", path, ": the key does not match: it was encrypted with key id ",
                                id->second, ", the key given (security.key_file) has key id ", key->id));
  return true;
}

struct CheckpointDecryption::Scope {
  explicit Scope(const security::MasterKey& key) : keys(key, crypt::OnBadChunk::kRecord) {}
  crypt::FilterKeyScope keys;
};

CheckpointDecryption::CheckpointDecryption(const std::string& path, const CheckpointAttributes& attributes,
                                           const security::MasterKey* key)
    : path_(path) {
  if (!check_checkpoint_key(attributes, path, key)) return;
  detail::register_encryption_filter();
  scope_ = std::make_unique<Scope>(*key);
  (void)scope_->keys.take_failures();
}

CheckpointDecryption::~CheckpointDecryption() = default;

void CheckpointDecryption::check(const std::string& dataset) const {
  if (!scope_) return;
  const std::vector<crypt::ChunkFailure> failed = scope_->keys.take_failures();
  TRIDENT_CONFIG_CHECK(failed.empty(), "checkpoint ", path_, ": tensor ", dataset, ": a chunk ",
                       failed.empty() ? "" : failed.front().why);
}

}  // namespace trident::io
