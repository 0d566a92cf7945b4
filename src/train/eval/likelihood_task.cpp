// Multiple-choice and rolling log-likelihood tasks: loading, the harness's encodings, scoring
// through LoglikelihoodScorer, and the results per level and perturbation.
#include "trident/train/eval/likelihood_task.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/core/timer.hpp"
#include "trident/train/eval/evaluator.hpp"
#include "trident/train/eval/perturb.hpp"
#include "trident/train/eval/task_evaluator.hpp"

namespace trident::train {

namespace {

bool blank(const std::string& line) { return line.find_first_not_of(" \t\r\n") == std::string::npos; }

// Reads the JSON objects of the file's non-blank lines, up to max (0 = all), with their line numbers.
template <typename F>
void for_each_line(const std::string& path, int max, F&& f) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("eval.task: cannot read '" + path + "'");
  std::string line;
  int taken = 0;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (blank(line)) continue;
    if (max > 0 && taken == max) break;
    try {
      const Json json = Json::parse(line);
      if (!json.is_object()) throw ConfigError("a task line must be a JSON object");
      f(json);
      ++taken;
    } catch (const ConfigError& e) {
      throw ConfigError(detail::concat("eval.task ", path, ":", number, ": ", e.what()));
    }
  }
  if (taken == 0) throw ConfigError("eval.task: '" + path + "' holds no examples");
}

std::string string_field(const Json& json, const char* key) {
  const Json* v = json.find(key);
  if (!v || !v->is_string()) throw ConfigError(detail::concat("\"", key, "\" must be a string"));
  return v->as_string();
}

std::string level_of(const Json& json) { return json.find("level") ? string_field(json, "level") : ""; }

// Python's str.isspace() for the characters a text may hold: ASCII whitespace, the separators
// 0x1c-0x1f, and (UTF-8 encoded) U+0085, U+00A0, U+1680, U+2000-U+200A, U+2028, U+2029, U+202F,
// U+205F, U+3000. Returns the byte length of the whitespace character at s[i], 0 if none.
size_t whitespace_at(std::string_view s, size_t i) {
  const auto c = static_cast<unsigned char>(s[i]);
  if (c == ' ' || (c >= 0x09 && c <= 0x0d) || (c >= 0x1c && c <= 0x1f)) return 1;
  auto byte = [&](size_t k) { return i + k < s.size() ? static_cast<unsigned char>(s[i + k]) : 0u; };
  if (c == 0xc2 && (byte(1) == 0x85 || byte(1) == 0xa0)) return 2;
  if (c == 0xe1 && byte(1) == 0x9a && byte(2) == 0x80) return 3;
  if (c == 0xe2 && byte(1) == 0x80 && (byte(2) <= 0x8a || byte(2) == 0xa8 || byte(2) == 0xa9 || byte(2) == 0xaf))
    return 3;
  if (c == 0xe2 && byte(1) == 0x81 && byte(2) == 0x9f) return 3;
  if (c == 0xe3 && byte(1) == 0x80 && byte(2) == 0x80) return 3;
  return 0;
}

// Bytes of s's trailing whitespace (Python's len(s) - len(s.rstrip()), in bytes).
size_t trailing_whitespace(std::string_view s) {
  size_t end = s.size();
  for (;;) {
    size_t found = 0;
    for (size_t len = 1; len <= 3 && len <= end; ++len)
      if (whitespace_at(s, end - len) == len) found = len;
    if (found == 0) return s.size() - end;
    end -= found;
  }
}

std::vector<int32_t> to_ids(const std::vector<uint32_t>& ids) { return {ids.begin(), ids.end()}; }

}  // namespace

TaskKind resolve_task_kind(const std::string& kind, const std::string& path) {
  if (kind == "generate") return TaskKind::kGenerate;
  if (kind == "choice") return TaskKind::kChoice;
  if (kind == "rolling") return TaskKind::kRolling;
  TRIDENT_CONFIG_CHECK(kind == "auto", "eval.kind must be auto, generate, choice or rolling (got '", kind, "')");
  TaskKind detected = TaskKind::kGenerate;
  bool seen = false;
  for_each_line(path, 1, [&](const Json& json) {
    seen = true;
    if (json.find("choices")) detected = TaskKind::kChoice;
    else if (json.find("text") && !json.find("input") && !json.find("messages")) detected = TaskKind::kRolling;
  });
  TRIDENT_CONFIG_CHECK(seen, "eval.task: '", path, "' holds no examples");
  return detected;
}

