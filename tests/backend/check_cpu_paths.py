#!/usr/bin/env python3
"""Checks that a wide CPU kernel path shares no wide code with the rest of trident.

The kernels of src/backend/cpu/ are compiled once per path; a wider path adds a target pragma
after the shared headers (src/backend/cpu/path_prelude.hpp). Functions the objects of a path
share with others (the standard library's templates, trident's headers) are emitted in every
object that uses them and the linker keeps one copy: if a wide path's copy held wide
instructions, a baseline processor could run it and die by SIGILL. So every function in the
path's objects whose name is not inside the path's namespace (trident::cpu::<path>::) must be
free of the path's wide instructions.

usage: check_cpu_paths.py PATH OBJECT_DIR   (PATH: avx512 or sve)
"""
import pathlib
import re
import subprocess
import sys

# Instructions only the wide path may hold, as objdump prints them.
WIDE = {
    # zmm, the upper 16 xmm/ymm, mask registers, embedded broadcasts, AVX-512-only mnemonics
    "avx512": re.compile(r"%zmm|%[xy]mm(1[6-9]|2\d|3[01])\b|%k[0-7]\b|\{1to\d+\}|\bv(pternlog|permt2|permi2|pro[lr]|"
                         r"rndscale|range|getexp|getmant|scalef|fixupimm|pcompress|pexpand|blendm|pblendm|pconflict|"
                         r"plzcnt|cvtne2ps2bf16|cvtneps2bf16|dpbf16ps)|\bk(mov|or|and|not|test|shift)"),
    # SVE vector and predicate registers
    "sve": re.compile(r"\bz([12]?\d|3[01])\.[bhsdq]\b|\bp([0-9]|1[0-5])(/[zm]|\.[bhsd])\b"),
}
LABEL = re.compile(r"^[0-9a-f]+ <(.*)>:$")


def offenders(path, obj):
    out = subprocess.run(["objdump", "-d", "-C", "--no-show-raw-insn", str(obj)], check=True,
                         capture_output=True, text=True).stdout
    found, name, private = {}, None, True
    for line in out.splitlines():
        m = LABEL.match(line)
        if m:
            name = m.group(1)
            private = f"cpu::{path}::" in name
        elif name and not private and WIDE[path].search(line):
            found.setdefault(name, line.strip())
    return found


def main():
    if len(sys.argv) != 3 or sys.argv[1] not in WIDE:
        sys.exit(__doc__)
    path, root = sys.argv[1], pathlib.Path(sys.argv[2])
    objects = sorted(root.rglob("*.o"))
    if not objects:
        sys.exit(f"no objects under {root}")
    bad = 0
    for obj in objects:
        for name, line in offenders(path, obj).items():
            print(f"{obj.name}: {name} holds {path} code outside trident::cpu::{path} ({line})")
            bad += 1
    print(f"{len(objects)} objects of the {path} path checked, {bad} shared functions with {path} code")
    sys.exit(1 if bad else 0)


if __name__ == "__main__":
    main()
