// prep, the whole job: each rank turns its pieces of the input into tokenised documents, the
// ranks decide duplicates by owner rank, then write the shards together and publish them
// (pipeline and guarantees: prep.hpp).
#include "trident/core/file_policy.hpp"
#include "trident/data/prep.hpp"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <tuple>

#include "prep_inputs.hpp"
#include "prep_output.hpp"
#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/core/rng.hpp"
#include "trident/data/prep_record.hpp"
#include "trident/data/shard_set.hpp"
#include "trident/data/tokenizer.hpp"

namespace trident::data {
namespace {

namespace fs = std::filesystem;

constexpr int kMaxWarningsPerRank = 5;

uint64_t remix(uint64_t h, uint64_t salt) { return mix64(h ^ salt); }

// A tokenised document held until the duplicate decision; its tokens live in one shared buffer.
struct LocalDocument {
  uint64_t key;     // input order (prep_inputs.hpp)
  uint64_t hash;    // example_dedup_hash
  uint64_t token_begin, token_count, loss_start;
  uint32_t target;  // split * shards + shard
  double perplexity = 0;  // with a perplexity model (0: too short to score)
};

// Phase 1 on each rank: documents of this rank's pieces -> LocalDocuments (or counted drops).
class DocumentProcessor {
 public:
  DocumentProcessor(const PrepOptions& options, const Tokenizer& tokenizer, PrepSummary& summary, LshShape lsh)
      : sketches(lsh, options.near_dedup.num_perm), options_(options), tokenizer_(tokenizer),
        template_(options.prompt_template, tokenizer.describe()), summary_(summary), minhash_(options.near_dedup) {}

  // A ConfigError (a chat template that fails on this line) leaves nothing counted, so the
  // reader can report the line, or skip and count it as a bad line.
  void add(uint64_t key, Example&& example) {
    PiiCounts pii;
    if (options_.scrub_pii) scrub(example, pii);
    const auto [first, second] = example_content(example);
    if (first.empty() && second.empty()) return void(count_in(pii, &summary_.empty_dropped));
    const std::string filter_text = first.empty() ? second : first + "\n" + second;
    if (const auto reason = failed_filter(filter_text, options_.filters))
      return void(count_in(pii, &summary_.filtered[static_cast<int>(*reason)]));

    const RenderedDocument rendered = template_.render(example);
    count_in(pii, nullptr);
    if (options_.near_dedup.enabled) sketches.add(minhash_.signature(filter_text));
    if (options_.perplexity.enabled()) {
      unscored_.push_back(documents.size());
      unscored_texts_.push_back(filter_text);
    }
    LocalDocument doc{key, example_dedup_hash(example), tokens.size(), 0, 0, 0};
    const uint64_t placement = example_placement_hash(example);
    // A model chat template renders its own BOS and turn markers (encode_append adds no BOS):
    // the tokenizer's framing applies to the other templates only.
    const bool model_template = template_.chat_template() != nullptr;
    static const std::vector<uint32_t> kNone;
    // The tokenizer's prefix (BOS) counts as prompt; a document without prompt tokens keeps its
    // loss start at 0 (the first token is never a target anyway).
    const std::vector<uint32_t>& prefix = model_template ? kNone : document_prefix(tokenizer_);
    tokens.insert(tokens.end(), prefix.begin(), prefix.end());
    tokenizer_.encode_append(rendered.prompt, tokens);
    const uint64_t prompt_tokens = tokens.size() - doc.token_begin;
    doc.loss_start = prompt_tokens > prefix.size() ? prompt_tokens : 0;
    tokenizer_.encode_append(rendered.answer, tokens);
    if (!model_template) {
      append_document_end(tokenizer_, tokens);
    } else if (tokens.size() == doc.token_begin + doc.loss_start || tokens.back() != tokenizer_.end_of_text()) {
      tokens.push_back(tokenizer_.end_of_text());  // unless the template ended it (Phi-3 does)
    }
    doc.token_count = tokens.size() - doc.token_begin;
    const bool valid = placement % 1000 < static_cast<uint64_t>(options_.valid_permille);
    doc.target = static_cast<uint32_t>((valid ? options_.shards : 0) + shard_of_hash(placement, options_.shards));
    documents.push_back(doc);
    if (unscored_.size() >= static_cast<size_t>(options_.perplexity.batch)) score_pending();
  }

