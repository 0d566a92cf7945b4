"""The self-contained HTML run report (report/report.html) for utils/run_report.py.

One file, no network: inline CSS and inline SVG plots (utils/report_svg.py), no script. Sections:
training curves (metrics.jsonl), evaluation per task and level with robustness and OOD tables
(eval.jsonl, utils/report_eval.py), the OOD ROC curve (the latest ood/step_*.json), throughput
and memory. A section whose inputs are absent says so in one line.
"""
import datetime
import os

import report_roc
from report_eval import (EvalView, cell, history_plots, level_tables, ood_metric_table,
                         results_tables, robustness_tables, table, td)
from report_svg import esc, line_plot

CSS = """
body { font-family: "DejaVu Sans", Arial, Helvetica, sans-serif; margin: 24px 32px; color: #222;
       background: #fafafa; max-width: 1220px; }
h1 { font-size: 24px; margin-bottom: 4px; } h2 { font-size: 19px; margin-top: 30px;
     border-bottom: 1px solid #ccc; padding-bottom: 3px; }
h3 { font-size: 16px; } h4 { font-size: 14px; margin: 14px 0 6px; }
.meta { color: #666; font-size: 13px; }
.plots { display: flex; flex-wrap: wrap; gap: 12px; }
svg.plot { background: #fff; border: 1px solid #ddd; font-size: 11px; }
svg.plot text { fill: #333; } svg.plot .plot-title { font-size: 13px; font-weight: bold; }
svg.plot .grid { stroke: #e5e5e5; stroke-width: 1; } svg.plot .frame { fill: none; stroke: #999; }
svg.plot .diagonal { stroke: #999; stroke-dasharray: 4 3; } svg.plot .legend { font-size: 11px; }
table { border-collapse: collapse; margin: 6px 0 14px; background: #fff; font-size: 13px; }
th, td { border: 1px solid #ddd; padding: 3px 8px; text-align: left; } th { background: #f0f0f0; }
td.num { text-align: right; font-variant-numeric: tabular-nums; } td.none { color: #aaa; text-align: center; }
td.worst { background: #fde8e8; } .delta { color: #888; font-size: 11px; }
pre { background: #fff; border: 1px solid #ddd; padding: 8px; font-size: 12px; overflow-x: auto; }
"""

TRAINING_PLOTS = [  # (metrics.jsonl keys drawn together, title, y label, scale); memory from zero
    (("grad_norm",), "gradient norm (before clipping)", "grad norm", 1),
    (("lr",), "learning rate", "lr", 1),
    (("tokens_per_s",), "training throughput", "tokens/s", 1),
    (("mfu",), "model FLOPs utilisation", "MFU (%)", 100),
    (("mem_mb", "gpu_mem_mb"), "memory (rank 0)", "MiB", 1),
    (("moe_aux_loss",), "MoE load-balancing loss", "aux loss", 1),
    (("moe_z_loss",), "MoE router z-loss", "z-loss", 1),
    (("moe_load_max_over_mean",), "MoE expert load, max over mean", "max / mean", 1),
    (("moe_dropped_tokens",), "MoE dropped assignments", "assignments", 1),
    (("epsilon",), "privacy spent (epsilon at privacy.delta)", "epsilon", 1),
    (("privacy_clipped",), "privacy units clipped", "share (%)", 100),
    (("privacy_unit_norm",), "privacy units' mean gradient norm (before clipping)", "norm", 1),
]


def plots_div(svgs):
    return '<div class="plots">\n' + "\n".join(s for s in svgs if s) + "\n</div>"


def metric_series(metrics, key, scale=1):
    rows = [m for m in metrics if key in m]
    return [m["step"] for m in rows], [m[key] * scale for m in rows]


def clean_eval(evals, metric):
    """{task: ([steps], [values])} of a metric's lines without level, perturbation or score."""
    by = {}
    for l in evals:
        if l["metric"] == metric and not (l["level"] or l["perturbation"] or l["score"]):
            by.setdefault(l["dataset"], {})[l["step"]] = l["value"]
    return {t: (sorted(d), [d[s] for s in sorted(d)]) for t, d in sorted(by.items())}


def mixture_sources(metrics):
    """The sources of a data mixture, in the order metrics.jsonl names them (loss/<name> keys)."""
    names = []
    for m in metrics:
        names += [k[len("loss/"):] for k in m if k.startswith("loss/") and k[len("loss/"):] not in names]
    return names


