"""The evaluation part of the HTML run report: eval.jsonl lines grouped into tables and histories.

An eval line is {step, metric, value, dataset} with optional level (difficulty of a generated
suite), perturbation (robustness) and score (OOD) strings (utils/report_data.py reads them).
A task is a dataset; its "latest" results are the lines of its highest step, the last line
winning when the same metric was written twice at that step (repeated `trident eval` runs).
"""
import math

from report_svg import esc, line_plot

THROUGHPUT = ("tokens_per_s", "samples_per_s", "gen_tokens_per_s", "gen_samples_per_s", "mem_mb")
COUNTS = ("tokens", "examples", "documents")
OOD_METRICS = ("ood_auroc", "ood_aupr", "ood_fpr95")
QUALITY_ORDER = ("perplexity", "loss", "accuracy", "exact_match", "f1", "rouge1", "rouge2", "rougeL", "rougeLsum",
                 "bleu", "acc", "acc_norm",
                 "word_perplexity", "byte_perplexity", "bits_per_byte")
LEVEL_ORDER = ("easy", "medium", "hard")
PERTURBATION_ORDER = ("typo", "case", "whitespace", "shuffle_choices", "distractor")
ROBUST_BASES = ("acc", "exact_match")


def ordered(names, preferred):
    names = set(names)
    return [n for n in preferred if n in names] + sorted(n for n in names if n not in preferred)


def level_key(level):
    return (0, 0, "") if level is None else (1, LEVEL_ORDER.index(level), "") if level in LEVEL_ORDER \
        else (2, 0, level)


def is_aggregate(metric):
    return metric.endswith("_worst") or metric.endswith("_drop")


def is_quality(metric):
    return metric not in THROUGHPUT and metric not in COUNTS and metric not in OOD_METRICS \
        and not is_aggregate(metric)


def cell(v, metric=""):
    if v is None:
        return '<td class="none">&mdash;</td>'
    if not math.isfinite(v):
        return f'<td class="num">{v}</td>'
    if metric in COUNTS or (abs(v) >= 1000 and v == int(v)):
        return f'<td class="num">{int(v):,}</td>'
    return f'<td class="num">{v:,.1f}</td>' if abs(v) >= 1000 else f'<td class="num">{v:.4f}</td>'


def table(headers, rows, cls=""):
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "\n".join("<tr>" + "".join(r) + "</tr>" for r in rows)
    return f'<table class="{cls}"><thead><tr>{head}</tr></thead><tbody>\n{body}\n</tbody></table>'


def td(text):
    return f"<td>{esc(text)}</td>"


class EvalView:
    """The eval lines indexed by task: latest step, latest values, per-step histories."""

    def __init__(self, lines):
        self.lines = lines
        self.tasks = sorted({l["dataset"] for l in lines})
        self.latest_step = {t: max(l["step"] for l in lines if l["dataset"] == t) for t in self.tasks}
        self.latest = {}  # (task, level, perturbation, score, metric) -> value at the task's latest step
        for l in lines:
            if l["step"] == self.latest_step[l["dataset"]]:
                self.latest[(l["dataset"], l["level"], l["perturbation"], l["score"], l["metric"])] = l["value"]

    def get(self, task, level, perturbation, score, metric):
        return self.latest.get((task, level, perturbation, score, metric))

    def history(self, task, metric, variant=None):
        """{variant (level, perturbation, score): ([steps], [values])}, last value per step."""
        by = {}
        for l in self.lines:
            v = (l["level"], l["perturbation"], l["score"])
            if l["dataset"] == task and l["metric"] == metric and (variant is None or v == variant):
                by.setdefault(v, {})[l["step"]] = l["value"]
        return {v: (sorted(d), [d[s] for s in sorted(d)]) for v, d in by.items()}


def variant_label(variant):
    level, perturbation, score = variant
    parts = [f"level {level}"] * bool(level) + [f"perturbation {perturbation}"] * bool(perturbation) \
        + [f"score {score}"] * bool(score)
    return ", ".join(parts) or "clean"


def variant_key(variant):
    level, perturbation, score = variant
    rank = PERTURBATION_ORDER.index(perturbation) if perturbation in PERTURBATION_ORDER else len(PERTURBATION_ORDER)
    return level_key(level), perturbation is not None, rank, perturbation or "", score or ""


