#!/usr/bin/env bash
# The HTML run report (utils/run_report.py -> report/report.html) opened in a real headless
# Chromium: a tiny run trained and evaluated by trident renders its plots (SVG in the rendered
# DOM, a screenshot that is not blank) with no console error, and the run directory is left as
# it was. A second part renders the level, robustness and OOD sections from lines appended to a
# copy of the run's eval.jsonl (see below), with the ROC's AUROC checked against a pairwise count.
# usage: report_html.sh TRIDENT SOURCE_DIR   (needs Debian's chromium: utils/setup.sh)
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
py=/usr/bin/python3  # Debian's, with matplotlib and numpy
command -v chromium > /dev/null || fail "chromium is missing: run utils/setup.sh (it installs Debian's chromium)"
$py -c "import matplotlib, numpy" || fail "python3-matplotlib / python3-numpy missing: run utils/setup.sh"

# browse PAGE PREFIX: PREFIX.dom (the DOM after load), PREFIX.log (Chromium's stderr with the
# page's console) and, with a third argument, PREFIX.png (a 1280 x 4000 screenshot).
chrome=(chromium --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --no-first-run
        --disable-background-networking --user-data-dir="$work/profile" --enable-logging=stderr --v=1)
browse() {
  timeout 60 "${chrome[@]}" --dump-dom "file://$1" > "$2.dom" 2> "$2.log" ||
    fail "chromium --dump-dom $1: exit $? (log: $2.log) $(tail -5 "$2.log")"
  if [ $# -gt 2 ]; then
    timeout 60 "${chrome[@]}" --screenshot="$2.png" --window-size=1280,4000 "file://$1" > /dev/null 2>> "$2.log" ||
      fail "chromium --screenshot $1: exit $? $(tail -5 "$2.log")"
  fi
}
# console_clean PREFIX: no console message (the report has no script, so any is an error: a
# failed load, a parse error) and no uncaught exception.
console_clean() {
  if grep -E ':CONSOLE[:(]|Uncaught' "$1.log" > "$1.console"; then
    fail "the page logged to its console: $(cat "$1.console")"
  fi
}

# The check of the check: a page with a console error and an uncaught exception is caught.
printf '%s\n' '<!DOCTYPE html><html><body><p>probe</p><script>console.error("probe-error");' \
  'no_such_function();</script></body></html>' > "$work/probe.html"
browse "$work/probe.html" "$work/probe"
grep -q '"probe-error"' "$work/probe.log" || fail "chromium's console capture saw no console.error"
grep -q 'Uncaught ReferenceError' "$work/probe.log" || fail "chromium's console capture saw no uncaught exception"

# The ROC of report_roc.py on a hand-checked case with ties: scores 0.5 (one in, one OOD) are one step.
$py - <<'PY'
import sys; sys.path.insert(0, "utils")
import report_roc
points = report_roc.roc_points([0.1, 0.5, 0.3], [0.5, 0.9])
assert points == [(0, 0), (0, 0.5), (1 / 3, 1.0), (2 / 3, 1.0), (1.0, 1.0)], points
assert abs(report_roc.auroc(points) - (1 + 1 + 1 + 0.5 + 1 + 1) / 6) < 1e-12, report_roc.auroc(points)
assert report_roc.fpr_at_tpr(points) == 1 / 3
PY

# 1. A real tiny run: trained 6 steps with evaluations (perplexity and a generation task) at
# steps 3 and 6, then `trident eval` of the last checkpoint on data.valid.
run="$work/run"
printf '%s\n' '{"input": "def ", "output": "main"}' '{"input": "import ", "output": "os"}' > "$work/task.jsonl"
"$trident" train --config input/configs/tiny.ini --train.steps=6 --log.eval_interval=3 --log.eval_batches=2 \
  --eval.task="$work/task.jsonl" --eval.max_new_tokens=4 --eval.metrics=em,f1,rougeL,bleu --checkpoint.interval=6 \
  --log.run_dir="$run" > "$work/train.log"
"$trident" eval --config input/configs/tiny.ini --data.valid=input/data/pystdlib-valid --log.eval_batches=2 \
  --log.run_dir="$run" > "$work/eval.log"
snapshot() { (cd "$1" && find . -path ./report -prune -o -type f -print0 | sort -z | xargs -0 sha256sum); }
snapshot "$run" > "$work/before.sha"
$py utils/run_report.py "$run" > "$work/report.log" 2> "$work/report.err" || fail "run_report.py: $(cat "$work/report.err")"
[ ! -s "$work/report.err" ] || fail "run_report.py warned on a clean run: $(cat "$work/report.err")"
snapshot "$run" > "$work/after.sha"
cmp -s "$work/before.sha" "$work/after.sha" || fail "run_report.py changed the run directory outside report/"
for f in report.html report.md loss.png; do [ -s "$run/report/$f" ] || fail "no report/$f"; done
browse "$run/report/report.html" "$work/real" shot
console_clean "$work/real"

# check_page HTML DOM PNG KIND: the page is self-contained, its plots are in the rendered DOM
# with their lines, sections without data are left out (none says "no data"), memory axes start
# at zero, and the screenshot shows them.
cat > "$work/check_page.py" <<'PY'
import html.parser, re, sys
import matplotlib.image
page, dom, png, kind = sys.argv[1:5]
source = open(page, encoding="utf-8").read()
external = re.findall(r"""(?:src|href)\s*=\s*["']?\s*(?:https?:|//|file:)|<link\b|<script[^>]*\bsrc|@import|url\(""",
                      source, re.I)
assert not external, f"{page} refers to outside resources: {external}"

class Plots(html.parser.HTMLParser):
    def __init__(self):
        super().__init__()
        self.plots, self.current, self.sections, self.text, self.where = {}, None, {}, [], None
    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "svg" and "plot" in (a.get("class") or "").split():
            self.current = a.get("data-plot")
            self.plots[self.current] = {"lines": 0, "points": 0, "legend": []}
        elif tag == "polyline" and self.current is not None:
            n = len((a.get("points") or "").split())
            self.plots[self.current]["lines"] += n >= 2
        elif tag == "circle" and self.current is not None:
            self.plots[self.current]["points"] += 1
        elif tag == "section":
            self.where = a.get("id")
            self.sections[self.where] = ""
        elif tag == "text" and self.current is not None and a.get("class") == "legend":
            self.plots[self.current]["legend"].append("")
    def handle_endtag(self, tag):
        if tag == "svg":
            self.current = None
    def handle_data(self, data):
        if self.where:
            self.sections[self.where] += data
        if self.current is not None and self.plots[self.current]["legend"] and self.lasttag == "text":
            self.plots[self.current]["legend"][-1] += data

p = Plots()
p.feed(open(dom, encoding="utf-8").read())
want = ["loss", "lr", "grad_norm", "tokens_per_s", "mfu", "mem_mb", "throughput-tokens", "throughput-samples",
        "memory", "eval-input/data/pystdlib-valid-perplexity"]
for name in want:
    assert name in p.plots, f"plot {name!r} not in the rendered DOM (have {sorted(p.plots)})"
    assert p.plots[name]["lines"] >= 1, f"plot {name!r} has no line: {p.plots[name]}"
for section in ("training", "evaluation", "throughput") + (("ood-roc",) if kind != "real" else ()):
    assert section in p.sections, f"no section {section!r} in the rendered DOM"
assert not any("No data" in text for text in p.sections.values()), "a section said no data"
assert "perplexity" in p.sections["evaluation"] and "exact_match" in p.sections["evaluation"], "no eval table"
if kind == "real":
    assert "rougeL" in p.sections["evaluation"] and "bleu" in p.sections["evaluation"], "no ROUGE / BLEU in the eval table"
# memory plots start at zero: their lowest y tick reads 0
for name in ("mem_mb", "memory"):
    svg = re.search(r'<svg class="plot" data-plot="%s".*?</svg>' % name, source, re.S).group(0)
    ticks = [float(t) for t in re.findall(r'<text[^>]*class="ytick"[^>]*>([-\d.e+]+)<', svg)]
    assert ticks and min(ticks) == 0, f"{name}: y ticks {ticks} do not start at 0"
if kind == "real":
    assert "ood-roc" not in p.sections, "a run without ood/ got an ROC section"
    assert "Robustness" not in p.sections["evaluation"], "a robustness part without perturbation lines"
else:
    roc = p.plots.get("roc")
    assert roc and roc["lines"] == 3, f"ROC plot should hold nll, msp and the diagonal: {roc}"
    aurocs = {m.group(1): float(m.group(2)) for l in roc["legend"] for m in [re.match(r"(\w+) \(AUROC ([\d.]+)\)", l)] if m}
    expected = dict(a.split("=") for a in sys.argv[5:])
    for score, value in expected.items():
        assert abs(aurocs[score] - float(value)) < 1e-4, f"{score}: legend AUROC {aurocs.get(score)}, pairwise {value}"
    ev = p.sections["evaluation"]
    for text in ("exact_match by level", "easy", "medium", "hard", "acc under perturbation", "typo", "case",
                 "whitespace", "shuffle_choices", "distractor", "acc_worst", "acc_drop", "ood_auroc", "ood_fpr95",
                 "word_perplexity", "bits_per_byte", "acc_norm"):
        assert text in ev, f"evaluation section lacks {text!r}"
    assert "No data" not in p.sections["ood-roc"] and "No data" not in ev, "a section said no data"
    print(f"ROC legend AUROC {aurocs} equals the pairwise count")

if png != "-":
    image = matplotlib.image.imread(png)
    assert image.shape[:2] == (4000, 1280), f"screenshot is {image.shape}"
    rgb = image[..., :3]
    drawn = abs(rgb - rgb[5, 5]).sum(axis=2) > 0.01  # differs from the page's background
    rows, share = int(drawn.any(axis=1).sum()), drawn.mean()
    colored = int(((rgb.max(axis=2) - rgb.min(axis=2)) > 0.3).sum())
    assert rows > 1000 and share > 0.1, f"screenshot nearly blank: {rows} rows drawn on, {share:.1%} of the pixels"
    assert colored > 2000, f"screenshot shows almost no coloured plot lines ({colored} pixels)"
    print(f"{kind}: {len(p.plots)} plots in the DOM; screenshot {rows} rows drawn on, {share:.1%} of the pixels, "
          f"{colored} coloured")
PY
$py "$work/check_page.py" "$run/report/report.html" "$work/real.dom" "$work/real.png" real

# 2. Rendering of the level, robustness and OOD sections. The evaluations that write these lines
# are being added to trident; until then this part appends lines in the documented schema to a
# COPY of the run's eval.jsonl, and writes ood/step_00000006.json from real scores (a byte bigram
# model of Python sources: held-out Python files in-distribution, C++ and markdown files OOD).
# It exercises only the report's rendering of those sections, not trident's evaluations.
rich="$work/rich"
cp -r "$run" "$rich"
rm -rf "$rich/report"
$py - "$rich" > "$work/aurocs" <<'PY'
import json, pathlib, sys, sysconfig
import numpy as np
rich = pathlib.Path(sys.argv[1])
stdlib = sorted(pathlib.Path(sysconfig.get_paths()["stdlib"]).glob("*.py"))
train, held_out = stdlib[::2][:120], stdlib[1::2][:60]
ood_files = (sorted(pathlib.Path("src").rglob("*.cpp")) + sorted(pathlib.Path("docs").glob("*.md")))[:60]
def data(path):
    return np.frombuffer(path.read_bytes()[:6000], dtype=np.uint8).astype(np.int64)
counts = np.ones((256, 256))
for f in train:
    b = data(f)
    np.add.at(counts, (b[:-1], b[1:]), 1)
prob = counts / counts.sum(axis=1, keepdims=True)
def scores(files):
    nll, msp = [], []
    for f in files:
        b = data(f)
        if len(b) < 2:
            continue
        nll.append(float(-np.log(prob[b[:-1], b[1:]]).mean()))
        msp.append(float(-prob[b[:-1]].max(axis=1).mean()))  # minus the mean max probability: higher is more OOD
    return nll, msp
(in_nll, in_msp), (ood_nll, ood_msp) = scores(held_out), scores(ood_files)
def pairwise_auroc(ins, oods):  # P(ood score > in score) + P(tie) / 2, by counting every pair
    i, o = np.array(ins)[None, :], np.array(oods)[:, None]
    return float(((o > i).sum() + 0.5 * (o == i).sum()) / (i.size * o.size))
def fpr95(ins, oods):
    t = np.sort(oods)[::-1][int(np.ceil(0.95 * len(oods))) - 1]
    return float((np.array(ins) >= t).mean())
metrics = {}
for name, ins, oods in (("nll", in_nll, ood_nll), ("msp", in_msp, ood_msp)):
    order = np.argsort(-np.array(ins + oods), kind="stable")
    labels = np.array([0] * len(ins) + [1] * len(oods))[order]
    precision = np.cumsum(labels) / np.arange(1, labels.size + 1)
    metrics[name] = {"auroc": pairwise_auroc(ins, oods), "aupr": float(precision[labels == 1].mean()),
                     "fpr95": fpr95(ins, oods)}
(rich / "ood").mkdir()
(rich / "ood" / "step_00000006.json").write_text(json.dumps({
    "step": 6, "in_dataset": "python stdlib (held out)", "ood_dataset": "trident C++ and markdown",
    "scores": {"nll": {"in": in_nll, "ood": ood_nll}, "msp": {"in": in_msp, "ood": ood_msp}}, "metrics": metrics}))
lines = []
for step in (3, 6):
    for level, base in (("easy", 0.9), ("medium", 0.6), ("hard", 0.25)):
        lines += [{"metric": "exact_match", "value": base + step / 100, "dataset": "gen/arith", "level": level},
                  {"metric": "examples", "value": 20, "dataset": "gen/arith", "level": level}]
    clean = 0.55 + step / 100
    lines += [{"metric": "acc", "value": clean, "dataset": "mc/choices"},
              {"metric": "acc_norm", "value": clean + 0.02, "dataset": "mc/choices"}]
    drops = {"typo": 0.04, "case": 0.01, "whitespace": 0.0, "shuffle_choices": 0.08, "distractor": 0.15}
    lines += [{"metric": "acc", "value": clean - d, "dataset": "mc/choices", "perturbation": p} for p, d in drops.items()]
    lines += [{"metric": "acc_worst", "value": clean - 0.15, "dataset": "mc/choices"},
              {"metric": "acc_drop", "value": 0.15, "dataset": "mc/choices"},
              {"metric": "word_perplexity", "value": 60 - step, "dataset": "ll/docs"},
              {"metric": "bits_per_byte", "value": 2.5 - step / 10, "dataset": "ll/docs"}]
    for name, m in metrics.items():
        lines += [{"metric": f"ood_{k}", "value": v, "dataset": "input/data/pystdlib-valid", "score": name}
                  for k, v in m.items()]
    lines = [dict(l, step=l.get("step", step)) for l in lines]
with open(rich / "eval.jsonl", "a") as f:
    f.write("".join(json.dumps(l) + "\n" for l in lines))
    f.write('not json\n{"step": 6, "metric": "acc", "value": "high", "dataset": "mc/choices"}\n')
with open(rich / "metrics.jsonl", "a") as f:
    f.write('{"step": 7, "loss": 4.1, "lr"\n')  # a torn last line
print(" ".join(f"{k}={v['auroc']}" for k, v in metrics.items()))
PY
$py utils/run_report.py "$rich" > "$work/rich_report.log" 2> "$work/rich_report.err" ||
  fail "run_report.py on malformed lines: $(cat "$work/rich_report.err")"
[ "$(grep -c 'skipped' "$work/rich_report.err")" -eq 3 ] ||
  fail "want 3 warnings (2 eval lines, 1 metrics line): $(cat "$work/rich_report.err")"
browse "$rich/report/report.html" "$work/rich" shot
console_clean "$work/rich"
# shellcheck disable=SC2046
$py "$work/check_page.py" "$rich/report/report.html" "$work/rich.dom" "$work/rich.png" rich $(cat "$work/aurocs")

# 3. Inputs absent: a run directory with metrics.jsonl alone has its training and throughput
# sections only (no evaluation, no ROC, no "no data" notes); one
# with nothing is a clear error; the report refuses to write over the run directory itself.
mkdir "$work/bare"
cp "$run/metrics.jsonl" "$work/bare/"
$py utils/run_report.py "$work/bare" > /dev/null 2> "$work/bare.err" || fail "metrics only: $(cat "$work/bare.err")"
grep -q 'id="training"' "$work/bare/report/report.html" && grep -q 'id="throughput"' "$work/bare/report/report.html" &&
  ! grep -q 'id="evaluation"\|id="ood-roc"\|No data' "$work/bare/report/report.html" ||
  fail "metrics only: want the training and throughput sections alone"
mkdir "$work/empty"
if $py utils/run_report.py "$work/empty" > /dev/null 2> "$work/empty.err"; then fail "an empty directory got a report"; fi
grep -q "is .* a trident run directory" "$work/empty.err" || fail "unclear error: $(cat "$work/empty.err")"
if $py utils/run_report.py "$run" --output "$run" > /dev/null 2> "$work/self.err"; then
  fail "--output RUN_DIR was accepted"
fi
grep -q "refusing" "$work/self.err" || fail "unclear refusal: $(cat "$work/self.err")"

# A private run's keys as older versions wrote them (dp_*, the first half of the lines: a run
# resumed by a current version) and as they are now (privacy_*): each line's units, clipped
# share and unit norm are read under the current names, the current key winning where a line
# has both, and plotted with one point per line.
mkdir "$work/private"
$py - "$run/metrics.jsonl" "$work/private/metrics.jsonl" <<'PY'
import json, sys
lines = [json.loads(l) for l in open(sys.argv[1])]
with open(sys.argv[2], "w") as f:
    for i, l in enumerate(lines):
        prefix = "dp_" if i < len(lines) // 2 else "privacy_"
        l.update({"epsilon": 0.1 * (i + 1), prefix + "units": 8, prefix + "clipped": 0.5, prefix + "unit_norm": 2.0 + i})
        if i == len(lines) - 1:
            l["dp_unit_norm"] = -1.0
        f.write(json.dumps(l) + "\n")
PY
$py utils/run_report.py "$work/private" > /dev/null 2> "$work/private.err" || fail "dp_* keys: $(cat "$work/private.err")"
$py - "$work/private" <<'PY' || fail "a run with old (dp_*) and new (privacy_*) keys"
import pathlib, re, sys
sys.path.insert(0, "utils")
import report_data
run = pathlib.Path(sys.argv[1])
rows = report_data.read_metrics(run / "metrics.jsonl")
read = [{k: v for k, v in r.items() if k.startswith(("dp_", "privacy_"))} for r in rows]
want = [{"privacy_units": 8, "privacy_clipped": 0.5, "privacy_unit_norm": 2.0 + i} for i in range(len(rows))]
assert len(rows) >= 4 and read == want, read
page = (run / "report" / "report.html").read_text()
for key in ("epsilon", "privacy_clipped", "privacy_unit_norm"):
    svg = re.search(f'<svg class="plot" data-plot="{key}".*?</svg>', page, re.S)
    points = re.findall(r'<polyline class="series" points="([^"]*)"', svg.group(0)) if svg else []
    assert len(points) == 1 and len(points[0].split()) == len(rows), (key, points)
print(f"dp_* and privacy_* keys: {len(rows)} lines read under the current names and plotted")
PY

# A MoE run: the four MoE keys of its metrics.jsonl get their plots.
"$trident" train --config input/configs/moe.ini --parallel.dp=1 --parallel.ep=1 --train.steps=2 \
  --log.run_dir="$work/moe" > "$work/moe.log"
$py utils/run_report.py "$work/moe" > /dev/null 2> "$work/moe.err" || fail "MoE run: $(cat "$work/moe.err")"
for key in moe_aux_loss moe_z_loss moe_load_max_over_mean moe_dropped_tokens; do
  grep -q "data-plot=\"$key\"" "$work/moe/report/report.html" || fail "MoE run: no $key plot"
done
echo "report_html: ok"
