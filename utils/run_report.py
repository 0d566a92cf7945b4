#!/usr/bin/env python3
"""A report of one training run for people: PNG plots and a markdown summary.

    utils/run_report.py RUN_DIR [--output DIR]

Reads RUN_DIR/metrics.jsonl (one object per logged step) and, if present, RUN_DIR/eval.jsonl
(one line per step, metric, value, dataset) and writes into DIR (default RUN_DIR/report):
  loss.png         training loss over steps (validation loss on the same axes when evaluated; a data
                   mixture's loss per source)
  lr.png           learning rate
  throughput.png   tokens/s and MFU
  eval.png         validation perplexity, token accuracy and exact match (those present)
  report.md        the summary: run configuration, first/last/best figures, the plots
  report.html      one self-contained page (inline SVG, no network, no script): training curves,
                   evaluation per task and level, robustness, OOD metrics and the ROC curve of the
                   latest RUN_DIR/ood/step_*.json, throughput and memory (utils/report_html.py)
Malformed lines are skipped with a warning on stderr; a run directory with only eval.jsonl gets
the evaluation parts. Writes nothing outside DIR.
Needs matplotlib (Debian: python3-matplotlib); nothing else beyond the standard library.
"""
import argparse
import math
import pathlib
import sys

import matplotlib

matplotlib.use("Agg")  # files only, no display
import matplotlib.pyplot as plt  # noqa: E402

import report_data  # noqa: E402  (utils/, beside this script)
import report_html  # noqa: E402


def series(rows, key):
    points = [(r["step"], r[key]) for r in rows if key in r and r[key] is not None]
    return [p[0] for p in points], [p[1] for p in points]


def eval_series(evals, metric):
    points = sorted((e["step"], e["value"]) for e in evals if e.get("metric") == metric)
    return [p[0] for p in points], [p[1] for p in points]


def save(fig, path):
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run_dir", type=pathlib.Path)
    ap.add_argument("--output", type=pathlib.Path)
    args = ap.parse_args()
    run = args.run_dir
    metrics = report_data.read_metrics(run / "metrics.jsonl")
    evals = report_data.read_evals(run / "eval.jsonl")
    ood = report_data.read_latest_ood(run)
    if not metrics and not evals:
        sys.exit(f"run_report: {run / 'metrics.jsonl'} and {run / 'eval.jsonl'} are missing or empty: "
                 f"is {run} a trident run directory?")
    out = args.output or run / "report"
    if not report_data.output_dir_is_safe(run, out):
        sys.exit(f"run_report: refusing to write into {out}: the report gets its own folder (default RUN_DIR/report)")
    out.mkdir(parents=True, exist_ok=True)
    config = run / "config.ini"
    html_plots = report_html.write_html(out / "report.html", run, metrics, evals, ood,
                                        config.read_text(errors="replace") if config.is_file() else "")
    plain = [e for e in evals if not (e["level"] or e["perturbation"] or e["score"])]  # report.md: clean lines
    plots = write_pngs(metrics, plain, out) if metrics else []
    if metrics:
        lines = summary_lines(run, metrics, plain, plots)
    else:
        lines = [f"# Run report: {run.name}", "", f"No training metrics ({run / 'metrics.jsonl'}): "
                 "evaluation only, see report.html.", ""]
    (out / "report.md").write_text("\n".join(lines))
    print(f"run_report: wrote {out / 'report.md'}, {len(plots)} plots and {out / 'report.html'} ({html_plots} plots)")