const char* task_kind_name(TaskKind kind) {
  switch (kind) {
    case TaskKind::kGenerate: return "generate";
    case TaskKind::kChoice: return "choice";
    case TaskKind::kRolling: return "rolling";
  }
  return "generate";
}

std::vector<ChoiceExample> load_choice_task(const std::string& path, int max_examples) {
  std::vector<ChoiceExample> out;
  for_each_line(path, max_examples, [&](const Json& json) {
    ChoiceExample e;
    e.context = string_field(json, "context");
    const Json* choices = json.find("choices");
    if (!choices || !choices->is_array() || choices->as_array().size() < 2)
      throw ConfigError(R"("choices" must be an array of at least two strings)");
    for (const Json& c : choices->as_array()) {
      if (!c.is_string()) throw ConfigError(R"("choices" must be an array of strings)");
      e.choices.push_back(c.as_string());
    }
    const Json* gold = json.find("gold");
    if (!gold || !gold->is_number()) throw ConfigError(R"("gold" must be the index of the right choice)");
    const int64_t g = gold->as_int();
    if (g < 0 || g >= int64_t(e.choices.size()))
      throw ConfigError(detail::concat("\"gold\" = ", g, " is not an index of the ", e.choices.size(), " choices"));
    e.gold = static_cast<int>(g);
    e.level = level_of(json);
    out.push_back(std::move(e));
  });
  return out;
}

std::vector<RollingDocument> load_rolling_task(const std::string& path, int max_examples) {
  std::vector<RollingDocument> out;
  for_each_line(path, max_examples, [&](const Json& json) { out.push_back({string_field(json, "text"), level_of(json)}); });
  return out;
}

HarnessEncoder::HarnessEncoder(const data::Tokenizer& tokenizer) : tokenizer_(tokenizer) {
  const auto& prefix = tokenizer.specials().prefix;
  prefix_ = static_cast<int32_t>(prefix.empty() ? tokenizer.end_of_text() : prefix.front());
  const uint32_t id = static_cast<uint32_t>(prefix_);
  prefix_text_ = tokenizer.decode(std::span<const uint32_t>(&id, 1));
}

std::vector<int32_t> HarnessEncoder::encode(const std::string& text) const {
  // A text that already starts with the prefix token's text is not framed again.
  const bool framed = !prefix_text_.empty() && text.rfind(prefix_text_, 0) == 0;
  return to_ids(framed ? tokenizer_.encode(text) : tokenizer_.encode_with_specials(text));
}

LoglikelihoodRequest HarnessEncoder::request(const std::string& context, const std::string& continuation) const {
  LoglikelihoodRequest r;
  if (context.empty()) {
    r.continuation = to_ids(tokenizer_.encode(continuation));
    TRIDENT_CONFIG_CHECK(!r.continuation.empty(), "a choice encodes to no tokens");
    if (r.continuation.front() != prefix_) {
      r.context = {prefix_};
    } else {
      r.context = {r.continuation.front()};
      r.continuation.erase(r.continuation.begin());
    }
  } else {
    const size_t spaces = trailing_whitespace(context);
    const std::string ctx = context.substr(0, context.size() - spaces);
    const std::string cont = context.substr(context.size() - spaces) + continuation;
    const std::vector<int32_t> whole = encode(ctx + cont);
    r.context = encode(ctx);
    TRIDENT_CONFIG_CHECK(whole.size() > r.context.size(), "the continuation '", continuation,
                         "' adds no tokens to its context");
    r.continuation.assign(whole.begin() + static_cast<std::ptrdiff_t>(r.context.size()), whole.end());
    if (r.context.empty()) r.context = {prefix_};  // a context of whitespace only
  }
  TRIDENT_CONFIG_CHECK(!r.continuation.empty(), "the continuation '", continuation, "' encodes to no tokens");
  return r;
}

