#!/usr/bin/env bash
# End to end with Hugging Face models (tests/data/hf, utils/make_hf_fixtures.py): prep with the
# model directory's tokenizer.json, train from model.init_from = DIR under tp=2 and pp=2 (the
# first loss equal to the single-rank one), convert the checkpoint back to an HF directory
# (with the tokenizer), convert an HF model in and train from it as init_from and as resume,
# and reject [model] keys that contradict config.json.
# usage: hf_models.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
hf=tests/data/hf
common=(--model.seq_len=16 --train.steps=2 --train.global_batch=4 --train.micro_batch=2 --train.warmup=0)

"$trident" prep --input README.md --output "$work/gpt2_data" --tokenizer "$hf/gpt2" > /dev/null
grep -q "tokenizer.json" "$work/gpt2_data.prep.json" || fail "prep.json does not name the model's tokenizer"

first_loss() { python3 -c "import json,sys; print(json.loads(open(sys.argv[1]).readline())['loss'])" "$1/metrics.jsonl"; }
same() { python3 -c "import sys; a,b=float(sys.argv[1]),float(sys.argv[2]); sys.exit(abs(a-b) > 1e-5*abs(a))" "$1" "$2"; }

run() {  # run NAME RANKS ARGS...
  local name=$1 ranks=$2
  shift 2
  mpirun -np "$ranks" "$trident" train "${common[@]}" --log.run_dir="$work/$name" "$@" > "$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "$name"; }
}
run single 1 --model.init_from="$hf/gpt2" --data.train="$work/gpt2_data" --checkpoint.interval=2
run tp2 2 --model.init_from="$hf/gpt2" --data.train="$work/gpt2_data" --parallel.tp=2
run pp2 2 --model.init_from="$hf/gpt2" --data.train="$work/gpt2_data" --parallel.pp=2
grep -q "initialised from $hf/gpt2; its tokenizer: $hf/gpt2/tokenizer.json" "$work/single.log" || fail "no init line"
grep -q "^vocab = 301" "$work/single/config.ini" || fail "config.ini does not show config.json's vocab"
same "$(first_loss "$work/single")" "$(first_loss "$work/tp2")" || fail "tp=2 first loss differs"
same "$(first_loss "$work/pp2")" "$(first_loss "$work/single")" || fail "pp=2 first loss differs"

"$trident" convert --to hf --input "$work/single/checkpoints/step_00000002.h5" --output "$work/out" > /dev/null
for f in config.json model.safetensors tokenizer.json; do [[ -f $work/out/$f ]] || fail "convert --to hf: no $f"; done
grep -q '"model_type":"gpt2"' "$work/out/config.json" || fail "config.json"
# The export keeps the imported model's 32 positions (the run trained at seq_len 16), writes
# generation_config.json, and stores bf16 when asked.
"$trident" convert --to hf --dtype bf16 --input "$work/single/checkpoints/step_00000002.h5" --output "$work/out16" > /dev/null
python3 - "$work/out" "$work/out16" <<'PY'
import json, sys
def header(d):
    raw = open(d + "/model.safetensors", "rb").read()
    return json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
out, out16 = sys.argv[1:]
cfg = json.load(open(out + "/config.json"))
assert cfg["n_positions"] == 32 and header(out)["transformer.wpe.weight"]["shape"] == [32, 32], cfg
assert cfg.get("eos_token_id") is None, cfg  # the fixture's 50256 names no token of its 301
assert "eos_token_id" in json.load(open(out + "/generation_config.json"))
h16 = header(out16)
assert all(v["dtype"] == "BF16" for k, v in h16.items() if k != "__metadata__"), h16
assert json.load(open(out16 + "/config.json"))["dtype"] == "bfloat16"
PY
# Each transformers 5 fixture through a checkpoint and back: the same family and settings.
for m in llama3_rope llama_linear qwen3 mistral qwen2_window; do
  "$trident" convert --from hf --input "$hf/$m" --output "$work/$m.h5" > /dev/null
  "$trident" convert --to hf --input "$work/$m.h5" --output "$work/$m.out" > /dev/null
  python3 - "$hf/$m/config.json" "$work/$m.out/config.json" <<'PY' || fail "$m: the exported config.json differs"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
keys = ["model_type", "hidden_size", "num_attention_heads", "num_key_value_heads", "head_dim", "max_position_embeddings",
        "rope_parameters", "sliding_window", "use_sliding_window", "layer_types", "attention_bias", "bos_token_id",
        "eos_token_id", "pad_token_id", "tie_word_embeddings"]
diff = {k: (a.get(k), b.get(k)) for k in keys if k in a and a.get(k) != b.get(k)}
assert not diff, diff
PY
done

# An HF Llama converted in: as init_from it starts where the HF directory does; as resume too.
"$trident" prep --input README.md --output "$work/bytes" --tokenizer byte > /dev/null
"$trident" convert --from hf --input "$hf/llama" --output "$work/llama.h5" > /dev/null
run llama_dir 1 --model.init_from="$hf/llama" --data.train="$work/bytes"
run llama_h5 2 --model.init_from="$work/llama.h5" --data.train="$work/bytes" --parallel.tp=2
same "$(first_loss "$work/llama_dir")" "$(first_loss "$work/llama_h5")" || fail "init_from .h5 differs from the directory"
run llama_resume 1 --model.arch=llama --model.layers=2 --model.hidden=32 --model.heads=4 \
  --model.kv_heads=2 --model.ffn_hidden=64 --model.vocab=260 --model.tie_embeddings=false --model.norm_eps=1e-6 \
  --model.rope_theta=500000 --checkpoint.resume="$work/llama.h5" --data.train="$work/bytes"
grep -q "resumed from $work/llama.h5: 0 steps done" "$work/llama_resume.log" || fail "resume from a converted checkpoint"

# A [model] key that contradicts config.json stops the run before any work.
rc=0
"$trident" train --model.init_from="$hf/llama" --model.hidden=64 --data.train="$work/bytes" \
  --log.run_dir="$work/conflict" > /dev/null 2> "$work/conflict.err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "model.hidden = 64 conflicts with model.init_from" "$work/conflict.err" ||
  fail "conflicting key: exit $rc, $(cat "$work/conflict.err")"
echo "hf_models: ok"
