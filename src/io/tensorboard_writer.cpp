// TensorBoard event files: CRC-32C, TFRecord framing, the Event protobufs, the writer.
#include "trident/core/file_policy.hpp"
#include "trident/io/tensorboard_writer.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <ctime>
#include <filesystem>

namespace trident::io {

namespace {

// table[b]: the CRC register after shifting byte b through it, eight bits at a time.
constexpr std::array<uint32_t, 256> make_crc32c_table() {
  constexpr uint32_t kPolynomial = 0x82F63B78;  // 0x1EDC6F41 bit-reversed
  std::array<uint32_t, 256> table{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc & 1) ? (crc >> 1) ^ kPolynomial : crc >> 1;
    table[b] = crc;
  }
  return table;
}
constexpr std::array<uint32_t, 256> kCrc32cTable = make_crc32c_table();

// Little-endian bytes of value, whatever the host's order.
void put_fixed(std::string& out, uint64_t value, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(char((value >> (8 * i)) & 0xFF));
}

void put_tag(std::string& out, int field, int wire_type) {
  put_varint(out, (uint64_t(field) << 3) | uint64_t(wire_type));
}

double now_seconds() {
  using namespace std::chrono;
  return duration<double>(system_clock::now().time_since_epoch()).count();
}

// Event field numbers (event.proto) and the rest the events here use.
constexpr int kEventWallTime = 1, kEventStep = 2, kEventFileVersion = 3, kEventSummary = 5, kEventSessionLog = 7;
constexpr int kSummaryValue = 1;
constexpr int kValueTag = 1, kValueSimple = 2, kValueTensor = 8, kValueMetadata = 9;
constexpr int kMetadataPluginData = 1, kPluginName = 1;
constexpr int kTensorDtype = 1, kTensorShape = 2, kTensorStringVal = 8;
constexpr uint64_t kDtString = 7;  // types.proto DT_STRING
constexpr int kSessionLogStatus = 1;
constexpr uint64_t kSessionStart = 1;  // SessionLog.START

ProtoEncoder event_header(double wall_time, int64_t step) {
  ProtoEncoder event;
  event.f64(kEventWallTime, wall_time).varint(kEventStep, uint64_t(step));
  return event;
}

}  // namespace

uint32_t crc32c(std::string_view data) {
  uint32_t crc = 0xFFFFFFFF;
  for (const char c : data) crc = kCrc32cTable[(crc ^ uint8_t(c)) & 0xFF] ^ (crc >> 8);
  return crc ^ 0xFFFFFFFF;
}