def results_tables(view):
    """Latest quality metrics per task x level, one table per set of metrics (task kind)."""
    groups = {}
    for (task, level, pert, score, metric) in view.latest:
        if pert is None and score is None and (is_quality(metric) or metric in COUNTS):
            groups.setdefault((task, level), set()).add(metric)
    kinds = {}
    for row, metrics in groups.items():
        quality = frozenset(m for m in metrics if is_quality(m))
        if quality:
            kinds.setdefault(quality, []).append(row)
    out = []
    for quality, rows in sorted(kinds.items(), key=lambda kv: ordered(kv[0], QUALITY_ORDER)):
        metrics = ordered(quality, QUALITY_ORDER) + ordered(
            {m for r in rows for m in groups[r] if m in COUNTS}, COUNTS)
        with_level = any(level for _, level in rows)
        headers = ["task"] + ["level"] * with_level + ["step"] + metrics
        body = []
        for task, level in sorted(rows, key=lambda r: (r[0], level_key(r[1]))):
            body.append([td(task)] + [td(level or "all")] * with_level + [td(view.latest_step[task])]
                        + [cell(view.get(task, level, None, None, m), m) for m in metrics])
        out.append(table(headers, body, "results"))
    return out


def level_tables(view):
    """For tasks evaluated per level: rows task, columns level, one table per quality metric."""
    by_metric = {}
    for (task, level, pert, score, metric) in view.latest:
        if level and pert is None and score is None and is_quality(metric):
            by_metric.setdefault(metric, set()).add(task)
    out = []
    for metric in ordered(by_metric, QUALITY_ORDER):
        tasks = sorted(by_metric[metric])
        levels = sorted({k[1] for k in view.latest if k[0] in tasks and k[1] and k[4] == metric}, key=level_key)
        body = [[td(t)] + [cell(view.get(t, lv, None, None, metric), metric) for lv in levels]
                + [cell(view.get(t, None, None, None, metric), metric)] for t in tasks]
        out.append(f"<h4>{esc(metric)} by level</h4>"
                   + table(["task"] + levels + ["all levels"], body, "levels"))
    return out


def robustness_tables(view):
    """Clean vs each perturbation (with the change) vs the worst case and its recorded drop."""
    out = []
    for base in ROBUST_BASES:
        rows = sorted({(k[0], k[1]) for k in view.latest if k[2] and k[4] == base},
                      key=lambda r: (r[0], level_key(r[1])))
        if not rows:
            continue
        perts = ordered({k[2] for k in view.latest if k[2] and k[4] == base}, PERTURBATION_ORDER)
        body = []
        for task, level in rows:
            clean = view.get(task, level, None, None, base)
            values = [view.get(task, level, p, None, base) for p in perts]
            known = [v for v in values if v is not None]
            worst_seen = min(known) if known else None
            cells = [td(task), td(level or "all"), cell(clean, base)]
            for v in values:
                if v is None:
                    cells.append(cell(None))
                    continue
                change = f' <span class="delta">({v - clean:+.4f})</span>' if clean is not None else ""
                mark = ' class="num worst"' if v == worst_seen and len(known) > 1 else ' class="num"'
                cells.append(f"<td{mark}>{v:.4f}{change}</td>")
            cells += [cell(view.get(task, level, None, None, f"{base}_worst"), base),
                      cell(view.get(task, level, None, None, f"{base}_drop"), base)]
            body.append(cells)
        headers = ["task", "level", f"{base} clean"] + perts + [f"{base}_worst", f"{base}_drop"]
        out.append(f"<h4>{esc(base)} under perturbation</h4>" + table(headers, body, "robustness"))
    return out


def ood_metric_table(view):
    rows = sorted({(k[0], k[3]) for k in view.latest if k[3] and k[4] in OOD_METRICS})
    if not rows:
        return None
    body = [[td(t), td(s), td(view.latest_step[t])]
            + [cell(view.get(t, None, None, s, m), m) for m in OOD_METRICS] for t, s in rows]
    return table(["in-distribution task", "score", "step"] + list(OOD_METRICS), body, "ood")


def history_plots(view):
    """A small plot per task and quality metric that was evaluated at two or more steps."""
    plots = []
    for task in view.tasks:
        metrics = ordered({l["metric"] for l in view.lines if l["dataset"] == task
                           and (is_quality(l["metric"]) or l["metric"] in OOD_METRICS)}, QUALITY_ORDER)
        for metric in metrics:
            hist = view.history(task, metric)
            if len({s for steps, _ in hist.values() for s in steps}) < 2:
                continue
            series = [{"label": variant_label(v), "xs": xs, "ys": ys}
                      for v, (xs, ys) in sorted(hist.items(), key=lambda kv: variant_key(kv[0]))]
            svg = line_plot(f"eval-{task}-{metric}", f"{metric} — {task}", series, ylabel=metric, height=220)
            if svg:
                plots.append(svg)
    return plots