  // The perplexity model scores the documents waiting for it, a batch at a time.
  void score_pending() {
    if (unscored_.empty()) return;
    const auto start = std::chrono::steady_clock::now();
    const std::vector<double> scores = options_.perplexity.score(unscored_texts_);
    TRIDENT_CHECK(scores.size() == unscored_.size(), "the perplexity scorer returned ", scores.size(), " scores for ",
                  unscored_.size(), " texts");
    for (size_t k = 0; k < scores.size(); ++k) documents[unscored_[k]].perplexity = scores[k];
    unscored_.clear();
    unscored_texts_.clear();
    score_seconds += std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  }

  void bad_line(const std::string& message) {
    ++summary_.documents_in;
    if (summary_.bad_lines++ < kMaxWarningsPerRank && options_.warn) options_.warn("skipped " + message);
  }

  std::vector<LocalDocument> documents;
  std::vector<uint32_t> tokens;
  SketchTable sketches;  // with near_dedup: one per document
  double score_seconds = 0;

 private:
  static void scrub(Example& example, PiiCounts& pii) {
    example.input = scrub_pii(example.input, pii);
    example.output = scrub_pii(example.output, pii);
    for (ChatMessage& m : example.messages) m.content = scrub_pii(m.content, pii);
  }

  // The document is read: its PII replacements and (if dropped) its drop reason count.
  void count_in(const PiiCounts& pii, int64_t* dropped) {
    ++summary_.documents_in;
    for (int k = 0; k < static_cast<int>(PiiKind::kCount); ++k) summary_.pii.count[k] += pii.count[k];
    if (dropped) ++*dropped;
  }

  const PrepOptions& options_;
  const Tokenizer& tokenizer_;
  const PromptTemplate template_;
  PrepSummary& summary_;
  const MinHasher minhash_;
  std::vector<size_t> unscored_;  // documents waiting for their perplexity, and their texts
  std::vector<std::string> unscored_texts_;
};

// Calls options.progress: rate-limited updates while reading, a call at each phase's end.
class ProgressMeter {
 public:
  using Clock = std::chrono::steady_clock;
  explicit ProgressMeter(const PrepOptions& options) : report_(options.progress) {}

  void start(const char* phase) {
    phase_ = phase;
    phase_start_ = last_ = Clock::now();
  }
  void reading(uint64_t bytes_done, uint64_t bytes_total, const PrepSummary& s) {
    if (!report_ || Clock::now() - last_ < std::chrono::seconds(2)) return;
    last_ = Clock::now();
    report_(snapshot(false, bytes_done, bytes_total, s));
  }
  void done(uint64_t bytes_done = 0, uint64_t bytes_total = 0, const PrepSummary* s = nullptr) {
    if (report_) report_(snapshot(true, bytes_done, bytes_total, s ? *s : PrepSummary{}));
  }

 private:
  PrepProgress snapshot(bool done, uint64_t bytes_done, uint64_t bytes_total, const PrepSummary& s) const {
    PrepProgress p;
    p.phase = phase_;
    p.done = done;
    p.seconds = std::chrono::duration<double>(Clock::now() - phase_start_).count();
    p.bytes_done = bytes_done;
    p.bytes_total = bytes_total;
    p.documents = s.documents_in;
    p.dropped = s.empty_dropped + s.bad_lines;
    for (const int64_t f : s.filtered) p.dropped += f;
    return p;
  }

