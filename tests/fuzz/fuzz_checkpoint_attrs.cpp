// A checkpoint's root attributes (format version, step, tokens, seed, sampler position, loss
// scale, layout, config text) and its tensors' shapes, types and checksums, driven by the input:
// a real checkpoint is written once with io::write_checkpoint, then for every input a copy of it
// is edited with the HDF5 API as the input's records say (set, replace or delete an attribute;
// replace a tensor, its checksum, or put a group in its place), and read back the three ways
// trident reads checkpoints: listing + validation of the training state (+ the config text's
// [model] section, as model.init_from reads it), a resume's read of the model's tensors, and
// `trident inspect`'s read of every tensor. The HDF5 bytes themselves are not fuzzed (libhdf5
// is not trident's code): only what a well-formed file can hold.
//
// Input: records until the input ends; each starts with an opcode byte (see apply_record).
#include <hdf5.h>
#include <mpi.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "fuzz_target.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/io/hdf5_file.hpp"
#include "trident/cli/config_parser.hpp"

// MPI and HDF5 keep allocations until exit by design (and MPI_Finalize unloads the components
// that made them, so no suppression can name them at exit): the leaks looked for are those of
// one input, which libFuzzer checks input by input, not at exit.
extern "C" const char* __asan_default_options() { return "leak_check_at_exit=0"; }
extern "C" const char* __lsan_default_suppressions() {
  return "leak:libmpi\nleak:libopen-pal\nleak:libopen-rte\nleak:libhwloc\nleak:libevent\nleak:libpmix\n"
         "leak:libhdf5\nleak:mca_\n";
}

namespace {

using trident::Shape;
using trident::io::H5Handle;

// The tensors of the baseline checkpoint, as a model of hidden 3 would expect them.
const std::map<std::string, Shape>& model_datasets() {
  static const std::map<std::string, Shape> datasets = {{"/model/b", Shape{3}}, {"/model/w", Shape{4, 3}}};
  return datasets;
}

constexpr const char* kBaselineConfig =
    "[model]\narch = llama\nlayers = 2\nhidden = 8\nheads = 2\nkv_heads = 1\nffn_hidden = 16\nvocab = 32\n"
    "seq_len = 16\ntie_embeddings = false\nnorm_eps = 1e-5\nrope_theta = 10000\n[train]\nseed = 7\n";

struct Paths {
  std::string base, work;
  ~Paths() {
    if (!base.empty()) std::remove(base.c_str());
    if (!work.empty()) std::remove(work.c_str());
  }
};

Paths& paths() {
  static Paths p;
  return p;
}

// One piece per tensor: the whole of it, on this single rank.
std::vector<trident::io::ShardPiece> whole_pieces(bool write) {
  std::vector<trident::io::ShardPiece> pieces;
  for (const auto& [name, shape] : model_datasets()) {
    trident::io::ShardPiece p;
    p.dataset = name;
    p.local_cols = shape.ndim() == 2 ? shape[1] : shape[0];
    p.stored_rows = shape.ndim() == 2 ? shape[0] : 1;
    p.end = shape.numel();
    p.data = trident::Tensor::zeros(Shape{shape.numel()}, trident::DType::kF32);
    for (int64_t i = 0; i < shape.numel(); ++i) p.data.data<float>()[i] = 0.25f * float(i) - 1.0f;
    p.write = write;
    pieces.push_back(std::move(p));
  }
  return pieces;
}

// MPI (the checkpoint reader is collective; here over MPI_COMM_SELF) and the baseline file.
void setup() {
  static const bool done = [] {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) {
      setenv("OMPI_ALLOW_RUN_AS_ROOT", "1", 0);
      setenv("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1", 0);
      MPI_Init(nullptr, nullptr);
      std::atexit([] {
        int finalized = 0;
        MPI_Finalized(&finalized);
        if (!finalized) MPI_Finalize();
      });
    }
    const std::string dir = std::filesystem::is_directory("/dev/shm") ? "/dev/shm" : "/tmp";
    const std::string stem = dir + "/trident-fuzz-ckpt-" + std::to_string(::getpid());
    paths().base = stem + "-base.h5";
    paths().work = stem + ".h5";
    trident::io::CheckpointAttributes attrs;
    attrs.numbers = {{"step", 12},         {"tokens", 12 * 64}, {"sampler_step", 12}, {"seed", 7},
                     {"loss_scale", 1024}, {"layout_dp", 1},    {"layout_tp", 1},     {"layout_pp", 1},
                     {"layout_zero", 0}};
    attrs.texts = {{"config", kBaselineConfig}};
    trident::io::write_checkpoint(paths().base, MPI_COMM_SELF, model_datasets(), whole_pieces(true), attrs,
                                   /*key=*/nullptr);
    return true;
  }();
  (void)done;
}

