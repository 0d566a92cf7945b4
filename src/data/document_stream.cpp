// The sampler's documents: fine-tuning examples cut to fit a row, or left out.
#include "trident/data/document_stream.hpp"

#include <algorithm>

#include "trident/core/error.hpp"

namespace trident::data {

Truncate truncate_from_name(const std::string& name) {
  if (name == "left") return Truncate::kLeft;
  if (name == "skip") return Truncate::kSkip;
  throw ConfigError("data.truncate must be left or skip (got '" + name + "')");
}

DocumentStream::DocumentStream(const ShardSet& set, uint64_t max_prompt, Truncate truncate) : set_(set) {
  tokens_ = set.num_tokens();
  if (!set.has_loss_starts()) return;  // plain text only: nothing is ever cut
  // A prompt too long for a row, followed by an answer (a document of prompt alone trains
  // nothing anywhere and is left as it is).
  auto too_long = [&](const DocumentSpan& d) { return d.loss_start > max_prompt && d.loss_start < d.size(); };
  bool any = false;
  for (uint64_t d = 0; d < set.num_documents() && !any; ++d) any = too_long(set.document(d));
  if (!any) return;
  uint64_t offset = 0;
  for (uint64_t d = 0; d < set.num_documents(); ++d) {
    DocumentSpan doc = set.document(d);
    bool cut = false;
    if (too_long(doc)) {
      if (truncate == Truncate::kSkip) {
        ++skipped_documents_;
        continue;
      }
      const uint64_t drop = doc.loss_start - max_prompt;
      doc.begin += drop;
      doc.loss_start = max_prompt;
      cut = true;
      ++cut_documents_;
      cut_tokens_ += drop;
    }
    kept_.push_back({doc.begin, doc.end, doc.loss_start, offset, cut});
    offset += doc.size();
  }
  tokens_ = offset;
}

uint64_t DocumentStream::num_documents() const { return kept_.empty() ? set_.num_documents() : kept_.size(); }

uint64_t DocumentStream::num_tokens() const { return tokens_; }

DocumentSpan DocumentStream::document(uint64_t d) const {
  if (kept_.empty()) return set_.document(d);
  const Kept& k = kept_[d];
  return {k.offset, k.offset + (k.end - k.begin), k.loss_start};
}

uint64_t DocumentStream::document_of(uint64_t t) const {
  if (kept_.empty()) return set_.document_of(t);
  TRIDENT_CHECK(t < tokens_, "token ", t, " of ", tokens_);
  // Last kept document starting at or before t (an empty one is passed over by the caller).
  const auto it = std::upper_bound(kept_.begin(), kept_.end(), t, [](uint64_t v, const Kept& k) { return v < k.offset; });
  return static_cast<uint64_t>(it - kept_.begin()) - 1;
}

void DocumentStream::copy_tokens(uint64_t begin, uint64_t count, int32_t* out) const {
  if (kept_.empty()) return set_.copy_tokens(begin, count, out);
  TRIDENT_CHECK(begin <= tokens_ && count <= tokens_ - begin, "tokens [", begin, ", ", begin + count, ") of ", tokens_);
  for (uint64_t d = count ? document_of(begin) : 0; count > 0; ++d) {
    const Kept& k = kept_[d];
    const uint64_t within = begin - k.offset, n = std::min(count, (k.end - k.begin) - within);
    set_.copy_tokens(k.begin + within, n, out);
    out += n, begin += n, count -= n;
  }
}

}  // namespace trident::data
