// Byte-level BPE training: count GPT-2 pre-tokens, then repeatedly merge the most frequent
// adjacent pair, updating pair counts only in the words that hold the merged pair.
#include "trident/core/file_policy.hpp"
#include "trident/data/bpe_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <queue>
#include <sstream>
#include <unordered_map>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/data/byte_level.hpp"
#include "trident/data/pretokenizer.hpp"

namespace trident::data {

namespace {

constexpr std::string_view kEndOfText = "<|endoftext|>";
constexpr uint32_t kEndOfTextId = 256;

uint64_t pair_key(uint32_t left, uint32_t right) { return (uint64_t{left} << 32) | right; }

class WordCounter {
 public:
  void add_text(std::string_view text) {
    bytes_ += text.size();
    // The special token never takes part in merges: count the text between its occurrences.
    for (size_t start = 0;;) {
      const size_t at = text.find(kEndOfText, start);
      const std::string_view part = text.substr(start, at == std::string_view::npos ? std::string_view::npos : at - start);
      for_each_pretoken(SplitPattern::kGpt2, part, [&](std::string_view w) {
        ++counts_[std::string(w)];
        ++words_;
      });
      if (at == std::string_view::npos) break;
      start = at + kEndOfText.size();
    }
  }
  uint64_t bytes() const { return bytes_; }
  uint64_t words() const { return words_; }
  std::unordered_map<std::string, uint64_t>& counts() { return counts_; }

 private:
  std::unordered_map<std::string, uint64_t> counts_;
  uint64_t bytes_ = 0, words_ = 0;
};

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  TRIDENT_CONFIG_CHECK(in, "tokenizer training input ", path, ": cannot be read");
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

void check_utf8(std::string_view text, const std::string& where) {
  const size_t bad = invalid_utf8_at(text);
  TRIDENT_CONFIG_CHECK(bad == std::string_view::npos, where, ": invalid UTF-8 at byte ", bad);
}

void add_json_strings(const Json& value, WordCounter& counter) {
  if (value.is_string()) {
    counter.add_text(value.as_string());
  } else if (value.is_array()) {
    for (const Json& v : value.as_array()) add_json_strings(v, counter);
  } else if (value.is_object()) {
    for (const auto& [key, v] : value.as_object()) add_json_strings(v, counter);
  }
}

void add_input(const std::string& path, WordCounter& counter) {
  const std::string text = read_file(path);
  if (!path.ends_with(".jsonl")) {
    check_utf8(text, path);
    counter.add_text(text);
    return;
  }
  size_t line_number = 0;
  for (size_t start = 0; start < text.size();) {
    size_t end = text.find('\n', start);
    if (end == std::string::npos) end = text.size();
    ++line_number;
    const std::string_view line = std::string_view(text).substr(start, end - start);
    start = end + 1;
    if (line.find_first_not_of(" \t\r") == std::string_view::npos) continue;
    try {
      add_json_strings(Json::parse(line), counter);
    } catch (const ConfigError& e) {
      throw ConfigError(trident::detail::concat(path, ":", line_number, ": ", e.what()));
    }
  }
}

struct Word {
  std::vector<uint32_t> symbols;
  uint64_t count;
};

// The merge loop's state: every word as symbols, every adjacent pair's total count and the
// words it occurs in (a superset: entries go stale when merges consume the pair).
class Merger {
 public:
  Merger(std::vector<Word> words, std::vector<std::string> tokens) : words_(std::move(words)), tokens_(std::move(tokens)) {
    for (uint32_t w = 0; w < words_.size(); ++w) {
      const std::vector<uint32_t>& s = words_[w].symbols;
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        const uint64_t key = pair_key(s[i], s[i + 1]);
        counts_[key] += static_cast<int64_t>(words_[w].count);
        std::vector<uint32_t>& where = where_[key];
        if (where.empty() || where.back() != w) where.push_back(w);
      }
    }
    for (const auto& [key, count] : counts_) queue_.push({count, key});
    for (uint32_t id = 0; id < tokens_.size(); ++id) id_of_.emplace(tokens_[id], id);
  }