std::vector<LoglikelihoodRequest> HarnessEncoder::rolling(const std::string& text, int64_t seq_len) const {
  const std::vector<int32_t> tokens = encode(text);
  std::vector<LoglikelihoodRequest> out;
  if (tokens.empty()) return out;
  const int64_t n = static_cast<int64_t>(tokens.size()), T = seq_len;
  auto slice = [&](int64_t a, int64_t b) { return std::vector<int32_t>(tokens.begin() + a, tokens.begin() + b); };
  // First window: the prefix token, then up to T - 1 tokens, predicting the first T.
  const int64_t first = std::min(T, n);
  out.push_back({{prefix_}, slice(0, first)});
  // Later windows predict up to T tokens each, conditioned on the T - predicted tokens before them.
  for (int64_t predicted = first; predicted < n;) {
    const int64_t count = std::min(n - predicted, T), end = predicted + count;
    out.push_back({slice(end - T - 1, end - count), slice(end - count, end)});
    predicted += count;
  }
  return out;
}

int64_t count_words(std::string_view s) {
  int64_t pieces = 1;
  for (size_t i = 0; i < s.size();) {
    size_t w = whitespace_at(s, i);
    if (w == 0) {
      ++i;
      continue;
    }
    ++pieces;  // one split per maximal run of whitespace
    while (i < s.size() && (w = whitespace_at(s, i)) > 0) i += w;
  }
  return pieces;
}

int64_t count_characters(std::string_view utf8) {
  int64_t n = 0;
  for (unsigned char c : utf8) n += (c & 0xc0) != 0x80;
  return n;
}

LikelihoodTaskEvaluator::LikelihoodTaskEvaluator(const RunConfig& cfg, dist::Topology& topology,
                                                 PipelineExecutor& pipeline, const model::GPTModel& model,
                                                 TaskKind kind)
    : cfg_(cfg), topology_(topology), kind_(kind), scorer_(cfg, topology, pipeline) {
  if (kind == TaskKind::kChoice && SharedContextScorer::supported(cfg))
    shared_ = std::make_unique<SharedContextScorer>(cfg, topology, model, model.ops());
  tokenizer_ = data::load_tokenizer(task_tokenizer_spec(cfg));
  TRIDENT_CONFIG_CHECK(tokenizer_->vocab_size() <= uint64_t(cfg.model.vocab), "eval.tokenizer ",
                       tokenizer_->describe(), " has ", tokenizer_->vocab_size(), " ids; the model's vocabulary is ",
                       cfg.model.vocab);
  encoder_ = std::make_unique<HarnessEncoder>(*tokenizer_);
  if (kind == TaskKind::kChoice) {
    choices_ = load_choice_task(cfg.eval.task, cfg.eval.examples);
    // A continuation must fit one row (a context may be cut from the left, as the harness cuts it).
    for (size_t i = 0; i < choices_.size(); ++i)
      for (const std::string& c : choices_[i].choices) {
        const size_t tokens = encoder_->request(choices_[i].context, " " + c).continuation.size();
        TRIDENT_CONFIG_CHECK(tokens <= size_t(cfg.model.seq_len), "eval.task ", cfg.eval.task, ": example ", i + 1,
                             ": the choice '", c.substr(0, 40), c.size() > 40 ? "...'" : "'", " is ", tokens,
                             " tokens, more than model.seq_len = ", cfg.model.seq_len);
      }
  } else {
    TRIDENT_CONFIG_CHECK(kind == TaskKind::kRolling, "a generation task is not a log-likelihood task");
    documents_ = load_rolling_task(cfg.eval.task, cfg.eval.examples);
  }
}

LikelihoodTaskEvaluator::~LikelihoodTaskEvaluator() = default;

LikelihoodTaskResult LikelihoodTaskEvaluator::run(int64_t step) {
  topology_.world().barrier();
  Stopwatch watch;
  LikelihoodTaskResult r = kind_ == TaskKind::kChoice ? run_choice() : run_rolling();
  double peak[2] = {watch.seconds(), peak_rss_mb()};
  topology_.world().all_reduce_max(peak, 2);
  r.step = step;
  r.kind = kind_;
  r.seconds = peak[0];
  r.samples_per_s = double(r.requests) / r.seconds;
  r.mem_mb = peak[1];
  return r;
}

