#!/usr/bin/env bash
# Encryption at rest of both checkpoint tiers (security.key_file): a run (dp 2, global checkpoints
# every 10 steps, the local tier every 2, both written from the writer thread: checkpoint.async)
# killed at step 15 resumes from its encrypted local tier and, under another layout (tp 2), from
# its encrypted global checkpoint, with the losses of a plain run; `eval`, model.init_from,
# `inspect --key-file` and `convert --key-file` work with the key. Without the key, or with
# another, every command is exit 2 saying so, and nothing is deleted. A flipped byte in a tensor
# chunk is exit 2 naming the file (and in a plain checkpoint too); a flipped byte in a local file
# sends the resume to the older local step. The files hold the tensors' names but none of their
# bytes; h5py with the plugin (HDF5_PLUGIN_PATH, TRIDENT_KEY_FILE) reads every tensor equal to
# the plain run's.
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"
/usr/bin/python3 -c "import h5py" 2> /dev/null || { echo "SKIP: python3-h5py is not installed"; exit 77; }
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1 OMP_NUM_THREADS=1
plugins=$(cd "$(dirname "$trident")" && pwd)/hdf5_plugins
[[ -f $plugins/libtrident_h5crypt.so ]] || fail "no $plugins/libtrident_h5crypt.so (built with trident)"

key="$work/key" other="$work/other_key"
/usr/bin/python3 -c "import os; print(os.urandom(32).hex())" > "$key"
head -c 32 /dev/urandom > "$other"
chmod 600 "$key" "$other"
common=(--config input/configs/tiny.ini --train.steps=20 --log.interval=1 --checkpoint.interval=10)
tiers=(--checkpoint.local_dir="$work/local" --checkpoint.local_interval=2)
sealed="$work/sealed/checkpoints"

# The plain reference and the encrypted run, killed at step 15 (local steps 12 and 14 on disk).
mpirun -np 2 "$trident" train "${common[@]}" --parallel.dp=2 --log.run_dir="$work/plain" > "$work/plain.log" 2>&1 ||
  fail "plain run: $(tail -3 "$work/plain.log")"
set +e
TRIDENT_TEST_FAIL=rank=1,step=15 mpirun -np 2 "$trident" train "${common[@]}" --parallel.dp=2 "${tiers[@]}" \
  --checkpoint.async=true --security.key_file="$key" --log.run_dir="$work/sealed" > "$work/killed.log" 2>&1
code=$?
set -e
[[ $code -ne 0 ]] && grep -q "injected failure" "$work/killed.log" || fail "the encrypted run was not killed: $code"
[[ $(ls "$sealed") == $(printf 'latest\nstep_00000010.h5') ]] || fail "global tier: $(ls "$sealed")"
local_file=$(find "$work/local" -path "*rank_00000/step_00000014.bin")
[[ -f $local_file ]] || fail "no local file of step 14: $(find "$work/local" -type f)"
snapshot() { find "$work/sealed" "$work/local" -type f -name '*.h5' -o -type f -name '*.bin' | sort | xargs md5sum; }
before=$(snapshot)

# Names readable, no tensor's bytes: h5py with the plugin reads every tensor equal to the plain run's.
strings "$sealed/step_00000010.h5" > "$work/strings.txt"
grep -q "blocks.0.attn.q.weight" "$work/strings.txt" || fail "dataset names are not readable"
HDF5_PLUGIN_PATH="$plugins" TRIDENT_KEY_FILE="$key" /usr/bin/python3 - "$work/plain/checkpoints/step_00000010.h5" \
  "$sealed/step_00000010.h5" "$local_file" <<'PY'