  const std::function<void(const PrepProgress&)>& report_;
  const char* phase_ = "read";
  Clock::time_point phase_start_, last_;
};

// keep[i]: document i is the first (smallest key) of its hash over all ranks. Collective.
std::vector<bool> first_occurrences(const std::vector<LocalDocument>& docs, const PrepComm& comm) {
  const int P = comm.size();
  std::vector<std::vector<uint64_t>> to_owner(static_cast<size_t>(P));
  std::vector<std::pair<int, size_t>> slot(docs.size());  // (owner, index in its list)
  for (size_t i = 0; i < docs.size(); ++i) {
    const int owner = owner_of_hash(docs[i].hash, P);
    slot[i] = {owner, to_owner[owner].size() / 2};
    to_owner[owner].push_back(docs[i].hash);
    to_owner[owner].push_back(docs[i].key);
  }
  const std::vector<std::vector<uint64_t>> received = comm.exchange(to_owner);

  // As owner: sort every (hash, key, source rank, index) and keep the first of each hash.
  std::vector<std::tuple<uint64_t, uint64_t, int, size_t>> entries;
  std::vector<std::vector<uint64_t>> verdicts(static_cast<size_t>(P));
  for (int r = 0; r < P; ++r) {
    verdicts[r].assign(received[r].size() / 2, 0);
    for (size_t k = 0; k < received[r].size() / 2; ++k)
      entries.emplace_back(received[r][2 * k], received[r][2 * k + 1], r, k);
  }
  std::sort(entries.begin(), entries.end());
  for (size_t e = 0; e < entries.size(); ++e)
    if (e == 0 || std::get<0>(entries[e]) != std::get<0>(entries[e - 1]))
      verdicts[std::get<2>(entries[e])][std::get<3>(entries[e])] = 1;

  const std::vector<std::vector<uint64_t>> answers = comm.exchange(verdicts);
  std::vector<bool> keep(docs.size());
  for (size_t i = 0; i < docs.size(); ++i) keep[i] = answers[slot[i].first][slot[i].second] != 0;
  return keep;
}

std::vector<int64_t*> counters(PrepSummary& s) {
  std::vector<int64_t*> c = {&s.documents_in, &s.bad_lines, &s.empty_dropped, &s.duplicates_dropped,
                             &s.near_duplicates_dropped, &s.perplexity_dropped, &s.length_balance_dropped};
  for (int64_t& f : s.filtered) c.push_back(&f);
  for (int64_t& p : s.pii.count) c.push_back(&p);
  return c;
}

void sum_over_ranks(PrepSummary& s, const PrepComm& comm) {
  const std::vector<int64_t*> c = counters(s);
  std::vector<int64_t> values;
  for (int64_t* p : c) values.push_back(*p);
  comm.sum(values);
  for (size_t i = 0; i < c.size(); ++i) *c[i] = values[i];
}

void check_options(const PrepOptions& o) {
  TRIDENT_CONFIG_CHECK(!o.inputs.empty(), "no input files given");
  TRIDENT_CONFIG_CHECK(!o.output.empty(), "no output prefix given");
  TRIDENT_CONFIG_CHECK(o.valid_permille >= 0 && o.valid_permille <= 1000,
                       "--valid-permille must be in [0, 1000] (got ", o.valid_permille, ")");
  TRIDENT_CONFIG_CHECK(o.shards >= 1 && o.shards <= 99999, "--shards must be in [1, 99999] (got ", o.shards, ")");
  const FilterOptions& f = o.filters;
  for (double r : {f.max_repeated_line_ratio, f.max_repeated_ngram_ratio, f.max_non_text_ratio})
    TRIDENT_CONFIG_CHECK(r >= 0 && r <= 1, "filter ratios must be in [0, 1] (got ", r, ")");
  TRIDENT_CONFIG_CHECK(f.ngram_words >= 1, "--ngram-words must be at least 1 (got ", f.ngram_words, ")");
  TRIDENT_CONFIG_CHECK(f.min_chars >= 0 && f.max_chars >= 0, "--min-chars and --max-chars must be >= 0");
  check_length_balance(o.length_balance);
  check_perplexity(o.perplexity);
}

std::vector<std::string> output_files(const PrepOptions& o) {
  std::vector<std::string> files;
  for (int s = 0; s < o.shards; ++s) files.push_back(shard_file_prefix(o.output, s, o.shards));
  if (o.valid_permille > 0)
    for (int s = 0; s < o.shards; ++s) files.push_back(shard_file_prefix(valid_shard_prefix(o.output), s, o.shards));
  return files;
}

// Shards of this prefix under another shard count would make the set ambiguous: remove them
// (shards = 0: every layout of the prefix). Returns how many files went.
int remove_other_layouts(const std::string& prefix, int shards) {
  std::error_code ignored;
  int removed = 0;
  if (shards != 1)
    for (const char* ext : {".bin", ".idx"}) removed += fs::remove(prefix + ext, ignored) ? 1 : 0;
  const fs::path p(prefix);
  const fs::path dir = p.parent_path().empty() ? fs::path(".") : p.parent_path();
  const std::string base = p.filename().string() + "-";
  std::vector<fs::path> stale;
  for (const auto& entry : fs::directory_iterator(dir, ignored)) {
    const std::string name = entry.path().filename().string();
    int index = 0, count = 0, used = 0;
    if (!name.starts_with(base)) continue;
    const std::string rest = name.substr(base.size());
    if (std::sscanf(rest.c_str(), "%5d-of-%5d.%*3[a-z]%n", &index, &count, &used) == 2 &&
        used == static_cast<int>(rest.size()) && count != shards && rest.size() == 18)
      stale.push_back(entry.path());
  }
  for (const fs::path& s : stale) removed += fs::remove(s, ignored) ? 1 : 0;
  return removed;
}

void write_text_atomically(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream out = create_file(tmp, std::ios::binary | std::ios::trunc);
    out << text << "\n";
    TRIDENT_CONFIG_CHECK(out.good(), "cannot write ", tmp);
  }
  TRIDENT_CONFIG_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename ", tmp, " to ", path);
}

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

// Why a document read and tokenised is left out, decided after reading by the global phases in
// this order. A document keeps the first reason found: each phase looks only at the documents
// still kept. (Empty documents and the quality filters drop while reading, before a document is
// held: DocumentProcessor counts those.)
enum class Verdict : uint8_t { kKept, kDuplicate, kNearDuplicate, kPerplexity, kLengthBalance };

int64_t& dropped_count(PrepSummary& s, Verdict v) {
  return v == Verdict::kDuplicate       ? s.duplicates_dropped
         : v == Verdict::kNearDuplicate ? s.near_duplicates_dropped
         : v == Verdict::kPerplexity    ? s.perplexity_dropped
                                        : s.length_balance_dropped;
}

// Rank 0, after publishing: shards of this prefix under another layout go.
void remove_stale_layouts(const PrepOptions& o) {
  remove_other_layouts(o.output, o.shards);
  // Without a validation split now, an older one of this prefix would hold documents that
  // the training split now holds: evaluation on training data. It goes.
  const int stale = remove_other_layouts(valid_shard_prefix(o.output), o.valid_permille > 0 ? o.shards : 0);
  if (stale > 0 && o.valid_permille == 0)
    std::fprintf(stderr, "trident prep: removed %d files of an older %s split (this prep made none; its documents "
                 "are in the training split now)\n", stale, valid_shard_prefix(o.output).c_str());
}

// prepare_shards on one rank: a member per phase, run() calls them in order. Each phase is
// collective over comm_ and raises any rank's error on every rank.
class PrepJob {
 public:
  PrepJob(const PrepOptions& options, const Tokenizer& tokenizer, const PrepComm& comm)
      : options_(options), tokenizer_(tokenizer), comm_(comm), meter_(options) {
    summary_.ranks = comm.size();
    summary_.shards = options.shards;
  }

