#!/usr/bin/env bash
# CPU paths (docs/design.md section 1): the banner names the path; TRIDENT_CPU_ISA forcing each
# lower level of this processor gives the same loss curve (1e-5 relative); a bad or too high
# level exits 2 before any run directory exists. Under qemu-user (where installed): the build
# trains on an AVX2-only processor (Haswell) with the same curve, and a processor below the
# baseline (Nehalem: no AVX) gets one line naming what it lacks and exit 2, --help included.
# usage: cpu_paths.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
cfg=input/configs/tiny.ini
steps=3

# train NAME [ENV...]: three steps of tiny.ini into $work/NAME; the log in $work/NAME.log.
train() {
  local name=$1
  shift
  env "$@" "$trident" train --config $cfg --train.steps=$steps --log.run_dir="$work/$name" >"$work/$name.log" 2>&1
}
# same_curve A B: the losses of runs A and B agree within 1e-5 (relative), step by step.
same_curve() {
  python3 - "$work/$1/metrics.jsonl" "$work/$2/metrics.jsonl" <<'PY' || fail "$1 and $2: the curves differ"
import json, sys
a, b = ([json.loads(l)["loss"] for l in open(p) if '"loss"' in l] for p in sys.argv[1:])
assert len(a) == len(b) > 0, (a, b)
for x, y in zip(a, b):
    assert abs(x - y) <= 1e-5 * abs(x), (a, b)
print(f"  same curve: {a}")
PY
}

train best || fail "default run failed: $(cat "$work/best.log")"
best=$(sed -n 's/^cpu: \([a-z0-9_+]*\).*/\1/p' "$work/best.log")
[[ -n $best ]] || fail "no 'cpu:' line in the banner: $(head -20 "$work/best.log")"
echo "ok: this processor runs the $best path"

case $(uname -m) in
  x86_64) levels=(avx2 avx512 avx512_bf16 avx512_bf16+amx) ;;
  aarch64) levels=(neon sve) ;;
esac
above=""
for level in "${levels[@]}"; do
  if [[ $level == "$best" ]]; then
    above=yes
    continue
  fi
  if [[ -n $above ]]; then  # above this processor: refused
    train "$level" TRIDENT_CPU_ISA="$level"
    rc=$?
    [[ $rc -eq 2 ]] || fail "TRIDENT_CPU_ISA=$level above $best: exit $rc, want 2"
    grep -q "TRIDENT_CPU_ISA=$level is above what this processor offers ($best)" "$work/$level.log" ||
      fail "TRIDENT_CPU_ISA=$level: message: $(cat "$work/$level.log")"
    [[ ! -e "$work/$level" ]] || fail "TRIDENT_CPU_ISA=$level created the run directory"
    echo "ok: $level is above this processor: exit 2"
    continue
  fi
  train "$level" TRIDENT_CPU_ISA="$level" || fail "TRIDENT_CPU_ISA=$level failed: $(cat "$work/$level.log")"
  grep -q "^cpu: $level (TRIDENT_CPU_ISA; this processor has $best)" "$work/$level.log" ||
    fail "TRIDENT_CPU_ISA=$level: banner: $(grep '^cpu:' "$work/$level.log")"
  same_curve best "$level"
  echo "ok: forced $level"
done

train bogus TRIDENT_CPU_ISA=sse9
rc=$?
[[ $rc -eq 2 ]] || fail "TRIDENT_CPU_ISA=sse9: exit $rc, want 2"
grep -q "TRIDENT_CPU_ISA=sse9 names no CPU path of this build (" "$work/bogus.log" ||
  fail "TRIDENT_CPU_ISA=sse9: message: $(cat "$work/bogus.log")"
[[ ! -e "$work/bogus" ]] || fail "TRIDENT_CPU_ISA=sse9 created the run directory"
echo "ok: an unknown TRIDENT_CPU_ISA exits 2"

# Other processors, emulated (x86 builds only; the aarch64 build: utils/cross-check.sh).
qemu=$(command -v qemu-x86_64-static)
if [[ $(uname -m) != x86_64 || -z $qemu ]]; then
  echo "no qemu-x86_64-static here: the emulated processors are not checked"
  exit 0
fi
if grep -q "^cpu: .*-march=native" "$work/best.log"; then
  echo "a -DTRIDENT_NATIVE=ON build runs on its build machine only: the emulated processors are not checked"
  exit 0
fi
out=$("$qemu" -cpu Nehalem "$trident" --help 2>&1)
rc=$?
[[ $rc -eq 2 ]] || fail "Nehalem: exit $rc, want 2: $out"
[[ $(grep -vc "TCG doesn't support" <<<"$out") -eq 1 ]] || fail "Nehalem: want one line: $out"
grep -q "^trident: this processor lacks avx avx2 fma .*, which this build needs (built for x86-64-v3" <<<"$out" ||
  fail "Nehalem: message: $out"
echo "ok: below the baseline (Nehalem): one line, exit 2"

train haswell "$qemu" -cpu Haswell || fail "Haswell: $(cat "$work/haswell.log")"
grep -q "^cpu: avx2$" "$work/haswell.log" || fail "Haswell: banner: $(grep 'cpu:' "$work/haswell.log")"
same_curve best haswell
echo "ok: Haswell (AVX2, emulated) trains tiny.ini with the native curve"