import sys, h5py, numpy as np
plain, sealed = h5py.File(sys.argv[1], "r"), h5py.File(sys.argv[2], "r")
raw = {path: open(path, "rb").read() for path in (sys.argv[2], sys.argv[3])}
names = []
plain.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset) else None)
assert sealed.attrs["encryption"] in (b"aes-256-gcm", "aes-256-gcm"), dict(sealed.attrs)
for name in names:
    a, b = plain[name][()], sealed[name][()]
    assert a.shape == b.shape and np.array_equal(a.view(np.uint32), b.view(np.uint32)), f"{name} differs"
    assert sealed[name].id.get_create_plist().get_filter(0)[0] == 32769, f"{name} is not filtered"
    data = a.tobytes()
    if len(data) >= 64:  # a 32-byte run from its middle is in neither encrypted file
        probe = data[len(data) // 2 - 16:len(data) // 2 + 16]
        for path, content in raw.items():
            assert content.find(probe) < 0, f"{name}'s bytes are in {path}"
print(f"ok: h5py + plugin read {len(names)} tensors equal to the plain run's; none of their bytes is stored")
PY
HDF5_PLUGIN_PATH="$plugins" TRIDENT_KEY_FILE="$key" /usr/bin/python3 utils/read_checkpoint.py "$sealed/step_00000010.h5" \
  --tensor embed.pos.weight | tail -n 1 > "$work/read_sealed.txt"
/usr/bin/python3 utils/read_checkpoint.py "$work/plain/checkpoints/step_00000010.h5" --tensor embed.pos.weight |
  tail -n 1 > "$work/read_plain.txt"
cmp -s "$work/read_sealed.txt" "$work/read_plain.txt" || fail "read_checkpoint.py: $(cat "$work/read_sealed.txt")"
rc=0; /usr/bin/python3 utils/read_checkpoint.py "$sealed/step_00000010.h5" --tensor embed.pos.weight > /dev/null \
  2> "$work/read.err" || rc=$?
[[ $rc -eq 2 ]] && grep -q "is encrypted (key id .*): set HDF5_PLUGIN_PATH" "$work/read.err" || fail "read_checkpoint.py without the plugin: $rc"

# Without the key, with another: exit 2 saying so, nothing deleted or written.
expect_key_error() {  # expect_key_error PATTERN COMMAND...
  local pattern=$1 rc=0
  shift
  "$@" > "$work/bad.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] && grep -qE "$pattern" "$work/bad.log" || fail "want exit 2 and /$pattern/ from $*: $rc, $(tail -n 3 "$work/bad.log")"
  [[ $(snapshot) == "$before" ]] || fail "$* changed the checkpoints"
}
need="is encrypted .*key id .*: a key is needed"
wrong="the key does not match: it was encrypted with key id"
for k in "" "--security.key_file=$other"; do
  pattern=$([[ -z $k ]] && echo "$need" || echo "$wrong")
  expect_key_error "$pattern" mpirun -np 2 "$trident" train "${common[@]}" --parallel.dp=2 "${tiers[@]}" $k --log.run_dir="$work/sealed"
  expect_key_error "$pattern" mpirun -np 2 "$trident" train "${common[@]}" --parallel.tp=2 $k --log.run_dir="$work/sealed"
  expect_key_error "$pattern" "$trident" eval --config input/configs/tiny.ini --log.run_dir="$work/sealed" --log.eval_batches=1 $k
done
expect_key_error "$need" "$trident" inspect "$sealed/step_00000010.h5"
expect_key_error "$wrong" "$trident" inspect "$sealed/step_00000010.h5" --key-file "$other"
expect_key_error "$need" "$trident" convert --to hf --input "$sealed/step_00000010.h5" --output "$work/hf_nokey"
echo "ok: without the key or with another, train, eval, inspect and convert are exit 2; nothing changed"

# With the key: inspect verifies every tag, convert writes what the plain checkpoint gives.
"$trident" inspect "$sealed/step_00000010.h5" --key-file "$key" > "$work/inspect.log"
grep -q "integrity: every tensor matches its checksum and every chunk its authentication tag" "$work/inspect.log" ||
  fail "inspect --key-file: $(tail -n 2 "$work/inspect.log")"
"$trident" convert --to hf --input "$sealed/step_00000010.h5" --output "$work/hf_sealed" --key-file "$key" > /dev/null
"$trident" convert --to hf --input "$work/plain/checkpoints/step_00000010.h5" --output "$work/hf_plain" > /dev/null
cmp -s "$work/hf_sealed/model.safetensors" "$work/hf_plain/model.safetensors" || fail "convert of the encrypted checkpoint differs"

# Resumes with the key: the local tier (same layout), the global tier under tp 2, then eval.
compare_losses() {  # compare_losses RUN_DIR NAME FIRST_STEP
  python3 - "$work/plain/metrics.jsonl" "$1/metrics.jsonl" "$2" "$3" <<'PY'
import json, sys
ref = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[1])) if "loss" in r}
got = {r["step"]: r["loss"] for r in map(json.loads, open(sys.argv[2])) if "loss" in r}
steps = [s for s in sorted(got) if s >= int(sys.argv[4])]
assert steps and steps[-1] == 20, f"{sys.argv[3]}: steps {steps}"
worst = max(abs(got[s] - ref[s]) for s in steps)
assert worst < 1e-5, f"{sys.argv[3]}: losses differ from the plain run by {worst}"
print(f"ok: {sys.argv[3]}: steps {steps[0]}-20 within {worst:.1e} of the plain run")
PY
}
cp -a "$work/sealed" "$work/sealed.saved"
cp -a "$work/local" "$work/local.saved"
mpirun -np 2 "$trident" train "${common[@]}" --parallel.dp=2 "${tiers[@]}" --security.key_file="$key" \
  --log.run_dir="$work/sealed" > "$work/local_resume.log" 2>&1 || fail "local resume: $(tail -3 "$work/local_resume.log")"
grep -q "resumed from the local tier .*: 14 steps done" "$work/local_resume.log" || fail "not resumed from local step 14"
compare_losses "$work/sealed" "local tier, dp 2" 15
mpirun -np 2 "$trident" train "${common[@]}" --parallel.tp=2 --security.key_file="$key" \
  --checkpoint.resume="$work/sealed.saved/checkpoints/step_00000010.h5" --log.run_dir="$work/tp2" > "$work/tp2.log" 2>&1 ||
  fail "tp 2 resume: $(tail -3 "$work/tp2.log")"
