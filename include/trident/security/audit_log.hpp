// security.audit (docs/design.md section 12): <run_dir>/audit.jsonl gets one JSON line per file
// a rank reads or writes:
//   {"time": "2026-12-07T22:31:49.123Z", "user": "ana", "uid": 1000, "host": "node17",
//    "job": "123456" (SLURM_JOB_ID; null outside Slurm), "rank": 0, "action": "read" | "create" |
//    "write", "path": absolute, "size": bytes, then "key_id" (an encrypted file) or "sha256"
//    (its contents; above 64 MiB of its first and last MiB and its size: "sha256_of": "ends")}
// "create" is logged when the file is made (empty), "write" with its final size and digest
// when the run ends (or when the writer says it is complete: a published checkpoint). Each
// line is one append (O_APPEND, below PIPE_BUF), so ranks may share the file. Lines made before
// the run directory exists wait in memory.
#pragma once
#include <mutex>
#include <set>
#include <string>
#include <vector>

namespace trident::security {

class AuditLog {
 public:
  // key_id: the run's key ("" = none): shards and checkpoints it protects are logged with it.
  AuditLog(std::string path, int rank, std::string key_id);
  ~AuditLog();  // finish() if not called
  AuditLog(const AuditLog&) = delete;
  AuditLog& operator=(const AuditLog&) = delete;

  void read(const std::string& path);
  void created(const std::string& path, bool directory);
  void written(const std::string& path);
  // "write" lines for every file this process created that still exists, then flushes.
  void finish();

 private:
  void append(const std::string& action, const std::string& path, bool directory);
  void flush_pending();
  bool encrypted(const std::string& path) const;

  std::string path_;
  int rank_;
  std::string key_id_;
  std::string prefix_;  // the fields every line shares
  int fd_ = -1;
  std::vector<std::string> pending_;
  std::set<std::string> created_;
  std::mutex mutex_;
  bool finished_ = false;
};

}  // namespace trident::security
