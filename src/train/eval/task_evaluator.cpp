// Generation tasks: load and render the JSONL lines, generate greedily in batches per
// data-parallel replica, score, and combine over the world.
#include "trident/train/eval/task_evaluator.hpp"

#include <mpi.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/core/timer.hpp"
#include "trident/data/prep.hpp"
#include "trident/data/prep_record.hpp"
#include "trident/interop/hf_config.hpp"
#include "trident/train/eval/answer_match.hpp"
#include "trident/train/eval/evaluator.hpp"
#include "trident/train/eval/generator.hpp"

namespace trident::train {

namespace {
constexpr int kSamplesShown = 3;

std::string trim(std::string_view s) {
  const size_t b = s.find_first_not_of(" \t\r\n"), e = s.find_last_not_of(" \t\r\n");
  return b == std::string_view::npos ? std::string() : std::string(s.substr(b, e - b + 1));
}

// What the template writes after the answer, up to its first line break ("<|im_end|>" for
// ChatML, "<|eot_id|>" for Llama 3's template): a generation that goes on past the answer is
// cut there. A model template may write something before the answer too (Qwen3's empty
// <think></think>), so the reference is looked for, not only at the start.
std::string answer_end(const std::string& rendered_answer, const std::string& reference) {
  const size_t at = reference.empty() ? std::string::npos : rendered_answer.find(reference);
  if (at == std::string::npos) return "";
  const std::string rest = rendered_answer.substr(at + reference.size());
  return trim(std::string_view(rest).substr(0, rest.find('\n')));
}

std::string cut_at(const std::string& text, const std::string& end) {
  if (end.empty()) return text;
  const size_t at = text.find(end);
  return at == std::string::npos ? text : text.substr(0, at);
}
}  // namespace

namespace {
// The prompt's text perturbed in place: "input", or the content of the last user message.
void perturb_line(Json& json, const PerturbSpec& spec, uint64_t index) {
  if (const Json* input = json.find("input"); input && input->is_string()) {
    json.set("input", Json(perturb_text(spec, index, input->as_string())));
    return;
  }
  const Json* messages = json.find("messages");
  if (!messages || !messages->is_array()) return;
  const auto& list = messages->as_array();
  size_t last_user = list.size();
  for (size_t i = 0; i < list.size(); ++i)
    if (const Json* role = list[i].is_object() ? list[i].find("role") : nullptr; role && role->is_string() &&
                                                                                 role->as_string() == "user")
      last_user = i;
  if (last_user == list.size()) return;
  Json copy = Json::array();
  for (size_t i = 0; i < list.size(); ++i) {
    Json m = list[i];
    if (const Json* content = m.find("content"); i == last_user && content && content->is_string())
      m.set("content", Json(perturb_text(spec, index, content->as_string())));
    copy.push_back(std::move(m));
  }
  json.set("messages", std::move(copy));
}
}  // namespace

std::vector<TaskExample> load_task(const std::string& path, const std::string& prompt_template,
                                   const data::Tokenizer& tokenizer, int max_prompt_tokens, int max_examples,
                                   const PerturbSpec* perturb) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw ConfigError("eval.task: cannot read '" + path + "'");
  const data::PromptTemplate tmpl = [&] {
    try {
      return data::PromptTemplate(prompt_template, tokenizer.describe());
    } catch (const ConfigError& e) {
      throw ConfigError(detail::concat("eval.template = ", prompt_template, ": ", e.what()));
    }
  }();
  std::vector<TaskExample> out;
  std::string line;
  for (int64_t number = 1; std::getline(in, line); ++number) {
    if (trim(line).empty()) continue;
    if (max_examples > 0 && int64_t(out.size()) == max_examples) break;
    try {
      Json json = Json::parse(line);
      if (perturb) perturb_line(json, *perturb, out.size());
      const data::Example example = data::parse_example(json);
      if (example.kind == data::Example::Kind::kText)
        throw ConfigError(R"(a task line needs an answer: {"input", "output"} or {"messages"})");
      TaskExample t;
      const data::RenderedDocument doc = tmpl.render(example);
      t.prompt = doc.prompt;
      t.references.push_back(data::example_content(example).second);
      if (const Json* more = json.find("answers")) {
        if (!more->is_array()) throw ConfigError(R"("answers" must be an array of strings)");
        for (const Json& a : more->as_array()) {
          if (!a.is_string()) throw ConfigError(R"("answers" must be an array of strings)");
          t.references.push_back(a.as_string());
        }
      }
      t.answer_end = answer_end(doc.answer, t.references.front());
      if (const Json* level = json.find("level")) {
        if (!level->is_string()) throw ConfigError(R"("level" must be a string)");
        t.level = level->as_string();
      }
      // As prep frames the document: the tokenizer's prefix (BOS; none under a model chat
      // template, which renders its own), then the prompt. A prompt cut to fit loses its oldest
      // tokens after the prefix.
      static const std::vector<uint32_t> kNone;
      const std::vector<uint32_t>& prefix = tmpl.chat_template() ? kNone : data::document_prefix(tokenizer);
      const std::vector<uint32_t> prompt = tokenizer.encode(doc.prompt);
      if (prompt.empty()) throw ConfigError("the rendered prompt is empty");
      const size_t limit = size_t(std::max(max_prompt_tokens, 1));
      const size_t keep_prefix = std::min(prefix.size(), limit - 1);  // at least one prompt token stays
      const size_t room = limit - keep_prefix;
      t.truncated = prefix.size() + prompt.size() > limit;
      for (size_t i = 0; i < keep_prefix; ++i) t.prompt_ids.push_back(static_cast<int32_t>(prefix[i]));
      for (size_t i = prompt.size() > room ? prompt.size() - room : 0; i < prompt.size(); ++i)
        t.prompt_ids.push_back(static_cast<int32_t>(prompt[i]));
      out.push_back(std::move(t));
    } catch (const ConfigError& e) {
      throw ConfigError(detail::concat("eval.task ", path, ":", number, ": ", e.what()));
    }
  }
  if (out.empty()) throw ConfigError("eval.task: '" + path + "' holds no examples");
  return out;
}

