#!/usr/bin/env bash
# Differentially private LoRA fine-tuning demo, one command: the LoRA demo task of
# ./utils/finetune_demo.sh (the demo model learns to name the last digit of a number), here on
# 40,000 training lines, fine-tuned twice with the same adapters (input/configs/finetune-lora.ini)
# on 2 ranks (dp = 2), and both held-out exact matches printed:
#   1. without privacy: the config as it is (200 steps of 16 packed rows);
#   2. with DP-SGD at epsilon = 8, delta = 1/N (N = 40,000 documents, each a privacy unit):
#      Poisson sampling of 512 expected documents per step (q = 0.0128), each document's
#      gradient clipped to 1, the noise sigma the PRV accountant finds for epsilon 8 over the
#      200 steps (about 0.51).
# Runs ./utils/demo.sh first when the base checkpoint runs/demo/checkpoints/step_00000300.h5 is
# missing. Leaves runs/dp-finetune-data/ (the task), runs/finetune-lora-40k/ and
# runs/finetune-lora-dp/ (metrics.jsonl with epsilon per step, eval.jsonl, report/).
# Extra arguments go to the private run (e.g. --privacy.target_epsilon=3).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
config=input/configs/finetune-lora.ini
base=runs/demo/checkpoints/step_00000300.h5
task=runs/dp-finetune-data
plain=runs/finetune-lora-40k
run=runs/finetune-lora-dp
template='Q: {input}\nA: {output}'

if [[ ! -f $base ]]; then
  echo "dp_finetune_demo: no base model at $base: pretraining it with ./utils/demo.sh first"
  ./utils/demo.sh
elif [[ ! -x build/trident ]]; then
  ./utils/setup.sh
  ./utils/build.sh --target trident
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

if [[ ! -f $task/train.jsonl || ! -f $task/heldout.jsonl ]]; then
  /usr/bin/python3 utils/make_finetune_data.py --train 40000 --output "$task"
fi
build/trident prep --input "$task/train.jsonl" --output "$task/train" --template "$template"
data=(--data.train="$task/train" --eval.task="$task/heldout.jsonl" --parallel.dp=2)

rm -rf "$plain" "$run"   # fresh runs: no checkpoint to resume, no earlier scores
echo "dp_finetune_demo: held-out exact match of the base model"
mpirun -np 2 build/trident eval --config "$config" "${data[@]}" --log.run_dir="$plain"
echo "dp_finetune_demo: LoRA fine-tuning without privacy"
mpirun -np 2 build/trident train --config "$config" "${data[@]}" --log.run_dir="$plain"
echo "dp_finetune_demo: LoRA fine-tuning with differential privacy (epsilon 8)"
mpirun -np 2 build/trident train --config "$config" "${data[@]}" --log.run_dir="$run" \
  --privacy.enabled=true --privacy.target_epsilon=8 --privacy.clip=1.0 --train.global_batch=512 "$@"
/usr/bin/python3 utils/run_report.py "$plain"
/usr/bin/python3 utils/run_report.py "$run"

/usr/bin/python3 - "$plain" "$run" "$((SECONDS - start))" <<'PY'
import json, sys
def exact_match(run):
    rows = [json.loads(l) for l in open(run + "/eval.jsonl") if l.strip()]
    return [(r["step"], 100 * r["value"]) for r in rows if r["metric"] == "exact_match"]
plain, private = exact_match(sys.argv[1]), exact_match(sys.argv[2])
last = [json.loads(l) for l in open(sys.argv[2] + "/metrics.jsonl")][-1]
for name, scores in (("without privacy", plain), ("with privacy", private)):
    print(f"held-out exact match {name}: " + ", ".join(f"step {s}: {v:.1f}%" for s, v in scores))
print(f"dp_finetune_demo: exact match {private[-1][1]:.1f}% at epsilon {last['epsilon']:.2f} (delta 1/N) "
      f"vs {plain[-1][1]:.1f}% without privacy (base model {plain[0][1]:.1f}%), {sys.argv[3]} s in all")
PY
