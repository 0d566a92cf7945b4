#!/usr/bin/env bash
# Evaluation of the demo model beyond perplexity: a generated multiple-choice suite (arithmetic,
# last digit, dates, key-value lookup, reversal, sorting; three levels) scored clean and under every robustness
# perturbation, and out-of-distribution detection of Debian's copyright texts against held-out
# Python sources; then the HTML report. Trains the demo first (./utils/demo.sh) when its final
# checkpoint is missing. Results: runs/demo-eval/ (eval.jsonl, ood/, report/report.html).
set -euo pipefail
cd "$(dirname "$0")/.."
checkpoint=runs/demo/checkpoints/step_00000300.h5
[[ -f $checkpoint ]] || ./utils/demo.sh
./utils/build.sh --target trident
./utils/prepare_data.sh
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
out=runs/demo-eval
mkdir -p "$out"
suite=$out/suite.jsonl
[[ -f $suite ]] || build/trident evalgen --suite arithmetic,last_digit,date,kv_lookup,reverse,sort --levels easy,medium,hard --n 30 \
  --seed 1 --format choice --choices 4 --output "$suite"
mpirun -np 2 build/trident eval --config input/configs/demo.ini --checkpoint "$checkpoint" --parallel.dp=2 \
  --log.run_dir="$out" --eval.task="$suite" --eval.perturb=typo,case,whitespace,shuffle_choices,distractor \
  --ood input/data/debian-doc "$@"
/usr/bin/python3 utils/run_report.py "$out"
