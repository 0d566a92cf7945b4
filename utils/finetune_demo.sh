#!/usr/bin/env bash
# LoRA fine-tuning demo, one command: the demo model (input/configs/demo.ini) learns to name the
# last digit of a random number ("Q: last digit of 48173\nA: 3") with rank-8 adapters on every
# projection (input/configs/finetune-lora.ini), on 2 MPI ranks (dp=2).
#   1. runs ./utils/demo.sh first (setup, build, ~5 min of pretraining) when the base checkpoint
#      runs/demo/checkpoints/step_00000300.h5 is missing;
#   2. writes the task (utils/make_finetune_data.py, when input/data/finetune/ lacks it) and
#      tokenises the training lines with trident prep into runs/finetune-data/train;
#   3. scores held-out exact match BEFORE fine-tuning (trident eval: LoRA's B starts at zero, so
#      the model is the base), fine-tunes (scoring every 50 steps), and prints both numbers.
# Leaves runs/finetune-lora/ (config.ini, metrics.jsonl, eval.jsonl, checkpoints/ with the
# adapters, report/). Extra arguments go to the fine-tuning run (e.g. --train.steps=100).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
config=input/configs/finetune-lora.ini
base=runs/demo/checkpoints/step_00000300.h5
run=runs/finetune-lora
data=runs/finetune-data/train
template='Q: {input}\nA: {output}'

if [[ ! -f $base ]]; then
  echo "finetune_demo: no base model at $base: pretraining it with ./utils/demo.sh first"
  ./utils/demo.sh
elif [[ ! -x build/trident ]]; then
  ./utils/setup.sh
  ./utils/build.sh --target trident
fi
# Open MPI refuses root unless told; more ranks than cores needs oversubscription.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

if [[ ! -f input/data/finetune/train.jsonl || ! -f input/data/finetune/heldout.jsonl ]]; then
  /usr/bin/python3 utils/make_finetune_data.py
fi
mkdir -p "$(dirname "$data")"
build/trident prep --input input/data/finetune/train.jsonl --output "$data" --template "$template"

rm -rf "$run"   # a fresh run: no checkpoint to resume, no earlier scores
echo "finetune_demo: held-out exact match of the base model (before fine-tuning)"
mpirun -np 2 build/trident eval --config "$config" --parallel.dp=2 --log.run_dir="$run"
echo "finetune_demo: LoRA fine-tuning"
mpirun -np 2 build/trident train --config "$config" --parallel.dp=2 --log.run_dir="$run" "$@"
/usr/bin/python3 utils/run_report.py "$run"

/usr/bin/python3 - "$run/eval.jsonl" "$((SECONDS - start))" <<'EOF'
import json, sys
rows = [json.loads(line) for line in open(sys.argv[1]) if line.strip()]
scores = {}
for r in rows:
    if r["metric"] in ("exact_match", "f1"):
        scores.setdefault(r["metric"], []).append((r["step"], 100 * r["value"]))  # fractions
em, f1 = scores["exact_match"], scores["f1"]
print("\nheld-out exact match during fine-tuning: "
      + ", ".join(f"step {s}: {v:.1f}%" for s, v in em))
print(f"finetune_demo: exact match {em[0][1]:.1f}% before -> {em[-1][1]:.1f}% after "
      f"(F1 {f1[0][1]:.1f}% -> {f1[-1][1]:.1f}%), {sys.argv[2]} s in all")
EOF