std::string task_tokenizer_spec(const RunConfig& cfg) {
  if (cfg.eval.tokenizer != "auto") return cfg.eval.tokenizer;
  if (!cfg.init_from.empty()) {
    const std::string own = interop::model_tokenizer_path(cfg.init_from);
    if (!own.empty()) return own;
  }
  for (const std::string& prefix : {data::first_prefix(cfg.data.train), data::first_prefix(cfg.data.valid)})
    if (!prefix.empty())
      if (std::string named = data::prep_json_field(prefix, "tokenizer"); !named.empty()) return named;
  return "byte";
}

std::string task_template(const RunConfig& cfg) {
  if (cfg.eval.prompt_template != "auto") return cfg.eval.prompt_template;
  for (const std::string& prefix : {data::first_prefix(cfg.data.train), data::first_prefix(cfg.data.valid)})
    if (!prefix.empty())
      if (std::string named = data::prep_json_field(prefix, "template"); !named.empty()) return named;
  return "plain";
}

TaskEvaluator::TaskEvaluator(const RunConfig& cfg, dist::Topology& topology, const model::GPTModel& model, Ops& ops)
    : cfg_(cfg), topology_(topology), model_(model), ops_(ops), metrics_(parse_task_metrics(cfg.eval.metrics)) {
  tokenizer_ = data::load_tokenizer(task_tokenizer_spec(cfg));
  TRIDENT_CONFIG_CHECK(tokenizer_->vocab_size() <= uint64_t(model.config().vocab), "eval.tokenizer ",
                       tokenizer_->describe(), " has ", tokenizer_->vocab_size(), " ids; the model's vocabulary is ",
                       model.config().vocab);
  const int max_prompt = model.config().seq_len - cfg.eval.max_new_tokens;
  examples_ = load_task(cfg.eval.task, task_template(cfg), *tokenizer_, max_prompt, cfg.eval.examples);
  for (const std::string& name : cfg.eval.perturb) {
    if (name == "shuffle_choices") continue;  // a generation task has no choices
    const PerturbSpec spec{name, cfg.eval.perturb_rate, cfg.eval.perturb_seed};
    perturbed_.emplace_back(name, load_task(cfg.eval.task, task_template(cfg), *tokenizer_, max_prompt,
                                            cfg.eval.examples, &spec));
  }
  stop_.push_back(static_cast<int32_t>(tokenizer_->end_of_text()));
  if (auto im_end = tokenizer_->special_token("<|im_end|>")) stop_.push_back(static_cast<int32_t>(*im_end));
  // A template's end of turn that is one special token ("<|eot_id|>", "<end_of_turn>") stops too.
  for (const TaskExample& e : examples_)
    if (auto end = tokenizer_->special_token(e.answer_end))
      if (std::find(stop_.begin(), stop_.end(), static_cast<int32_t>(*end)) == stop_.end())
        stop_.push_back(static_cast<int32_t>(*end));
}

