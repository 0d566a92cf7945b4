// prep, the whole job: each rank turns its pieces of the input into tokenised documents, the
// ranks decide duplicates by owner rank, then write the shards together and publish them
// (pipeline and guarantees: prep.hpp).
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
    std::ofstream out(tmp, std::ios::binary);
    out << text << "\n";
    TRIDENT_CONFIG_CHECK(out.good(), "cannot write ", tmp);
  }
  TRIDENT_CONFIG_CHECK(std::rename(tmp.c_str(), path.c_str()) == 0, "cannot rename ", tmp, " to ", path);
}

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
  const auto start = std::chrono::steady_clock::now();
  const auto seconds_since = [](auto t) { return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count(); };
  PrepSummary summary;
  summary.ranks = comm.size();
  summary.shards = options.shards;
  std::exception_ptr error;
  std::vector<int64_t> sizes(options.inputs.size(), 0);
  try {
    check_options(options);
    if (options.near_dedup.enabled) summary.lsh = lsh_shape(options.near_dedup);
    if (comm.rank() == 0) sizes = input_file_sizes(options.inputs);  // one rank asks the file system
  } catch (...) {
    error = std::current_exception();
  }
  comm.throw_if_any_failed(error);
  comm.broadcast(sizes, 0);
  for (int64_t bytes : sizes) summary.input_bytes += bytes;
  DocumentProcessor processor(options, tokenizer, summary, options.near_dedup.enabled ? summary.lsh : LshShape{1, 1});
  ProgressMeter meter(options);
  meter.start("read");

  try {
    // Automatic: about 4 pieces per rank, between 1 and 64 MiB (the output does not depend on it).
    const uint64_t auto_split = std::clamp<uint64_t>(static_cast<uint64_t>(summary.input_bytes) / (4 * comm.size()),
                                                     uint64_t(1) << 20, uint64_t(64) << 20);
    const uint64_t split_bytes = options.jsonl_split_bytes ? options.jsonl_split_bytes : auto_split;
    const std::vector<InputPiece> pieces =
        plan_rank_pieces(options.inputs, sizes, split_bytes, comm.rank(), comm.size());
    uint64_t my_bytes = 0, bytes_before = 0;  // bytes_before: of the pieces read already
    for (const InputPiece& piece : pieces) my_bytes += piece.end - piece.begin;
    const InputPiece* current = nullptr;
    PieceCallbacks callbacks;
    callbacks.document = [&](uint64_t key, Example&& e) {
      processor.add(key, std::move(e));
      const uint64_t offset = key & ((uint64_t(1) << 40) - 1);  // the line's byte in its file
      meter.reading(bytes_before + (offset > current->begin ? offset - current->begin : 0), my_bytes, summary);
    };
    if (options.skip_bad_lines) callbacks.bad_line = [&](const std::string& m) { processor.bad_line(m); };
    processor.tokens.reserve(my_bytes + pieces.size());  // about one token per byte or fewer: one allocation
    for (const InputPiece& piece : pieces) {
      current = &piece;
      read_piece(options.inputs[piece.file], piece, callbacks);
      bytes_before += piece.end - piece.begin;
    }
    processor.score_pending();
    meter.done(my_bytes, my_bytes, &summary);
    if (comm.rank() == 0) {
      const fs::path parent = fs::path(options.output).parent_path();
      std::error_code ignored;  // if this fails, creating the shards says why
      if (!parent.empty()) fs::create_directories(parent, ignored);
    }
  } catch (...) {
    error = std::current_exception();
  }
  const double read_seconds = seconds_since(start);
  comm.throw_if_any_failed(error);
  summary.read_seconds = comm.max(read_seconds);

  const auto dedup_start = std::chrono::steady_clock::now();
  meter.start("dedup");
  const std::vector<bool> keep = first_occurrences(processor.documents, comm);
  std::vector<bool> near(keep.size(), false);
  if (options.near_dedup.enabled) {
    std::vector<uint64_t> keys;
    keys.reserve(processor.documents.size());
    for (const LocalDocument& d : processor.documents) keys.push_back(d.key);
    near = near_duplicates(keys, keep, processor.sketches, options.near_dedup.jaccard, comm, &summary.near_pairs);
  }
  summary.dedup_seconds = seconds_since(dedup_start);
  meter.done();
  std::vector<bool> unlikely(keep.size(), false);
  summary.score_seconds = comm.max(processor.score_seconds);
  if (options.perplexity.enabled()) {
    std::vector<double> scores;
    std::vector<bool> active(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) {
      scores.push_back(processor.documents[i].perplexity);
      active[i] = keep[i] && !near[i];
    }
    meter.start("perplexity");
    unlikely = filter_perplexity(scores, active, options.perplexity, comm, &summary.perplexity);
    meter.done();
  }
  std::vector<bool> unbalanced(keep.size(), false);
  if (options.length_balance.enabled()) {
    std::vector<int64_t> lengths;
    std::vector<uint64_t> hashes;
    std::vector<bool> active(keep.size());
    for (size_t i = 0; i < keep.size(); ++i) {
      lengths.push_back(static_cast<int64_t>(processor.documents[i].token_count));
      hashes.push_back(processor.documents[i].hash);
      active[i] = keep[i] && !near[i] && !unlikely[i];
    }
    meter.start("length balance");
    try {
      unbalanced = balance_lengths(lengths, hashes, active, options.length_balance, comm, &summary.lengths);
    } catch (...) {  // the same ConfigError on every rank: the counts it names are global
      error = std::current_exception();
    }
    comm.throw_if_any_failed(error);
    meter.done();
  }
  std::vector<LocalShardPart> parts(output_files(options).size());
  for (size_t i = 0; i < keep.size(); ++i) {
    const LocalDocument& d = processor.documents[i];
    if (!keep[i] || near[i] || unlikely[i] || unbalanced[i]) {
      ++(!keep[i]       ? summary.duplicates_dropped
         : near[i]      ? summary.near_duplicates_dropped
         : unlikely[i]  ? summary.perplexity_dropped
                        : summary.length_balance_dropped);
      continue;
    }
    LocalShardPart& part = parts[d.target];
    part.documents.push_back(std::span<const uint32_t>(processor.tokens).subspan(d.token_begin, d.token_count));
    part.loss_starts.push_back(d.loss_start);
    part.tokens += d.token_count;
  }
  sum_over_ranks(summary, comm);
  std::vector<int64_t> kept = {0};
  for (const LocalShardPart& p : parts) kept[0] += static_cast<int64_t>(p.documents.size());
  comm.sum(kept);
  int64_t filtered = 0;
  for (int64_t f : summary.filtered) filtered += f;
  TRIDENT_CONFIG_CHECK(kept[0] > 0, "no documents to write: of ", summary.documents_in, " documents read, ",
                       summary.empty_dropped, " were empty, ", summary.duplicates_dropped, " duplicates, ",
                       summary.near_duplicates_dropped, " near duplicates, ", summary.perplexity_dropped,
                       " by perplexity, ", summary.length_balance_dropped,
                       " length-balanced, ",
                       filtered, " filtered, ", summary.bad_lines, " bad lines");

  ParallelShardOutput output(output_files(options), tokenizer.vocab_size(), comm);
  const auto write_start = std::chrono::steady_clock::now();
  meter.start("write");
  const auto totals = output.write(parts);
  summary.write_seconds = seconds_since(write_start);
  meter.done();
  for (size_t i = 0; i < totals.size(); ++i) {
    const bool valid = i >= static_cast<size_t>(options.shards);
    (valid ? summary.valid_documents : summary.train_documents) += totals[i].documents;
    (valid ? summary.valid_tokens : summary.train_tokens) += totals[i].tokens;
  }
  try {
    output.publish();
    if (comm.rank() == 0) {
      remove_other_layouts(options.output, options.shards);
      // Without a validation split now, an older one of this prefix would hold documents that
      // the training split now holds: evaluation on training data. It goes.
      const int stale = remove_other_layouts(valid_shard_prefix(options.output), options.valid_permille > 0 ? options.shards : 0);
      if (stale > 0 && options.valid_permille == 0)
        std::fprintf(stderr, "trident prep: removed %d files of an older %s split (this prep made none; its documents "
                     "are in the training split now)\n", stale, valid_shard_prefix(options.output).c_str());
      summary.seconds = seconds_since(start);
      write_text_atomically(prep_json_path(options.output), prep_json_text(options, tokenizer.describe(), summary));
    }
  } catch (...) {
    error = std::current_exception();
  }
  comm.throw_if_any_failed(error);
  summary.seconds = seconds_since(start);
  return summary;
}

PrepSummary prepare_shards(const PrepOptions& options) {
  return prepare_shards(options, *load_tokenizer("byte"), PrepComm::single_process());
}

}  // namespace trident::data
