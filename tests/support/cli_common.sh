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
