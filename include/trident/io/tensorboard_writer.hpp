// TensorBoard event files (docs/design.md section 6): a run's metrics as scalars and its
// configuration as text, written by hand in the TFRecord and Event protobuf formats.
//
// File:   records, each  uint64 length | uint32 masked_crc(length) | data | uint32 masked_crc(data)
//         (little-endian; masked_crc(x) = rotate_right(crc32c(x), 15) + 0xa282ead8).
// Record: an Event {wall_time double = 1, step int64 = 2, file_version string = 3,
//         summary Summary = 5, session_log SessionLog = 7}; the first is file_version
//         "brain.Event:2".
// Summary { repeated Value value = 1 }, Value { tag = 1, simple_value float = 2, tensor = 8,
//         metadata SummaryMetadata = 9 }; text: metadata.plugin_data.plugin_name = "text" and a
//         scalar DT_STRING tensor {dtype = 1, tensor_shape = 2, string_val = 8}.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "trident/core/log.hpp"

namespace trident::io {

// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), table-driven: no CPU-specific
// instructions. crc32c("123456789") = 0xE3069283.
uint32_t crc32c(std::string_view data);
// The CRC as TFRecord stores it (a CRC of data that holds CRCs is then not degenerate).
uint32_t masked_crc32c(std::string_view data);
// One TFRecord around data (16 + data.size() bytes).
std::string tfrecord(std::string_view data);

// The protobuf wire format, the four field kinds events use. Fields append in call order.
class ProtoEncoder {
 public:
  ProtoEncoder& varint(int field, uint64_t value);         // wire type 0: int64, enum, bool
  ProtoEncoder& f64(int field, double value);              // wire type 1: double
  ProtoEncoder& bytes(int field, std::string_view value);  // wire type 2: string, bytes, message
  ProtoEncoder& f32(int field, float value);               // wire type 5: float
  const std::string& str() const { return out_; }

 private:
  std::string out_;
};
// Appends value as a base-128 varint (7 bits a byte, least significant first, high bit = more).
void put_varint(std::string& out, uint64_t value);

// Serialized Event messages (no framing).
std::string event_file_version(double wall_time);
std::string event_scalars(double wall_time, int64_t step, const std::vector<std::pair<std::string, double>>& values);
std::string event_text(double wall_time, int64_t step, const std::string& tag, const std::string& markdown);
std::string event_session_start(double wall_time, int64_t step);

// One events file, opened new (an existing file is never written to), owned by one process.
// Events are queued and go out at flush(), in one write(): a reader sees them at once, and a
// write that fails part-way is cut back off, so the file holds whole records only. The first
// failure (disk full, I/O error) is logged once as a warning and ends the writing of events;
// training and metrics.jsonl are not affected.
class TensorBoardWriter {
 public:
  // Creates dir and <dir>/events.out.tfevents.<unix seconds>.<host> (.2, .3, ... appended when
  // taken), and queues the file_version record.
  TensorBoardWriter(const std::string& dir, const Logger& log);
  ~TensorBoardWriter();  // flushes
  TensorBoardWriter(const TensorBoardWriter&) = delete;
  TensorBoardWriter& operator=(const TensorBoardWriter&) = delete;

  void add_scalar(const std::string& tag, int64_t step, double value);
  // Several scalars of one step, in one event.
  void add_scalars(int64_t step, const std::vector<std::pair<std::string, double>>& values);
  // Text for TensorBoard's text plugin, which renders it as Markdown.
  void add_text(const std::string& tag, int64_t step, const std::string& markdown);
  // A SessionLog START at step: TensorBoard then drops what earlier files hold for steps >= step
  // (logged by a job that died after the checkpoint this start resumed from).
  void add_session_start(int64_t step);
  void flush();

  const std::string& path() const { return path_; }
  bool failed() const { return failed_; }

 private:
  void queue(const std::string& event);
  void fail(const std::string& what, int error);

  const Logger& log_;
  std::string path_;
  int fd_ = -1;
  int64_t size_ = 0;     // bytes of whole records in the file
  std::string pending_;  // framed records not yet written
  bool failed_ = false;
};

}  // namespace trident::io
