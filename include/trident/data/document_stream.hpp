// DocumentStream: the documents of a shard set as the sampler sees them (data.truncate). A
// fine-tuning document whose prompt is longer than T tokens has no trainable target in a row
// of T of its own (its first answer token lies past the row): such rows train nothing, and a
// global batch of them none at all. With `left` the prompt is cut from the left to its last T
// tokens (the first answer token is then the row's last target, the rest of the answer follows
// in the next rows as any long document does); with `skip` the document is left out. Plain
// text (loss from the first token) is never cut. The stream is the kept documents back to
// back, in offsets of its own (those of the shard set when nothing is cut or left out).
// Deterministic, so every rank of any layout sees the same stream.
#pragma once
#include <cstdint>
#include <vector>

#include "trident/data/shard_set.hpp"

namespace trident::data {

enum class Truncate { kLeft, kSkip };
Truncate truncate_from_name(const std::string& name);

class DocumentStream {
 public:
  // set outlives the stream. max_prompt: T, the prompt tokens a row of T can take.
  DocumentStream(const ShardSet& set, uint64_t max_prompt, Truncate truncate);

  uint64_t num_documents() const;
  uint64_t num_tokens() const;
  // Document d of the stream in stream offsets.
  DocumentSpan document(uint64_t d) const;
  // Whether document d was cut from the left.
  bool cut(uint64_t d) const { return !kept_.empty() && kept_[d].cut; }
  uint64_t document_of(uint64_t t) const;
  void copy_tokens(uint64_t begin, uint64_t count, int32_t* out) const;

  // What data.truncate changed: documents cut and their tokens dropped, documents left out.
  uint64_t cut_documents() const { return cut_documents_; }
  uint64_t cut_tokens() const { return cut_tokens_; }
  uint64_t skipped_documents() const { return skipped_documents_; }
  const ShardSet& set() const { return set_; }

 private:
  struct Kept {
    uint64_t begin, end, loss_start;  // in the set's offsets; loss start relative to begin
    uint64_t offset;                  // where it starts in the stream
    bool cut;
  };
  const ShardSet& set_;
  std::vector<Kept> kept_;  // empty: every document as stored (the common case, no copy)
  uint64_t tokens_ = 0;
  uint64_t cut_documents_ = 0, cut_tokens_ = 0, skipped_documents_ = 0;
};

}  // namespace trident::data
