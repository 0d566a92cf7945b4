// Checkpoint root attributes: written as numbers and texts, read back whatever type h5py
// stored them as, and validated (format version, the training state a resume uses).
#include <cmath>
#include <iomanip>

#include "checkpoint_hdf5.hpp"

namespace trident::io {

namespace detail {

void write_string_attribute(hid_t file, const std::string& name, const std::string& text) {
  H5Handle type(H5Tcopy(H5T_C_S1), H5Tclose);
  H5Tset_size(type.get(), std::max<size_t>(text.size(), 1));
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(file, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  TRIDENT_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), type.get(), text.empty() ? " " : text.data()) >= 0,
                "cannot write attribute ", name);
}

void write_attributes(hid_t file, const CheckpointAttributes& given) {
  CheckpointAttributes all = given;
  all.numbers.emplace("format_version", kPlainFormatVersion);  // an encrypted file's writer sets 2
  for (auto& [name, text] : all.texts)
    if (text.empty()) text = " ";  // as write_string_attribute stores an empty text (and reads it back)
  for (const auto& [name, v] : all.numbers) write_number_attribute(file, name, v);
  for (const auto& [name, text] : all.texts) write_string_attribute(file, name, text);
  const uint64_t checksum = attributes_checksum(all);
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(file, kAttributesChecksum, H5T_STD_U64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  TRIDENT_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), H5T_NATIVE_UINT64, &checksum) >= 0,
                "cannot write attribute ", kAttributesChecksum);
}

void write_number_attribute(hid_t file, const std::string& name, double value) {
  H5Handle space(H5Screate(H5S_SCALAR), H5Sclose);
  H5Handle attr(H5Acreate2(file, name.c_str(), H5T_IEEE_F64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT), H5Aclose);
  TRIDENT_CHECK(attr.get() >= 0 && H5Awrite(attr.get(), H5T_NATIVE_DOUBLE, &value) >= 0, "cannot write attribute ", name);
}

// The text of a string attribute, fixed-length (as trident writes it) or variable-length (as
// h5py writes it).
static std::string read_text_attribute(hid_t attr, hid_t type, const std::string& path, const std::string& name) {
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
uint64_t attributes_checksum(const CheckpointAttributes& attributes) {
  // FNV-1a over "name=value" of every attribute in name order (numbers by their 8 bytes).
  uint64_t h = 0xcbf29ce484222325ull;
  auto mix = [&h](const void* data, size_t n) {
    for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<const unsigned char*>(data)[i]) * 0x100000001b3ull;
  };
  for (const auto& [name, v] : attributes.numbers) {
    mix(name.data(), name.size());
    mix("=", 1);
    mix(&v, sizeof v);
  }
  for (const auto& [name, text] : attributes.texts) {
    mix(name.data(), name.size());
    mix(":", 1);
    mix(text.data(), text.size());
  }
  return h;
}

CheckpointAttributes read_attributes(hid_t file, const std::string& path) {
  CheckpointAttributes out;
  bool checked = false;
  uint64_t stored_checksum = 0;
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
    if (name == kAttributesChecksum) {  // a 64-bit integer: read as one, not as a double
      H5Handle type(H5Aget_type(attr.get()), H5Tclose);
      H5Handle space(H5Aget_space(attr.get()), H5Sclose);
      TRIDENT_CONFIG_CHECK(H5Tget_class(type.get()) == H5T_INTEGER && H5Sget_simple_extent_npoints(space.get()) == 1 &&
                               H5Aread(attr.get(), H5T_NATIVE_UINT64, &stored_checksum) >= 0,
                           "checkpoint ", path, ": its attribute ", kAttributesChecksum, " is not a checksum (corrupt?)");
      checked = true;
      continue;
    }
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
  // Checkpoints written before the checksum have none: read as they are. A newer format's may be
  // computed otherwise: its version is what the reader reports (checkpoint_format_version).
  const auto version = out.numbers.find("format_version");
  const bool known = version != out.numbers.end() && version->second <= kCheckpointFormatVersion;
  TRIDENT_CONFIG_CHECK(!checked || !known || attributes_checksum(out) == stored_checksum, "checkpoint ", path,
                       ": its root attributes (step, data position, configuration, ...) fail their checksum: the "
                       "file is corrupt; resume from an older checkpoint");
  return out;
}

}  // namespace detail

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
  if (has("elapsed_s")) {
    s.elapsed_s = attributes.numbers.at("elapsed_s");
    TRIDENT_CONFIG_CHECK(std::isfinite(s.elapsed_s) && s.elapsed_s >= 0, "checkpoint ", path, ": root attribute ",
                         "elapsed_s = ", s.elapsed_s, " is not a duration (corrupt?)");
  }
  if (const auto config = attributes.texts.find("config"); config != attributes.texts.end()) s.config = config->second;
  for (const auto& [name, value] : attributes.numbers) {
    if (name.rfind("privacy_", 0) != 0) continue;
    TRIDENT_CONFIG_CHECK(std::isfinite(value) && value >= 0, "checkpoint ", path, ": root attribute ", name, " = ",
                         value, " is not a non-negative number (corrupt?)");
    s.privacy[name] = value;
  }
  for (const auto& [name, value] : attributes.numbers)
    if (name.rfind("data_", 0) == 0) s.data[name] = whole_attribute(attributes, path, name, 0, kMaxCount);
  if (const auto mix = attributes.texts.find("data_mix"); mix != attributes.texts.end()) s.data_mix = mix->second;
  return s;
}

}  // namespace trident::io