// The input, consumed front to back; past its end every read gives zeros.
class Input {
 public:
  Input(const uint8_t* data, size_t size) : p_(data), n_(size) {}
  bool empty() const { return n_ == 0; }
  uint8_t byte() {
    if (n_ == 0) return 0;
    --n_;
    return *p_++;
  }
  uint64_t bytes_le(int count) {
    uint64_t v = 0;
    for (int i = 0; i < count; ++i) v |= uint64_t(byte()) << (8 * i);
    return v;
  }
  std::string text(size_t length) {
    length = std::min(length, n_);
    std::string s(reinterpret_cast<const char*>(p_), length);
    p_ += length;
    n_ -= length;
    return s;
  }
  std::string rest() { return text(n_); }

 private:
  const uint8_t* p_;
  size_t n_;
};

// An attribute name: one trident reads or writes, or one from the input (possibly long).
std::string attribute_name(Input& in) {
  static const char* const kNames[] = {"format_version", "step",      "tokens",    "sampler_step",
                                       "seed",           "loss_scale", "layout_dp", "layout_tp",
                                       "layout_pp",      "layout_zero", "config",   "comm_compression",
                                       "converted_from"};
  constexpr size_t kCount = sizeof kNames / sizeof kNames[0];
  const uint8_t pick = in.byte();
  if (pick < 240) return kNames[pick % kCount];
  return in.text(pick == 255 ? 300 : size_t(in.byte() % 40));
}

const char* dataset_name(uint8_t pick) {
  static const char* const kNames[] = {"/model/w", "/model/b", "/model/extra", "/optim/exp_avg/w", "/x"};
  return kNames[pick % 5];
}

// A dataspace: scalar, one element, a few elements, more dimensions, or null.
H5Handle dataspace(Input& in) {
  const uint8_t kind = in.byte();
  switch (kind % 5) {
    case 0: return H5Handle(H5Screate(H5S_SCALAR), H5Sclose);
    case 1: {
      const hsize_t one[1] = {1};
      return H5Handle(H5Screate_simple(1, one, nullptr), H5Sclose);
    }
    case 2: {
      const hsize_t n[1] = {hsize_t(kind / 5 % 6)};
      return H5Handle(H5Screate_simple(1, n, nullptr), H5Sclose);
    }
    case 3: {
      const hsize_t n[3] = {1, hsize_t(kind / 5 % 3), 1};
      return H5Handle(H5Screate_simple(3, n, nullptr), H5Sclose);
    }
    default: return H5Handle(H5Screate(H5S_NULL), H5Sclose);
  }
}

// A numeric file type and the native type whose bytes the input gives.
struct NumberType {
  hid_t file, memory;
  size_t size;
};
NumberType number_type(uint8_t pick) {
  static const NumberType kTypes[] = {
      {H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, 8}, {H5T_IEEE_F32LE, H5T_NATIVE_FLOAT, 4}, {H5T_IEEE_F64BE, H5T_NATIVE_DOUBLE, 8},
      {H5T_STD_I64LE, H5T_NATIVE_INT64, 8},   {H5T_STD_U64LE, H5T_NATIVE_UINT64, 8}, {H5T_STD_I32BE, H5T_NATIVE_INT32, 4},
      {H5T_STD_U8LE, H5T_NATIVE_UINT8, 1},    {H5T_STD_I16LE, H5T_NATIVE_INT16, 2}};
  return kTypes[pick % 8];
}