std::vector<LoglikelihoodResult> LikelihoodTaskEvaluator::score_choices(const std::vector<LoglikelihoodRequest>& requests,
                                                                      const std::vector<size_t>& per_example) {
  if (!shared_) return scorer_.score(requests);
  // An example whose choices share their context tokens (the harness's encoding gives them the
  // same) and fit one row goes to the shared-context scorer; any other to the row scorer.
  std::vector<ContextGroup> groups;
  std::vector<LoglikelihoodRequest> rows;
  std::vector<std::pair<bool, size_t>> where(requests.size());  // (shared, index in its results)
  size_t at = 0, shared_results = 0;
  for (size_t count : per_example) {
    ContextGroup g{requests[at].context, {}};
    bool same = true;
    for (size_t k = 0; k < count; ++k) {
      same = same && requests[at + k].context == g.context;
      g.continuations.push_back(requests[at + k].continuation);
    }
    const bool shared = same && g.fits(cfg_.model.seq_len);
    for (size_t k = 0; k < count; ++k) {
      where[at + k] = {shared, shared ? shared_results++ : rows.size()};
      if (!shared) rows.push_back(requests[at + k]);
    }
    if (shared) groups.push_back(std::move(g));
    at += count;
  }
  const std::vector<LoglikelihoodResult> from_shared = shared_->score(groups), from_rows = scorer_.score(rows);
  std::vector<LoglikelihoodResult> out(requests.size());
  for (size_t i = 0; i < requests.size(); ++i)
    out[i] = where[i].first ? from_shared[where[i].second] : from_rows[where[i].second];
  return out;
}

LikelihoodTaskResult LikelihoodTaskEvaluator::run_choice() {
  LikelihoodTaskResult r;
  // Every (example, choice) of the clean set and of each perturbed copy, scored in one call.
  struct Scored {
    std::string perturbation;
    std::vector<ChoiceExample> examples;
  };
  std::vector<Scored> sets{{"", choices_}};
  for (const std::string& name : cfg_.eval.perturb) {
    const PerturbSpec spec{name, cfg_.eval.perturb_rate, cfg_.eval.perturb_seed};
    Scored s{name, {}};
    for (size_t i = 0; i < choices_.size(); ++i) {
      ChoiceExample e = choices_[i];
      e.context = perturb_text(spec, i, e.context);
      const std::vector<int> order = perturb_order(spec, i, static_cast<int>(e.choices.size()));
      std::vector<std::string> shown;
      for (size_t k = 0; k < order.size(); ++k) {
        shown.push_back(choices_[i].choices[size_t(order[k])]);
        if (order[k] == choices_[i].gold) e.gold = static_cast<int>(k);
      }
      e.choices = std::move(shown);
      s.examples.push_back(std::move(e));
    }
    sets.push_back(std::move(s));
  }
  std::vector<LoglikelihoodRequest> requests;
  for (const Scored& s : sets)
    for (const ChoiceExample& e : s.examples)
      for (const std::string& c : e.choices) requests.push_back(encoder_->request(e.context, " " + c));
  std::vector<size_t> per_example;
  for (const Scored& s : sets)
    for (const ChoiceExample& e : s.examples) per_example.push_back(e.choices.size());
  const std::vector<LoglikelihoodResult> results = score_choices(requests, per_example);
  r.requests = static_cast<int64_t>(requests.size());

  // Per set: each example's (acc, acc_norm) by argmax, the first on ties.
  size_t at = 0;
  std::vector<std::vector<std::pair<bool, bool>>> right(sets.size());
  for (size_t s = 0; s < sets.size(); ++s)
    for (const ChoiceExample& e : sets[s].examples) {
      size_t best = 0, best_norm = 0;
      for (size_t k = 0; k < e.choices.size(); ++k) {
        const double ll = results[at + k].logprob;
        const double norm = ll / double(count_characters(e.choices[k]));
        if (ll > results[at + best].logprob) best = k;
        if (norm > results[at + best_norm].logprob / double(count_characters(e.choices[best_norm]))) best_norm = k;
      }
      right[s].push_back({int(best) == e.gold, int(best_norm) == e.gold});
      if (cfg_.eval.predictions && topology_.world_rank() == 0) {
        Json line = Json::object(), lls = Json::array();
        for (size_t k = 0; k < e.choices.size(); ++k) lls.push_back(Json(results[at + k].logprob));
        line.set("prompt", Json(e.context));
        line.set("prediction", Json(e.choices[best]));
        line.set("reference", Json(e.choices[size_t(e.gold)]));
        line.set("loglikelihoods", std::move(lls));
        if (!sets[s].perturbation.empty()) line.set("perturbation", Json(sets[s].perturbation));
        r.predictions.push_back(line.dump());
      }
      at += e.choices.size();
    }
  auto row = [&](size_t s, const std::string& level) {
    LikelihoodTaskResult::Row out{level, sets[s].perturbation, {}};
    for (size_t i = 0; i < right[s].size(); ++i)
      if (level.empty() || sets[s].examples[i].level == level)
        out.scores.acc += right[s][i].first, out.scores.acc_norm += right[s][i].second, ++out.scores.examples;
    if (out.scores.examples > 0) out.scores.acc /= double(out.scores.examples), out.scores.acc_norm /= double(out.scores.examples);
    return out;
  };
  r.rows.push_back(row(0, ""));
  std::vector<std::string> levels;
  for (const ChoiceExample& e : choices_)
    if (!e.level.empty() && std::find(levels.begin(), levels.end(), e.level) == levels.end()) levels.push_back(e.level);
  for (const std::string& level : levels) r.rows.push_back(row(0, level));
  for (size_t s = 1; s < sets.size(); ++s) r.rows.push_back(row(s, ""));
  if (sets.size() > 1) {
    double worst = 0;
    for (size_t i = 0; i < choices_.size(); ++i) {
      bool all = true;
      for (size_t s = 0; s < sets.size(); ++s) all = all && right[s][i].first;
      worst += all;
    }
    r.acc_worst = worst / double(choices_.size());
    r.acc_drop = r.rows.front().scores.acc - r.acc_worst;
  }
  return r;
}