  // Learns merges until the vocabulary holds `vocab_size` tokens or no pair occurs
  // `min_frequency` times.
  void run(uint64_t vocab_size, uint64_t min_frequency) {
    while (tokens_.size() < vocab_size && !queue_.empty()) {
      const Entry top = queue_.top();
      queue_.pop();
      const int64_t count = counts_[top.key];
      if (count != top.count) {  // stale: re-queue with the current count
        if (count > 0) queue_.push({count, top.key});
        continue;
      }
      if (count < static_cast<int64_t>(std::max<uint64_t>(min_frequency, 1))) break;
      merge(static_cast<uint32_t>(top.key >> 32), static_cast<uint32_t>(top.key));
    }
  }

  const std::vector<std::string>& tokens() const { return tokens_; }
  const std::vector<std::pair<uint32_t, uint32_t>>& merges() const { return merges_; }

 private:
  struct Entry {
    int64_t count;
    uint64_t key;
    bool operator<(const Entry& o) const { return count != o.count ? count < o.count : key > o.key; }
  };

  void merge(uint32_t left, uint32_t right) {
    const std::string joined = tokens_[left] + tokens_[right];
    if (joined == kEndOfText) {  // never a learned token: keep the pair out for good
      counts_[pair_key(left, right)] = 0;
      return;
    }
    uint32_t result;
    if (const auto it = id_of_.find(joined); it != id_of_.end()) {
      result = it->second;
    } else {
      result = static_cast<uint32_t>(tokens_.size());
      tokens_.push_back(joined);
      id_of_.emplace(joined, result);
    }
    merges_.emplace_back(left, right);
    std::vector<uint64_t> grown;  // pairs holding `result`, whose counts went up
    const std::vector<uint32_t> where = std::move(where_[pair_key(left, right)]);
    where_.erase(pair_key(left, right));
    for (uint32_t w : where) {
      std::vector<uint32_t>& s = words_[w].symbols;
      const auto count = static_cast<int64_t>(words_[w].count);
      bool found = false;
      for (size_t i = 0; i + 1 < s.size() && !found; ++i) found = s[i] == left && s[i + 1] == right;
      if (!found) continue;
      for (size_t i = 0; i + 1 < s.size(); ++i) counts_[pair_key(s[i], s[i + 1])] -= count;
      size_t out = 0;
      for (size_t i = 0; i < s.size(); ++i) {
        if (i + 1 < s.size() && s[i] == left && s[i + 1] == right) {
          s[out++] = result;
          ++i;
        } else {
          s[out++] = s[i];
        }
      }
      s.resize(out);
      for (size_t i = 0; i + 1 < s.size(); ++i) {
        const uint64_t key = pair_key(s[i], s[i + 1]);
        counts_[key] += count;
        if (s[i] != result && s[i + 1] != result) continue;
        std::vector<uint32_t>& list = where_[key];
        if (list.empty() || list.back() != w) list.push_back(w);
        grown.push_back(key);
      }
    }
    std::sort(grown.begin(), grown.end());
    grown.erase(std::unique(grown.begin(), grown.end()), grown.end());
    for (uint64_t key : grown) queue_.push({counts_[key], key});
  }

