#!/usr/bin/env bash
# Robustness and OOD detection end to end on a real trained model: the tiny model trained on the
# Python sources scores a generated multiple-choice suite (trident evalgen) clean and under every
# perturbation, per level, and tells Debian's copyright texts from held-out Python files; its
# AUROC and AUPR equal scikit-learn's roc_auc_score / average_precision_score on the scores it
# wrote (ood/step_N.json), the same under dp = 2 and pp = 2; the HTML report shows both from
# these real lines; bad OOD inputs are clear errors (exit 2).
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
py=/opt/trident-tools/bin/python
[[ -x $py ]] || fail "$py missing: run utils/setup.sh (it installs tensorboard and scikit-learn there)"
[[ -f input/data/debian-doc.idx ]] || fail "input/data/debian-doc missing: run utils/prepare_data.sh"

"$trident" train --config input/configs/tiny.ini --train.steps=30 --checkpoint.interval=30 --log.run_dir="$work/train" > "$work/train.log" 2>&1 ||
  { cat "$work/train.log"; fail "training"; }
ckpt=$(ls "$work"/train/checkpoints/step_*.h5 | tail -n 1)
"$trident" evalgen --suite arithmetic,kv_lookup,last_digit --levels easy,hard --n 12 --seed 3 --format choice \
  --output "$work/suite.jsonl" > /dev/null
common=(--config input/configs/tiny.ini --checkpoint "$ckpt" --eval.task="$work/suite.jsonl"
        --eval.perturb=typo,case,whitespace,shuffle_choices,distractor --ood input/data/debian-doc
        --eval.ood_samples=48 --log.eval_batches=2)
"$trident" eval "${common[@]}" --log.run_dir="$work/one" > "$work/one.log" 2>&1 || { cat "$work/one.log"; fail "eval"; }
mpirun -np 2 "$trident" eval "${common[@]}" --parallel.dp=2 --log.run_dir="$work/dp" > "$work/dp.log" 2>&1 ||
  { cat "$work/dp.log"; fail "eval dp=2"; }
mpirun -np 2 "$trident" eval "${common[@]}" --parallel.pp=2 --log.run_dir="$work/pp" > "$work/pp.log" 2>&1 ||
  { cat "$work/pp.log"; fail "eval pp=2"; }
grep -q "OOD detection at step 30" "$work/one.log" || fail "no OOD table: $(cat "$work/one.log")"
grep -q "worst case over perturbations" "$work/one.log" || fail "no worst-case line"

"$py" - "$work" <<'PY'
import glob, json, math, sys
from sklearn.metrics import average_precision_score, roc_auc_score
work = sys.argv[1]
def lines(run):
    return [json.loads(l) for l in open(f"{work}/{run}/eval.jsonl")]
for run in ["one", "dp", "pp"]:
    [path] = glob.glob(f"{work}/{run}/ood/step_*.json")
    ood = json.load(open(path))
    assert ood["step"] == 30 and ood["ood_dataset"] == "input/data/debian-doc", ood["step"]
    recorded = {(l["score"], l["metric"]): l["value"] for l in lines(run) if "score" in l}
    for score in ["nll", "msp"]:
        s = ood["scores"][score]
        assert len(s["in"]) >= 2 and len(s["ood"]) == 48, (len(s["in"]), len(s["ood"]))
        labels, values = [0] * len(s["in"]) + [1] * len(s["ood"]), s["in"] + s["ood"]
        auroc, ap = roc_auc_score(labels, values), average_precision_score(labels, values)
        assert abs(recorded[(score, "ood_auroc")] - auroc) < 1e-9, (run, score, recorded, auroc)
        assert abs(recorded[(score, "ood_aupr")] - ap) < 1e-9, (run, score, recorded, ap)
        assert abs(ood["metrics"][score]["auroc"] - auroc) < 1e-9
        if run == "one":
            print(f"{score}: AUROC {recorded[(score, 'ood_auroc')]:.6f} (scikit-learn {auroc:.6f}), AUPR {ap:.4f}, "
                  f"FPR@95 {recorded[(score, 'ood_fpr95')]:.4f}")
# The same figures under every layout (the in-distribution side is data.valid's documents).
def figures(run):
    keep = {}
    for l in lines(run):
        if l["metric"] in ("samples_per_s", "mem_mb", "tokens_per_s", "gen_tokens_per_s", "gen_samples_per_s"):
            continue
        keep[(l["dataset"], l["metric"], l.get("level", ""), l.get("perturbation", ""), l.get("score", ""))] = l["value"]
    return keep
one = figures("one")
for run in ["dp", "pp"]:
    other = figures(run)
    assert one.keys() == other.keys(), (run, set(one) ^ set(other))
    for k, v in one.items():
        assert math.isclose(v, other[k], rel_tol=1e-5, abs_tol=1e-9), (run, k, v, other[k])
# Robustness: clean per level, each perturbation, the worst case.
acc = {(l.get("level", ""), l.get("perturbation", "")): l["value"] for l in lines("one") if l["metric"] == "acc"}
assert {"easy", "hard"} <= {lv for lv, p in acc}, acc
worst = [l["value"] for l in lines("one") if l["metric"] == "acc_worst"][0]
perturbed = {p: v for (lv, p), v in acc.items() if p}
assert len(perturbed) == 5 and worst <= min(perturbed.values()) + 1e-12, (worst, perturbed)
print(f"clean acc {acc[('', '')]:.4f}, worst case {worst:.4f}, per perturbation {perturbed}")
PY

# The report from these real lines: robustness rows and the ROC curve.
/usr/bin/python3 utils/run_report.py "$work/one" > /dev/null 2> "$work/report.err" || { cat "$work/report.err"; fail "report"; }
html="$work/one/report/report.html"
grep -q "shuffle_choices" "$html" || fail "the report has no robustness rows"
grep -q "AUROC" "$html" || fail "the report has no ROC curve"

# Bad OOD inputs: no data.valid, a missing prefix.
set +e
"$trident" eval --config input/configs/tiny.ini --checkpoint "$ckpt" --data.valid= --eval.task="$work/suite.jsonl" \
  --ood input/data/debian-doc --log.run_dir="$work/bad" > "$work/bad1.log" 2>&1
rc1=$?
"$trident" eval --config input/configs/tiny.ini --checkpoint "$ckpt" --ood "$work/nothing" --log.run_dir="$work/bad" \
  > "$work/bad2.log" 2>&1
rc2=$?
set -e
[[ $rc1 == 2 ]] && grep -q "needs data.valid" "$work/bad1.log" || { cat "$work/bad1.log"; fail "--ood without data.valid: exit $rc1"; }
[[ $rc2 == 2 ]] && grep -q "eval.ood" "$work/bad2.log" || { cat "$work/bad2.log"; fail "--ood of a missing prefix: exit $rc2"; }
echo "eval_robustness: OK"