def write_pngs(metrics, evals, out):
    """The PNG plots of report.md: [(title, file name)]."""
    plots = []

    fig, ax = plt.subplots(figsize=(7, 4))
    steps, loss = series(metrics, "loss")
    ax.plot(steps, loss, label="training loss")
    for source in report_html.mixture_sources(metrics):  # a data mixture: each source's loss
        ax.plot(*series(metrics, f"loss/{source}"), alpha=0.6, lw=1, label=f"training loss ({source})")
    for dataset in sorted({e["dataset"] for e in evals if e.get("metric") == "loss"}):
        es, el = eval_series([e for e in evals if e["dataset"] == dataset], "loss")
        ax.plot(es, el, "o-", label=f"validation loss ({pathlib.Path(dataset).name})")
    ax.set_xlabel("step")
    ax.set_ylabel("loss (nats per token)")
    ax.grid(alpha=0.3)
    ax.legend()
    save(fig, out / "loss.png")
    plots.append(("Loss", "loss.png"))

    fig, ax = plt.subplots(figsize=(7, 3))
    ax.plot(*series(metrics, "lr"))
    ax.set_xlabel("step")
    ax.set_ylabel("learning rate")
    ax.grid(alpha=0.3)
    save(fig, out / "lr.png")
    plots.append(("Learning rate", "lr.png"))

    fig, ax = plt.subplots(figsize=(7, 3.5))
    ax.plot(*series(metrics, "tokens_per_s"), color="tab:green")
    ax.set_xlabel("step")
    ax.set_ylabel("tokens/s", color="tab:green")
    ax.grid(alpha=0.3)
    ms, mfu = series(metrics, "mfu")
    if ms:
        twin = ax.twinx()
        twin.plot(ms, [100 * m for m in mfu], color="tab:purple", alpha=0.6)
        twin.set_ylabel("MFU (%)", color="tab:purple")
    save(fig, out / "throughput.png")
    plots.append(("Throughput", "throughput.png"))

    es, eps = series(metrics, "epsilon")
    if es:  # a private run (privacy.enabled): the privacy spent per step
        fig, ax = plt.subplots(figsize=(7, 3))
        ax.plot(es, eps, color="tab:red")
        ax.set_xlabel("step")
        ax.set_ylabel("epsilon (at privacy.delta)")
        ax.grid(alpha=0.3)
        save(fig, out / "privacy.png")
        plots.append(("Privacy spent", "privacy.png"))

    eval_metrics = markdown_eval_metrics(evals)
    if eval_metrics:
        fig, axes = plt.subplots(1, len(eval_metrics), figsize=(3.6 * len(eval_metrics), 3.2), squeeze=False)
        for ax, metric in zip(axes[0], eval_metrics):
            ax.plot(*eval_series(evals, metric), "o-")
            ax.set_title(metric.replace("_", " "))
            ax.set_xlabel("step")
            ax.grid(alpha=0.3)
        save(fig, out / "eval.png")
        plots.append(("Evaluation", "eval.png"))
    return plots


def markdown_eval_metrics(evals):
    return [m for m in ("perplexity", "accuracy", "exact_match", "f1", "rougeL", "bleu") if eval_series(evals, m)[0]]


def summary_lines(run, metrics, evals, plots):
    """The markdown of report.md."""
    eval_metrics = markdown_eval_metrics(evals)
    last = metrics[-1]
    finite = [m["loss"] for m in metrics if m.get("loss") is not None and math.isfinite(m["loss"])]
    with_loss = [m for m in metrics if "loss" in m]
    lines = [f"# Run report: {run.name}", ""]
    lines += ["| | |", "|---|---|",
              f"| steps logged | {len(metrics)} (last step {last['step']}) |",
              f"| training loss | {with_loss[0]['loss']:.4f} at step {with_loss[0]['step']} ->"
              f" {with_loss[-1]['loss']:.4f}"
              f" (best {min(finite):.4f}) |" if finite else "| training loss | none finite |",
              f"| tokens seen | {last.get('tokens', 0):.0f} |",
              f"| elapsed | {last.get('elapsed_s', 0):.1f} s |"]
    tps = [m["tokens_per_s"] for m in metrics[1:] if m.get("tokens_per_s")] or [last.get("tokens_per_s", 0)]
    lines.append(f"| tokens/s (median after step 1) | {sorted(tps)[len(tps) // 2]:.0f} |")
    if "mfu" in last:
        lines.append(f"| MFU (last) | {100 * last['mfu']:.1f}% |")
    if "mem_mb" in last:
        lines.append(f"| peak memory per rank | {last['mem_mb']:.0f} MiB |")
    if "epsilon" in last:
        lines.append(f"| differential privacy | epsilon {last['epsilon']:.4g} spent by step {last['step']} |")
    skipped = sum(1 for m in metrics if m.get("skipped"))
    if skipped:
        lines.append(f"| skipped steps (non-finite) | {skipped} |")
    for metric in eval_metrics + (["loss"] if eval_series(evals, "loss")[0] else []):
        s, v = eval_series(evals, metric)
        lines.append(f"| validation {metric.replace('_', ' ')} | {v[0]:.4f} at step {s[0]} -> {v[-1]:.4f} at step {s[-1]} |")
    lines += ["", "All sections, with evaluation per task and level, robustness and OOD: "
              "[report.html](report.html).", ""]
    for title, png in plots:
        lines += [f"## {title}", "", f"![{title}]({png})", ""]
    config = run / "config.ini"
    if config.exists():
        lines += ["## Configuration", "", "```ini", config.read_text().strip(), "```", ""]
    return lines


if __name__ == "__main__":
    main()