def training_section(metrics, evals):
    if not metrics:
        return None
    loss = [{"label": "training loss", "xs": metric_series(metrics, "loss")[0],
             "ys": metric_series(metrics, "loss")[1], "markers": False}]
    for task, (xs, ys) in clean_eval(evals, "loss").items():
        loss.append({"label": f"validation loss ({task})", "xs": xs, "ys": ys, "markers": True})
    svgs = [line_plot("loss", "loss", loss, ylabel="nats per token")]
    sources = mixture_sources(metrics)
    if sources:  # a data mixture: each source's training loss and its held-out loss when evaluated
        per_source = [{"label": f"training loss ({s})", "xs": metric_series(metrics, f"loss/{s}")[0],
                       "ys": metric_series(metrics, f"loss/{s}")[1], "markers": False} for s in sources]
        for task, (xs, ys) in clean_eval(evals, "loss").items():  # data.valid's prefixes
            per_source.append({"label": f"validation loss ({task})", "xs": xs, "ys": ys, "markers": True})
        svgs.append(line_plot("loss_per_source", "loss per source", per_source, ylabel="nats per token"))
        tokens = [{"label": s, "xs": metric_series(metrics, f"tokens/{s}")[0],
                   "ys": metric_series(metrics, f"tokens/{s}")[1]} for s in sources]
        svgs.append(line_plot("tokens_per_source", "trained tokens per source and step", tokens, ylabel="targets"))
    for keys, title, ylabel, scale in TRAINING_PLOTS:
        present = [k for k in keys if any(k in m for m in metrics)]
        series = [{"label": k if len(present) > 1 else "", "xs": metric_series(metrics, k, scale)[0],
                   "ys": metric_series(metrics, k, scale)[1]} for k in present]
        if series:
            svgs.append(line_plot(keys[0], title, series, ylabel=ylabel, from_zero=keys[0] == "mem_mb"))
    skipped = [m["step"] for m in metrics if m.get("skipped")]
    note = f"<p>Steps skipped for a non-finite loss or gradient: {esc(skipped)}</p>" if skipped else ""
    return plots_div(svgs) + note


def evaluation_section(evals):
    if not evals:
        return None
    # Each part only where its lines exist: a part without data is left out, not announced.
    view = EvalView(evals)
    parts = []
    for title, html in (("Latest results per task", results_tables(view)), ("By difficulty level", level_tables(view)),
                        ("Robustness", robustness_tables(view)),
                        ("Out-of-distribution detection", ood_metric_table(view)),
                        ("History", plots_div(history_plots(view)) if history_plots(view) else None)):
        if html:
            parts += [f"<h3>{title}</h3>"] + (html if isinstance(html, list) else [html])
    return "\n".join(parts) if parts else None


def roc_section(ood):
    if ood is None:
        return None
    series, rows = [], []
    for name, (ins, oods) in sorted(ood["scores"].items()):
        points = report_roc.roc_points(ins, oods)
        area, fpr95 = report_roc.auroc(points), report_roc.fpr_at_tpr(points)
        series.append({"label": f"{name} (AUROC {area:.4f})", "xs": [p[0] for p in points],
                       "ys": [p[1] for p in points], "markers": len(points) <= 60})
        recorded = ood["metrics"].get(name, {})
        rows.append([td(name), cell(len(ins), "examples"), cell(len(oods), "examples"), cell(area),
                     cell(recorded.get("auroc")), cell(recorded.get("aupr")), cell(fpr95), cell(recorded.get("fpr95"))])
    series.append({"label": "chance (AUROC 0.5)", "xs": [0, 1], "ys": [0, 1], "dash": True, "markers": False,
                   "color": "#888"})
    svg = line_plot("roc", f"ROC at step {ood['step']}",
                    series, xlabel="false-positive rate (in-distribution flagged)",
                    ylabel="true-positive rate (OOD flagged)", width=520, height=420, xlim=(0, 1), ylim=(0, 1))
    headers = ["score", "in examples", "OOD examples", "AUROC (from scores)", "AUROC (recorded)",
               "AUPR (recorded)", "FPR@95%TPR (from scores)", "FPR@95%TPR (recorded)"]
    return (f'<p class="meta">{esc(ood["path"].name)}: {esc(ood["ood_dataset"])} (OOD, the positive class) against '
            f'{esc(ood["in_dataset"])}; a higher score is more out-of-distribution.</p>' + plots_div([svg]) +
            table(headers, rows, "roc"))


