#!/usr/bin/env bash
# Differentially private LoRA fine-tuning demo, one command: the LoRA demo of
# ./utils/finetune_demo.sh (the demo model learns to name the last digit of a number) trained
# with DP-SGD at epsilon = 8, delta = 1/N (N = 4,000 training documents, each a privacy unit),
# beside the same adapters trained without privacy; prints both held-out exact matches.
#   1. runs ./utils/finetune_demo.sh first when runs/finetune-lora/eval.jsonl (the non-private
#      run's scores) is missing (which itself pretrains the base model when that is missing);
#   2. fine-tunes input/configs/finetune-lora.ini privately: Poisson sampling of 256 expected
#      documents per step (q = 0.064), each document's gradient clipped to privacy.clip, noise
#      sigma found by the PRV accountant for epsilon 8 over the 200 steps, on 2 ranks (dp = 2).
# Leaves runs/finetune-lora-dp/ (metrics.jsonl with epsilon per step, eval.jsonl, report/).
# Extra arguments go to the private run (e.g. --privacy.target_epsilon=3).
set -euo pipefail
cd "$(dirname "$0")/.."
start=$SECONDS
config=input/configs/finetune-lora.ini
plain=runs/finetune-lora
run=runs/finetune-lora-dp

if [[ ! -f $plain/eval.jsonl ]]; then
  echo "dp_finetune_demo: no non-private run at $plain: running ./utils/finetune_demo.sh first"
  ./utils/finetune_demo.sh
fi
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

rm -rf "$run"   # a fresh run: no checkpoint to resume, no earlier scores
echo "dp_finetune_demo: LoRA fine-tuning with differential privacy (epsilon 8)"
mpirun -np 2 build/trident train --config "$config" --parallel.dp=2 --log.run_dir="$run" \
  --privacy.enabled=true --privacy.target_epsilon=8 --privacy.clip=1.0 --train.global_batch=256 "$@"
/usr/bin/python3 utils/run_report.py "$run"

/usr/bin/python3 - "$plain" "$run" "$((SECONDS - start))" <<'PY'
import json, sys
def exact_match(run):
    rows = [json.loads(l) for l in open(run + "/eval.jsonl") if l.strip()]
    return [(r["step"], 100 * r["value"]) for r in rows if r["metric"] == "exact_match"]
plain, private = exact_match(sys.argv[1]), exact_match(sys.argv[2])
last = [json.loads(l) for l in open(sys.argv[2] + "/metrics.jsonl")][-1]
print("\nheld-out exact match with privacy: " + ", ".join(f"step {s}: {v:.1f}%" for s, v in private))
print(f"dp_finetune_demo: exact match {private[-1][1]:.1f}% at epsilon {last['epsilon']:.2f} "
      f"(delta 1/N) vs {plain[-1][1]:.1f}% without privacy (base model {plain[0][1]:.1f}%), "
      f"{sys.argv[3]} s in all")
PY