  PrepSummary run() {
    const std::vector<int64_t> sizes = check_inputs();
    DocumentProcessor processor(options_, tokenizer_, summary_,
                                options_.near_dedup.enabled ? summary_.lsh : LshShape{1, 1});
    read(processor, sizes);
    drop_duplicates(processor);
    drop_unlikely(processor);
    drop_unbalanced(processor.documents);
    const std::vector<LocalShardPart> parts = kept_parts(processor);
    sum_counts(parts);
    write(parts);
    summary_.seconds = seconds_since(start_);
    return summary_;
  }

 private:
  // The options checked and the input files' sizes (rank 0 asks the file system) on every rank.
  std::vector<int64_t> check_inputs() {
    std::exception_ptr error;
    std::vector<int64_t> sizes(options_.inputs.size(), 0);
    try {
      check_options(options_);
      if (options_.near_dedup.enabled) summary_.lsh = lsh_shape(options_.near_dedup);
      if (comm_.rank() == 0) sizes = input_file_sizes(options_.inputs);
    } catch (...) {
      error = std::current_exception();
    }
    comm_.throw_if_any_failed(error);
    comm_.broadcast(sizes, 0);
    for (int64_t bytes : sizes) summary_.input_bytes += bytes;
    return sizes;
  }

  // Phase 1: this rank's pieces of the inputs -> processor's documents, scored when there is a
  // perplexity model; rank 0 also creates the output's directory.
  void read(DocumentProcessor& processor, const std::vector<int64_t>& sizes) {
    meter_.start("read");
    std::exception_ptr error;
    try {
      const uint64_t my_bytes = read_pieces(processor, sizes);
      processor.score_pending();
      meter_.done(my_bytes, my_bytes, &summary_);
      if (comm_.rank() == 0) {
        const fs::path parent = fs::path(options_.output).parent_path();
        std::error_code ignored;  // if this fails, creating the shards says why
        if (!parent.empty()) make_directories(parent, ignored);
      }
    } catch (...) {
      error = std::current_exception();
    }
    const double read_seconds = seconds_since(start_);
    comm_.throw_if_any_failed(error);
    summary_.read_seconds = comm_.max(read_seconds);
  }

