// trident prep: text files and JSONL lines -> token shards (docs/design.md section 8), on one rank or
// many. Per document, in this order: parse (a JSONL line, or a whole text file), scrub PII
// (optional), drop if empty or failing a quality filter, hash its normalised content, render it
// with the prompt template and tokenise: prefix (the tokenizer's BOS) + encode(prompt) +
// encode(answer) + suffix and end-of-text (tokenizer.hpp append_document_end), the loss
// starting at the answer. Then, globally: exact duplicates (same example_dedup_hash: whitespace
// runs collapsed, case kept) are dropped, keeping the first in input order (each hash is decided
// by one owner rank); with near_dedup, near duplicates of the rest too (near_dedup.hpp); with a
// perplexity model, documents it finds unlikely (perplexity_filter.hpp); with length buckets, over-represented lengths are down-sampled (length_balance.hpp); each kept document goes to the valid split when its placement hash
// (example_placement_hash, of the text as it is) % 1000 < valid_permille, and to shard
// mix(placement hash) % shards of its split. Documents keep input order within a shard, so the files do
// not depend on the number of ranks. The shards are written under temporary names and renamed
// only when every rank succeeded; <output>.prep.json records the options and the summary.
//
// Memory: each rank holds its part's tokens (4 bytes each) until the write, and with near_dedup
// each document's sketch (near_dedup.hpp: 376 bytes with the defaults).
#pragma once
#include "trident/security/crypto.hpp"
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "trident/data/filters.hpp"
#include "trident/data/length_balance.hpp"
#include "trident/data/near_dedup.hpp"
#include "trident/data/perplexity_filter.hpp"
#include "trident/data/pii.hpp"
#include "trident/data/prep_comm.hpp"

namespace trident::data {

class Tokenizer;

// What prep tells PrepOptions::progress: while reading, an update every 2 s or so; then one
// call at the end of each phase ("read", "dedup", "perplexity", "length balance", "write").
struct PrepProgress {
  const char* phase = "read";
  bool done = false;      // the phase ended (else an update while reading)
  double seconds = 0;     // the phase's time so far
  uint64_t bytes_done = 0, bytes_total = 0;  // reading: this rank's share of the input
  int64_t documents = 0, dropped = 0;        // reading: this rank's documents read and dropped
};

struct PrepOptions {
  std::vector<std::string> inputs;  // *.jsonl: one document per line; other files: one each
  std::string output;               // shard prefix (see shard_set.hpp for the file names)
  int valid_permille = 0;           // documents per 1000 (by content hash) to <output>-valid
  int shards = 1;                   // shards per split
  std::string prompt_template = "plain";  // PromptTemplate spec (prep_record.hpp)
  FilterOptions filters;
  bool scrub_pii = false;
  NearDedupOptions near_dedup;      // --near-dedup: after the exact duplicates (near_dedup.hpp)
  PerplexityOptions perplexity;     // --ppl-model: after dedup (perplexity_filter.hpp)
  LengthBalanceOptions length_balance;  // --length-buckets, --max-share: last (length_balance.hpp)
  bool skip_bad_lines = false;      // malformed lines: counted and skipped instead of an error
  const security::MasterKey* key = nullptr;  // --key-file: shards encrypted under it (not owned)
  uint64_t jsonl_split_bytes = 0;   // JSONL piece size for splitting among ranks (0: automatic,
                                    // about 4 per rank, 1 to 64 MiB)
  // Told about skipped bad lines (at most the first 5 on each rank); may be empty.
  std::function<void(const std::string&)> warn;
  // Told how the work goes (the CLI sets it on rank 0 only); may be empty.
  std::function<void(const PrepProgress&)> progress;
};

struct PrepSummary {
  int64_t documents_in = 0;  // text files + JSONL lines read (bad lines included)
  int64_t bad_lines = 0;     // skipped with skip_bad_lines
  int64_t empty_dropped = 0;
  int64_t filtered[static_cast<int>(DropReason::kCount)] = {};
  int64_t duplicates_dropped = 0;
  int64_t near_duplicates_dropped = 0;
  NearDedupCounts near_pairs;   // candidate and verified pairs
  LshShape lsh;                 // the bands and rows near-dedup used
  int64_t perplexity_dropped = 0;
  PerplexityReport perplexity;
  double score_seconds = 0;     // scoring perplexities: the slowest rank
  int64_t length_balance_dropped = 0;
  LengthBalanceReport lengths;  // documents per length bucket before and after the balance
  PiiCounts pii;
  int64_t train_documents = 0;
  int64_t valid_documents = 0;
  int64_t train_tokens = 0;
  int64_t valid_tokens = 0;
  int64_t input_bytes = 0;
  int ranks = 1;
  int shards = 1;
  double seconds = 0;          // the whole prep
  double read_seconds = 0;     // reading, filtering and tokenising: the slowest rank
  double dedup_seconds = 0;    // the duplicate exchange
  double write_seconds = 0;    // writing and syncing the shards

  int64_t documents_out() const { return train_documents + valid_documents; }
  int64_t tokens() const { return train_tokens + valid_tokens; }
  double mb_per_s() const { return seconds > 0 ? static_cast<double>(input_bytes) / 1e6 / seconds : 0.0; }
};

// Collective over comm. Throws ConfigError (on every rank) for bad options, unreadable inputs,
// malformed lines (file and line named), or when no document is left to write.
PrepSummary prepare_shards(const PrepOptions& options, const Tokenizer& tokenizer, const PrepComm& comm);
// One process with the built-in byte tokenizer (tests and tools).
PrepSummary prepare_shards(const PrepOptions& options);

// The prefix of the validation split: <output>-valid.
std::string valid_shard_prefix(const std::string& output);
// Where prep writes its summary: <output>.prep.json.
std::string prep_json_path(const std::string& output);
// A string field of the prep.json beside the shards PREFIX (a PREFIX-valid split shares its
// train split's): "tokenizer" or "template". Empty when there is no prep.json; ConfigError
// naming the file when it is unreadable or lacks the field.
std::string prep_json_field(const std::string& prefix, const std::string& field);
// The summary as prep.json's object (also what the command prints from).
std::string prep_json_text(const PrepOptions& options, const std::string& tokenizer, const PrepSummary& summary);

// Shard of a document among `shards`, and the dedup owner among `ranks`: other bits of the
// content hash than the valid split's hash % 1000, so the three choices are independent.
int shard_of_hash(uint64_t hash, int shards);
int owner_of_hash(uint64_t hash, int ranks);

}  // namespace trident::data