compare_losses "$work/tp2" "global tier, dp 2 -> tp 2" 11
"$trident" eval --config input/configs/tiny.ini --log.run_dir="$work/sealed" --log.eval_batches=1 \
  --security.key_file="$key" > "$work/eval.log" 2>&1 || fail "eval with the key: $(tail -3 "$work/eval.log")"
grep -q "evaluating $sealed/step_00000020.h5" "$work/eval.log" || fail "eval: $(grep -v '^ ' "$work/eval.log" | tail -3)"
# model.init_from an encrypted checkpoint: with its key; without, exit 2.
init=(--config input/configs/tiny.ini --train.steps=2 --model.init_from="$sealed/step_00000020.h5")
"$trident" train "${init[@]}" --security.key_file="$key" --log.run_dir="$work/init" > "$work/init.log" 2>&1 ||
  fail "init_from with the key: $(tail -3 "$work/init.log")"
grep -q "initialised from $sealed/step_00000020.h5" "$work/init.log" || fail "init_from: $(grep -v '^step' "$work/init.log" | tail -2)"
rc=0; "$trident" train "${init[@]}" --log.run_dir="$work/init_nokey" > "$work/init_nokey.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "$need" "$work/init_nokey.log" || fail "init_from without the key: exit $rc"
echo "ok: eval of the encrypted step 20 and model.init_from it, with the key"

# A flipped byte in a tensor chunk: exit 2 naming the file, the tensor and the chunk.
flipped="$work/flipped.h5"
cp "$work/sealed.saved/checkpoints/step_00000010.h5" "$flipped"
/usr/bin/python3 - "$flipped" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    info = f["model/blocks.3.mlp.up.weight"].id.get_chunk_info(0)
with open(sys.argv[1], "r+b") as f:
    f.seek(info.byte_offset + info.size // 2)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 1]))
PY
rc=0; mpirun -np 2 "$trident" train "${common[@]}" --parallel.dp=2 --security.key_file="$key" --checkpoint.resume="$flipped" \
  --log.run_dir="$work/flip" > "$work/flip.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "checkpoint $flipped: tensor /model/blocks.3.mlp.up.weight: the chunk at (0, 0) (file bytes .*) fails its authentication tag" "$work/flip.log" ||
  fail "flipped chunk: exit $rc, $(grep error "$work/flip.log" | head -n 2)"
rc=0; "$trident" inspect "$flipped" --key-file "$key" > "$work/flip_inspect.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "checkpoint $flipped: tensor" "$work/flip_inspect.log" || fail "inspect of a flipped chunk: $rc"
# And in a plain checkpoint: its tensor's checksum.
cp "$work/plain/checkpoints/step_00000010.h5" "$work/flipped_plain.h5"
/usr/bin/python3 - "$work/flipped_plain.h5" <<'PY'
import sys, h5py
with h5py.File(sys.argv[1], "r") as f:
    offset = f["model/blocks.3.mlp.up.weight"].id.get_offset()
with open(sys.argv[1], "r+b") as f:
    f.seek(offset + 1001)
    b = f.read(1)
    f.seek(-1, 1)
    f.write(bytes([b[0] ^ 1]))
PY
rc=0; "$trident" train "${common[@]}" --checkpoint.resume="$work/flipped_plain.h5" --log.run_dir="$work/flip_plain" \
  > "$work/flip_plain.log" 2>&1 || rc=$?
[[ $rc -eq 2 ]] && grep -q "checkpoint $work/flipped_plain.h5: tensor /model/blocks.3.mlp.up.weight fails its checksum" "$work/flip_plain.log" ||
  fail "flipped plain tensor: exit $rc, $(grep error "$work/flip_plain.log" | head -n 1)"
echo "ok: a flipped byte in a tensor is exit 2 naming the file (encrypted: and the chunk)"

# A flipped byte in an encrypted local file: that step is skipped for the older one.
rm -rf "$work/sealed" "$work/local"
cp -a "$work/sealed.saved" "$work/sealed"
cp -a "$work/local.saved" "$work/local"
/usr/bin/python3 -c "import sys; p=sys.argv[1]; b=bytearray(open(p,'rb').read()); b[len(b)//2]^=1; open(p,'wb').write(b)" \
  "$local_file"
mpirun -np 2 "$trident" train "${common[@]}" --parallel.dp=2 "${tiers[@]}" --security.key_file="$key" \
  --log.run_dir="$work/sealed" > "$work/local_flip.log" 2>&1 || fail "resume past a flipped local file: $(tail -3 "$work/local_flip.log")"
grep -q "local checkpoint of step 14 not resumed: .*step_00000014.bin: block 0 (payload bytes .*) fails its authentication tag" \
  "$work/local_flip.log" || fail "no warning for the flipped local file: $(grep -i warn "$work/local_flip.log" | head -n 2)"
grep -q "resumed from the local tier .*: 12 steps done" "$work/local_flip.log" || fail "not resumed from local step 12"
compare_losses "$work/sealed" "local tier past a flipped file" 13