  // Reads this rank's pieces into processor; returns their bytes.
  uint64_t read_pieces(DocumentProcessor& processor, const std::vector<int64_t>& sizes) {
    // Automatic: about 4 pieces per rank, between 1 and 64 MiB (the output does not depend on it).
    const uint64_t auto_split = std::clamp<uint64_t>(static_cast<uint64_t>(summary_.input_bytes) / (4 * comm_.size()),
                                                     uint64_t(1) << 20, uint64_t(64) << 20);
    const uint64_t split_bytes = options_.jsonl_split_bytes ? options_.jsonl_split_bytes : auto_split;
    const std::vector<InputPiece> pieces =
        plan_rank_pieces(options_.inputs, sizes, split_bytes, comm_.rank(), comm_.size());
    uint64_t my_bytes = 0, bytes_before = 0;  // bytes_before: of the pieces read already
    for (const InputPiece& piece : pieces) my_bytes += piece.end - piece.begin;
    const InputPiece* current = nullptr;
    PieceCallbacks callbacks;
    callbacks.document = [&](uint64_t key, Example&& e) {
      processor.add(key, std::move(e));
      const uint64_t offset = key & ((uint64_t(1) << 40) - 1);  // the line's byte in its file
      meter_.reading(bytes_before + (offset > current->begin ? offset - current->begin : 0), my_bytes, summary_);
    };
    if (options_.skip_bad_lines) callbacks.bad_line = [&](const std::string& m) { processor.bad_line(m); };
    processor.tokens.reserve(my_bytes + pieces.size());  // about one token per byte or fewer: one allocation
    for (const InputPiece& piece : pieces) {
      current = &piece;
      read_piece(options_.inputs[piece.file], piece, callbacks);
      bytes_before += piece.end - piece.begin;
    }
    return my_bytes;
  }

