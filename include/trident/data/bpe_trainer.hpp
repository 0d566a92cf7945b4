// Byte-level BPE training (GPT-2 scheme) on the user's corpus, written as a Hugging Face
// tokenizer.json that both `load_tokenizer` and the `tokenizers` library load and encode alike.
//
// Call from prep (src/cli/prep_command.cpp):
//   trident::data::BpeTrainingReport report =
//       trident::data::train_bpe_tokenizer(input_paths, vocab_size, output_path);
//
// Inputs: a *.jsonl file contributes every string value of every line (each value its own
// text; nested arrays/objects walked too); any other file is one text, read whole.
// Pre-tokenisation: GPT-2's regex over the text, then bytes mapped to GPT-2's byte-level
// alphabet. Vocabulary layout: ids 0..255 the 256 single bytes (in byte order), id 256
// "<|endoftext|>" (special, the same id as the built-in byte tokenizer's end of text), then one
// id per merge in merge order, up to vocab_size ids in all (fewer if the corpus runs out of
// pairs occurring at least `min_frequency` times; a merge whose result is already a token adds no
// id). Deterministic: ties between equally frequent pairs go to the smallest (left id, right id).
// "<|endoftext|>" written in the corpus is cut out before counting.
// Errors: ConfigError for vocab_size < 257, unreadable files, malformed JSONL (file:line named),
// invalid UTF-8, and an output path that cannot be written (written to PATH.tmp, then renamed).
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace trident::data {

struct BpeTrainingReport {
  uint64_t bytes_read = 0;      // text bytes seen (JSONL: the string values only)
  uint64_t words = 0;           // pre-tokens in the corpus
  uint64_t unique_words = 0;    // distinct pre-tokens (what the merges run over)
  uint64_t merges = 0;          // merges learned
  uint64_t vocab_size = 0;      // ids in the written tokenizer (257 + merges)
  double seconds = 0;           // wall time, reading included
};

BpeTrainingReport train_bpe_tokenizer(const std::vector<std::string>& inputs, uint64_t vocab_size,
                                      const std::string& output_path, uint64_t min_frequency = 2);

}  // namespace trident::data
