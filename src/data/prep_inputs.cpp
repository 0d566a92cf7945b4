// Prep's input plan (which rank reads which byte ranges) and the piece reader (memory-mapped
// file -> documents with order keys; malformed lines reported with file and line number).
#include "prep_inputs.hpp"

#include <sys/mman.h>

#include <algorithm>
#include <filesystem>
#include <string_view>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/shard_format.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;

bool is_jsonl(const std::string& path) { return std::string_view(path).ends_with(".jsonl"); }

uint64_t line_number_at(std::string_view file, uint64_t offset) {
  return 1 + static_cast<uint64_t>(std::count(file.begin(), file.begin() + static_cast<ptrdiff_t>(offset), '\n'));
}

// Line numbers of increasing offsets, counted only when asked (an error) and only past the
// last one asked: many skipped lines cost one pass over the file, not one each.
class LineCounter {
 public:
  explicit LineCounter(std::string_view file) : file_(file) {}
  uint64_t at(uint64_t offset) {
    line_ += line_number_at(file_.substr(counted_to_), offset - counted_to_) - 1;
    counted_to_ = offset;
    return line_;
  }

 private:
  std::string_view file_;
  uint64_t counted_to_ = 0;
  uint64_t line_ = 1;
};

// Json's "line 1, column C: what" of a one-line text, as "column C: what".
std::string without_line_one(const std::string& message) {
  constexpr std::string_view kLineOne = "line 1, ";
  return std::string_view(message).starts_with(kLineOne) ? message.substr(kLineOne.size()) : message;
}

void report(const PieceCallbacks& callbacks, const std::string& message) {
  if (!callbacks.bad_line) throw ConfigError(message);
  callbacks.bad_line(message);
}

// Editors on Windows start UTF-8 files with a byte order mark; it is not part of the text.
constexpr std::string_view kUtf8Bom = "\xEF\xBB\xBF";

void read_text(const std::string& path, uint32_t file, std::string_view text, const PieceCallbacks& callbacks) {
  if (text.starts_with(kUtf8Bom)) text.remove_prefix(kUtf8Bom.size());
  if (const size_t bad = invalid_utf8_at(text); bad != std::string_view::npos)
    return report(callbacks, detail::concat(path, ":", line_number_at(text, bad), ": invalid UTF-8 at byte offset ",
                                            bad, " (text inputs must be UTF-8)"));
  Example example;
  example.output = std::string(text);
  callbacks.document(document_order_key(file, 0), std::move(example));
}

void read_jsonl(const std::string& path, const InputPiece& piece, std::string_view file_text,
                const PieceCallbacks& callbacks) {
  uint64_t pos = piece.begin;
  if (pos > 0 && file_text[pos - 1] != '\n') {  // the line holding `begin` belongs to the previous piece
    const size_t newline = file_text.find('\n', pos);
    pos = newline == std::string_view::npos ? file_text.size() : newline + 1;
  } else if (pos == 0 && file_text.starts_with(kUtf8Bom)) {
    pos = kUtf8Bom.size();
  }
  LineCounter lines(file_text);
  while (pos < piece.end && pos < file_text.size()) {
    size_t end = file_text.find('\n', pos);
    if (end == std::string_view::npos) end = file_text.size();
    std::string_view line = file_text.substr(pos, end - pos);
    const uint64_t line_begin = pos;
    pos = end + 1;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);  // CRLF files
    if (line.find_first_not_of(" \t") == std::string_view::npos) continue;
    auto where = [&] { return detail::concat(path, ":", lines.at(line_begin), ": "); };
    if (const size_t bad = invalid_utf8_at(line); bad != std::string_view::npos) {
      report(callbacks, detail::concat(where(), "invalid UTF-8 at column ", bad + 1, " (byte offset ",
                                       line_begin + bad, " of the file)"));
      continue;
    }
    Example example;
    try {
      example = parse_example(Json::parse(line));
    } catch (const ConfigError& e) {
      report(callbacks, detail::concat(where(), "malformed JSONL line, ", without_line_one(e.what()),
                                       " (expected {\"input\": \"...\", \"output\": \"...\"}, ",
                                       "{\"messages\": [...]} or {\"text\": \"...\"})"));
      continue;
    }
    try {
      callbacks.document(document_order_key(piece.file, line_begin), std::move(example));
    } catch (const ConfigError& e) {  // a chat template failing on this line
      report(callbacks, where() + e.what());
    }
  }
}

}  // namespace

std::vector<int64_t> input_file_sizes(const std::vector<std::string>& inputs) {
  TRIDENT_CONFIG_CHECK(inputs.size() < (1u << 23), "too many input files (", inputs.size(), ")");
  std::vector<int64_t> sizes;
  for (const std::string& path : inputs) {
    std::error_code ec;
    TRIDENT_CONFIG_CHECK(!fs::is_directory(path, ec), "input ", path, " is a directory");
    const uint64_t bytes = fs::file_size(path, ec);
    TRIDENT_CONFIG_CHECK(!ec, "cannot read input file ", path, ": ", ec.message());
    TRIDENT_CONFIG_CHECK(bytes < (uint64_t(1) << 40), "input file ", path, " is 1 TiB or larger; split it");
    sizes.push_back(static_cast<int64_t>(bytes));
  }
  return sizes;
}

std::vector<InputPiece> plan_rank_pieces(const std::vector<std::string>& inputs, const std::vector<int64_t>& sizes,
                                         uint64_t split_bytes, int rank, int size) {
  std::vector<InputPiece> all;
  std::vector<uint64_t> starts;  // global byte offset of each piece
  uint64_t total_bytes = 0;
  for (size_t f = 0; f < inputs.size(); ++f) {
    const uint64_t bytes = static_cast<uint64_t>(sizes[f]);
    const bool jsonl = is_jsonl(inputs[f]);
    const uint64_t step = jsonl && split_bytes > 0 ? split_bytes : std::max<uint64_t>(bytes, 1);
    for (uint64_t begin = 0; begin < std::max<uint64_t>(bytes, 1); begin += step) {
      all.push_back({static_cast<uint32_t>(f), jsonl, begin, std::min(bytes, begin + step)});
      starts.push_back(total_bytes + begin);
    }
    total_bytes += bytes;
  }
  // Share of rank r: pieces starting in [r*T/P, (r+1)*T/P); the last rank also takes T itself
  // (empty files at the end).
  const auto bound = [&](int r) {
    const uint64_t P = static_cast<uint64_t>(size), R = static_cast<uint64_t>(r);  // floor(T * r / P)
    return total_bytes / P * R + total_bytes % P * R / P;
  };
  std::vector<InputPiece> mine;
  for (size_t k = 0; k < all.size(); ++k)
    if (starts[k] >= bound(rank) && starts[k] < (rank + 1 == size ? UINT64_MAX : bound(rank + 1)))
      mine.push_back(all[k]);
  return mine;
}

void read_piece(const std::string& path, const InputPiece& piece, const PieceCallbacks& callbacks) {
  const MappedFile file(path, MADV_SEQUENTIAL);
  const std::string_view text(reinterpret_cast<const char*>(file.data()), file.size());
  if (piece.jsonl)
    read_jsonl(path, piece, text, callbacks);
  else
    read_text(path, piece.file, text, callbacks);
}

}  // namespace trident::data