  // Phase 2: exact duplicates (the first in input order stays), then near duplicates of the rest.
  void drop_duplicates(const DocumentProcessor& processor) {
    const auto dedup_start = Clock::now();
    meter_.start("dedup");
    for (const bool first : first_occurrences(processor.documents, comm_))
      verdicts_.push_back(first ? Verdict::kKept : Verdict::kDuplicate);
    if (options_.near_dedup.enabled) {
      std::vector<uint64_t> keys;
      keys.reserve(processor.documents.size());
      for (const LocalDocument& d : processor.documents) keys.push_back(d.key);
      drop_where(near_duplicates(keys, kept(), processor.sketches, options_.near_dedup.jaccard, comm_,
                                 &summary_.near_pairs),
                 Verdict::kNearDuplicate);
    }
    summary_.dedup_seconds = seconds_since(dedup_start);
    meter_.done();
  }

  // Phase 3, with a perplexity model: the kept documents it finds unlikely.
  void drop_unlikely(const DocumentProcessor& processor) {
    summary_.score_seconds = comm_.max(processor.score_seconds);
    if (!options_.perplexity.enabled()) return;
    std::vector<double> scores;
    for (const LocalDocument& d : processor.documents) scores.push_back(d.perplexity);
    const std::vector<bool> active = kept();
    meter_.start("perplexity");
    drop_where(filter_perplexity(scores, active, options_.perplexity, comm_, &summary_.perplexity),
               Verdict::kPerplexity);
    meter_.done();
  }

  // Phase 4, with length buckets: kept documents of over-represented lengths, down-sampled.
  void drop_unbalanced(const std::vector<LocalDocument>& documents) {
    if (!options_.length_balance.enabled()) return;
    std::vector<int64_t> lengths;
    std::vector<uint64_t> hashes;
    for (const LocalDocument& d : documents) {
      lengths.push_back(static_cast<int64_t>(d.token_count));
      hashes.push_back(d.hash);
    }
    const std::vector<bool> active = kept();
    meter_.start("length balance");
    std::exception_ptr error;
    std::vector<bool> unbalanced;
    try {
      unbalanced = balance_lengths(lengths, hashes, active, options_.length_balance, comm_, &summary_.lengths);
    } catch (...) {  // the same ConfigError on every rank: the counts it names are global
      error = std::current_exception();
    }
    comm_.throw_if_any_failed(error);
    drop_where(unbalanced, Verdict::kLengthBalance);
    meter_.done();
  }

  // kept()[i]: no phase has dropped document i yet.
  std::vector<bool> kept() const {
    std::vector<bool> k(verdicts_.size());
    for (size_t i = 0; i < verdicts_.size(); ++i) k[i] = verdicts_[i] == Verdict::kKept;
    return k;
  }

  // The documents still kept that a phase found (drop[i]) go for its reason.
  void drop_where(const std::vector<bool>& drop, Verdict why) {
    for (size_t i = 0; i < verdicts_.size(); ++i)
      if (verdicts_[i] == Verdict::kKept && drop[i]) verdicts_[i] = why;
  }

  // The kept documents by output file (in input order); the others counted by their verdict.
  std::vector<LocalShardPart> kept_parts(const DocumentProcessor& processor) {
    std::vector<LocalShardPart> parts(output_files(options_).size());
    for (size_t i = 0; i < verdicts_.size(); ++i) {
      if (verdicts_[i] != Verdict::kKept) {
        ++dropped_count(summary_, verdicts_[i]);
        continue;
      }
      const LocalDocument& d = processor.documents[i];
      LocalShardPart& part = parts[d.target];
      part.documents.push_back(std::span<const uint32_t>(processor.tokens).subspan(d.token_begin, d.token_count));
      part.loss_starts.push_back(d.loss_start);
      part.tokens += d.token_count;
    }
    return parts;
  }