LikelihoodTaskResult LikelihoodTaskEvaluator::run_rolling() {
  LikelihoodTaskResult r;
  std::vector<LoglikelihoodRequest> requests;
  std::vector<size_t> owner;  // the document of each window
  for (size_t d = 0; d < documents_.size(); ++d)
    for (LoglikelihoodRequest& w : encoder_->rolling(documents_[d].text, cfg_.model.seq_len)) {
      requests.push_back(std::move(w));
      owner.push_back(d);
    }
  const std::vector<LoglikelihoodResult> results = scorer_.score(requests);
  r.requests = static_cast<int64_t>(requests.size());
  std::vector<double> ll(documents_.size(), 0.0);
  for (size_t i = 0; i < results.size(); ++i) ll[owner[i]] += results[i].logprob;
  auto totals = [&](const std::string& level, double& sum, int64_t& words, int64_t& bytes, int64_t& docs) {
    sum = 0, words = 0, bytes = 0, docs = 0;
    for (size_t d = 0; d < documents_.size(); ++d)
      if (level.empty() || documents_[d].level == level) {
        sum += ll[d];
        words += count_words(documents_[d].text);
        bytes += static_cast<int64_t>(documents_[d].text.size());
        ++docs;
      }
  };
  totals("", r.loglikelihood, r.words, r.bytes, r.documents);
  r.word_perplexity = std::exp(-r.loglikelihood / double(r.words));
  r.byte_perplexity = std::exp(-r.loglikelihood / double(r.bytes));
  r.bits_per_byte = -r.loglikelihood / double(r.bytes) / std::log(2.0);
  std::vector<std::string> levels;
  for (const RollingDocument& d : documents_)
    if (!d.level.empty() && std::find(levels.begin(), levels.end(), d.level) == levels.end()) levels.push_back(d.level);
  for (const std::string& level : levels) {
    double sum;
    int64_t words, bytes, docs;
    totals(level, sum, words, bytes, docs);
    r.levels.push_back({level, std::exp(-sum / double(words)), std::exp(-sum / double(std::max<int64_t>(bytes, 1))),
                        -sum / double(std::max<int64_t>(bytes, 1)) / std::log(2.0), docs});
  }
  return r;
}

