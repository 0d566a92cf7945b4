#!/usr/bin/env bash
# End-to-end `trident privacy`: epsilon of DP-SGD by both accountants (human line and --json,
# checked against a figure of Opacus' fixture), the noise search for a target epsilon, and every
# bad input's exit 2 with its message.
# usage: privacy.sh TRIDENT SOURCE_DIR
set -euo pipefail
source "$(dirname "$0")/../support/cli_common.sh"

"$trident" privacy --help > "$work/help" || fail "--help: exit $?"
grep -q -- "--sample-rate Q" "$work/help" || fail "--help: no usage: $(cat "$work/help")"
"$trident" --help | grep -q "privacy" || fail "trident --help does not list privacy"

# 1. Epsilon, human line; the default accountant is prv.
"$trident" privacy --sample-rate 0.01 --noise 1.0 --steps 1000 --delta 1e-5 > "$work/human" \
  || fail "privacy: $(cat "$work/human")"
grep -q "^privacy: epsilon [0-9.]* at delta 1e-05: 1000 steps, q = 0.01, sigma = 1 (prv)$" "$work/human" \
  || fail "human line: $(cat "$work/human")"

# 2. --json by both accountants, against Opacus' figures in the fixture.
for acc in rdp prv; do
  "$trident" privacy --sample-rate 0.01 --noise 1.0 --steps 1000 --delta 1e-5 --accountant "$acc" --json \
    > "$work/$acc.json" || fail "--json $acc: $(cat "$work/$acc.json")"
done
python3 - "$work" tests/data/privacy/accountant.json <<'PY'
import json, sys
work, fixture = sys.argv[1], json.load(open(sys.argv[2]))
ref = [e for e in fixture["grid"] if (e["q"], e["sigma"], e["steps"], e["delta"]) == (0.01, 1.0, 1000, 1e-5)][0]
for acc, tol in [("rdp", 1e-3), ("prv", 1e-2)]:
    lines = open(f"{work}/{acc}.json").read().splitlines()
    assert len(lines) == 1, lines
    j = json.loads(lines[0])
    assert list(j) == ["epsilon", "sigma", "delta", "steps", "sample_rate", "accountant"], j
    assert (j["sigma"], j["delta"], j["steps"], j["sample_rate"], j["accountant"]) == (1.0, 1e-5, 1000, 0.01, acc), j
    assert abs(j["epsilon"] - ref[acc]) <= tol * ref[acc], (j, ref)
    print(f"{acc}: epsilon {j['epsilon']:.6g}, opacus {ref[acc]:.6g}")
PY

# 3. --target-epsilon: the sigma found gives an epsilon within 1% below the target.
for acc in rdp prv; do
  "$trident" privacy --sample-rate 0.01 --target-epsilon 3 --steps 1000 --delta 1e-5 --accountant "$acc" --json \
    > "$work/t$acc.json" || fail "--target-epsilon $acc: $(cat "$work/t$acc.json")"
  python3 - "$work/t$acc.json" "$acc" <<'PY'
import json, sys
j = json.loads(open(sys.argv[1]).read())
assert j["accountant"] == sys.argv[2] and 0.99 * 3 <= j["epsilon"] <= 3 and j["sigma"] > 0, j
print(f"target 3 ({sys.argv[2]}): sigma {j['sigma']:.6g}, epsilon {j['epsilon']:.6g}")
PY
done
"$trident" privacy --sample-rate 0.01 --target-epsilon 3 --steps 1000 --delta 1e-5 --accountant rdp > "$work/thuman" \
  || fail "--target-epsilon: $(cat "$work/thuman")"
grep -q "^privacy: sigma [0-9.]* reaches epsilon [0-9.]* (target 3)" "$work/thuman" \
  || fail "target line: $(cat "$work/thuman")"

# 4. Bad input: exit 2 and the message.
expect_bad() {  # expect_bad MESSAGE ARGS...
  local msg=$1 rc=0
  shift
  "$trident" privacy "$@" > "$work/out" 2> "$work/err" || rc=$?
  [ "$rc" -eq 2 ] || fail "privacy $*: exit $rc, want 2 ($(cat "$work/err"))"
  grep -q "^trident privacy: error: " "$work/err" || fail "privacy $*: no error line: $(cat "$work/err")"
  grep -qF -- "$msg" "$work/err" || fail "privacy $*: want '$msg' in: $(cat "$work/err")"
  [ ! -s "$work/out" ] || fail "privacy $*: printed to stdout: $(cat "$work/out")"
}
ok=(--steps 100 --delta 1e-5)
expect_bad "sample rate 0 is outside (0, 1]" --sample-rate 0 --noise 1 "${ok[@]}"
expect_bad "sample rate 1.5 is outside (0, 1]" --sample-rate 1.5 --noise 1 "${ok[@]}"
expect_bad "noise multiplier 0 must be positive" --sample-rate 0.1 --noise 0 "${ok[@]}"
expect_bad "noise multiplier -1 must be positive" --sample-rate 0.1 --noise -1 "${ok[@]}"
expect_bad "steps 0 must be at least 1" --sample-rate 0.1 --noise 1 --steps 0 --delta 1e-5
expect_bad "delta 1 is outside (0, 1)" --sample-rate 0.1 --noise 1 --steps 100 --delta 1
expect_bad "delta 0 is outside (0, 1)" --sample-rate 0.1 --noise 1 --steps 100 --delta 0
expect_bad "give exactly one of --noise and --target-epsilon" --sample-rate 0.1 "${ok[@]}"
expect_bad "give exactly one of --noise and --target-epsilon" --sample-rate 0.1 --noise 1 --target-epsilon 2 "${ok[@]}"
expect_bad "unknown accountant 'gdp' (rdp or prv)" --sample-rate 0.1 --noise 1 "${ok[@]}" --accountant gdp
expect_bad "unrecognised option '--bogus'" --sample-rate 0.1 --noise 1 "${ok[@]}" --bogus
expect_bad "the option '--sample-rate' is required" --noise 1 "${ok[@]}"
expect_bad "the argument ('x') for option '--noise' is invalid" --sample-rate 0.1 --noise x "${ok[@]}"
expect_bad "no noise multiplier up to 1e6 reaches epsilon" --sample-rate 1 --target-epsilon 1e-9 "${ok[@]}" \
  --accountant rdp
expect_bad "no noise multiplier up to 1e6 reaches epsilon 0.005 (q = 1, 100 steps, delta 1e-05)" \
  --sample-rate 1 --target-epsilon 0.005 "${ok[@]}"
expect_bad "target epsilon -1 must be positive" --sample-rate 0.5 --target-epsilon -1 "${ok[@]}"
expect_bad "delta 0.999 is outside what the PRV accountant's domain resolves" --sample-rate 0.01 --noise 1 --steps 10 \
  --delta 0.999
expect_bad "the PRV accountant would discretise q = 1, sigma = 0.6, 10000 steps on more than 33554432 points" \
  --sample-rate 1 --noise 0.6 --steps 10000 --delta 1e-5

echo "privacy: ok"
