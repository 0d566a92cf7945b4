# Sourced by the end-to-end tests in tests/cli/ (each run as: SCRIPT TRIDENT SOURCE_DIR):
# the binary, the source tree as working directory, a scratch directory removed at exit, fail.
trident=$1
src=$2
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$src" || exit 1
fail() {
  echo "FAIL: $*"
  exit 1
}

# expect_exit2 PATTERN COMMAND...: the command exits 2 and its output (stdout and stderr, left in
# $work/exit2.log) matches PATTERN (grep basic regex).
expect_exit2() {
  local pattern=$1 rc=0
  shift
  "$@" > "$work/exit2.log" 2>&1 || rc=$?
  [[ $rc -eq 2 ]] || fail "$*: exit $rc, want 2: $(tail -n 3 "$work/exit2.log")"
  grep -q -- "$pattern" "$work/exit2.log" || fail "$*: no '$pattern' in: $(tail -n 3 "$work/exit2.log")"
}