def throughput_section(metrics, evals):
    svgs = []
    tokens = [{"label": "training", "xs": metric_series(metrics, "tokens_per_s")[0],
               "ys": metric_series(metrics, "tokens_per_s")[1], "markers": False}] if metrics else []
    for metric in ("tokens_per_s", "gen_tokens_per_s"):
        for task, (xs, ys) in clean_eval(evals, metric).items():
            tokens.append({"label": f"eval {metric} ({task})", "xs": xs, "ys": ys, "markers": True})
    svgs.append(line_plot("throughput-tokens", "tokens per second", tokens, ylabel="tokens/s"))
    samples = [{"label": f"eval {metric} ({task})", "xs": xs, "ys": ys, "markers": True}
               for metric in ("samples_per_s", "gen_samples_per_s")
               for task, (xs, ys) in clean_eval(evals, metric).items()]
    svgs.append(line_plot("throughput-samples", "samples per second", samples, ylabel="samples/s"))
    memory = [{"label": f"training {k}", "xs": metric_series(metrics, k)[0], "ys": metric_series(metrics, k)[1],
               "markers": False} for k in ("mem_mb", "gpu_mem_mb") if any(k in m for m in metrics)]
    memory += [{"label": f"eval ({task})", "xs": xs, "ys": ys, "markers": True}
               for task, (xs, ys) in clean_eval(evals, "mem_mb").items()]
    svgs.append(line_plot("memory", "peak memory", memory, ylabel="MiB", from_zero=True))
    if not any(svgs):
        return None
    keys = ("tokens_per_s", "samples_per_s", "gen_tokens_per_s", "gen_samples_per_s", "mem_mb")
    rows = []
    if metrics:
        tps = sorted(m["tokens_per_s"] for m in metrics[1:] if m.get("tokens_per_s")) or \
            [metrics[-1].get("tokens_per_s")]
        mem = [m["mem_mb"] for m in metrics if "mem_mb" in m]
        rows.append([td("training (median tokens/s after step 1, peak memory)"), td(metrics[-1]["step"]),
                     cell(tps[len(tps) // 2]), cell(None), cell(None), cell(None), cell(max(mem) if mem else None)])
    if evals:
        view = EvalView(evals)
        for task in view.tasks:
            values = [view.get(task, None, None, None, k) for k in keys]
            if any(v is not None for v in values):
                rows.append([td(f"eval {task}"), td(view.latest_step[task])] + [cell(v) for v in values])
    return plots_div(svgs) + table(["", "step"] + list(keys), rows, "throughput")


def summary(run_dir, metrics, evals, ood):
    rows = [[td("run directory"), td(str(run_dir))]]
    if metrics:
        last = metrics[-1]
        rows.append([td("steps logged"), td(f"{len(metrics)} (last step {last['step']})")])
        if "loss" in metrics[0] and "loss" in last:
            rows.append([td("training loss"), td(f"{metrics[0]['loss']:.4f} at step {metrics[0]['step']} -> "
                                                 f"{last['loss']:.4f} at step {last['step']}")])
        for key, label in (("tokens", "tokens seen"), ("elapsed_s", "elapsed (s)")):
            if key in last:
                rows.append([td(label), td(f"{last[key]:,.1f}" if key == "elapsed_s" else f"{last[key]:,.0f}")])
        if "epsilon" in last:
            rows.append([td("differential privacy"), td(f"epsilon {last['epsilon']:.4g} spent by step {last['step']}")])
    if evals:
        rows.append([td("evaluations"), td(f"{len(evals)} lines, {len({l['dataset'] for l in evals})} tasks, "
                                           f"steps {sorted({l['step'] for l in evals})}")])
    if ood:
        rows.append([td("OOD scores"), td(f"{ood['path'].name} ({', '.join(sorted(ood['scores']))})")])
    return table(["", ""], rows, "summary")


def write_html(path, run_dir, metrics, evals, ood, config_text):
    """Writes the page to path (through a temporary file beside it, renamed over the old page)."""
    now = datetime.datetime.now().strftime("%Y-%m-%d %H:%M")
    sections = [
        ("training", "Training curves", training_section(metrics, evals)),
        ("evaluation", "Evaluation", evaluation_section(evals)),
        ("ood-roc", "Out-of-distribution ROC", roc_section(ood)),
        ("throughput", "Throughput and memory", throughput_section(metrics, evals)),
    ]
    body = [f"<h1>Run report: {esc(run_dir.name)}</h1>",
            f'<p class="meta">utils/run_report.py, {now}. Hover a point for its value.</p>',
            summary(run_dir, metrics, evals, ood)]
    for anchor, title, html in sections:  # a section without data is left out
        if html:
            body.append(f'<section id="{anchor}"><h2>{esc(title)}</h2>\n{html}\n</section>')
    if config_text:
        body.append(f'<section id="config"><h2>Configuration</h2><details><summary>config.ini</summary>'
                    f"<pre>{esc(config_text.strip())}</pre></details></section>")
    page = (f'<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
            f"<title>Run report: {esc(run_dir.name)}</title><style>{CSS}</style></head>\n<body>\n"
            + "\n".join(body) + "\n</body></html>\n")
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(page, encoding="utf-8")
    os.replace(tmp, path)
    return page.count('<svg class="plot"')
