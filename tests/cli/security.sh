#!/usr/bin/env bash
# [security] end to end (docs/design.md section 12): under umask 000 every file and directory
# prep and a run write has the configured mode and group; a corpus with planted secrets,
# prepared with a key, leaves no secret readable in any file written; training, resuming under
# another layout and eval work with the key, and without it, with another key or with a key
# file others may read they exit 2; a flipped byte of an encrypted or plain shard is exit 2
# naming the file and block; inputs writable by others fail under strict; the audit log lists
# every file of the run.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
umask 000
group=staff
getent group "$group" > /dev/null || fail "no group $group on this host"

python3 -c 'import os; print(os.urandom(32).hex())' > "$work/key"
python3 -c 'import os; print(os.urandom(32).hex())' > "$work/other.key"
chmod 600 "$work/key" "$work/other.key"

# --- a corpus with planted secrets ------------------------------------------------------------
secrets=(PATIENT-4711-DIABETES IBAN-DE44-5001-0517 PASSWORD-hunter2-xyz)
python3 - "$work/corpus.jsonl" "${secrets[@]}" <<'PY'
import json, sys
path, secrets = sys.argv[1], sys.argv[2:]
text = open("docs/design.md", encoding="utf-8").read()
with open(path, "w") as f:
    for i in range(200):
        body = text[(i * 997) % 40000:(i * 997) % 40000 + 1500]
        if i % 50 == 7:
            body += f" record {i}: {secrets[i % len(secrets)]} "
        f.write(json.dumps({"text": body}) + "\n")
PY
"$trident" prep --input "$work/corpus.jsonl" --output "$work/data/private/c" --valid-permille 100 \
  --key-file "$work/key" --group "$group" > "$work/prep.log" 2>&1 || fail "prep: $(tail -n 3 "$work/prep.log")"

run=(--config input/configs/tiny.ini --data.train="$work/data/private/c" --data.valid="$work/data/private/c-valid"
     --security.key_file="$work/key" --security.group="$group" --security.audit=true --checkpoint.interval=2
     --checkpoint.local_dir="$work/local" --checkpoint.local_interval=1)
mpirun -np 2 "$trident" train "${run[@]}" --train.steps=4 --parallel.dp=2 --log.run_dir="$work/run" \
  > "$work/train.log" 2>&1 || fail "train with the key: $(tail -n 3 "$work/train.log")"
# Resume under another layout (dp=2 -> tp=2) and evaluate, both with the key.
mpirun -np 2 "$trident" train "${run[@]}" --train.steps=6 --parallel.tp=2 --log.run_dir="$work/run" \
  > "$work/resume.log" 2>&1 || fail "resume under tp=2: $(tail -n 3 "$work/resume.log")"
grep -q "resumed from .*step_00000004.h5: 4 steps done" "$work/resume.log" || fail "no resume: $(grep -i resum "$work/resume.log")"
"$trident" eval "${run[@]}" --checkpoint="$work/run/checkpoints/step_00000006.h5" --log.run_dir="$work/run" \
  > "$work/eval.log" 2>&1 || fail "eval with the key: $(tail -n 3 "$work/eval.log")"
echo "ok: prep, train, resume under tp=2 and eval with the key"

# --- modes and groups of everything written, whatever the umask -----------------------------
python3 - "$work" "$group" <<'PY'
import grp, os, stat, sys
work, group = sys.argv[1], sys.argv[2]
gid = grp.getgrnam(group).gr_gid
bad, seen = [], 0
for top in ["data", "run", "local"]:
    for root, dirs, files in os.walk(os.path.join(work, top)):
        for name in dirs + files:
            p = os.path.join(root, name)
            st = os.lstat(p)
            want = 0o750 if stat.S_ISDIR(st.st_mode) else 0o640
            seen += 1
            if stat.S_IMODE(st.st_mode) != want or st.st_gid != gid:
                bad.append(f"{p}: {oct(stat.S_IMODE(st.st_mode))} gid {st.st_gid}")
assert not bad, "wrong mode or group:\n" + "\n".join(bad)
assert seen > 15, seen
print(f"ok: {seen} files and directories of mode 0640 / 0750 and group {group} under umask 000")
PY

# --- no secret readable in any file written --------------------------------------------------
python3 - "$work" "${secrets[@]}" <<'PY'
import os, sys
work, secrets = sys.argv[1], sys.argv[2:]
patterns = []
for s in secrets:
    patterns += [s.encode(), s.encode("utf-16-le"), s.encode("utf-32-le")]  # bytes, uint16 and uint32 ids
found = []
for top in ["data", "run", "local"]:
    for root, _, files in os.walk(os.path.join(work, top)):
        for name in files:
            data = open(os.path.join(root, name), "rb").read()
            found += [f"{name}: {p!r}" for p in patterns if p in data]
