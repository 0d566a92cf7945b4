#!/usr/bin/env bash
# LoRA end to end on the tiny Llama fixture (tests/data/hf/llama) and byte-level data: the run
# reports its trainable share and trains only the adapters; `convert --to peft` writes a PEFT
# adapter directory; the LoRA checkpoint, the base + that adapter (lora.init_from) and the
# merged model (`convert --to peft --merge`) evaluate to the same perplexity; the adapter names
# its HF base (followed through a converted checkpoint) or, with none known, a base written next
# to it; trident reads its own GPT-2 export (q and v joined into one c_attn adapter of rank 2r,
# rank_pattern); bad LoRA input is a clear error.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

base=tests/data/hf/llama
run="$work/run"
model=(--model.init_from=$base --model.seq_len=32 --train.micro_batch=2 --train.global_batch=8 --log.eval_batches=2
       --data.train=input/data/pystdlib --data.valid=input/data/pystdlib-valid --train.threads=1)
lora=(--lora.enabled=true --lora.r=4 --lora.alpha=8 --lora.targets=q,k,v,o,gate,up,down)
mpirun -np 2 "$trident" train "${model[@]}" "${lora[@]}" --parallel.dp=2 --train.steps=8 --train.lr=1e-2 \
  --checkpoint.interval=8 --log.run_dir="$run" > "$work/train.log"
grep -q "LoRA: rank 4, alpha 8 on q,k,v,o,gate,up,down: 4096 trainable parameters" "$work/train.log" \
  || fail "no LoRA summary: $(grep -i lora "$work/train.log")"
python3 - "$run/metrics.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
assert all(l["trainable_params"] == 4096 for l in lines), lines[0]
assert lines[-1]["loss"] < lines[0]["loss"], [l["loss"] for l in lines]
print(f"LoRA loss {lines[0]['loss']:.4f} -> {lines[-1]['loss']:.4f}, optimizer state {lines[0]['optim_state_mb']:.3f} MiB")
PY
ckpt="$run/checkpoints/step_00000008.h5"

"$trident" convert --to peft --input "$ckpt" --output "$work/peft" > /dev/null
"$trident" convert --to peft --merge --input "$ckpt" --output "$work/merged" > /dev/null
python3 - "$work/peft" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1] + "/adapter_config.json"))
assert cfg["peft_type"] == "LORA" and cfg["r"] == 4 and cfg["lora_alpha"] == 8, cfg
assert sorted(cfg["target_modules"]) == sorted(["self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj",
    "self_attn.o_proj", "mlp.gate_proj", "mlp.up_proj", "mlp.down_proj"]), cfg["target_modules"]
raw = open(sys.argv[1] + "/adapter_model.safetensors", "rb").read()
header = json.loads(raw[8:8 + int.from_bytes(raw[:8], "little")])
assert header["base_model.model.model.layers.1.mlp.down_proj.lora_A.weight"]["shape"] == [4, 64], header
assert len([k for k in header if k != "__metadata__"]) == 2 * 7 * 2
PY

# One perplexity three ways: the LoRA checkpoint, base + PEFT adapter, the merged model.
eval_args=(--model.seq_len=32 --train.micro_batch=2 --train.global_batch=8 --log.eval_batches=2
           --data.valid=input/data/pystdlib-valid --train.threads=1)
"$trident" eval "${model[@]}" "${lora[@]}" --log.run_dir="$run" > /dev/null
"$trident" eval --model.init_from=$base "${eval_args[@]}" "${lora[@]}" --lora.init_from="$work/peft" \
  --log.run_dir="$work/adapter" > /dev/null
"$trident" eval --model.init_from="$work/merged" "${eval_args[@]}" --log.run_dir="$work/merged_run" > /dev/null
"$trident" eval --model.init_from=$base "${eval_args[@]}" --log.run_dir="$work/base_run" > /dev/null
python3 - "$run/eval.jsonl" "$work/adapter/eval.jsonl" "$work/merged_run/eval.jsonl" "$work/base_run/eval.jsonl" <<'PY'
import json, sys
ppl = [[json.loads(l)["value"] for l in open(p) if json.loads(l)["metric"] == "perplexity"][-1] for p in sys.argv[1:]]
lora, adapter, merged, base = ppl
assert abs(adapter - lora) <= 1e-6 * lora, ppl
assert abs(merged - lora) <= 1e-5 * lora, ppl
assert abs(base - lora) > 1e-3 * lora, f"the adapters changed nothing: {ppl}"
print(f"perplexity: LoRA checkpoint {lora:.6f}, base + PEFT adapter {adapter:.6f}, merged {merged:.6f}, base {base:.6f}")
PY

# base_model_name_or_path: the HF directory the run started from.
python3 - "$work/peft/adapter_config.json" "$(cd $base && pwd)" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
assert cfg["base_model_name_or_path"] == sys.argv[2], (cfg["base_model_name_or_path"], sys.argv[2])
PY