std::vector<MetricLine> likelihood_metric_lines(const LikelihoodTaskResult& r, const std::string& dataset) {
  std::vector<MetricLine> out;
  auto add = [&](std::vector<MetricLine> lines) { out.insert(out.end(), lines.begin(), lines.end()); };
  if (r.kind == TaskKind::kRolling) {
    add(metric_lines(r.step, dataset,
                     {{"word_perplexity", r.word_perplexity}, {"byte_perplexity", r.byte_perplexity},
                      {"bits_per_byte", r.bits_per_byte}, {"documents", double(r.documents)},
                      {"samples_per_s", r.samples_per_s}, {"mem_mb", r.mem_mb}}));
    for (const auto& l : r.levels)
      add(metric_lines(r.step, dataset,
                       {{"word_perplexity", l.word_perplexity}, {"byte_perplexity", l.byte_perplexity},
                        {"bits_per_byte", l.bits_per_byte}, {"documents", double(l.documents)}},
                       l.level));
    return out;
  }
  bool perturbed = false;
  for (const auto& row : r.rows) {
    add(metric_lines(r.step, dataset,
                     {{"acc", row.scores.acc}, {"acc_norm", row.scores.acc_norm}, {"examples", double(row.scores.examples)}},
                     row.level, row.perturbation));
    perturbed = perturbed || !row.perturbation.empty();
  }
  add(metric_lines(r.step, dataset, {{"samples_per_s", r.samples_per_s}, {"mem_mb", r.mem_mb}}));
  if (perturbed) add(metric_lines(r.step, dataset, {{"acc_worst", r.acc_worst}, {"acc_drop", r.acc_drop}}));
  return out;
}

std::string format_likelihood(const LikelihoodTaskResult& r, const std::string& dataset) {
  char line[256];
  std::string text;
  if (r.kind == TaskKind::kRolling) {
    std::snprintf(line, sizeof line,
                  "rolling eval at step %lld on %s (%lld documents, %lld windows):\n"
                  "  word perplexity %.4f   byte perplexity %.4f   bits per byte %.4f",
                  (long long)r.step, dataset.c_str(), (long long)r.documents, (long long)r.requests, r.word_perplexity,
                  r.byte_perplexity, r.bits_per_byte);
    text = line;
    for (const auto& l : r.levels) {
      std::snprintf(line, sizeof line, "\n  level %-12s word perplexity %.4f   bits per byte %.4f (%lld documents)",
                    l.level.c_str(), l.word_perplexity, l.bits_per_byte, (long long)l.documents);
      text += line;
    }
  } else {
    std::snprintf(line, sizeof line, "choice eval at step %lld on %s (%lld examples, %lld continuations scored):",
                  (long long)r.step, dataset.c_str(), (long long)r.rows.front().scores.examples, (long long)r.requests);
    text = line;
    for (const auto& row : r.rows) {
      const std::string name = !row.perturbation.empty() ? "perturbed: " + row.perturbation
                               : !row.level.empty()      ? "level " + row.level
                                                         : "clean";
      std::snprintf(line, sizeof line, "\n  %-26s acc %.2f%%   acc_norm %.2f%%   (%lld examples)", name.c_str(),
                    100 * row.scores.acc, 100 * row.scores.acc_norm, (long long)row.scores.examples);
      text += line;
    }
    if (r.rows.size() > 1 && !r.rows.back().perturbation.empty()) {
      std::snprintf(line, sizeof line, "\n  worst case over perturbations: acc %.2f%% (drop %.2f points)",
                    100 * r.acc_worst, 100 * r.acc_drop);
      text += line;
    }
  }
  std::snprintf(line, sizeof line, "\n  %.1f continuations/s, %.2f s, peak RSS %.0f MiB", r.samples_per_s, r.seconds,
                r.mem_mb);
  return text + line;
}

}  // namespace trident::train