  std::vector<Word> words_;
  std::vector<std::string> tokens_;  // id -> bytes
  std::unordered_map<std::string, uint32_t> id_of_;
  std::unordered_map<uint64_t, int64_t> counts_;
  std::unordered_map<uint64_t, std::vector<uint32_t>> where_;
  std::priority_queue<Entry> queue_;
  std::vector<std::pair<uint32_t, uint32_t>> merges_;
};

std::string tokenizer_json(const std::vector<std::string>& tokens, const std::vector<std::pair<uint32_t, uint32_t>>& merges) {
  auto spelled = [&](uint32_t id) { return id == kEndOfTextId ? std::string(kEndOfText) : byte_level_encode(tokens[id]); };
  std::string out;
  out += "{\"version\":\"1.0\",\"truncation\":null,\"padding\":null,\"added_tokens\":[";
  out += "{\"id\":256,\"content\":\"<|endoftext|>\",\"single_word\":false,\"lstrip\":false,\"rstrip\":false,"
         "\"normalized\":false,\"special\":true}],\n";
  out += "\"normalizer\":null,\n";
  out += "\"pre_tokenizer\":{\"type\":\"ByteLevel\",\"add_prefix_space\":false,\"trim_offsets\":true,\"use_regex\":true},\n";
  out += "\"post_processor\":null,\n";
  out += "\"decoder\":{\"type\":\"ByteLevel\",\"add_prefix_space\":true,\"trim_offsets\":true,\"use_regex\":true},\n";
  out += "\"model\":{\"type\":\"BPE\",\"dropout\":null,\"unk_token\":null,\"continuing_subword_prefix\":null,"
         "\"end_of_word_suffix\":null,\"fuse_unk\":false,\"byte_fallback\":false,\"ignore_merges\":false,\n\"vocab\":{";
  for (uint32_t id = 0; id < tokens.size(); ++id) {
    out += id ? ",\n" : "\n";
    out += json_quote(spelled(id));
    out += ':';
    out += std::to_string(id);
  }
  out += "},\n\"merges\":[";
  for (size_t i = 0; i < merges.size(); ++i) {
    out += i ? ",\n" : "\n";
    // The "left right" form: byte-level tokens never hold a space, and every `tokenizers`
    // version reads it.
    out += json_quote(spelled(merges[i].first) + " " + spelled(merges[i].second));
  }
  out += "]}}\n";
  return out;
}

void write_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out = create_file(tmp, std::ios::binary | std::ios::trunc);
    TRIDENT_CONFIG_CHECK(out, "tokenizer output ", path, ": cannot write ", tmp);
    out << text;
    out.close();
    TRIDENT_CONFIG_CHECK(out, "tokenizer output ", path, ": writing ", tmp, " failed (disk full?)");
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  TRIDENT_CONFIG_CHECK(!ec, "tokenizer output ", path, ": cannot rename ", tmp, ": ", ec.message());
}

}  // namespace

BpeTrainingReport train_bpe_tokenizer(const std::vector<std::string>& inputs, uint64_t vocab_size,
                                      const std::string& output_path, uint64_t min_frequency) {
  const auto start = std::chrono::steady_clock::now();
  TRIDENT_CONFIG_CHECK(vocab_size >= 257, "--vocab-size ", vocab_size,
                       " is too small: byte-level BPE needs 256 byte tokens and <|endoftext|> (257)");
  TRIDENT_CONFIG_CHECK(vocab_size <= (uint64_t{1} << 31), "--vocab-size ", vocab_size, " is too large");
  TRIDENT_CONFIG_CHECK(!inputs.empty(), "tokenizer training needs at least one input file");
  WordCounter counter;
  for (const std::string& path : inputs) add_input(path, counter);

  // Words sorted by their bytes so that everything after this point is order-independent.
  std::vector<std::pair<std::string, uint64_t>> unique(counter.counts().begin(), counter.counts().end());
  counter.counts().clear();
  std::sort(unique.begin(), unique.end());
  std::vector<Word> words;
  words.reserve(unique.size());
  for (auto& [bytes, count] : unique)
    words.push_back({std::vector<uint32_t>(reinterpret_cast<const uint8_t*>(bytes.data()),
                                           reinterpret_cast<const uint8_t*>(bytes.data()) + bytes.size()),
                     count});
  std::vector<std::string> tokens;
  for (int b = 0; b < 256; ++b) tokens.emplace_back(1, static_cast<char>(b));
  tokens.emplace_back(kEndOfText);

  BpeTrainingReport report;
  report.bytes_read = counter.bytes();
  report.words = counter.words();
  report.unique_words = unique.size();
  unique.clear();
  Merger merger(std::move(words), std::move(tokens));
  merger.run(vocab_size, min_frequency);
  write_atomically(output_path, tokenizer_json(merger.tokens(), merger.merges()));
  report.merges = merger.merges().size();
  report.vocab_size = merger.tokens().size();
  report.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return report;
}

}  // namespace trident::data