# GPT-2: LoRA on q and v, exported (one c_attn adapter of rank 8 per layer, rank_pattern) and
# read back by trident: the same perplexity as the checkpoint. The run starts from a converted
# checkpoint, whose own init_from leads to the HF base.
gpt2=tests/data/hf/gpt2
"$trident" convert --from hf --input $gpt2 --output "$work/gpt2.h5" > /dev/null
g_model=(--model.init_from="$work/gpt2.h5" --model.seq_len=32 --train.micro_batch=2 --train.global_batch=4
         --log.eval_batches=2 --data.train=input/data/pystdlib --data.valid=input/data/pystdlib-valid --train.threads=1)
g_lora=(--lora.enabled=true --lora.r=4 --lora.alpha=8 --lora.targets=q,v,o)
"$trident" train "${g_model[@]}" "${g_lora[@]}" --train.steps=4 --train.lr=1e-2 --checkpoint.interval=4 \
  --log.run_dir="$work/g_run" > /dev/null
"$trident" convert --to peft --input "$work/g_run/checkpoints/step_00000004.h5" --output "$work/g_peft" > /dev/null
python3 - "$work/g_peft/adapter_config.json" "$(cd $gpt2 && pwd)" <<'PY'
import json, sys
cfg = json.load(open(sys.argv[1]))
assert cfg["rank_pattern"] == {"c_attn": 8} and cfg["alpha_pattern"] == {"c_attn": 16}, cfg
assert cfg["base_model_name_or_path"] == sys.argv[2], cfg["base_model_name_or_path"]
PY
"$trident" eval "${g_model[@]}" "${g_lora[@]}" --log.run_dir="$work/g_run" > /dev/null
"$trident" eval --model.init_from=$gpt2 --model.seq_len=32 --train.micro_batch=2 --train.global_batch=4 \
  --log.eval_batches=2 --data.valid=input/data/pystdlib-valid --train.threads=1 "${g_lora[@]}" \
  --lora.init_from="$work/g_peft" --log.run_dir="$work/g_adapter" > /dev/null
python3 - "$work/g_run/eval.jsonl" "$work/g_adapter/eval.jsonl" <<'PY'
import json, sys
ppl = [[json.loads(l)["value"] for l in open(p) if json.loads(l)["metric"] == "perplexity"][-1] for p in sys.argv[1:]]
assert abs(ppl[0] - ppl[1]) <= 1e-6 * ppl[0], ppl
print(f"GPT-2 LoRA perplexity: checkpoint {ppl[0]:.6f}, trident's own PEFT export read back {ppl[1]:.6f}")
PY

# No HF base known (a LoRA run on a model trained from scratch): the export writes the base.
"$trident" train --config input/configs/tiny.ini --model.layers=2 --train.steps=2 --checkpoint.interval=2 \
  --log.run_dir="$work/scratch" > /dev/null
"$trident" train --config input/configs/tiny.ini --model.layers=2 --model.init_from="$work/scratch/checkpoints/step_00000002.h5" \
  "${g_lora[@]}" --train.steps=2 --checkpoint.interval=2 --log.run_dir="$work/scratch_lora" > /dev/null
"$trident" convert --to peft --input "$work/scratch_lora/checkpoints/step_00000002.h5" --output "$work/s_peft" > /dev/null
python3 - "$work/s_peft" <<'PY'
import json, os, sys
cfg = json.load(open(sys.argv[1] + "/adapter_config.json"))
base = cfg["base_model_name_or_path"]
assert base == os.path.abspath(sys.argv[1] + "/base"), base
assert os.path.isfile(base + "/model.safetensors") and os.path.isfile(base + "/config.json"), os.listdir(base)
PY

expect_error() {  # expect_error PATTERN COMMAND...: exit 2 and PATTERN in the message
  local pattern=$1 code
  shift
  set +e
  "$@" > "$work/err" 2>&1; code=$?
  set -e
  [ "$code" -eq 2 ] || fail "$*: exit $code, want 2: $(cat "$work/err")"
  grep -q -- "$pattern" "$work/err" || fail "$*: unclear message: $(cat "$work/err")"
}
"$trident" convert --from hf --input $base --output "$work/full.h5" > /dev/null
expect_error "was not trained with LoRA" "$trident" convert --to peft --input "$work/full.h5" --output "$work/x"
expect_error "gate needs arch = llama" "$trident" train --config input/configs/tiny.ini --lora.enabled=true --lora.targets=q,gate
expect_error "lora.targets = 'q,x'" "$trident" train --config input/configs/tiny.ini --lora.enabled=true --lora.targets=q,x
expect_error "lora.dropout must be in \[0, 1)" "$trident" train --config input/configs/tiny.ini --lora.enabled=true --lora.dropout=1.5
expect_error "r = 4, lora_alpha = 8 but lora.r = 8" "$trident" eval --model.init_from=$base "${eval_args[@]}" \
  --lora.enabled=true --lora.r=8 --lora.alpha=16 --lora.targets=q,k,v,o,gate,up,down --lora.init_from="$work/peft" \
  --log.run_dir="$work/bad"
echo "lora: ok"
