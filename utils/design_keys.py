#!/usr/bin/env python3
"""Rewrites the configuration-key tables of docs/design.md (section 5) from the schema: the
model's keys in src/interop/model_keys.cpp, the rest in src/cli/config_schema.cpp, in the order
config_schema() lists them ([model], parallel and train, [moe], [lora], the rest), so the
document lists every key with its default and meaning.
usage: utils/design_keys.py [--check]   (--check: exit 1 if the tables are out of date)"""
import pathlib, re, sys

root = pathlib.Path(__file__).resolve().parent.parent
schema = re.findall(r'\{"([a-z_]+\.[a-z_]+)", "([^"]*)", "((?:[^"\\]|\\.)*)"\}',
                    (root / "src/cli/config_schema.cpp").read_text())
model = re.findall(r'"((?:model|moe|lora)\.[a-z_]+)", "([^"]*)",\s*"((?:[^"\\]|\\.)*)"',
                   (root / "src/interop/model_keys.cpp").read_text())
section = lambda rows, *names: [r for r in rows if r[0].split(".")[0] in names]
rows = (section(model, "model") + section(schema, "parallel", "train") + section(model, "moe", "lora") +
        [r for r in schema if r[0].split(".")[0] not in ("parallel", "train")])
out, section = [], None
for key, default, meaning in rows:
    sec, name = key.split(".")
    if sec != section:
        out += ["", f"| `[{sec}]` key | default | meaning |", "|---|---|---|"]
        section = sec
    meaning = meaning.replace("|", "\\|")
    out.append(f"| `{name}` | `{default}` | {meaning} |" if default else f"| `{name}` | (unset) | {meaning} |")
tables = "\n".join(out).strip("\n")
doc_path = root / "docs/design.md"
doc = doc_path.read_text()
start = doc.index("| `[model]` key |")
end = doc.index("\n\n## 6.", start)
new = doc[:start] + tables + doc[end:]
if "--check" in sys.argv:
    sys.exit(0 if new == doc else 1)
doc_path.write_text(new)