  // The counts summed over the ranks; a ConfigError with them when no document is left.
  void sum_counts(const std::vector<LocalShardPart>& parts) {
    PrepSummary& s = summary_;
    sum_over_ranks(s, comm_);
    std::vector<int64_t> kept = {0};
    for (const LocalShardPart& p : parts) kept[0] += static_cast<int64_t>(p.documents.size());
    comm_.sum(kept);
    int64_t filtered = 0;
    for (int64_t f : s.filtered) filtered += f;
    TRIDENT_CONFIG_CHECK(kept[0] > 0, "no documents to write: of ", s.documents_in, " documents read, ",
                         s.empty_dropped, " were empty, ", s.duplicates_dropped, " duplicates, ",
                         s.near_duplicates_dropped, " near duplicates, ", s.perplexity_dropped,
                         " by perplexity, ", s.length_balance_dropped, " length-balanced, ",
                         filtered, " filtered, ", s.bad_lines, " bad lines");
  }

  // Phase 5: the ranks write the shards together, then publish them; rank 0 removes other
  // layouts of the prefix and writes prep.json.
  void write(const std::vector<LocalShardPart>& parts) {
    ParallelShardOutput output(output_files(options_), tokenizer_.vocab_size(), comm_, options_.key);
    const auto write_start = Clock::now();
    meter_.start("write");
    const auto totals = output.write(parts);
    summary_.write_seconds = seconds_since(write_start);
    meter_.done();
    for (size_t i = 0; i < totals.size(); ++i) {
      const bool valid = i >= static_cast<size_t>(options_.shards);
      (valid ? summary_.valid_documents : summary_.train_documents) += totals[i].documents;
      (valid ? summary_.valid_tokens : summary_.train_tokens) += totals[i].tokens;
    }
    std::exception_ptr error;
    try {
      output.publish();
      if (comm_.rank() == 0) {
        remove_stale_layouts(options_);
        summary_.seconds = seconds_since(start_);
        write_text_atomically(prep_json_path(options_.output), prep_json_text(options_, tokenizer_.describe(), summary_));
      }
    } catch (...) {
      error = std::current_exception();
    }
    comm_.throw_if_any_failed(error);
  }

  const Clock::time_point start_ = Clock::now();
  const PrepOptions& options_;
  const Tokenizer& tokenizer_;
  const PrepComm& comm_;
  ProgressMeter meter_;
  PrepSummary summary_;
  std::vector<Verdict> verdicts_;  // per document of processor.documents, after reading
};

}  // namespace

int shard_of_hash(uint64_t hash, int shards) {
  return static_cast<int>(remix(hash, 0x5348415244ull) % static_cast<uint64_t>(shards));
}

int owner_of_hash(uint64_t hash, int ranks) {
  return static_cast<int>(remix(hash, 0x4f574e4552ull) % static_cast<uint64_t>(ranks));
}

std::string valid_shard_prefix(const std::string& output) { return output + "-valid"; }
std::string prep_json_path(const std::string& output) { return output + ".prep.json"; }

std::string prep_json_field(const std::string& prefix, const std::string& field) {
  std::string path = prep_json_path(prefix);
  constexpr std::string_view kValid = "-valid";
  if (!std::filesystem::exists(path) && std::string_view(prefix).ends_with(kValid))
    path = prep_json_path(prefix.substr(0, prefix.size() - kValid.size()));
  std::ifstream in(path, std::ios::binary);
  if (!in) return "";
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  try {
    return Json::parse(text).at(field).as_string();
  } catch (const ConfigError& e) {
    throw ConfigError(detail::concat(path, ": ", e.what()));
  }
}

PrepSummary prepare_shards(const PrepOptions& options, const Tokenizer& tokenizer, const PrepComm& comm) {
  return PrepJob(options, tokenizer, comm).run();
}

PrepSummary prepare_shards(const PrepOptions& options) {
  return prepare_shards(options, *load_tokenizer("byte"), PrepComm::single_process());
}

}  // namespace trident::data
