// Opening a run's record: refusing to bury an earlier run, keeping what a resume would repeat.
#include "trident/core/file_policy.hpp"
#include "trident/train/run_record.hpp"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <ctime>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <utility>
#include <vector>

#include "trident/core/error.hpp"
#include "trident/core/json.hpp"
#include "trident/dist/agreement.hpp"

namespace trident::train {

namespace fs = std::filesystem;

namespace {

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// The "step" (and "elapsed_s") of a metrics line; -1 (0) when the line holds none.
struct LineInfo {
  int64_t step = -1;
  double elapsed = 0;
};
LineInfo line_info(const std::string& line) {
  LineInfo info;
  try {
    const Json json = Json::parse(line);
    if (const Json* step = json.find("step"); step && step->is_number()) info.step = int64_t(step->as_number());
    if (const Json* e = json.find("elapsed_s"); e && e->is_number()) info.elapsed = e->as_number();
  } catch (const std::exception&) {
    // Not JSON (a line an older trident glued onto a torn one): it stays where it is.
  }
  return info;
}

// Writes text to path through a temporary file and a rename (never a half-written file).
void replace_file(const fs::path& path, const std::string& text, const char* what) {
  const fs::path tmp = path.string() + ".tmp." + std::to_string(::getpid());
  {
    std::ofstream out = create_file(tmp.string(), std::ios::binary | std::ios::trunc);
    out << text;
    out.flush();
    if (!out.good()) {
      std::error_code ignored;
      fs::remove(tmp, ignored);
      throw ConfigError(detail::concat("cannot write ", path.string(), " (", what,
                                       "): the run directory is not writable or the disk is full"));
    }
  }
  std::error_code ec;
  fs::rename(tmp, path, ec);
  TRIDENT_CONFIG_CHECK(!ec, "cannot write ", path.string(), " (", what, "): ", ec.message());
}

// The first N >= 1 for which none of the names + ".N" exists in dir.
int free_suffix(const fs::path& dir, std::initializer_list<const char*> names) {
  for (int n = 1;; ++n) {
    bool taken = false;
    for (const char* name : names) taken = taken || fs::exists(dir / (std::string(name) + "." + std::to_string(n)));
    if (!taken) return n;
  }
}

// A name for the lines a resume would log twice: metrics.jsonl.lost-<step>, made unique.
fs::path lost_path(const fs::path& dir, int64_t step) {
  const std::string base = "metrics.jsonl.lost-" + std::to_string(step);
  if (!fs::exists(dir / base)) return dir / base;
  for (int n = 2;; ++n)
    if (!fs::exists(dir / (base + "." + std::to_string(n)))) return dir / (base + "." + std::to_string(n));
}

// Takes <dir>/.lock for this process (flock, released by the kernel when the process ends);
// a live holder is a ConfigError naming its host and PID. Returns the descriptor.
int lock_run_directory(const fs::path& dir) {
  const fs::path path = dir / ".lock";
  const int fd = ::open(path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  TRIDENT_CONFIG_CHECK(fd >= 0, "cannot open ", path.string(), ": ", std::strerror(errno));
  secure_file(fd, path.string());
  if (::flock(fd, LOCK_EX | LOCK_NB) != 0) {
    const int error = errno;
    char holder[256] = {0};
    (void)::pread(fd, holder, sizeof holder - 1, 0);
    ::close(fd);
    std::string who = holder;
    while (!who.empty() && (who.back() == '\n' || who.back() == ' ')) who.pop_back();
    TRIDENT_CONFIG_CHECK(error != EWOULDBLOCK, "log.run_dir = ", dir.string(), " is in use by another run (",
                         who.empty() ? std::string("holder unknown") : who,
                         "): wait for it to end, or choose another log.run_dir");
    throw ConfigError(detail::concat("cannot lock ", path.string(), ": ", std::strerror(error),
                                     " (a file system without flock: choose a log.run_dir on one that has it)"));
  }
  return fd;
}

// The holder's note in the lock file, for the message a second run prints (written once this
// start is accepted: a refused start changes nothing in the directory).
void sign_lock(int fd) {
  char host[256] = {0};
  ::gethostname(host, sizeof host - 1);
  const std::string me = detail::concat("trident pid ", ::getpid(), " on host ", host, " since ",
                                        static_cast<long long>(std::time(nullptr)), "\n");
  if (::ftruncate(fd, 0) != 0 || ::pwrite(fd, me.data(), me.size(), 0) != ssize_t(me.size())) {
    // The lock holds without its note; only a second run's message would lack the holder.
  }
}

// A new events file for this start, whose first step is first_step: a SessionLog START there
// (readers drop the steps from it on that earlier files hold: logged after the resumed
// checkpoint by a job that died), and the configuration as text. nullptr when switched off.
std::unique_ptr<io::TensorBoardWriter> open_tensorboard(const RunConfig& cfg, const fs::path& dir, int64_t first_step,
                                                        const Logger& log) {
  if (!cfg.log.tensorboard) return nullptr;
  auto writer = std::make_unique<io::TensorBoardWriter>(dir.string(), log);
  writer->add_session_start(first_step);
  // A Markdown code block: the text plugin renders Markdown, which would join the INI's lines.
  const std::string& ini = cfg.resolved_ini;
  const bool ends_line = ini.empty() || ini.back() == '\n';
  writer->add_text("config", first_step, "```ini\n" + ini + (ends_line ? "" : "\n") + "```\n");
  writer->flush();
  return writer;
}

}  // namespace

RunRecord::Lock::~Lock() {
  if (fd >= 0) ::close(fd);  // releases the flock
}

RunRecord::RunRecord(int lock_fd, const std::string& metrics_path, double last_elapsed,
                     std::unique_ptr<io::TensorBoardWriter> tensorboard)
    : lock_{lock_fd}, metrics_(metrics_path), last_elapsed_(last_elapsed), tensorboard_(std::move(tensorboard)) {}

RunRecord::~RunRecord() = default;

void RunRecord::write(const io::MetricsRecord& record, const io::MetricsText& text) {
  metrics_.append(io::metrics_json(record, text));
  if (!tensorboard_) return;
  int64_t step = 0;
  io::MetricsRecord scalars;
  for (const auto& [key, value] : record) {
    if (key == "step") step = int64_t(value);
    else scalars.emplace_back(key, value);
  }
  tensorboard_->add_scalars(step, scalars);
  tensorboard_->flush();
}

std::unique_ptr<RunRecord> RunRecord::open(const RunConfig& cfg, int64_t resumed_step, dist::Communicator& world,
                                           const Logger& log) {
  std::unique_ptr<RunRecord> record;
  std::exception_ptr error;
  if (world.rank() == 0) {
    try {
      const fs::path dir(cfg.log.run_dir);
      TRIDENT_CONFIG_CHECK(!fs::exists(dir) || fs::is_directory(dir), "log.run_dir = ", cfg.log.run_dir,
                           " is not a directory");
      std::error_code ec;
      make_directories(dir / "checkpoints", ec);
      TRIDENT_CONFIG_CHECK(!ec, "log.run_dir = ", cfg.log.run_dir, ": cannot create it: ", ec.message());
      Lock lock{lock_run_directory(dir)};
      const fs::path metrics = dir / "metrics.jsonl";
      TRIDENT_CONFIG_CHECK(!fs::exists(metrics) || fs::is_regular_file(metrics), metrics.string(),
                           " is not a regular file");
      const std::string text = fs::exists(metrics) ? read_file(metrics) : "";
      std::vector<std::string> lines = io::complete_lines(text);
      const bool torn = !text.empty() && text.back() != '\n';
      if (torn)
        log.warn(metrics.string(), " ended in a partial line (", text.size() - text.rfind('\n') - 1,
                 " bytes: a crash while it was written); the line is dropped");
      double last_elapsed = 0;
      if (resumed_step == 0 && !lines.empty()) {
        const int64_t last = line_info(lines.back()).step;
        TRIDENT_CONFIG_CHECK(cfg.log.overwrite, "log.run_dir = ", cfg.log.run_dir, " holds the record of an earlier run (",
                             metrics.string(), ": ", lines.size(), " lines, up to step ", last,
                             ") and this start resumes no checkpoint (checkpoint.resume = ", cfg.checkpoint.resume,
                             "): pass --log.overwrite=true to start a new run there (the old record is kept as "
                             "metrics.jsonl.N, config.ini.N, eval.jsonl.N, tensorboard.N), or choose another "
                             "log.run_dir");
        const int n = free_suffix(dir, {"metrics.jsonl", "config.ini", "eval.jsonl", "tensorboard"});
        for (const char* name : {"metrics.jsonl", "config.ini", "eval.jsonl", "tensorboard"})
          if (fs::exists(dir / name)) fs::rename(dir / name, dir / (std::string(name) + "." + std::to_string(n)));
        log.info("log.overwrite: the earlier run's record in ", cfg.log.run_dir, " moved to metrics.jsonl.", n,
                 ", config.ini.", n, ", eval.jsonl.", n, " and tensorboard.", n);
      } else if (resumed_step > 0) {
        // Lines past the resumed step were logged after that checkpoint by a job that died:
        // the resumed run logs those steps again, so they move aside (kept, not deleted).
        std::string kept, lost;
        for (const std::string& line : lines) {
          const LineInfo info = line_info(line);
          (info.step > resumed_step ? lost : kept) += line + "\n";
          if (info.step >= 0 && info.step <= resumed_step) last_elapsed = info.elapsed;
        }
        if (!lost.empty()) {
          const fs::path aside = lost_path(dir, resumed_step);
          replace_file(aside, lost, "the lines past the resumed checkpoint");
          log.info(metrics.string(), ": the lines of steps after ", resumed_step,
                   " (logged after the checkpoint this run resumes from) moved to ", aside.string());
        }
        if (!lost.empty() || torn) replace_file(metrics, kept, "metrics");
      }
      replace_file(dir / "config.ini", cfg.resolved_ini, "the resolved configuration");
      sign_lock(lock.fd);
      record.reset(new RunRecord(std::exchange(lock.fd, -1), metrics.string(), last_elapsed,
                                 open_tensorboard(cfg, dir / "tensorboard", resumed_step + 1, log)));
    } catch (...) {
      error = std::current_exception();
    }
  }
  dist::throw_if_any_failed(world.comm(), error);
  return record;
}

}  // namespace trident::train
