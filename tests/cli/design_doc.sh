#!/usr/bin/env bash
# docs/design.md stays true: every configuration key `trident train --help` lists is in its
# key tables, under its section, and every key of a metrics.jsonl line is in its metrics table.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

"$trident" train --help > "$work/help.txt"
"$trident" train --config input/configs/tiny.ini --log.run_dir="$work/run" --train.steps=1 > /dev/null
python3 - docs/design.md "$work/help.txt" "$work/run/metrics.jsonl" <<'PY'
import json, re, sys
doc, help_text, metrics = (open(p).read() for p in sys.argv[1:])
keys = re.findall(r"^\s+--([a-z_]+\.[a-z_]+) arg", help_text, re.M)
assert len(keys) > 50, f"only {len(keys)} keys in trident train --help"
sections, section = {}, None
for line in doc.splitlines():
    m = re.match(r"\| `\[([a-z_]+)\]` key \|", line)
    if m:
        section = m.group(1)
        continue
    m = re.match(r"\| `([a-z_]+)` \|", line)
    if section and m:
        sections.setdefault(section, set()).add(m.group(1))
    elif not line.startswith("|"):
        section = None
missing = [k for k in keys if k.split(".")[1] not in sections.get(k.split(".")[0], set())]
assert not missing, f"configuration keys missing from docs/design.md: {missing}"
listed = {f"{s}.{k}" for s, ks in sections.items() for k in ks}
stale = sorted(listed - set(keys))
assert not stale, f"docs/design.md lists keys trident does not have: {stale}"
table = set(re.findall(r"^\| `([a-z_]+)` \| [^`]", doc[doc.index("Each `metrics.jsonl` line"):], re.M))
line = json.loads(open(sys.argv[3]).readline())
missing = sorted(set(line) - table)
assert not missing, f"metrics keys missing from docs/design.md: {missing}"
print(f"docs/design.md: {len(keys)} configuration keys and {len(line)} metrics keys listed")
PY