TaskEvaluator::~TaskEvaluator() = default;

double TaskResult::Row::value(TaskMetric m, const std::vector<TaskMetric>& metrics) const {
  const auto it = std::find(metrics.begin(), metrics.end(), m);
  return it == metrics.end() ? 0.0 : values[size_t(it - metrics.begin())];
}

namespace {
// Predictions of this rank's examples, gathered to every rank in example order: records of
// (index + 1, size, text), every rank's bytes padded with zeros to the largest (index 0 ends).
std::vector<std::string> gather_predictions(dist::Communicator& world, size_t n,
                                            const std::vector<std::pair<uint32_t, std::string>>& mine) {
  std::string blob;
  for (const auto& [index, text] : mine) {
    const uint32_t header[2] = {index + 1, static_cast<uint32_t>(text.size())};
    blob.append(reinterpret_cast<const char*>(header), sizeof header);
    blob += text;
  }
  double longest = double(blob.size());
  world.all_reduce_max(&longest, 1);
  const size_t width = size_t(longest);
  blob.resize(width, '\0');
  std::string all(width * size_t(world.size()), '\0');
  if (width > 0) world.all_gather_bytes(blob.data(), all.data(), int64_t(width));
  std::vector<std::string> out(n);
  for (int r = 0; r < world.size(); ++r) {
    const char* p = all.data() + size_t(r) * width;
    const char* const end = p + width;
    uint32_t header[2];
    for (; end - p >= int64_t(sizeof header); p += header[1]) {
      std::memcpy(header, p, sizeof header);
      p += sizeof header;
      if (header[0] == 0) break;
      TRIDENT_CHECK(header[0] <= n && size_t(end - p) >= header[1], "predictions: a bad record from rank ", r);
      out[header[0] - 1].assign(p, header[1]);
    }
  }
  return out;
}
}  // namespace

std::vector<double> TaskEvaluator::score(const std::vector<TaskExample>& examples, const std::string& perturbation,
                                         TaskResult& r) {
  const int dp = topology_.layout().dp, me = topology_.dp_rank(), batch = cfg_.eval.batch;
  std::vector<size_t> mine;
  for (size_t i = me; i < examples.size(); i += dp) mine.push_back(i);
  int longest = 1;
  for (size_t i : mine) longest = std::max<int>(longest, static_cast<int>(examples[i].prompt_ids.size()));
  const int slots = std::max(1, std::min<int>(batch, static_cast<int>(mine.size())));
  Generator generator(model_, ops_, &topology_.pp(), slots, longest, longest + cfg_.eval.max_new_tokens);

  // Per example its statistics (from one rank per replica), then the generated tokens.
  const bool counts = topology_.tp_rank() == 0 && topology_.pp_rank() == 0;
  std::vector<double> sums(kExampleFields * examples.size() + 1, 0.0);
  std::vector<std::pair<uint32_t, std::string>> predictions;
  for (size_t first = 0; first < mine.size(); first += slots) {
    std::vector<std::vector<int32_t>> prompts;
    for (size_t i = first; i < std::min(mine.size(), first + slots); ++i) prompts.push_back(examples[mine[i]].prompt_ids);
    const auto outputs = generator.generate(prompts, cfg_.eval.max_new_tokens, stop_);
    for (size_t k = 0; k < outputs.size(); ++k) {
      const size_t index = mine[first + k];
      const TaskExample& e = examples[index];
      // Ids past the tokenizer's vocabulary (the model's may be padded) decode to nothing.
      std::vector<uint32_t> ids;
      for (int32_t id : outputs[k])
        if (uint64_t(id) < tokenizer_->vocab_size()) ids.push_back(uint32_t(id));
      std::string prediction = cut_at(tokenizer_->decode(ids), e.answer_end);
      if (counts) {
        example_statistics(prediction, e.references, metrics_, cfg_.eval.rouge_stem, &sums[kExampleFields * index]);
        sums.back() += double(outputs[k].size());
      }
      if (int(r.samples.size()) < kSamplesShown) r.samples.push_back({e.prompt, e.references.front(), prediction, ""});
      if (cfg_.eval.predictions && counts) predictions.emplace_back(static_cast<uint32_t>(index), std::move(prediction));
    }
  }
  topology_.world().all_reduce_sum(sums.data(), static_cast<int>(sums.size()));
  r.generated_tokens += static_cast<int64_t>(sums.back());
  sums.pop_back();
  if (cfg_.eval.predictions) {
    const std::vector<std::string> texts = gather_predictions(topology_.world(), examples.size(), predictions);
    if (topology_.world_rank() == 0)
      for (size_t i = 0; i < examples.size(); ++i)
        r.predictions.push_back({examples[i].prompt, examples[i].references.front(), texts[i], perturbation});
  }
  return sums;
}

