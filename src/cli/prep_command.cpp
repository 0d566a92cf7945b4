// `trident prep`: text / JSONL files -> memory-mapped token shards, on one rank or under mpirun
// (data::prepare_shards does the work; this parses options and prints the summary on rank 0).
// `trident prep --train-tokenizer` trains a byte-level BPE tokenizer.json instead (rank 0).
#include <unistd.h>

#include <boost/program_options.hpp>
#include <cmath>
#include <cstdio>
#include <optional>

#include "prep_scorer.hpp"
#include "command_options.hpp"
#include "config_values.hpp"
#include "trident/cli/commands.hpp"
#include "trident/core/error.hpp"
#include "trident/data/bpe_trainer.hpp"
#include "trident/data/prep.hpp"
#include "trident/security/crypto.hpp"
#include "trident/data/shard_set.hpp"
#include "trident/data/tokenizer.hpp"
#include "trident/dist/mpi_session.hpp"

namespace trident::cli {
namespace po = boost::program_options;

namespace {

constexpr const char* kUsage =
    "usage: [mpirun -np P] trident prep --input FILE... --output PREFIX [--tokenizer byte|TOKENIZER.json]\n"
    "           [--shards N] [--valid-permille N] [--template plain|alpaca|chatml|model|STRING] [--scrub-pii]\n"
    "           [--skip-bad-lines] [--near-dedup [--jaccard 0.8 --ngram 5 --num-perm 128 --bands B --rows R]]\n"
    "           [--ppl-model CHECKPOINT|HF_DIR (--ppl-max X | --ppl-keep-percentile P)]\n"
    "           [--length-buckets EDGES [--max-share S]] [--key-file KEY] [--group G --file-mode 0640 --dir-mode 0750]\n"
    "           [filter options]\n"
    "       trident prep --train-tokenizer --vocab-size N --input FILE... --output TOKENIZER.json\n"
    "  Each text file is one document. Each line of a *.jsonl file is one document: {\"text\": ...},\n"
    "  {\"input\": ..., \"output\": ...} (rendered with --template, trained on the output only) or\n"
    "  {\"messages\": [{\"role\": ..., \"content\": ...}, ...]} (ChatML, or with --template model the\n"
    "  tokenizer's own chat template; trained on the last assistant message). Writes PREFIX.bin/.idx\n"
    "  (N = 1) or PREFIX-00000-of-0000N.bin/.idx ... (N > 1), the same under PREFIX-valid with\n"
    "  --valid-permille, and PREFIX.prep.json (options and summary).";

using ll = long long;

void print_summary(const data::PrepOptions& o, const data::PrepSummary& s) {
  std::printf("prep: %lld documents read (%.2f MB) on %d rank%s in %.2f s: %.1f MB/s\n", ll(s.documents_in),
              static_cast<double>(s.input_bytes) / 1e6, s.ranks, s.ranks > 1 ? "s" : "", s.seconds, s.mb_per_s());
  std::printf("prep: %lld written; dropped %lld empty, %lld duplicates, %lld bad lines", ll(s.documents_out()),
              ll(s.empty_dropped), ll(s.duplicates_dropped), ll(s.bad_lines));
  for (int r = 0; r < static_cast<int>(data::DropReason::kCount); ++r)
    std::printf(", %lld %s", ll(s.filtered[r]), data::drop_reason_name(static_cast<data::DropReason>(r)));
  std::printf("\n");
  if (o.near_dedup.enabled)
    std::printf("prep: near-dedup (Jaccard >= %g, %d-word shingles, %d permutations in %d bands of %d rows): %lld candidate "
                "pairs, %lld verified, %lld near duplicates dropped\n",
                o.near_dedup.jaccard, o.near_dedup.ngram, o.near_dedup.num_perm, s.lsh.bands, s.lsh.rows,
                ll(s.near_pairs.candidate_pairs), ll(s.near_pairs.verified_pairs), ll(s.near_duplicates_dropped));
  if (o.perplexity.enabled()) {
    const data::PerplexityReport& p = s.perplexity;
    const std::vector<double>& edges = data::perplexity_histogram_edges();
    std::printf("prep: perplexity (%.2f s scoring, slowest rank):", s.score_seconds);
    for (size_t b = 0; b < p.histogram.size(); ++b)
      if (p.histogram[b] > 0)
        std::printf(" %s%g %lld,", b < edges.size() ? "<" : ">=", b < edges.size() ? edges[b] : edges.back(),
                    ll(p.histogram[b]));
    std::printf(" unscored %lld; above %.4g: %lld dropped\n", ll(p.unscored), p.threshold, ll(s.perplexity_dropped));
  }
  if (o.length_balance.enabled()) {
    const auto& edges = o.length_balance.edges;
    std::printf("prep: documents per token length (after dedup -> written):");
    for (size_t b = 0; b < s.lengths.before.size(); ++b)
      std::printf(" [%lld,%s) %lld -> %lld%s", ll(b ? edges[b - 1] : 0), b < edges.size() ? std::to_string(edges[b]).c_str() : "inf",
                  ll(s.lengths.before[b]), ll(s.lengths.after[b]), b + 1 < s.lengths.before.size() ? "," : "");
    std::printf("; %lld dropped\n", ll(s.length_balance_dropped));
  }
  if (o.scrub_pii) {
    for (int k = 0; k < static_cast<int>(data::PiiKind::kCount); ++k)
      std::printf(" %lld %s%s", ll(s.pii.count[k]), data::pii_name(static_cast<data::PiiKind>(k)),
                  k + 1 < static_cast<int>(data::PiiKind::kCount) ? "," : "\n");
  }
  auto files = [&](const std::string& prefix) {
    return o.shards == 1 ? prefix + ".bin/.idx"
                         : data::shard_file_prefix(prefix, 0, o.shards) + " ... (" + std::to_string(o.shards) + " shards)";
  };
  std::printf("prep: train  %lld documents, %lld tokens -> %s\n", ll(s.train_documents), ll(s.train_tokens),
              files(o.output).c_str());
  if (o.valid_permille > 0)
    std::printf("prep: valid  %lld documents, %lld tokens -> %s\n", ll(s.valid_documents), ll(s.valid_tokens),
                files(data::valid_shard_prefix(o.output)).c_str());
  std::printf("prep: %.2f s reading and tokenising (slowest rank), %.2f s dedup, %.2f s writing; summary in %s\n",
              s.read_seconds, s.dedup_seconds, s.write_seconds, data::prep_json_path(o.output).c_str());
}

std::string minutes_seconds(double s) {
  const long long t = std::llround(std::max(0.0, s));
  return std::to_string(t / 60) + "m" + (t % 60 < 10 ? "0" : "") + std::to_string(t % 60) + "s";
}

// On a terminal, the reading phase is one line rewritten every 2 s; in a log (Slurm), one line
// per phase when it ends. Rank 0's share stands for the whole input (ranks read equal shares).
std::function<void(const data::PrepProgress&)> progress_printer(int ranks) {
  const bool terminal = isatty(STDOUT_FILENO) != 0;
  return [terminal, ranks, open_line = false](const data::PrepProgress& p) mutable {
    const double mb = static_cast<double>(p.bytes_done) / 1e6, total = static_cast<double>(p.bytes_total) / 1e6;
    const double rate = p.seconds > 0 ? mb / p.seconds : 0;
    const char* share = ranks > 1 ? " (rank 0's share)" : "";
    if (!p.done) {
      if (!terminal) return;
      const double eta = rate > 0 ? (total - mb) / rate : 0;
      std::printf("\rprep: reading %.1f / %.1f MB%s, %.0f documents/s, %.1f MB/s, %lld dropped, ETA %s   ", mb, total,
                  share, p.seconds > 0 ? static_cast<double>(p.documents) / p.seconds : 0.0, rate, ll(p.dropped),
                  minutes_seconds(eta).c_str());
      std::fflush(stdout);
      open_line = true;
      return;
    }
    if (open_line) std::printf("\n");
    open_line = false;
    if (std::string(p.phase) == "read")
      std::printf("prep: read %.1f MB%s in %.2f s (%.1f MB/s): %lld documents, %lld dropped by filters\n", total, share,
                  p.seconds, rate, ll(p.documents), ll(p.dropped));
    else
      std::printf("prep: %s done in %.2f s\n", p.phase, p.seconds);
    std::fflush(stdout);
  };
}

int train_tokenizer(const data::PrepOptions& o, uint64_t vocab_size, int rank) {
  if (rank != 0) return 0;  // training is single-process; other ranks of an mpirun have nothing to do
  const data::BpeTrainingReport r = data::train_bpe_tokenizer(o.inputs, vocab_size, o.output);
  std::printf("prep: trained a byte-level BPE tokenizer on %.2f MB (%llu words, %llu distinct) in %.2f s: "
              "%llu merges, vocab %llu -> %s\n",
              static_cast<double>(r.bytes_read) / 1e6, static_cast<unsigned long long>(r.words),
              static_cast<unsigned long long>(r.unique_words), r.seconds, static_cast<unsigned long long>(r.merges),
              static_cast<unsigned long long>(r.vocab_size), o.output.c_str());
  return 0;
}

}  // namespace

int run_prep(int argc, char** argv) {
  data::PrepOptions o;
  std::string tokenizer_spec;
  uint64_t vocab_size = 0;
  double split_mb = 0;
  std::string length_buckets, ppl_model, ppl_tokenizer, key_file, group, file_mode, dir_mode;
  std::optional<security::MasterKey> key;
  int ppl_max_tokens = 512;
  po::options_description desc("options");
  desc.add_options()
      ("help,h", "print this help")
      ("input", po::value<std::vector<std::string>>(&o.inputs)->multitoken()->required(),
       "input files: *.jsonl (one document per line) or text (one document per file, UTF-8)")
      ("output", po::value<std::string>(&o.output)->required(),
       "output shard prefix (with --train-tokenizer: the tokenizer.json to write)")
      ("tokenizer", po::value<std::string>(&tokenizer_spec)->default_value("byte"),
       "byte (ids 0..255 + end-of-text 256) or a Hugging Face BPE tokenizer.json (or its directory; "
       "byte-level or SentencePiece style, its BOS put before each document)")
      ("shards", po::value<int>(&o.shards)->default_value(1), "output shards per split, by content hash")
      ("valid-permille", po::value<int>(&o.valid_permille)->default_value(0),
       "documents per 1000 sent to the validation split PREFIX-valid, by content hash")
      ("template", po::value<std::string>(&o.prompt_template)->default_value("plain"),
       "{input, output} lines: plain (input then output), alpaca, chatml, or a string with {input} and "
       "optionally {output} (\\n, \\t escapes); the loss starts where the output starts. model: pair and chat "
       "lines rendered with the Jinja chat_template of the --tokenizer directory (tokenizer_config.json), the loss "
       "starting after the last assistant turn's header")
      ("scrub-pii", po::bool_switch(&o.scrub_pii),
       "replace e-mails, phones, IPs, credit cards and US SSNs by <EMAIL>, <PHONE>, <IP>, <CREDIT_CARD>, <NATIONAL_ID>")
      ("near-dedup", po::bool_switch(&o.near_dedup.enabled),
       "drop near duplicates (MinHash LSH on word n-grams, after the exact duplicates): of each cluster of documents "
       "at estimated Jaccard similarity >= --jaccard, the first in input order is kept")
      ("jaccard", po::value<double>(&o.near_dedup.jaccard)->default_value(0.8, "0.8"), "near-dedup similarity threshold")
      ("ngram", po::value<int>(&o.near_dedup.ngram)->default_value(5), "near-dedup: words per shingle")
      ("num-perm", po::value<int>(&o.near_dedup.num_perm)->default_value(128), "near-dedup: MinHash permutations")
      ("bands", po::value<int>(&o.near_dedup.bands)->default_value(0),
       "near-dedup: LSH bands (with --rows; 0: chosen from --jaccard and --num-perm)")
      ("rows", po::value<int>(&o.near_dedup.rows)->default_value(0), "near-dedup: minima per LSH band")
      ("minhash-seed", po::value<uint64_t>(&o.near_dedup.seed)->default_value(1), "near-dedup: seed of the permutations")
      ("ppl-model", po::value<std::string>(&ppl_model),
       "score every document's perplexity with this model (a trident checkpoint or a Hugging Face model directory, "
       "its own tokenizer) and drop the unlikely ones after dedup: needs --ppl-max or --ppl-keep-percentile")
      ("ppl-max", po::value<double>(&o.perplexity.max)->default_value(0), "drop documents of a higher perplexity")
      ("ppl-keep-percentile", po::value<double>(&o.perplexity.keep_percentile)->default_value(0),
       "keep this percentage of the documents, those of the lowest perplexity (exact over all ranks)")
      ("ppl-tokenizer", po::value<std::string>(&ppl_tokenizer)->default_value("auto"),
       "the scorer's tokenizer (auto: the model's; a checkpoint's is its HF base's, else its training shards')")
      ("ppl-max-tokens", po::value<int>(&ppl_max_tokens)->default_value(512),
       "score each document's first N tokens (at most the model's seq_len)")
      ("ppl-batch", po::value<int>(&o.perplexity.batch)->default_value(8), "documents per scoring call")
      ("length-buckets", po::value<std::string>(&length_buckets),
       "token-length bucket edges, e.g. 128,512,2048 (buckets [0,128) [128,512) [512,2048) [2048,inf)): documents "
       "per bucket (after dedup) counted in the summary")
      ("max-share", po::value<double>(&o.length_balance.max_share)->default_value(1.0, "1"),
       "with --length-buckets: down-sample (seeded) every bucket holding more than this share of the documents written")
      ("balance-seed", po::value<uint64_t>(&o.length_balance.seed)->default_value(1), "seed of the --max-share sample")
      ("key-file", po::value<std::string>(&key_file),
       "encrypt the shards at rest under this key (a 32-byte key, 64 hex digits or raw, in a file of mode 0600 or "
       "0400): AES-256-GCM per 64 KiB block; training reads them with security.key_file = the same file")
      ("group", po::value<std::string>(&group)->default_value(""),
       "give the shards, prep.json and every directory made to this group (you must be a member)")
      ("file-mode", po::value<std::string>(&file_mode)->default_value("0640"), "exact mode of the files written, whatever the umask")
      ("dir-mode", po::value<std::string>(&dir_mode)->default_value("0750"), "exact mode of the directories made")
      ("skip-bad-lines", po::bool_switch(&o.skip_bad_lines),
       "count and skip malformed JSONL lines (and non-UTF-8 text files) instead of stopping")
      ("min-chars", po::value<int64_t>(&o.filters.min_chars)->default_value(0),
       "drop documents of fewer bytes (0 = off; empty documents are always dropped)")
      ("max-chars", po::value<int64_t>(&o.filters.max_chars)->default_value(0), "drop documents of more bytes (0 = off)")
      ("max-repeated-line-ratio", po::value<double>(&o.filters.max_repeated_line_ratio)->default_value(0.5, "0.5"),
       "drop documents whose share of non-blank lines repeating an earlier line is above this (1 = off)")
      ("max-repeated-ngram-ratio", po::value<double>(&o.filters.max_repeated_ngram_ratio)->default_value(0.8, "0.8"),
       "drop documents whose share of word characters inside repeated word n-grams is above this (1 = off)")
      ("ngram-words", po::value<int>(&o.filters.ngram_words)->default_value(5), "n of the repeated n-gram filter")
      ("max-non-text-ratio", po::value<double>(&o.filters.max_non_text_ratio)->default_value(0.2, "0.2"),
       "drop documents whose share of characters that are not letters, digits, punctuation or whitespace "
       "is above this (1 = off)")
      ("split-mb", po::value<double>(&split_mb)->default_value(0),
       "JSONL files are split among ranks in pieces of this many MB (0: about 4 pieces per rank, 1 to 64 MiB)")
      ("train-tokenizer", "train a byte-level BPE tokenizer on the inputs and write it to --output")
      ("vocab-size", po::value<uint64_t>(&vocab_size)->default_value(0), "vocabulary size of --train-tokenizer");
  po::variables_map vm;
  try {
    if (!parse_options(argc, argv, desc, kUsage, vm)) return 0;
    if (split_mb < 0) throw po::error("--split-mb must not be negative");
    o.jsonl_split_bytes = static_cast<uint64_t>(split_mb * 1e6);
    if (vm.count("length-buckets")) o.length_balance.edges = data::parse_length_edges(length_buckets);
    install_file_policy(file_policy_from(group, file_mode, dir_mode, "--"));
    if (!key_file.empty()) key = security::load_key_file(key_file);
    o.key = key ? &*key : nullptr;
  } catch (const ConfigError& e) {
    std::fprintf(stderr, "trident prep: error: %s\n", e.what());
    return 2;
  } catch (const po::error& e) {
    std::fprintf(stderr, "trident prep: error: %s\n%s\n", e.what(), kUsage);
    return 2;
  }

  dist::MpiSession mpi(&argc, &argv);
  const int rank = mpi.world_rank();
  o.warn = [rank](const std::string& w) { std::fprintf(stderr, "trident prep: warning (rank %d): %s\n", rank, w.c_str()); };
  // Every error below is raised on all ranks alike (prepare_shards agrees on failures), so
  // each rank returns and rank 0 alone prints.
  try {
    if (vm.count("train-tokenizer")) return train_tokenizer(o, vocab_size, rank);
    const std::unique_ptr<data::Tokenizer> tokenizer = data::load_tokenizer(tokenizer_spec);
    const data::PrepComm comm(MPI_COMM_WORLD);
    if (rank == 0) o.progress = progress_printer(mpi.world_size());
    Logger log(rank);
    std::unique_ptr<PrepScorer> scorer;
    if (!ppl_model.empty()) {
      std::exception_ptr error;
      try {  // every rank builds its own; a failure on one is every rank's
        scorer = std::make_unique<PrepScorer>(ppl_model, ppl_tokenizer, ppl_max_tokens, mpi.reductions(), log);
        o.perplexity.model = scorer->description();
        o.perplexity.score = [&scorer](const std::vector<std::string>& texts) { return scorer->perplexities(texts); };
      } catch (...) {
        error = std::current_exception();
      }
      comm.throw_if_any_failed(error);
      if (rank == 0) std::printf("prep: scoring perplexity with %s\n", scorer->description().c_str());
    }
    const data::PrepSummary summary = data::prepare_shards(o, *tokenizer, comm);
    if (rank == 0) print_summary(o, summary);
    return 0;
  } catch (const ConfigError& e) {
    if (rank == 0 || mpi.world_size() == 1) std::fprintf(stderr, "trident prep: error: %s\n", e.what());
    return 2;
  } catch (const std::exception& e) {
    if (rank == 0 || mpi.world_size() == 1) std::fprintf(stderr, "trident prep: failed: %s\n", e.what());
    return 1;
  }
}

}  // namespace trident::cli
