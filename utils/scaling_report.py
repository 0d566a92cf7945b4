#!/usr/bin/env python3
"""Scaling-study report: a results folder (jobs/scaling-study.sh) -> CSV, markdown table, PNG plots.

usage: utils/scaling_report.py FOLDER [--out DIR] [--title TEXT]

Reads FOLDER/*.json (one point each: the point's description plus `trident bench step --json`
under "bench") and, for training runs, FOLDER/*/metrics.jsonl with the run's config.ini (median
of the logged steps after the first). Writes into --out (default FOLDER):
  scaling.csv              one row per point
  scaling.md               the markdown table
  scaling-<kind>.png       throughput and scaling efficiency vs ranks, ideal lines drawn
Scaling efficiency of a point = (tokens/s per rank) / (tokens/s per rank of the baseline), the
baseline being the smallest-rank point of the same kind (strong or weak; the fastest layout
there). For strong scaling (fixed global batch) it is speed-up / rank ratio; for weak scaling
(fixed batch per rank) it is the baseline's step time / this step time: the same number.
Bubble and comm are shares of the step: pipeline bubble and data-parallel communication wait.
"""
import argparse
import configparser
import csv
import json
import math
import pathlib
import statistics
import sys

COLUMNS = ["kind", "ranks", "nodes", "dp", "tp", "pp", "global_batch", "micro_batch", "threads", "tokens_per_s",
           "tflops_per_rank", "mfu", "efficiency", "step_s", "bubble", "comm_share", "oversubscribed", "load_avg_1min",
           "source"]


def bench_point(path):
    """One jobs/scaling-point.sh result: description + bench step JSON."""
    d = json.loads(path.read_text())
    b = d["bench"]
    step = b["step_s"]
    br = b.get("breakdown_s", {})
    return {
        "kind": d.get("kind", "strong"), "ranks": int(d.get("ranks", b["ranks"])), "nodes": int(d.get("nodes", 1)),
        "dp": d.get("dp"), "tp": d.get("tp"), "pp": d.get("pp"), "global_batch": d.get("global_batch"),
        "micro_batch": d.get("micro_batch"), "threads": b.get("threads_per_rank", d.get("threads")),
        "tokens_per_s": b["tokens_per_s"], "tflops_per_rank": b["tflops_per_rank"], "mfu": b["mfu"],
        "step_s": step, "bubble": br.get("pipeline_bubble", 0.0) / step, "comm_share": br.get("comm_wait", 0.0) / step,
        "oversubscribed": bool(d.get("oversubscribed", False)), "load_avg_1min": d.get("load_avg_1min"),
        "source": path.name,
    }


def run_point(run):
    """A training run directory: medians over metrics.jsonl (the first step, with warm-up, left out)."""
    lines = [json.loads(l) for l in (run / "metrics.jsonl").read_text().splitlines() if l.strip()]
    lines = lines[1:] or lines
    cfg = configparser.ConfigParser()
    cfg.read(run / "config.ini")
    dp, tp, pp = (cfg.getint("parallel", k, fallback=1) for k in ("dp", "tp", "pp"))

    def med(key):
        vals = [l[key] for l in lines if l.get(key) is not None]
        return statistics.median(vals) if vals else float("nan")

    step = med("step_s")
    return {
        "kind": "strong", "ranks": dp * tp * pp, "nodes": 1, "dp": dp, "tp": tp, "pp": pp,
        "global_batch": cfg.getint("train", "global_batch", fallback=None),
        "micro_batch": cfg.getint("train", "micro_batch", fallback=None), "threads": cfg.get("train", "threads", fallback=""),
        "tokens_per_s": med("tokens_per_s"), "tflops_per_rank": float("nan"), "mfu": med("mfu"), "step_s": step,
        "bubble": med("bubble"), "comm_share": med("comm_s") / step if step else float("nan"),
        "oversubscribed": False, "source": run.name + "/metrics.jsonl",
    }


def load(folder):
    points = [bench_point(p) for p in sorted(folder.glob("*.json"))]
    points += [run_point(r) for r in sorted(folder.iterdir()) if (r / "metrics.jsonl").is_file()]
    if not points:
        sys.exit(f"scaling_report: no results in {folder} (*.json from jobs/scaling-study.sh or run dirs)")
    for kind in {p["kind"] for p in points}:
        group = [p for p in points if p["kind"] == kind]
        smallest = min(p["ranks"] for p in group)
        base = max((p for p in group if p["ranks"] == smallest), key=lambda p: p["tokens_per_s"])
        for p in group:
            p["efficiency"] = (p["tokens_per_s"] / p["ranks"]) / (base["tokens_per_s"] / base["ranks"])
            p["baseline_tokens_per_rank"] = base["tokens_per_s"] / base["ranks"]
    points.sort(key=lambda p: (p["kind"], p["ranks"], p["tp"] or 0, p["pp"] or 0))
    return points


