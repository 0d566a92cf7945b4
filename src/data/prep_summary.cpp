// prep.json: the options a prep ran with and its summary, one JSON object beside the shards
// (what `trident inspect` reads the tokenizer from, and what scripts read the counts from).
#include <filesystem>

#include "trident/core/json.hpp"
#include "trident/data/chat_template.hpp"
#include "trident/data/prep.hpp"

namespace trident::data {

namespace fs = std::filesystem;

std::string prep_json_text(const PrepOptions& options, const std::string& tokenizer, const PrepSummary& s) {
  Json j = Json::object();
  j.set("format", Json("trident-prep"));
  j.set("version", Json(1));
  std::string tok = tokenizer;
  std::error_code ec;
  if (tok != "byte" && fs::exists(tok, ec)) tok = fs::absolute(tok, ec).string();  // usable from any cwd
  j.set("tokenizer", Json(tok));
  j.set("template", Json(options.prompt_template));
  if (options.prompt_template == "model")  // which file's template rendered the documents
    j.set("chat_template", Json(fs::absolute(load_chat_template(tokenizer).name(), ec).string()));
  j.set("shards", Json(s.shards));
  j.set("ranks", Json(s.ranks));
  j.set("valid_permille", Json(options.valid_permille));
  j.set("scrub_pii", Json(options.scrub_pii));
  Json filters = Json::object();
  filters.set("min_chars", Json(options.filters.min_chars));
  filters.set("max_chars", Json(options.filters.max_chars));
  filters.set("max_repeated_line_ratio", Json(options.filters.max_repeated_line_ratio));
  filters.set("max_repeated_ngram_ratio", Json(options.filters.max_repeated_ngram_ratio));
  filters.set("ngram_words", Json(options.filters.ngram_words));
  filters.set("max_non_text_ratio", Json(options.filters.max_non_text_ratio));
  j.set("filters", std::move(filters));
  if (options.near_dedup.enabled) {
    const NearDedupOptions& n = options.near_dedup;
    Json near = Json::object();
    near.set("jaccard", Json(n.jaccard));
    near.set("ngram", Json(n.ngram));
    near.set("num_perm", Json(n.num_perm));
    near.set("bands", Json(s.lsh.bands));
    near.set("rows", Json(s.lsh.rows));
    near.set("seed", Json(static_cast<int64_t>(n.seed)));
    near.set("candidate_pairs", Json(s.near_pairs.candidate_pairs));
    near.set("verified_pairs", Json(s.near_pairs.verified_pairs));
    j.set("near_dedup", std::move(near));
  }
  if (options.perplexity.enabled()) {
    const PerplexityOptions& p = options.perplexity;
    Json ppl = Json::object();
    ppl.set("model", Json(p.model));
    if (p.max > 0) ppl.set("max", Json(p.max));
    if (p.keep_percentile > 0) ppl.set("keep_percentile", Json(p.keep_percentile));
    ppl.set("threshold", Json(s.perplexity.threshold));
    ppl.set("unscored", Json(s.perplexity.unscored));
    ppl.set("seconds", Json(s.score_seconds));
    Json histogram = Json::array();
    const std::vector<double>& edges = perplexity_histogram_edges();
    for (size_t b = 0; b < s.perplexity.histogram.size(); ++b) {
      Json bucket = Json::object();
      if (b < edges.size()) bucket.set("below", Json(edges[b]));  // the last bucket is open
      bucket.set("documents", Json(s.perplexity.histogram[b]));
      histogram.push_back(std::move(bucket));
    }
    ppl.set("histogram", std::move(histogram));
    j.set("perplexity", std::move(ppl));
  }
  if (options.length_balance.enabled()) {
    const auto& edges = options.length_balance.edges;
    Json lengths = Json::object();
    lengths.set("max_share", Json(options.length_balance.max_share));
    lengths.set("seed", Json(static_cast<int64_t>(options.length_balance.seed)));
    Json buckets = Json::array();
    for (size_t b = 0; b < s.lengths.before.size(); ++b) {
      Json bucket = Json::object();
      bucket.set("min_tokens", Json(b == 0 ? int64_t(0) : edges[b - 1]));
      if (b < edges.size()) bucket.set("max_tokens", Json(edges[b]));  // exclusive; the last is open
      bucket.set("before", Json(s.lengths.before[b]));
      bucket.set("after", Json(s.lengths.after[b]));
      buckets.push_back(std::move(bucket));
    }
    lengths.set("buckets", std::move(buckets));
    j.set("length_balance", std::move(lengths));
  }
  j.set("documents_in", Json(s.documents_in));
  j.set("documents_out", Json(s.documents_out()));
  Json dropped = Json::object();
  dropped.set("empty", Json(s.empty_dropped));
  dropped.set("duplicate", Json(s.duplicates_dropped));
  dropped.set("near_duplicate", Json(s.near_duplicates_dropped));
  dropped.set("perplexity", Json(s.perplexity_dropped));
  dropped.set("length_balance", Json(s.length_balance_dropped));
  dropped.set("bad_line", Json(s.bad_lines));
  for (int r = 0; r < static_cast<int>(DropReason::kCount); ++r)
    dropped.set(drop_reason_name(static_cast<DropReason>(r)), Json(s.filtered[r]));
  j.set("dropped", std::move(dropped));
  Json pii = Json::object();
  for (int k = 0; k < static_cast<int>(PiiKind::kCount); ++k)
    pii.set(pii_name(static_cast<PiiKind>(k)), Json(s.pii.count[k]));
  j.set("pii", std::move(pii));
  j.set("train_documents", Json(s.train_documents));
  j.set("train_tokens", Json(s.train_tokens));
  j.set("valid_documents", Json(s.valid_documents));
  j.set("valid_tokens", Json(s.valid_tokens));
  j.set("input_bytes", Json(s.input_bytes));
  j.set("seconds", Json(s.seconds));
  j.set("read_seconds", Json(s.read_seconds));
  j.set("dedup_seconds", Json(s.dedup_seconds));
  j.set("write_seconds", Json(s.write_seconds));
  j.set("mb_per_s", Json(s.mb_per_s()));
  return j.dump();
}

}  // namespace trident::data
