#!/opt/trident-tools/bin/python
"""Reads a run's TensorBoard events (<run_dir>/tensorboard/) with tensorboard's EventAccumulator.

Prints each tag with its step count and last value. Checks, exiting 1 with what is wrong:
  every events file holds whole TFRecords whose CRCs match (always);
  --metrics FILE: every key but "step" of every metrics.jsonl line is a scalar at that line's
                  step, once, with the same value as float32 (to the float32 step: the JSON
                  line's digits are rounded; null: NaN or infinite);
  --config FILE:  the latest text summary "config" is that config.ini in a Markdown code block;
  --eval FILE:    every eval.jsonl line is the scalar
                  eval/<dataset file>/<metric>[/<level>][/<perturbation>][/<score>] at its step.
usage: /opt/trident-tools/bin/python utils/read_tensorboard.py RUN_DIR/tensorboard [--metrics F] [--config F]
(the venv from utils/setup.sh: tensorboard is not a Debian package)
"""
import argparse
import json
import math
import pathlib
import struct
import sys

from tensorboard.backend.event_processing import event_accumulator
from tensorboard.compat.tensorflow_stub.pywrap_tensorflow import masked_crc32c


def check_framing(path):
    """Number of records in an events file; raises ValueError at a torn record or a bad CRC."""
    data, at, count = path.read_bytes(), 0, 0
    while at < len(data):
        if at + 12 > len(data):
            raise ValueError(f"{path}: a torn record header at byte {at}")
        (length,), (length_crc,) = struct.unpack("<Q", data[at:at + 8]), struct.unpack("<I", data[at + 8:at + 12])
        if masked_crc32c(data[at:at + 8]) != length_crc:
            raise ValueError(f"{path}: the length CRC of the record at byte {at} does not match")
        end = at + 12 + length
        if end + 4 > len(data):
            raise ValueError(f"{path}: a torn record at byte {at} ({length} bytes announced)")
        if masked_crc32c(data[at + 12:end]) != struct.unpack("<I", data[end:end + 4])[0]:
            raise ValueError(f"{path}: the data CRC of the record at byte {at} does not match")
        at, count = end + 4, count + 1
    return count


def f32(x):
    return struct.unpack("<f", struct.pack("<f", x))[0]


def same_f32(got, want):
    """got (a float32 scalar) is want as float32. JSON lines print a limited number of digits,
    so the scalar of the unrounded value may sit one float32 step from want's rounding."""
    w = f32(want)
    step = abs(f32(w * (1 + 2 ** -23)) - w) or 2 ** -149
    return abs(got - w) <= step


def check_metrics(acc, metrics_path):
    lines = [json.loads(l) for l in pathlib.Path(metrics_path).read_text().splitlines()]
    tags = set(acc.Tags()["scalars"])
    scalars = {tag: {} for tag in tags}
    for tag in tags:
        for e in acc.Scalars(tag):
            if e.step in scalars[tag]:
                raise ValueError(f"scalar {tag}: step {e.step} is there twice")
            scalars[tag][e.step] = e.value
    checked = 0
    for line in lines:
        step = line["step"]
        for key, want in line.items():
            if key == "step":
                continue
            got = scalars.get(key, {}).get(step)
            if got is None:
                raise ValueError(f"metrics key {key}: no scalar at step {step}")
            ok = not math.isfinite(got) if want is None else same_f32(got, want)
            if not ok:
                raise ValueError(f"metrics key {key} at step {step}: scalar {got}, metrics.jsonl {want}")
            checked += 1
    steps = {line["step"] for line in lines}
    for tag, by_step in scalars.items():
        extra = sorted(set(by_step) - steps)
        if extra and any(tag in line for line in lines):
            raise ValueError(f"scalar {tag}: steps {extra} are not in {metrics_path}")
    return len(lines), checked


def check_eval(acc, eval_path):
    lines = [json.loads(l) for l in pathlib.Path(eval_path).read_text().splitlines()]
    for line in lines:
        tag = "/".join(["eval", line["dataset"].rsplit("/", 1)[-1], line["metric"]] +
                       [line[k] for k in ("level", "perturbation", "score") if k in line])
        if tag not in acc.Tags()["scalars"]:
            raise ValueError(f"eval line {line}: no scalar {tag}")
        values = {e.step: e.value for e in acc.Scalars(tag)}
        if line["step"] not in values or not same_f32(values[line["step"]], line["value"]):
            raise ValueError(f"{tag} at step {line['step']}: scalar {values.get(line['step'])}, eval.jsonl {line['value']}")
    return len(lines)


def check_config(acc, config_path):
    if "config" not in acc.Tags()["tensors"]:
        raise ValueError("no text summary 'config'")
    events = acc.Tensors("config")
    meta = acc.SummaryMetadata("config")
    if meta.plugin_data.plugin_name != "text":
        raise ValueError(f"'config' is for plugin {meta.plugin_data.plugin_name!r}, not text")
    got = events[-1].tensor_proto.string_val[0].decode()
    want = "```ini\n" + pathlib.Path(config_path).read_text() + "```\n"
    if got != want:
        raise ValueError(f"the config text (step {events[-1].step}) is not {config_path} in a code block:\n{got}")
    return len(events)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("dir", help="the run's tensorboard/ directory")
    parser.add_argument("--metrics", help="metrics.jsonl whose lines must all be there")
    parser.add_argument("--config", help="config.ini that the 'config' text must hold")
    parser.add_argument("--eval", help="eval.jsonl whose lines must all be there")
    args = parser.parse_args()
    files = sorted(pathlib.Path(args.dir).glob("events.out.tfevents.*"))
    try:
        if not files:
            raise ValueError(f"no events.out.tfevents.* in {args.dir}")
        for path in files:
            print(f"{path.name}: {check_framing(path)} records, framing and CRCs good")
        acc = event_accumulator.EventAccumulator(args.dir, size_guidance={"scalars": 0, "tensors": 0})
        acc.Reload()
        for tag in sorted(acc.Tags()["scalars"]):
            events = acc.Scalars(tag)
            print(f"  {tag}: {len(events)} steps, last {events[-1].value:.6g} at step {events[-1].step}")
        if args.metrics:
            lines, checked = check_metrics(acc, args.metrics)
            print(f"{args.metrics}: all {lines} lines ({checked} values) are scalars at their steps")
        if args.eval:
            print(f"{args.eval}: all {check_eval(acc, args.eval)} lines are scalars at their steps")
        if args.config:
            print(f"config text: {check_config(acc, args.config)} start(s), the latest equal to {args.config}")
    except ValueError as e:
        print(f"read_tensorboard: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
