// trident prep: raw text files (one document each) and JSONL prompt/response lines to token
// shards, with exact deduplication and a content-hash train/valid split (DESIGN.md section 7).
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace trident::data {

struct PrepOptions {
  std::vector<std::string> inputs;  // files; *.jsonl are prompt/response lines, others raw text
  std::string output;               // shard prefix: <output>.bin/.idx (+ <output>-valid.bin/.idx)
  std::string tokenizer = "byte";   // only the built-in byte tokenizer so far
  int valid_permille = 0;           // documents with content hash % 1000 below this go to valid
};

struct PrepSummary {
  int64_t documents_in = 0;        // text files + JSONL records read
  int64_t empty_dropped = 0;       // empty files / records with empty input and output
  int64_t duplicates_dropped = 0;  // exact repeats of an earlier document
  int64_t train_documents = 0;
  int64_t valid_documents = 0;
  int64_t train_tokens = 0;
  int64_t valid_tokens = 0;
  double seconds = 0;
  int64_t documents_out() const { return train_documents + valid_documents; }
  int64_t tokens() const { return train_tokens + valid_tokens; }
};

// Writes the shards; throws ConfigError for unreadable inputs, malformed JSONL lines (with
// file and line number), bad options or inputs without any document.
PrepSummary prepare_shards(const PrepOptions& options);

// The prefix of the validation shard that prepare_shards writes next to `output`.
std::string valid_shard_prefix(const std::string& output);

// One JSONL training example: the loss covers `output` (and end-of-text), not `input`.
struct PromptExample {
  std::string input;
  std::string output;
};

// Parses one line {"input": "...", "output": "..."} (other keys are allowed and ignored).
// Strings are fully unescaped, \uXXXX surrogate pairs included, into UTF-8. Throws ConfigError
// "column N: what is wrong" for malformed JSON or missing/non-string keys.
PromptExample parse_prompt_example(std::string_view line);

// Content hash of a document (a raw text file is input "" + output text, so it equals the JSONL
// record with the same text). Stable across versions: it decides the train/valid split.
uint64_t document_content_hash(std::string_view input, std::string_view output);

}  // namespace trident::data
