# Sourced by the evalgen tests after cli_common.sh.
# expect_error PATTERN ARGS...: `trident evalgen ARGS` exits 2 with that message and leaves no
# $work/bad.jsonl (nor its .tmp) behind.
expect_error() {
  local pattern=$1
  shift
  expect_exit2 "trident evalgen: error: .*$pattern" "$trident" evalgen "$@"
  [ ! -e "$work/bad.jsonl" ] && [ ! -e "$work/bad.jsonl.tmp" ] || fail "$*: left a file"
  echo "ok: $(head -n 1 "$work/exit2.log" | cut -c1-150)"
}