assert not found, "secrets readable: " + ", ".join(found)
# The same corpus prepared without a key does hold them (the search can find them).
PY
"$trident" prep --input "$work/corpus.jsonl" --output "$work/plain/c" > /dev/null
python3 -c 'import sys; d = open(sys.argv[1], "rb").read(); assert sys.argv[2].encode("utf-16-le") in d' \
  "$work/plain/c.bin" "${secrets[0]}" || fail "the plain shard should hold the secret as uint16 ids"
echo "ok: no planted secret in any file written"

# --- without the key, with another key, with a key file others may read ------------------------
plain_run=(train --config input/configs/tiny.ini --data.train="$work/data/private/c" --data.valid= --train.steps=2
           --log.run_dir="$work/other")
expect_exit2 "c.bin is encrypted (key id" "$trident" "${plain_run[@]}"
expect_exit2 "the key does not match" "$trident" "${plain_run[@]}" --security.key_file="$work/other.key"
chmod 644 "$work/other.key"
expect_exit2 "has mode 0644; it must be 0600 or 0400" "$trident" "${plain_run[@]}" --security.key_file="$work/other.key"
expect_exit2 "has mode 0644" "$trident" prep --input "$work/corpus.jsonl" --output "$work/x" --key-file "$work/other.key"
[[ ! -e "$work/x.bin" ]] || fail "prep wrote shards with a bad key file"
echo "ok: no key, another key, a readable key file: exit 2"

# --- a flipped byte in a shard (encrypted and plain) ------------------------------------------
for kind in private plain; do
  dir=$work/data/private; [[ $kind == plain ]] && dir=$work/plain
  cp -p "$dir/c.bin" "$work/saved.bin"
  python3 -c 'import sys; f = open(sys.argv[1], "r+b"); f.seek(70000); b = f.read(1); f.seek(70000); f.write(bytes([b[0] ^ 1]))' "$dir/c.bin"
  key=(); [[ $kind == private ]] && key=(--security.key_file="$work/key")
  expect_exit2 "c.bin: block 1 (bytes 65536..131072) fails its" "$trident" train --config input/configs/tiny.ini \
    --data.train="$dir/c" --data.valid= --train.steps=2 --log.run_dir="$work/flip-$kind" "${key[@]}"
  cp -p "$work/saved.bin" "$dir/c.bin"
done
echo "ok: a flipped byte of an encrypted and of a plain shard: exit 2 naming the file and block"

# --- inputs others may write -------------------------------------------------------------------
cp input/configs/tiny.ini "$work/open.ini"
chmod 666 "$work/open.ini"
expect_exit2 "open.ini is writable by others (mode 0666)" "$trident" train --config "$work/open.ini" --data.train="$work/plain/c" \
  --data.valid= --train.steps=1 --log.run_dir="$work/strict" --security.inputs=strict
"$trident" train --config "$work/open.ini" --data.train="$work/plain/c" --data.valid= --train.steps=1 \
  --log.run_dir="$work/warn" > "$work/warn.log" 2>&1 || fail "warn: $(tail -n 2 "$work/warn.log")"
grep -q "warning: config: .*open.ini is writable by others (mode 0666)" "$work/warn.log" || fail "no warning: $(head -n 3 "$work/warn.log")"
ln -s "$work/plain/c.bin" "$work/data/link.bin"
ln -s "$work/plain/c.idx" "$work/data/link.idx"
expect_exit2 "link.idx is a symlink out of its directory" "$trident" train --config input/configs/tiny.ini \
  --data.train="$work/data/link" --data.valid= --train.steps=1 --log.run_dir="$work/strict" --security.inputs=strict
echo "ok: inputs writable by others or linked from elsewhere: exit 2 under strict, a warning under warn"

# --- the audit log lists every file of the run ---------------------------------------------------
python3 - "$work/run" "$work/data/private" "$work/local" <<'PY'
import json, os, sys
run, data, local = sys.argv[1], sys.argv[2], sys.argv[3]
lines = [json.loads(l) for l in open(os.path.join(run, "audit.jsonl"))]
for l in lines:
    assert {"time", "user", "uid", "host", "job", "rank", "action", "path", "size"} <= l.keys(), l
written = {l["path"] for l in lines if l["action"] == "write"}
read = {l["path"] for l in lines if l["action"] == "read"}
files = {os.path.join(r, f) for top in [run, local] for r, _, fs in os.walk(top) for f in fs}
files -= {os.path.join(run, "audit.jsonl")}
missing = sorted(files - written)
assert not missing, f"not in the audit log: {missing}"
for ext in ["c.bin", "c.idx", "c-valid.bin", "c-valid.idx"]:
    assert os.path.join(data, ext) in read, f"{ext} not read: {sorted(read)}"
keyed = [l for l in lines if l["path"].endswith("c.bin") or l["path"].endswith(".h5") or "/local/" in l["path"]]
assert keyed and all("key_id" in l and "sha256" not in l for l in keyed if l["action"] != "create"), keyed
plain = [l for l in lines if l["path"].endswith("metrics.jsonl") and l["action"] == "write"]
assert plain and all(len(l["sha256"]) == 64 for l in plain), plain
print(f"ok: audit log of {len(lines)} lines lists all {len(files)} files of the run")
PY
