"""Reading a run directory for utils/run_report.py: metrics.jsonl, eval.jsonl and ood/step_*.json.

Readers never stop the report: a malformed line or file is skipped with a warning on stderr
(the first few per file, then a count), so a torn or hand-edited record still gets a report.
"""
import json
import math
import pathlib
import re
import sys

MAX_WARNINGS_PER_FILE = 5
EVAL_OPTIONAL_KEYS = ("level", "perturbation", "score")  # optional string keys of an eval line
# metrics.jsonl keys that older trident versions wrote under another name, {current: old}: the
# privacy keys were dp_* (dp now means data parallelism only). A line's current key wins; a line
# with only the old one has it read under the current name, so older runs still plot.
RENAMED_METRICS = {"privacy_units": "dp_units", "privacy_clipped": "dp_clipped", "privacy_unit_norm": "dp_unit_norm"}


def warn(message):
    print(f"run_report: warning: {message}", file=sys.stderr)


def is_number(x):
    return isinstance(x, (int, float)) and not isinstance(x, bool)


def is_step(x):
    return is_number(x) and math.isfinite(x) and x == int(x) and x >= 0


class Warnings:
    """The skipped lines of one file; done() prints the first few in line order and a count."""

    def __init__(self, path):
        self.path, self.skipped = path, []

    def skip(self, number, why):
        self.skipped.append((number, why))

    def done(self):
        self.skipped.sort()
        for number, why in self.skipped[:MAX_WARNINGS_PER_FILE]:
            warn(f"{self.path}:{number}: skipped: {why}")
        if len(self.skipped) > MAX_WARNINGS_PER_FILE:
            warn(f"{self.path}: {len(self.skipped) - MAX_WARNINGS_PER_FILE} more malformed lines skipped")


def read_objects(path):
    """(line number, dict) for each JSON object line of path, other lines warned about and
    skipped, and the Warnings that the caller adds its own skips to (and then calls done())."""
    w, rows = Warnings(path), []
    if not path.is_file():
        return rows, w
    try:
        text = path.read_text(errors="replace")
    except OSError as e:
        warn(f"{path}: unreadable ({e})")
        return rows, w
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            row = json.loads(line)
        except (json.JSONDecodeError, RecursionError) as e:
            w.skip(number, f"not JSON ({e})")
            continue
        if not isinstance(row, dict):
            w.skip(number, "not a JSON object")
            continue
        rows.append((number, row))
    return rows, w


def read_metrics(path):
    """metrics.jsonl rows with an integer "step"; non-numeric values of other keys dropped, the
    old names of RENAMED_METRICS read as the current ones."""
    rows = []
    objects, w = read_objects(path)
    for number, row in objects:
        if not is_step(row.get("step")):
            w.skip(number, f"no integer \"step\" ({row.get('step')!r})")
            continue
        clean = {k: v for k, v in row.items() if is_number(v)}
        clean["step"] = int(row["step"])
        for current, old in RENAMED_METRICS.items():
            if old in clean:
                clean.setdefault(current, clean.pop(old))
        rows.append(clean)
    w.done()
    return rows


def read_evals(path):
    """eval.jsonl lines as dicts: step (int), metric, value (number), dataset, and the optional
    level / perturbation / score strings (None when absent)."""
    lines = []
    objects, w = read_objects(path)
    for number, row in objects:
        if not is_step(row.get("step")):
            w.skip(number, f"no integer \"step\" ({row.get('step')!r})")
            continue
        if not isinstance(row.get("metric"), str) or not row["metric"]:
            w.skip(number, "no \"metric\" string")
            continue
        if not is_number(row.get("value")):
            w.skip(number, f"\"value\" is not a number ({row.get('value')!r})")
            continue
        bad = [k for k in EVAL_OPTIONAL_KEYS if row.get(k) is not None and not isinstance(row[k], str)]
        if bad:
            w.skip(number, f"{', '.join(bad)} not a string")
            continue
        line = {"step": int(row["step"]), "metric": row["metric"], "value": float(row["value"]),
                "dataset": str(row.get("dataset", "") or "(unnamed)")}
        for k in EVAL_OPTIONAL_KEYS:
            line[k] = row.get(k) or None
        lines.append(line)
    w.done()
    return lines


def finite_floats(values):
    """The finite numbers of a JSON list (None when it is not a list of numbers)."""
    if not isinstance(values, list) or not all(is_number(v) for v in values):
        return None
    return [float(v) for v in values if math.isfinite(v)]


def read_latest_ood(run_dir):
    """The ood/step_<8 digits>.json of the highest step that parses, as a dict with step,
    in_dataset, ood_dataset, scores {name: (in, ood)} and metrics {name: {auroc, aupr, fpr95}};
    None when there is none. Files that do not parse are warned about and the next one tried."""
    folder = run_dir / "ood"
    if not folder.is_dir():
        return None
    files = sorted((p for p in folder.iterdir() if re.fullmatch(r"step_\d{8}\.json", p.name)), reverse=True)
    for path in files:
        try:
            doc = json.loads(path.read_text(errors="replace"))
        except (OSError, json.JSONDecodeError, RecursionError) as e:
            warn(f"{path}: skipped: not JSON ({e})")
            continue
        if not isinstance(doc, dict) or not isinstance(doc.get("scores"), dict):
            warn(f"{path}: skipped: no \"scores\" object")
            continue
        scores = {}
        for name, pair in doc["scores"].items():
            ins = finite_floats(pair.get("in")) if isinstance(pair, dict) else None
            oods = finite_floats(pair.get("ood")) if isinstance(pair, dict) else None
            if not ins or not oods:
                warn(f"{path}: score {name!r} skipped: \"in\" and \"ood\" must be non-empty lists of numbers")
                continue
            scores[str(name)] = (ins, oods)
        if not scores:
            warn(f"{path}: skipped: no usable score")
            continue
        metrics = doc.get("metrics") if isinstance(doc.get("metrics"), dict) else {}
        metrics = {str(k): {m: v for m, v in d.items() if is_number(v)}
                   for k, d in metrics.items() if isinstance(d, dict)}
        step = doc.get("step") if is_step(doc.get("step")) else int(path.stem[5:])
        return {"path": path, "step": int(step), "in_dataset": str(doc.get("in_dataset", "?")),
                "ood_dataset": str(doc.get("ood_dataset", "?")), "scores": scores, "metrics": metrics}
    return None


def output_dir_is_safe(run_dir, out):
    """The report writes only into its own folder: refuse the run directory itself or one of
    the folders trident owns (checkpoints/, ood/), where a report file could shadow a record."""
    run, target = pathlib.Path(run_dir).resolve(), pathlib.Path(out).resolve()
    return target != run and not any(target == run / d or run / d in target.parents
                                     for d in ("checkpoints", "ood"))