def layout(p):
    return f"dp{p['dp']} tp{p['tp']} pp{p['pp']}"


def fmt(v, spec):
    return "-" if v is None or (isinstance(v, float) and math.isnan(v)) else format(v, spec)


def write_csv(points, path):
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=COLUMNS, extrasaction="ignore")
        w.writeheader()
        w.writerows(points)


def markdown(points):
    rows = ["| kind | ranks | layout (dp tp pp) | global batch | tokens/s | TFLOP/s per rank | MFU | efficiency | bubble | comm |",
            "|---|---:|---|---:|---:|---:|---:|---:|---:|---:|"]
    for p in points:
        mark = " *" if p["oversubscribed"] else ""
        rows.append(f"| {p['kind']} | {p['ranks']}{mark} | {layout(p)} | {p['global_batch']} | {fmt(p['tokens_per_s'], '.0f')} | "
                    f"{fmt(p['tflops_per_rank'], '.4f')} | {fmt(100 * p['mfu'], '.1f')}% | {fmt(100 * p['efficiency'], '.0f')}% | "
                    f"{fmt(100 * p['bubble'], '.1f')}% | {fmt(100 * p['comm_share'], '.1f')}% |")
    if any(p["oversubscribed"] for p in points):
        rows.append("\n\\* oversubscribed: more ranks x threads than cores, so the ranks share cores (time-slicing); "
                    "the ideal line assumes each rank has its own.")
    return "\n".join(rows) + "\n"


def plot(points, kind, path, title):
    try:
        import matplotlib
    except ImportError:
        print("scaling_report: no matplotlib for this python (apt-get install python3-matplotlib; run it with "
              "/usr/bin/python3): no plots", file=sys.stderr)
        return False
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    group = [p for p in points if p["kind"] == kind]
    fig, (ax_t, ax_e) = plt.subplots(1, 2, figsize=(9, 3.6), dpi=90)
    ranks = sorted({p["ranks"] for p in group})
    base = group[0]["baseline_tokens_per_rank"]
    ax_t.plot(ranks, [base * r for r in ranks], "k--", lw=1, label="ideal")
    ax_e.axhline(100, color="k", ls="--", lw=1, label="ideal")
    for shape in sorted({(p["tp"], p["pp"]) for p in group}):
        series = sorted((p for p in group if (p["tp"], p["pp"]) == shape), key=lambda p: p["ranks"])
        label = f"tp{shape[0]} pp{shape[1]}"
        xs = [p["ranks"] for p in series]
        line, = ax_t.plot(xs, [p["tokens_per_s"] for p in series], "o-", label=label)
        ax_e.plot(xs, [100 * p["efficiency"] for p in series], "o-", color=line.get_color(), label=label)
        for ax, ys in ((ax_t, [p["tokens_per_s"] for p in series]), (ax_e, [100 * p["efficiency"] for p in series])):
            over = [(x, y) for x, y, p in zip(xs, ys, series) if p["oversubscribed"]]
            if over:
                ax.scatter(*zip(*over), s=120, facecolors="none", edgecolors="red", zorder=3,
                           label="oversubscribed" if ax is ax_t else None)
    for ax in (ax_t, ax_e):
        ax.set_xscale("log", base=2)
        ax.set_xticks(ranks, [str(r) for r in ranks])
        ax.set_xlabel("ranks")
        ax.grid(alpha=0.3)
    ax_t.set_ylabel("tokens/s")
    ax_t.set_ylim(bottom=0)
    ax_e.set_ylabel("scaling efficiency (%)")
    ax_e.set_ylim(0, max(110, max(100 * p["efficiency"] for p in group) * 1.1))
    batch = "fixed global batch" if kind == "strong" else "fixed batch per rank"
    ax_t.set_title(f"{kind} scaling ({batch}): throughput", fontsize=10)
    ax_e.set_title("efficiency vs the smallest run", fontsize=10)
    ax_t.legend(fontsize=8)
    if title:
        fig.suptitle(title, fontsize=10)
    fig.tight_layout()
    fig.savefig(path)
    plt.close(fig)
    return True


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("folder", type=pathlib.Path)
    ap.add_argument("--out", type=pathlib.Path, help="output folder (default: FOLDER)")
    ap.add_argument("--title", default="", help="a title over the plots")
    args = ap.parse_args()
    out = args.out or args.folder
    out.mkdir(parents=True, exist_ok=True)
    points = load(args.folder)
    write_csv(points, out / "scaling.csv")
    table = markdown(points)
    (out / "scaling.md").write_text(table)
    print(table)
    for kind in sorted({p["kind"] for p in points}):
        if plot(points, kind, out / f"scaling-{kind}.png", args.title):
            print(f"scaling_report: {out / f'scaling-{kind}.png'}")
    print(f"scaling_report: {out / 'scaling.csv'}, {out / 'scaling.md'}")


if __name__ == "__main__":
    main()