uint32_t masked_crc32c(std::string_view data) {
  const uint32_t crc = crc32c(data);
  return ((crc >> 15) | (crc << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string length;
  put_fixed(length, data.size(), 8);
  std::string out = length;
  put_fixed(out, masked_crc32c(length), 4);
  out.append(data);
  put_fixed(out, masked_crc32c(data), 4);
  return out;
}

void put_varint(std::string& out, uint64_t value) {
  while (value >= 0x80) {
    out.push_back(char((value & 0x7F) | 0x80));
    value >>= 7;
  }
  out.push_back(char(value));
}

ProtoEncoder& ProtoEncoder::varint(int field, uint64_t value) {
  put_tag(out_, field, 0);
  put_varint(out_, value);
  return *this;
}

ProtoEncoder& ProtoEncoder::f64(int field, double value) {
  uint64_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_tag(out_, field, 1);
  put_fixed(out_, bits, 8);
  return *this;
}

ProtoEncoder& ProtoEncoder::bytes(int field, std::string_view value) {
  put_tag(out_, field, 2);
  put_varint(out_, value.size());
  out_.append(value);
  return *this;
}

ProtoEncoder& ProtoEncoder::f32(int field, float value) {
  uint32_t bits;
  std::memcpy(&bits, &value, sizeof bits);
  put_tag(out_, field, 5);
  put_fixed(out_, bits, 4);
  return *this;
}

std::string event_file_version(double wall_time) {
  return ProtoEncoder().f64(kEventWallTime, wall_time).bytes(kEventFileVersion, "brain.Event:2").str();
}

std::string event_scalars(double wall_time, int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  ProtoEncoder summary;
  for (const auto& [tag, value] : values)
    summary.bytes(kSummaryValue, ProtoEncoder().bytes(kValueTag, tag).f32(kValueSimple, float(value)).str());
  return event_header(wall_time, step).bytes(kEventSummary, summary.str()).str();
}

std::string event_text(double wall_time, int64_t step, const std::string& tag, const std::string& markdown) {
  const std::string plugin = ProtoEncoder().bytes(kPluginName, "text").str();
  const std::string metadata = ProtoEncoder().bytes(kMetadataPluginData, plugin).str();
  // A scalar string tensor: an empty tensor_shape (no dimensions) and one string_val.
  const std::string tensor =
      ProtoEncoder().varint(kTensorDtype, kDtString).bytes(kTensorShape, "").bytes(kTensorStringVal, markdown).str();
  const std::string value =
      ProtoEncoder().bytes(kValueTag, tag).bytes(kValueTensor, tensor).bytes(kValueMetadata, metadata).str();
  return event_header(wall_time, step).bytes(kEventSummary, ProtoEncoder().bytes(kSummaryValue, value).str()).str();
}

std::string event_session_start(double wall_time, int64_t step) {
  const std::string session_log = ProtoEncoder().varint(kSessionLogStatus, kSessionStart).str();
  return event_header(wall_time, step).bytes(kEventSessionLog, session_log).str();
}

TensorBoardWriter::TensorBoardWriter(const std::string& dir, const Logger& log) : log_(log) {
  std::error_code ec;
  make_directories(dir, ec);
  if (ec) {
    path_ = dir;
    fail("cannot create " + dir, ec.value());
    return;
  }
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string base =
      detail::concat(dir, "/events.out.tfevents.", static_cast<long long>(std::time(nullptr)), ".", host);
  // A second start within the same second (a quick resume) gets base.2: it sorts after base,
  // and TensorBoard reads a directory's files in name order.
  for (int n = 1;; ++n) {
    path_ = n == 1 ? base : detail::concat(base, ".", n);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ >= 0) {
      secure_file(fd_, path_);
      break;
    }
    if (errno != EEXIST) {
      fail("cannot create " + path_, errno);
      return;
    }
  }
  queue(event_file_version(now_seconds()));
}

TensorBoardWriter::~TensorBoardWriter() {
  flush();
  if (fd_ >= 0) ::close(fd_);
}

void TensorBoardWriter::add_scalar(const std::string& tag, int64_t step, double value) {
  queue(event_scalars(now_seconds(), step, {{tag, value}}));
}

void TensorBoardWriter::add_scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values) {
  queue(event_scalars(now_seconds(), step, values));
}

void TensorBoardWriter::add_text(const std::string& tag, int64_t step, const std::string& markdown) {
  queue(event_text(now_seconds(), step, tag, markdown));
}

void TensorBoardWriter::add_session_start(int64_t step) { queue(event_session_start(now_seconds(), step)); }

void TensorBoardWriter::queue(const std::string& event) {
  if (!failed_) pending_ += tfrecord(event);
}

void TensorBoardWriter::flush() {
  if (failed_ || pending_.empty()) return;
  // write() puts the records in the page cache, where a reader (TensorBoard polls the file)
  // sees them at once; no fsync per step (a power cut may lose the last ones, as for metrics).
  size_t done = 0;
  while (done < pending_.size()) {
    const ssize_t n = ::write(fd_, pending_.data() + done, pending_.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int error = n < 0 ? errno : ENOSPC;
      if (done > 0) (void)::ftruncate(fd_, off_t(size_));  // whole records only
      fail("cannot write " + path_, error);
      return;
    }
    done += size_t(n);
  }
  size_ += int64_t(pending_.size());
  pending_.clear();
}

void TensorBoardWriter::fail(const std::string& what, int error) {
  failed_ = true;
  pending_.clear();
  log_.warn("TensorBoard events: ", what, ": ", std::strerror(error),
            "; this run writes no more events (training and metrics.jsonl go on)");
}

}  // namespace trident::io
