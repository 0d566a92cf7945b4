// `trident inspect CHECKPOINT.h5 [--key-file PATH]`: attributes, tensors (shape, dtype), and an
// integrity check that recomputes every tensor's checksum and compares it with the one stored at
// write time (an encrypted checkpoint's listing needs no key; its check does: exit 2 without).
#include <cstdio>
#include <optional>
#include <string>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/dist/mpi_session.hpp"
#include "trident/io/checkpoint_file.hpp"
#include "trident/security/crypto.hpp"

namespace trident::cli {

namespace {
// The key of `--key-file PATH` (or --key-file=PATH), the only option after the file; none: nullopt.
std::optional<security::MasterKey> key_option(int argc, char** argv) {
  std::optional<security::MasterKey> key;
  for (int i = 2; i < argc; ++i) {
    const std::string arg = argv[i];
    std::string file;
    if (arg == "--key-file" && i + 1 < argc) file = argv[++i];
    else if (arg.rfind("--key-file=", 0) == 0) file = arg.substr(11);
    else throw ConfigError("unknown option " + arg + " (usage: trident inspect CHECKPOINT.h5 [--key-file PATH])");
    key = security::load_key_file(file);
  }
  return key;
}
}  // namespace

int inspect_checkpoint(const std::string& path, int argc, char** argv) {
  dist::MpiSession mpi(&argc, &argv);
  try {
    const std::optional<security::MasterKey> key = key_option(argc, argv);
    const io::CheckpointListing listing = io::list_checkpoint(path);
    std::printf("checkpoint %s\n", path.c_str());
    for (const auto& [name, value] : listing.attributes.numbers) std::printf("  %-16s %.17g\n", name.c_str(), value);
    for (const auto& [name, text] : listing.attributes.texts)
      std::printf("  %-16s <%zu bytes of text>\n", name.c_str(), text.size());
    int64_t elements = 0;
    for (const auto& [name, shape] : listing.datasets) {
      std::printf("  %-56s %-14s fp32\n", name.c_str(), shape.str().c_str());
      elements += shape.numel();
    }
    std::printf("%zu tensors, %lld elements\n", listing.datasets.size(), static_cast<long long>(elements));
    std::vector<io::ShardPiece> none;  // read nothing: only the checksums are verified
    const bool encrypted = io::check_checkpoint_key(listing.attributes, path, key ? &*key : nullptr);
    io::read_checkpoint(path, MPI_COMM_SELF, listing.datasets, none, key ? &*key : nullptr);
    std::printf("integrity: every tensor matches its checksum%s\n",
                encrypted ? " and every chunk its authentication tag" : "");
    return 0;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident inspect: error: %s\n", e.what());
    return 2;
  }
}

}  // namespace trident::cli