TaskResult TaskEvaluator::run(int64_t step) {
  topology_.world().barrier();
  Stopwatch watch;
  TaskResult r;
  r.metrics = metrics_;
  const std::vector<double> clean = score(examples_, "", r);
  auto row = [&](const std::vector<double>& stats, const std::vector<TaskExample>& examples, const std::string& level,
                 const std::string& perturbation) {
    TaskResult::Row out{level, perturbation, {}, 0};
    std::vector<double> sum(kExampleFields, 0.0);
    for (size_t i = 0; i < examples.size(); ++i) {
      if (!level.empty() && examples[i].level != level) continue;
      for (int f = 0; f < kExampleFields; ++f) sum[size_t(f)] += stats[kExampleFields * i + size_t(f)];
      ++out.examples;
    }
    for (TaskMetric m : metrics_) out.values.push_back(task_metric_value(m, sum.data(), out.examples));
    return out;
  };
  r.overall = row(clean, examples_, "", "");
  std::vector<std::string> levels;
  for (const TaskExample& e : examples_)
    if (!e.level.empty() && std::find(levels.begin(), levels.end(), e.level) == levels.end()) levels.push_back(e.level);
  for (const std::string& level : levels) r.rows.push_back(row(clean, examples_, level, ""));
  // Exact match right clean and under every perturbation (field 0 of the statistics).
  std::vector<double> worst(examples_.size());
  for (size_t i = 0; i < examples_.size(); ++i) worst[i] = clean[kExampleFields * i];
  const size_t samples_kept = r.samples.size();
  for (const auto& [name, examples] : perturbed_) {
    const std::vector<double> stats = score(examples, name, r);
    r.rows.push_back(row(stats, examples, "", name));
    for (size_t i = 0; i < examples.size(); ++i) worst[i] = std::min(worst[i], stats[kExampleFields * i]);
  }
  r.samples.resize(samples_kept);  // the clean examples' glimpses only
  r.has_worst = !perturbed_.empty() && !worst.empty() &&
                std::find(metrics_.begin(), metrics_.end(), TaskMetric::kEm) != metrics_.end();
  if (r.has_worst) {
    double sum = 0;
    for (double w : worst) sum += w;
    r.exact_match_worst = sum / double(worst.size());
    r.exact_match_drop = r.overall.value(TaskMetric::kEm, metrics_) - r.exact_match_worst;
  }
  double peak[2] = {watch.seconds(), peak_rss_mb()};
  topology_.world().all_reduce_max(peak, 2);
  int64_t truncated = 0;
  for (const TaskExample& e : examples_) truncated += e.truncated;

  r.step = step;
  r.truncated = truncated;
  r.seconds = peak[0];
  const double scored = double(examples_.size() * (1 + perturbed_.size()));
  r.tokens_per_s = double(r.generated_tokens) / r.seconds;
  r.samples_per_s = scored / r.seconds;
  r.mem_mb = peak[1];
  return r;
}

