#!/usr/bin/env bash
# Fuzzes trident's readers of outside input with libFuzzer (clang, AddressSanitizer and
# UndefinedBehaviorSanitizer): config files, JSON / JSONL lines, tokenizer.json, shard indexes,
# safetensors, checkpoint attributes and tensor shapes. Builds into build-fuzz/ and runs every
# target (or those named) for SECONDS each, starting from a scratch copy of its committed corpus
# (tests/fuzz/corpus/<target>/).
#   ./utils/fuzz.sh [--seconds N] [target ...]        (default 600 s each)
# A crash leaves its input as build-fuzz/findings/<target>/crash-*; add the fixed case to the
# corpus so the replay test in the normal build keeps it fixed.
set -euo pipefail
cd "$(dirname "$0")/.."
seconds=600
targets=()
while [ $# -gt 0 ]; do
  case "$1" in
    --seconds) seconds=$2; shift 2 ;;
    *) targets+=("$1"); shift ;;
  esac
done
command -v clang++ > /dev/null || { echo "fuzz.sh: clang++ not found (apt-get install clang)" >&2; exit 2; }
[ ${#targets[@]} -gt 0 ] || targets=($(cd tests/fuzz && ls fuzz_*.cpp | sed 's/\.cpp$//'))
cmake -S . -B build-fuzz -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_C_COMPILER=clang -DCMAKE_CXX_COMPILER=clang++ \
  -DTRIDENT_FUZZ=ON -DTRIDENT_CUDA=OFF > build-fuzz.log
cmake --build build-fuzz --target "${targets[@]}" -j"$(nproc)" >> build-fuzz.log
export ASAN_OPTIONS=${ASAN_OPTIONS:-detect_leaks=1:abort_on_error=1}
export UBSAN_OPTIONS=${UBSAN_OPTIONS:-print_stacktrace=1:halt_on_error=1}
status=0
for t in "${targets[@]}"; do
  work=build-fuzz/corpus/$t findings=build-fuzz/findings/$t
  rm -rf "$work" && mkdir -p "$work" "$findings" && cp -r tests/fuzz/corpus/"$t"/. "$work"/
  echo "== $t: ${seconds}s"
  if build-fuzz/tests/"$t" -max_total_time="$seconds" -max_len=65536 -timeout=10 -rss_limit_mb=2048 \
       -artifact_prefix="$findings/" "$work" > "$findings/log.txt" 2>&1; then
    grep -E "^#[0-9]+ *DONE|Done [0-9]+ runs" "$findings/log.txt" | tail -1
  else
    echo "fuzz.sh: $t found a problem: $(ls "$findings" | grep -v log.txt | head -3) (log: $findings/log.txt)"
    status=1
  fi
done
exit $status
