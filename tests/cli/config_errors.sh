#!/usr/bin/env bash
# Bad configuration and command lines: each gives exit code 2 and a message naming the key
# and the rule, before any work (no run directory is created).
# usage: config_errors.sh TRIDENT SOURCE_DIR
set -uo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
failures=0

# expect CODE PATTERN ARGS...: run trident ARGS, check the exit code and that stderr matches.
expect() {
  local code=$1 pattern=$2
  shift 2
  local out rc
  out=$("$trident" "$@" 2>&1 >/dev/null)
  rc=$?
  if [[ $rc -ne $code ]] || ! grep -qE -- "$pattern" <<<"$out"; then
    echo "FAIL: trident $* -> exit $rc (want $code), stderr: $out (want /$pattern/)"
    failures=$((failures + 1))
  else
    echo "ok: trident $* -> $rc: $out"
  fi
}

cfg=input/configs/tiny.ini
run="--log.run_dir=$work/run"
cat > "$work/unknown.ini" <<'INI'
[model]
layers = 2
colour = blue
INI
cat > "$work/badtype.ini" <<'INI'
[train]
steps = many
INI

expect 2 "unknown configuration key 'model.colour'" train --config "$work/unknown.ini" $run
expect 2 "unknown configuration key.*model.nope" train --config $cfg --model.nope=3 $run
expect 2 "train.steps: expected an integer, got 'many'" train --config "$work/badtype.ini" $run
expect 2 "model.hidden: expected an integer, got '6x4'" train --config $cfg --model.hidden=6x4 $run
expect 2 "train.lr: expected a number" train --config $cfg --train.lr=fast $run
expect 2 "model.tie_embeddings: expected true or false" train --config $cfg --model.tie_embeddings=maybe $run
expect 2 "model.heads = 5 must divide model.hidden = 64" train --config $cfg --model.heads=5 $run
expect 2 "model.kv_heads = 3 must divide model.heads = 4" train --config $cfg --model.arch=llama --model.kv_heads=3 $run
expect 2 "model.arch: unknown architecture 'bert'" train --config $cfg --model.arch=bert $run
expect 2 "world size must equal dp\*tp\*pp" train --config $cfg --parallel.dp=2 $run
expect 2 "train.global_batch = 15 must be divisible by train.micro_batch" train --config $cfg --train.global_batch=15 $run
expect 2 "train.decay: unknown schedule 'step'" train --config $cfg --train.decay=step $run
expect 2 "parallel.virtual_stages = 2 needs parallel.schedule = interleaved" train --config $cfg --parallel.virtual_stages=2 $run
expect 2 "parallel.schedule: unknown schedule 'zigzag'" train --config $cfg --parallel.schedule=zigzag $run
expect 2 "model.layers = 8 must be >= parallel.pp \* parallel.virtual_stages = 12" train --config $cfg --parallel.pp=3 --parallel.schedule=interleaved --parallel.virtual_stages=4 $run
expect 2 "train.precision must be fp32, bf16, fp16 or auto \(got fp64\)" train --config $cfg --train.precision=fp64 $run
expect 2 "train.loss_scale: expected dynamic or a positive number, got '-3'" train --config $cfg --train.precision=fp16 --train.loss_scale=-3 $run
expect 2 "model.heads = 4 must be divisible by parallel.tp = 3" train --config $cfg --parallel.tp=3 $run
expect 2 "model.kv_heads = 2 must be divisible by parallel.tp = 4" train --config $cfg --model.arch=llama --model.kv_heads=2 --parallel.tp=4 $run
expect 2 "cannot read config file" train --config "$work/missing.ini" $run
expect 2 "data.train.*(not found|cannot open|no token shards)" train --config $cfg --data.train="$work/nothing" $run
# Numbers are finite and within range; paths are of the right kind; the file is bounded.
for key in train.lr train.weight_decay train.eps model.norm_eps; do
  expect 2 "$key: expected a finite number, got 'inf'" train --config $cfg --$key=inf $run
done
expect 2 "lora.alpha: expected a finite number, got 'infinity'" train --config $cfg --lora.enabled=true --lora.alpha=infinity $run
expect 2 "train.lr: expected a finite number, got 'nan'" train --config $cfg --train.lr=nan $run
expect 2 "train.threads must be in \[0, [0-9]+\] \(this machine's cores" train --config $cfg --train.threads=100000 $run
expect 2 "--config $work: a directory, not a config file" train --config "$work" $run
expect 2 "--config /dev/zero: larger than 1 MiB" train --config /dev/zero $run
touch "$work/a-file"
expect 2 "log.run_dir = $work/a-file exists and is not a directory" train --config $cfg --log.run_dir="$work/a-file"
expect 2 "checkpoint.dir = $work/a-file exists and is not a directory" train --config $cfg --checkpoint.dir="$work/a-file" $run
expect 2 "parallel.dp = 2 with parallel.layout = auto: the planner chooses it" train --config $cfg --parallel.layout=auto --parallel.dp=2 $run
expect 2 "parallel.layout must be manual or auto" train --config $cfg --parallel.layout=elastic $run
expect 2 "parallel.cluster must be local, a100-80g, h100-sxm or h200" train --config $cfg --parallel.cluster=tpu $run
expect 2 "parallel.layout = auto: no layout of 1 ranks fits on h100-sxm" train --config $cfg --parallel.layout=auto --parallel.cluster=h100-sxm --model.layers=400 --model.hidden=8192 --model.heads=64 --model.ffn_hidden=32768 $run
expect 2 "checkpoint.resume: $work is a directory, not a checkpoint file" train --config $cfg --checkpoint.resume="$work" $run
expect 2 "checkpoint.resume: checkpoint $work/none.h5 not found" eval --config $cfg --checkpoint "$work/none.h5" $run
long_name=/$(printf 'x%.0s' $(seq 300))  # a name the file system refuses: named, not an exception
expect 2 "checkpoint.resume = $long_name: File name too long" train --config $cfg --checkpoint.resume="$long_name" $run
expect 2 "log.run_dir = $long_name: File name too long" train --config $cfg --log.run_dir="$long_name"
expect 2 "checkpoint.on_error must be fail or warn" train --config $cfg --checkpoint.on_error=ignore $run
expect 2 "unknown command 'fly'" fly
expect 2 "'--input' is required" prep --output "$work/x"

# A byte-order mark opening the file (Windows editors) is not a configuration error.
printf '\xef\xbb\xbf' > "$work/bom.ini"
cat $cfg >> "$work/bom.ini"
if "$trident" train --config "$work/bom.ini" --train.steps=1 --log.run_dir="$work/bom" > "$work/bom.log" 2>&1; then
  echo "ok: a config file opening with a UTF-8 BOM is read"
else
  echo "FAIL: a config file opening with a UTF-8 BOM: $(tail -n 2 "$work/bom.log")"
  failures=$((failures + 1))
fi
# A config.ini that cannot be written is an error naming it, not a run without its record.
mkdir -p "$work/nocfg/config.ini"
expect 2 "cannot write $work/nocfg/config.ini" train --config $cfg --train.steps=1 --log.run_dir="$work/nocfg"

if [[ -e $work/run ]]; then
  echo "FAIL: a rejected configuration created its run directory"
  failures=$((failures + 1))
fi
[[ $failures -eq 0 ]] && echo "all config error cases passed"
exit $((failures > 0))