void write_predictions(const std::string& run_dir, const TaskResult& r) {
  std::vector<std::string> lines;
  for (const TaskSample& p : r.predictions) {
    Json line = Json::object();
    line.set("prompt", Json(p.prompt));
    line.set("prediction", Json(p.prediction));
    line.set("reference", Json(p.reference));
    if (!p.perturbation.empty()) line.set("perturbation", Json(p.perturbation));
    lines.push_back(line.dump());
  }
  write_predictions_file(run_dir, r.step, lines);
}

namespace {
std::vector<MetricLine> row_lines(const TaskResult& r, const TaskResult::Row& row, bool overall) {
  std::vector<MetricLine> out;
  for (size_t m = 0; m < r.metrics.size(); ++m)
    out.push_back({r.step, task_metric_record_name(r.metrics[m]), row.values[m], "", row.level, row.perturbation, ""});
  out.push_back({r.step, "examples", double(row.examples), "", row.level, row.perturbation, ""});
  if (overall)
    for (const auto& [name, value] : {std::pair{"gen_tokens_per_s", r.tokens_per_s},
                                      std::pair{"gen_samples_per_s", r.samples_per_s}, std::pair{"mem_mb", r.mem_mb}})
      out.push_back({r.step, name, value, "", "", "", ""});
  return out;
}
}  // namespace

std::vector<MetricLine> task_metric_lines(const TaskResult& r, const std::string& dataset) {
  std::vector<MetricLine> out = row_lines(r, r.overall, true);
  for (const TaskResult::Row& row : r.rows) {
    const auto lines = row_lines(r, row, false);
    out.insert(out.end(), lines.begin(), lines.end());
  }
  if (r.has_worst) {
    out.push_back({r.step, "exact_match_worst", r.exact_match_worst, "", "", "", ""});
    out.push_back({r.step, "exact_match_drop", r.exact_match_drop, "", "", "", ""});
  }
  for (MetricLine& line : out) line.dataset = dataset;
  return out;
}

namespace {
std::string format_scores(const TaskResult& r, const TaskResult::Row& row) {
  std::string text;
  char value[64];
  for (size_t m = 0; m < r.metrics.size(); ++m) {
    if (task_metric_is_percent(r.metrics[m])) std::snprintf(value, sizeof value, "%.2f%%", 100 * row.values[m]);
    else std::snprintf(value, sizeof value, "%.2f", row.values[m]);
    text += detail::concat(m ? "   " : "", task_metric_label(r.metrics[m]), " ", value);
  }
  return text;
}
}  // namespace

std::string format_task(const TaskResult& r, const std::string& dataset) {
  std::string text = detail::concat("task eval at step ", r.step, " on ", dataset, " (", r.overall.examples, " examples",
                                    r.truncated ? detail::concat(", ", r.truncated, " prompts truncated") : "", "):\n");
  char line[256];
  std::snprintf(line, sizeof line, "\n  %.0f generated tokens/s, %.2f samples/s, %.2f s, peak RSS %.0f MiB",
                r.tokens_per_s, r.samples_per_s, r.seconds, r.mem_mb);
  text += "  " + format_scores(r, r.overall) + line;
  for (const TaskResult::Row& row : r.rows) {
    std::snprintf(line, sizeof line, "\n  %-24s ",
                  (row.perturbation.empty() ? "level " + row.level : "perturbed: " + row.perturbation).c_str());
    text += line + format_scores(r, row) + detail::concat("   (", row.examples, " examples)");
  }
  if (r.has_worst) {
    std::snprintf(line, sizeof line, "\n  worst case over perturbations: exact match %.2f%% (drop %.2f points)",
                  100 * r.exact_match_worst, 100 * r.exact_match_drop);
    text += line;
  }
  // A glimpse of the answers: the end of the prompt, the reference and the prediction.
  auto shown = [](const std::string& s, size_t keep_tail) {
    std::string t = s.size() > keep_tail ? "..." + s.substr(s.size() - keep_tail) : s;
    for (char& c : t)
      if (static_cast<unsigned char>(c) < 0x20) c = ' ';  // newlines and control bytes
    return t;
  };
  for (const TaskSample& s : r.samples)
    text += detail::concat("\n  prompt: ", shown(s.prompt, 60), "\n    reference: ", shown(s.reference, 60),
                           "\n    generated: ", shown(s.prediction, 60));
  return text;
}

}  // namespace trident::train
