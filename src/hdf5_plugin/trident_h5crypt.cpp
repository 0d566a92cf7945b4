// libtrident_h5crypt.so: trident's AES-256-GCM checkpoint filter (src/io/encryption_filter.hpp)
// as an HDF5 plugin, so that h5py, h5dump and other HDF5 programs read encrypted checkpoints:
//   HDF5_PLUGIN_PATH=<build>/hdf5_plugins TRIDENT_KEY_FILE=<key file> python3 -c 'import h5py; ...'
// The master key comes from TRIDENT_KEY_FILE (read once, with trident's checks: a regular file of
// this user, mode 0600 or 0400). A chunk that fails its tag, or a key that does not match, fails
// the read (h5py: OSError "filter returned failure"), with the reason on stderr.
#include <H5PLextern.h>

#include <cstdlib>

#include "encryption_filter.hpp"

namespace {

std::optional<trident::security::MasterKey> key_from_environment(std::string* why) {
  const char* path = std::getenv("TRIDENT_KEY_FILE");
  if (!path || !*path) {
    *why = "an encrypted trident checkpoint: set TRIDENT_KEY_FILE to its key file (security.key_file)";
    return std::nullopt;
  }
  try {
    return trident::security::load_key_file(path);
  } catch (const std::exception& e) {
    *why = std::string("TRIDENT_KEY_FILE: ") + e.what();
    return std::nullopt;
  }
}

}  // namespace

extern "C" {

__attribute__((visibility("default"))) H5PL_type_t H5PLget_plugin_type(void) { return H5PL_TYPE_FILTER; }

__attribute__((visibility("default"))) const void* H5PLget_plugin_info(void) {
  trident::io::crypt::set_fallback_key_source(key_from_environment);
  return trident::io::crypt::filter_class();
}

}  // extern "C"