void delete_attribute(hid_t object, const std::string& name) {
  if (!name.empty() && H5Aexists(object, name.c_str()) > 0) H5Adelete(object, name.c_str());
}

// Writes an attribute of the given type and space with `values` repeated to fill it.
void put_attribute(hid_t object, const std::string& name, hid_t file_type, hid_t memory_type, hid_t space,
                   const void* value, size_t value_size) {
  delete_attribute(object, name);
  H5Handle attr(H5Acreate2(object, name.c_str(), file_type, space, H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  if (attr.get() < 0) return;
  const hssize_t points = std::max<hssize_t>(H5Sget_simple_extent_npoints(space), 1);
  std::vector<unsigned char> buffer(size_t(points) * value_size);
  for (hssize_t i = 0; i < points; ++i) std::memcpy(buffer.data() + size_t(i) * value_size, value, value_size);
  H5Awrite(attr.get(), memory_type, buffer.data());
}

// A number attribute of any common type: the input gives its raw bytes (NaN, infinities,
// negative and huge values included).
void put_number(hid_t object, const std::string& name, Input& in) {
  const NumberType type = number_type(in.byte());
  H5Handle space = dataspace(in);
  const uint64_t raw = in.bytes_le(int(type.size));
  put_attribute(object, name, type.file, type.memory, space.get(), &raw, type.size);
}

// A string attribute, fixed-length or variable-length, ASCII or UTF-8.
void put_text(hid_t object, const std::string& name, Input& in) {
  const uint8_t flags = in.byte();
  H5Handle space = dataspace(in);
  size_t length = in.byte();
  if (flags & 0x80) length |= size_t(in.byte()) << 8;
  const std::string text = in.text(length);
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_cset(type.get(), flags & 1 ? H5T_CSET_UTF8 : H5T_CSET_ASCII);
  if (flags & 2) {
    H5Tset_size(type.get(), H5T_VARIABLE);
    const char* pointer = text.c_str();
    put_attribute(object, name, type.get(), type.get(), space.get(), &pointer, sizeof pointer);
  } else {
    H5Tset_size(type.get(), std::max<size_t>(text.size(), 1));
    H5Tset_strpad(type.get(), flags & 4 ? H5T_STR_NULLPAD : H5T_STR_NULLTERM);
    std::string padded = text;
    padded.resize(std::max<size_t>(text.size(), 1), '\0');
    put_attribute(object, name, type.get(), type.get(), space.get(), padded.data(), padded.size());
  }
}

// An attribute of a type that is neither a number nor text: compound, array, enum, opaque.
void put_odd(hid_t object, const std::string& name, Input& in) {
  const uint8_t kind = in.byte();
  H5Handle space = dataspace(in);
  unsigned char value[16] = {};
  for (unsigned char& b : value) b = in.byte();
  H5Handle type;
  switch (kind % 4) {
    case 0: {
      type = H5Handle(H5Tcreate(H5T_COMPOUND, 16), H5Tclose);
      H5Tinsert(type.get(), "a", 0, H5T_NATIVE_DOUBLE);
      H5Tinsert(type.get(), "b", 8, H5T_NATIVE_INT64);
      break;
    }
    case 1: {
      const hsize_t dims[1] = {2};
      type = H5Handle(H5Tarray_create2(H5T_NATIVE_DOUBLE, 1, dims), H5Tclose);
      break;
    }
    case 2: {
      type = H5Handle(H5Tenum_create(H5T_NATIVE_INT), H5Tclose);
      int zero = 0, one = 1;
      H5Tenum_insert(type.get(), "zero", &zero);
      H5Tenum_insert(type.get(), "one", &one);
      std::memset(value, 0, sizeof value);
      value[0] = in.byte() & 1;
      break;
    }
    default: {
      type = H5Handle(H5Tcreate(H5T_OPAQUE, 8), H5Tclose);
      H5Tset_tag(type.get(), "fuzz");
    }
  }
  put_attribute(object, name, type.get(), type.get(), space.get(), value, H5Tget_size(type.get()));
}

// A tensor's checksum attribute replaced: a number of any type and space, or text, or none.
void put_checksum(hid_t dataset, Input& in) {
  const uint8_t kind = in.byte();
  if (kind % 3 == 0) delete_attribute(dataset, "checksum");
  else if (kind % 3 == 1) put_number(dataset, "checksum", in);
  else put_text(dataset, "checksum", in);
}

// Replaces a tensor (or makes a new one): rank 0 to 3, small or huge dimensions, a float,
// integer or string type, written with a pattern or left unwritten (fill values); the old
// checksum kept, replaced or dropped.
void put_dataset(hid_t file, Input& in) {
  const std::string name = dataset_name(in.byte());
  const uint8_t shape_kind = in.byte();
  const int rank = shape_kind % 4;
  hsize_t dims[3] = {1, 1, 1};
  hsize_t elements = 1;
  for (int d = 0; d < rank; ++d) {
    const uint8_t b = in.byte();
    dims[d] = shape_kind & 0x80 ? hsize_t(1) << (b % 50) : hsize_t(b % 9);
    elements *= dims[d];
  }
  const uint8_t type_kind = in.byte();
  uint64_t checksum = 0;
  bool had_checksum = false;
  if (H5Lexists(file, name.c_str(), H5P_DEFAULT) > 0) {
    H5Handle old(H5Dopen2(file, name.c_str(), H5P_DEFAULT), H5Dclose);
    if (old.get() >= 0 && H5Aexists(old.get(), "checksum") > 0) {
      H5Handle attr(H5Aopen(old.get(), "checksum", H5P_DEFAULT), H5Aclose);
      H5Handle space(H5Aget_space(attr.get()), H5Sclose);
      had_checksum = H5Sget_simple_extent_npoints(space.get()) == 1 &&
                     H5Aread(attr.get(), H5T_NATIVE_UINT64, &checksum) >= 0;
    }
    H5Ldelete(file, name.c_str(), H5P_DEFAULT);
  }
  H5Handle space(rank == 0 ? H5Screate(H5S_SCALAR) : H5Screate_simple(rank, dims, nullptr), H5Sclose);
  if (space.get() < 0) return;
  hid_t type = H5T_IEEE_F32LE;
  H5Handle string_type;
  switch (type_kind % 5) {
    case 1: type = H5T_IEEE_F64BE; break;
    case 2: type = H5T_STD_I32LE; break;
    case 3: type = H5T_STD_U8LE; break;
    case 4:
      string_type = H5Handle(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(string_type.get(), 4);
      type = string_type.get();
      break;
    default: break;
  }
  H5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
  H5Pset_create_intermediate_group(lcpl.get(), 1);
  H5Handle ds(H5Dcreate2(file, name.c_str(), type, space.get(), lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Dclose);
  if (ds.get() < 0) return;
  if (elements <= 4096 && !(type_kind & 0x80)) {
    std::vector<float> values(elements);
    const float scale = float(in.byte()) * 0.125f;
    for (hsize_t i = 0; i < elements; ++i) values[i] = scale * float(i) - 1.0f;
    if (type_kind % 5 == 4) {
      std::vector<char> text(elements * 4, 'x');
      H5Dwrite(ds.get(), string_type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, text.data());
    } else {
      H5Dwrite(ds.get(), H5T_NATIVE_FLOAT, H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data());
    }
  }
  if (type_kind & 0x40) {
    put_checksum(ds.get(), in);
  } else if (had_checksum) {
    H5Handle scalar(H5Screate(H5S_SCALAR), H5Sclose);
    put_attribute(ds.get(), "checksum", H5T_STD_U64LE, H5T_NATIVE_UINT64, scalar.get(), &checksum, sizeof checksum);
  }
}

// One record of the input applied to the open file.
void apply_record(hid_t file, Input& in) {
  switch (in.byte() % 8) {
    case 0: {  // a number attribute
      const std::string name = attribute_name(in);
      put_number(file, name, in);
      break;
    }
    case 1: {  // a text attribute
      const std::string name = attribute_name(in);
      put_text(file, name, in);
      break;
    }
    case 2: delete_attribute(file, attribute_name(in)); break;
    case 3: {  // an attribute of another type class
      const std::string name = attribute_name(in);
      put_odd(file, name, in);
      break;
    }
    case 4: put_dataset(file, in); break;
    case 5: {  // an existing tensor's checksum
      H5Handle ds(H5Dopen2(file, dataset_name(in.byte()), H5P_DEFAULT), H5Dclose);
      if (ds.get() >= 0) put_checksum(ds.get(), in);
      break;
    }
    case 6: {  // a group where a tensor was
      const char* name = dataset_name(in.byte());
      if (H5Lexists(file, name, H5P_DEFAULT) > 0) H5Ldelete(file, name, H5P_DEFAULT);
      H5Handle lcpl(H5Pcreate(H5P_LINK_CREATE), H5Pclose);
      H5Pset_create_intermediate_group(lcpl.get(), 1);
      H5Handle group(H5Gcreate2(file, name, lcpl.get(), H5P_DEFAULT, H5P_DEFAULT), H5Gclose);
      break;
    }
    default: {  // the config text: the rest of the input
      const std::string text = in.rest();
      H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
      H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
      H5Tset_size(type.get(), std::max<size_t>(text.size(), 1));
      std::string padded = text;
      padded.resize(std::max<size_t>(text.size(), 1), '\0');
      put_attribute(file, "config", type.get(), type.get(), space.get(), padded.data(), padded.size());
    }
  }
}

// As trident::fuzz::expect_clean_rejection: trident's own errors (ConfigError is an Error) are
// the right answer, any other exception escapes as a finding. With TRIDENT_FUZZ_VERBOSE set,
// each read's outcome goes to stderr (to see what a corpus input reaches).
template <typename F>
void read_as(const char* reader, F&& f) {
  static const bool verbose = std::getenv("TRIDENT_FUZZ_VERBOSE") != nullptr;
  try {
    f();
    if (verbose) std::fprintf(stderr, "  %s: read\n", reader);
  } catch (const trident::Error& e) {
    if (verbose) std::fprintf(stderr, "  %s: %s\n", reader, e.what());
  }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  setup();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  namespace io = trident::io;
  setup();
  const std::string& path = paths().work;
  std::filesystem::copy_file(paths().base, path, std::filesystem::copy_options::overwrite_existing);
  {
    H5Handle file(H5Fopen(path.c_str(), H5F_ACC_RDWR, H5P_DEFAULT), H5Fclose);
    if (file.get() < 0) std::abort();  // the baseline must open: a harness failure
    Input in(data, size);
    for (int records = 0; !in.empty() && records < 64; ++records) apply_record(file.get(), in);
    // Any edit breaks the root attributes' checksum, which the readers check first: inputs of
    // even length drop it, as a checkpoint from before it existed has none, so the validation
    // behind it is fuzzed too.
    if (size % 2 == 0) delete_attribute(file.get(), "attributes_checksum");
  }
  // As a resume, `trident inspect` and model.init_from / `trident convert` see it.
  read_as("listing", [&] {
    const io::CheckpointListing listing = io::list_checkpoint(path);
    const io::CheckpointState state = io::checkpoint_state(listing.attributes, path);
    if (!state.config.empty()) (void)trident::cli::model_config_from_ini(state.config);
  });
  read_as("resume", [&] {
    std::vector<io::ShardPiece> pieces = whole_pieces(false);
    const io::CheckpointAttributes attributes =
        io::read_checkpoint(path, MPI_COMM_SELF, model_datasets(), pieces, /*key=*/nullptr);
    (void)io::checkpoint_state(attributes, path);
  });
  read_as("inspect", [&] {
    const io::CheckpointListing listing = io::list_checkpoint(path);
    int64_t elements = 0;
    for (const auto& [name, shape] : listing.datasets) elements += shape.numel();
    if (elements > (int64_t(1) << 20)) return;  // inspect reads it all: keep the harness's memory small
    std::vector<io::ShardPiece> none;
    (void)io::read_checkpoint(path, MPI_COMM_SELF, listing.datasets, none, /*key=*/nullptr);
  });
  return 0;
}
