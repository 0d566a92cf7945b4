#!/usr/bin/env bash
# Evaluation end to end: log.eval_interval evaluates during training and writes eval.jsonl;
# `trident eval` of the final checkpoint gives the same perplexity and accuracy under dp=2,
# tp=2 and pp=2 as on one rank (and as the in-training evaluation at that step).
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1

run="$work/run"
common=(--config input/configs/tiny.ini --log.run_dir="$run" --log.eval_batches=3)
"$trident" train "${common[@]}" --train.steps=6 --log.eval_interval=3 --checkpoint.interval=6 > "$work/train.log"
grep -q "eval at step 3" "$work/train.log" || fail "no evaluation at step 3: $(cat "$work/train.log")"
grep -q "perplexity" "$work/train.log" || fail "no perplexity in the training log"

"$trident" eval "${common[@]}" > "$work/eval1.log"
mpirun -np 2 "$trident" eval "${common[@]}" --parallel.dp=2 > "$work/eval_dp2.log"
mpirun -np 2 "$trident" eval "${common[@]}" --parallel.tp=2 > "$work/eval_tp2.log"
mpirun -np 2 "$trident" eval "${common[@]}" --parallel.pp=2 > "$work/eval_pp2.log"

python3 - "$run/eval.jsonl" <<'PY'
import json, math, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
for l in lines:
    assert set(l) == {"step", "metric", "value", "dataset"}, l
by_run = {}
for l in lines:
    by_run.setdefault(l["metric"], []).append((l["step"], l["value"]))
ppl, acc = by_run["perplexity"], by_run["accuracy"]
# training: steps 3 and 6; then eval of the step-6 checkpoint under 1, dp2, tp2, pp2
assert [s for s, _ in ppl] == [3, 6, 6, 6, 6, 6], ppl
assert ppl[1][1] < ppl[0][1], f"perplexity did not fall: {ppl}"
assert 1 < ppl[1][1] < 320, ppl
ref_ppl, ref_acc = ppl[1][1], acc[1][1]
for (step, p), (_, a) in zip(ppl[2:], acc[2:]):
    assert abs(p - ref_ppl) <= 1e-5 * ref_ppl, f"perplexity {p} vs {ref_ppl}"
    assert abs(a - ref_acc) <= 1e-3, f"accuracy {a} vs {ref_acc}"
print(f"perplexity {ref_ppl:.4f}, accuracy {ref_acc:.4f}: equal under 1 rank, dp=2, tp=2, pp=2")
PY

# The report for people: plots and a summary from metrics.jsonl and eval.jsonl.
/usr/bin/python3 utils/run_report.py "$run" --output "$work/report" > /dev/null || fail "run_report.py failed"
for f in report.md loss.png lr.png throughput.png eval.png; do
  [ -s "$work/report/$f" ] || fail "run_report.py did not write $f"
done
grep -q "validation perplexity" "$work/report/report.md" || fail "report lacks the validation perplexity"

# --checkpoint: the model is the checkpoint's (a Llama fine-tune under the tiny GPT-2 config),
# whatever its step (3 steps done, train.steps = 1), the same perplexity as its own run's eval.
llama=(--model.init_from=tests/data/hf/llama3_rope --model.seq_len=16 --train.micro_batch=2 --train.global_batch=4
       --data.train=input/data/pystdlib --data.valid=input/data/pystdlib-valid --train.threads=1 --log.eval_batches=1)
"$trident" train "${llama[@]}" --train.steps=3 --checkpoint.interval=3 --log.run_dir="$work/llama" > /dev/null
"$trident" eval "${llama[@]}" --log.run_dir="$work/llama" > /dev/null
"$trident" eval --config input/configs/tiny.ini --model.seq_len=16 --train.steps=1 --train.global_batch=4 \
  --log.eval_batches=1 --checkpoint "$work/llama/checkpoints/step_00000003.h5" --log.run_dir="$work/llama_ck" \
  > "$work/llama_ck.log" || fail "eval --checkpoint of a Llama checkpoint under a GPT-2 config: $(cat "$work/llama_ck.log")"
python3 - "$work/llama/eval.jsonl" "$work/llama_ck/eval.jsonl" <<'PY'
import json, sys
ppl = [[json.loads(l)["value"] for l in open(p) if json.loads(l)["metric"] == "perplexity"][-1] for p in sys.argv[1:]]
assert abs(ppl[0] - ppl[1]) <= 1e-9 * ppl[0], ppl
PY

set +e
grep -v '^valid' input/configs/tiny.ini > "$work/no_valid.ini"
"$trident" train --config "$work/no_valid.ini" --log.eval_interval=2 > "$work/err" 2>&1; code=$?
set -e
[ "$code" -eq 2 ] || fail "eval_interval without data.valid: exit $code, want 2"
grep -q "needs data.valid" "$work/err" || fail "unclear message: $(cat "$work/err")"
echo "eval: ok"
