#!/usr/bin/env bash
# Checks trident on processors this machine is not: builds it for aarch64 with Debian's cross
# toolchain against an arm64 sysroot made from Debian's own arm64 packages, and runs it under
# qemu-user as a Grace-like processor (SVE 128-bit + BF16: the sve path) and as a Neoverse N1
# (NEON only: the neon path): the CPU unit tests, `trident --help`, and a 2-rank data-parallel
# training of input/configs/tiny.ini whose per-step losses must match the native x86 build's
# 2-rank run within 1e-4 (relative). The native x86 build itself is run the same way under
# qemu-x86_64 as Haswell (AVX2) and Skylake-Server. Every phase is timed; exit 0 only if all
# of it passed.
#
# usage: utils/cross-check.sh [options]     (as root, or with the packages already installed)
#   --cross-dir DIR   sysroot, package cache, build and runs (default $TRIDENT_CROSS_DIR, else
#                     ${XDG_CACHE_HOME:-~/.cache}/trident-cross); nothing is written in the tree
#   --native PATH     the native x86 trident to compare with (default build/trident)
#   --steps N         training steps of each tiny.ini run (default 4)
#   --jobs N          parallel compile jobs (default: the number of cores)
#   --skip-build      use the aarch64 build already in DIR (no sysroot or build step)
#   --skip-unit       no unit tests under qemu
#   --skip-aarch64    only the x86 runs under qemu-x86_64
#   --skip-x86        no x86 runs under qemu-x86_64
#   --help
#
# The sysroot is made once (a stamp names its packages): Debian's arm64 packages of Open MPI,
# parallel HDF5, Boost.Program_options, oneDNN, GoogleTest and Google Benchmark with their
# dependencies, resolved by apt against a private, arm64-only package index (the machine's own
# dpkg and apt state are not touched), downloaded into DIR/debs and unpacked with dpkg-deb.
# The arm64 -dev packages of MPI and HDF5 cannot be installed beside the amd64 ones, hence a
# sysroot instead of multiarch.
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
cross_dir=${TRIDENT_CROSS_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/trident-cross}
native=$repo/build/trident
steps=4
jobs=$(nproc)
skip_build="" skip_unit="" do_aarch64=yes do_x86=yes

usage() { sed -n '2,/^set -euo/{/^#/s/^# \{0,1\}//p}' "$0"; }
while (($#)); do
  case $1 in
    --cross-dir) cross_dir=$2; shift 2 ;;
    --native) native=$2; shift 2 ;;
    --steps) steps=$2; shift 2 ;;
    --jobs) jobs=$2; shift 2 ;;
    --skip-build) skip_build=yes; shift ;;
    --skip-unit) skip_unit=yes; shift ;;
    --skip-aarch64) do_aarch64=""; shift ;;
    --skip-x86) do_x86=""; shift ;;
    -h | --help) usage; exit 0 ;;
    *) echo "cross-check: unknown option '$1' (--help lists them)" >&2; exit 2 ;;
  esac
done
[[ $steps =~ ^[1-9][0-9]*$ ]] || { echo "cross-check: --steps wants a positive number" >&2; exit 2; }
[[ $jobs =~ ^[1-9][0-9]*$ ]] || { echo "cross-check: --jobs wants a positive number" >&2; exit 2; }
native=$(realpath -m "$native")
mkdir -p "$cross_dir"
cross_dir=$(realpath "$cross_dir")
sysroot=$cross_dir/sysroot-arm64
build=$cross_dir/build-aarch64
logs=$cross_dir/logs
mkdir -p "$logs"

# Open MPI as root, more ranks than cores, one thread per rank.
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
export OMP_NUM_THREADS=1

# --- bookkeeping: phases, timings, failures -----------------------------------------------
now_ms() { echo $(($(date +%s%N) / 1000000)); }
seconds() { printf '%d.%d' $(($1 / 1000)) $(($1 % 1000 / 100)); }  # milliseconds -> "12.3"
t_start=$(now_ms)
phase_names=() phase_times=() phase_status=()
failures=0
current="" current_start=""
begin() {
  current=$1
  current_start=$(now_ms)
  echo
  echo "=== $current"
}
end() {  # end [ok|FAILED|skipped]
  local status=${1:-ok}
  phase_names+=("$current")
  phase_times+=("$(seconds $(($(now_ms) - current_start)))")
  phase_status+=("$status")
  [[ $status == FAILED ]] && failures=$((failures + 1))
  current=""
}
summary() {
  local rc=$?
  [[ -n $current ]] && end FAILED  # a phase that died on the way (set -e)
  echo
  echo "=== summary (cross dir $cross_dir)"
  local i
  for i in "${!phase_names[@]}"; do
    printf '  %-60s %7s s  %s\n' "${phase_names[$i]}" "${phase_times[$i]}" "${phase_status[$i]}"
  done
  printf '  %-60s %7s s\n' total "$(seconds $(($(now_ms) - t_start)))"
  if ((rc == 0 && failures > 0)); then rc=1; fi
  if ((rc == 0)); then echo "cross-check: all passed"; else echo "cross-check: FAILED ($failures failed phases, exit $rc)"; fi
  exit $rc
}
trap summary EXIT
# failed MESSAGE: records a failure inside the current phase (the phase goes on).
phase_failed=""
failed() {
  echo "FAILED: $*" >&2
  phase_failed=yes
}
# logged LOG CMD...: runs CMD with its output in LOG; its exit status is returned, nothing hidden.
logged() {
  local log=$1 rc=0
  shift
  "$@" >"$log" 2>&1 || rc=$?
  return $rc
}
close_phase() {  # ends the current phase ok or FAILED by the checks made in it
  if [[ -n $phase_failed ]]; then end FAILED; else end ok; fi
  phase_failed=""
}

# --- 1. the build machine's tools --------------------------------------------------------------
begin "host tools (cross compiler, qemu-user)"
need_pkgs=()
command -v aarch64-linux-gnu-g++-12 >/dev/null || need_pkgs+=(crossbuild-essential-arm64 g++-12-aarch64-linux-gnu)
{ command -v qemu-aarch64-static >/dev/null && command -v qemu-x86_64-static >/dev/null; } || need_pkgs+=(qemu-user-static)
for tool in cmake ninja mpirun python3 dpkg-deb apt-get file; do
  command -v $tool >/dev/null || { echo "cross-check: needs $tool (utils/setup.sh installs the build's tools)" >&2; exit 1; }
done
if ((${#need_pkgs[@]})); then
  [[ $(id -u) -eq 0 ]] || { echo "cross-check: needs ${need_pkgs[*]}: run as root or apt-get install them" >&2; exit 1; }
  echo "installing ${need_pkgs[*]}"
  export DEBIAN_FRONTEND=noninteractive
  logged "$logs/apt-host.log" apt-get install -y --no-install-recommends "${need_pkgs[@]}" ||
    { apt-get update -qq && logged "$logs/apt-host.log" apt-get install -y --no-install-recommends "${need_pkgs[@]}"; } ||
    { cat "$logs/apt-host.log" >&2; exit 1; }
fi
version=$(aarch64-linux-gnu-g++-12 --version)
echo "${version%%$'\n'*}"
version=$(qemu-aarch64-static --version)
echo "${version%%$'\n'*}"
end ok

# --- 2. the arm64 sysroot ----------------------------------------------------------------------
sysroot_pkgs=(libc6-dev libstdc++-12-dev libopenmpi-dev libhdf5-openmpi-dev libboost-program-options-dev libssl-dev
              libdnnl-dev libgtest-dev libbenchmark-dev)
# Tools the -dev packages drag in that no arm64 link or run here needs (compilers, perl, ssh).
sysroot_skip='^(gcc-12|g\+\+-12|cpp-12|gfortran-12|binutils|binutils-aarch64-linux-gnu|perl|perl-modules-.*|libperl.*|autoconf|automake|m4|openssh-client|dpkg|tar|passwd|adduser|debconf|googletest)$'
codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-bookworm}")
mirror=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
security=${DEBIAN_SECURITY_MIRROR:-http://deb.debian.org/debian-security}
stamp_text="codename=$codename packages=${sysroot_pkgs[*]} skip=$sysroot_skip"
stamp=$sysroot/.trident-sysroot

make_sysroot() {
  local apt=$cross_dir/apt debs=$cross_dir/debs
  mkdir -p "$apt"/{lists/partial,cache/archives/partial,state,etc/sources.list.d,etc/preferences.d} "$debs"
  : >"$apt/state/status"
  local keyring=/usr/share/keyrings/debian-archive-keyring.gpg
  cat >"$apt/etc/sources.list" <<EOF
deb [arch=arm64 signed-by=$keyring] $mirror $codename main
deb [arch=arm64 signed-by=$keyring] $mirror $codename-updates main
deb [arch=arm64 signed-by=$keyring] $security $codename-security main
EOF
  # A private, arm64-only apt: its own index, cache and (empty) dpkg status.
  local opts=(-o APT::Architecture=arm64 -o APT::Architectures::=arm64
              -o Dir::State="$apt/state" -o Dir::State::status="$apt/state/status"
              -o Dir::State::Lists="$apt/lists" -o Dir::Cache="$apt/cache"
              -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache=
              -o Dir::Etc::SourceList="$apt/etc/sources.list" -o Dir::Etc::SourceParts="$apt/etc/sources.list.d"
              -o Dir::Etc::Preferences="$apt/etc/preferences" -o Dir::Etc::PreferencesParts="$apt/etc/preferences.d"
              -o Debug::NoLocking=1 -o APT::Sandbox::User=root -o APT::Install-Recommends=0)
  echo "apt: arm64 package index of $codename"
  logged "$logs/apt-update.log" apt-get "${opts[@]}" update || { cat "$logs/apt-update.log" >&2; return 1; }
  # What installing the packages on an empty arm64 system would install: apt's own resolver.
  logged "$apt/plan.txt" apt-get "${opts[@]}" -s install "${sysroot_pkgs[@]}" || { cat "$apt/plan.txt" >&2; return 1; }
  awk '/^Inst /{print $2}' "$apt/plan.txt" >"$apt/all.txt"
  awk -v skip="$sysroot_skip" '$0 !~ skip' "$apt/all.txt" >"$apt/wanted.txt"
  echo "apt: $(wc -l <"$apt/all.txt") packages resolved, $(wc -l <"$apt/wanted.txt") kept"
  mapfile -t wanted <"$apt/wanted.txt"
  logged "$apt/uris.txt" apt-get "${opts[@]}" download --print-uris "${wanted[@]}" || { cat "$apt/uris.txt" >&2; return 1; }
  awk '{print $2}' "$apt/uris.txt" >"$apt/files.txt"
  [[ $(wc -l <"$apt/files.txt") -eq ${#wanted[@]} ]] || { echo "apt: $(wc -l <"$apt/files.txt") files for ${#wanted[@]} packages" >&2; return 1; }
  local missing=() i
  mapfile -t files <"$apt/files.txt"
  for i in "${!wanted[@]}"; do
    [[ -s $debs/${files[$i]} ]] || missing+=("${wanted[$i]}")
  done
  if ((${#missing[@]})); then
    echo "apt: downloading ${#missing[@]} packages into $debs"
    (cd "$debs" && logged "$logs/apt-download.log" apt-get "${opts[@]}" download "${missing[@]}") ||
      { cat "$logs/apt-download.log" >&2; return 1; }
  else
    echo "apt: every package already in $debs"
  fi
  local root=$sysroot.partial
  rm -rf "$root"
  mkdir -p "$root"
  for f in "${files[@]}"; do
    dpkg-deb -x "$debs/$f" "$root"
  done
  # usr-merge: /lib, /bin, /sbin as links into /usr (Debian 12 packages still ship some there).
  local d
  for d in bin sbin lib; do
    if [[ -d $root/$d && ! -L $root/$d ]]; then
      mkdir -p "$root/usr/$d"
      cp -a "$root/$d/." "$root/usr/$d/"
      rm -rf "${root:?}/$d"
    fi
    ln -sfn "usr/$d" "$root/$d"
  done
  # Absolute links (/usr/lib/x/libz.so -> /lib/x/libz.so.1) point into the sysroot, relatively.
  find "$root" -type l -print0 >"$apt/links"
  local link target n=0
  while IFS= read -r -d '' link; do
    target=$(readlink "$link")
    [[ $target == /* ]] || continue
    ln -sfn "$(realpath -m -s --relative-to="$(dirname "$link")" "$root$target")" "$link"
    n=$((n + 1))
  done <"$apt/links"
  echo "sysroot: ${#files[@]} packages unpacked, $n absolute links made relative"
  rm -rf "$sysroot"
  mv "$root" "$sysroot"
  # The paths were computed inside $root; relative links survive the rename.
  echo "$stamp_text" >"$stamp"
}

if [[ -z $skip_build && -n $do_aarch64 ]]; then
  begin "arm64 sysroot ($sysroot)"
  if [[ -f $stamp && $(cat "$stamp") == "$stamp_text" ]]; then
    echo "present (stamp $stamp): nothing to download"
  else
    make_sysroot
  fi
  end ok
fi

# --- 3. the aarch64 build ----------------------------------------------------------------------
# The unit tests run under emulation (about 2 minutes per processor): every layer's gtest binary
# but test_train (94 s natively, hours emulated; the 2-rank training below covers its ground).
# The MPI tests (tests/*/mpi_*.cpp) and CLI scripts are not run here.
unit_tests=(test_core test_backend test_plan test_model test_data test_io test_dist test_cli)
# Left out: CpuOpsTest.PeakFlopsIsPositiveAndCached wants an fp32 FMA peak above 1 GFLOP/s, which
# an emulated processor does not reach (0.4-0.8 measured under qemu).
declare -A unit_filter=([test_backend]=-CpuOpsTest.PeakFlopsIsPositiveAndCached)
if [[ -z $skip_build && -n $do_aarch64 ]]; then
  begin "aarch64 build (configure + ninja -j$jobs)"
  echo "CUDA off: CUDA for aarch64 needs NVIDIA's sbsa target libraries, which Debian does not have."
  # A build configured from another checkout would look up to date and test that checkout's code.
  if [[ -f $build/CMakeCache.txt ]] && ! grep -qx "CMAKE_HOME_DIRECTORY:INTERNAL=$repo" "$build/CMakeCache.txt"; then
    echo "the aarch64 build in $build was configured for another source tree: starting it afresh"
    rm -rf "$build"
  fi
  if [[ ! -f $build/build.ninja ]]; then
    logged "$logs/cmake-aarch64.log" cmake -S "$repo" -B "$build" -G Ninja \
      -DCMAKE_TOOLCHAIN_FILE="$repo/cmake/aarch64-linux-gnu.cmake" -DTRIDENT_SYSROOT="$sysroot" \
      -DCMAKE_BUILD_TYPE=Release -DTRIDENT_CUDA=OFF \
      -DCMAKE_GTEST_DISCOVER_TESTS_DISCOVERY_MODE=PRE_TEST ||
      { cat "$logs/cmake-aarch64.log" >&2; exit 1; }
  fi
  logged "$logs/ninja-aarch64.log" ninja -C "$build" -j "$jobs" trident "${unit_tests[@]}" ||
    { tail -n 60 "$logs/ninja-aarch64.log" >&2; exit 1; }
  tail -n 1 "$logs/ninja-aarch64.log"
  file -b "$build/trident"
  end ok
fi

# --- the runs -------------------------------------------------------------------------------
# Emulated processors: name, the qemu command, the CPU path the banner must show.
aarch64_cpus=("grace max,sve128=on sve" "neoverse-n1 neoverse-n1 neon")
x86_cpus=("haswell Haswell avx2" "skylake-server Skylake-Server avx2")
qemu_aarch64() { qemu-aarch64-static -L "$sysroot" -cpu "$@"; }
export QEMU_LD_PREFIX=$sysroot  # for processes the ranks start themselves (none expected)
# Open MPI's shared-memory transport copies between ranks with process_vm_readv (CMA), which
# qemu-user does not implement (ENOSYS): emulated ranks use plain copy-in/copy-out.
qemu_mca=(--mca btl_vader_single_copy_mechanism none)

work=$(mktemp -d "$cross_dir/runs.XXXXXX")
echo "runs in $work"
cd "$repo"  # tiny.ini names its data relative to the repository
cfg=input/configs/tiny.ini
# train DIR LAUNCH...: a 2-rank data-parallel run of tiny.ini into $work/DIR (log DIR.log).
train2() {
  local dir=$1
  shift
  logged "$work/$dir.log" mpirun -np 2 --bind-to none "$@" train --config $cfg --parallel.dp=2 \
    --train.steps="$steps" --log.run_dir="$work/$dir"
}
# same_curve REF RUN: the per-step losses agree within 1e-4 (relative); prints both.
same_curve() {
  python3 - "$work/$1/metrics.jsonl" "$work/$2/metrics.jsonl" "$steps" <<'PY'
import json, sys
def losses(p):
    return [(r["step"], r["loss"]) for r in map(json.loads, open(p)) if "loss" in r and "step" in r]
a, b, steps = losses(sys.argv[1]), losses(sys.argv[2]), int(sys.argv[3])
assert len(a) == len(b) == steps, f"{len(a)} and {len(b)} loss records, want {steps}"
worst = 0.0
for (sa, x), (sb, y) in zip(a, b):
    assert sa == sb, (sa, sb)
    rel = abs(x - y) / abs(x)
    worst = max(worst, rel)
    print(f"    step {sa}: {x:.9g} vs {y:.9g}  rel {rel:.2e}")
assert worst <= 1e-4, f"largest relative difference {worst:.2e} > 1e-4"
print(f"    same curve (largest relative difference {worst:.2e})")
PY
}
# banner DIR PATH: the run's log names the CPU path (first rank's line).
banner() {
  local got
  got=$(sed -n 's/^cpu: \([a-z0-9_+]*\).*/\1/p;T;q' "$work/$1.log")
  echo "    banner: cpu: $got"
  [[ $got == "$2" ]] || { failed "$1: banner 'cpu: $got', want 'cpu: $2'"; return 1; }
}

# emulated_curve NAME PATH WHAT LAUNCH...: a 2-rank tiny.ini run launched as LAUNCH (qemu and
# the binary) must name the CPU path PATH in its banner and give the native curve.
emulated_curve() {
  local name=$1 path=$2 what=$3
  shift 3
  if train2 "$name" "${qemu_mca[@]}" "$@"; then
    banner "$name" "$path" || true
    same_curve native "$name" || failed "$name: the loss curve differs from the native run's"
  else
    tail -n 40 "$work/$name.log" >&2
    failed "2-rank tiny.ini under $what (log $work/$name.log)"
  fi
}

begin "native x86 reference: tiny.ini 2 ranks $steps steps"
[[ -x $native ]] || { echo "cross-check: no native trident at $native (utils/build.sh --target trident)" >&2; exit 1; }
if [[ ! -f input/data/pystdlib.idx || ! -f input/data/pystdlib-valid.idx ]]; then
  logged "$logs/prepare-data.log" ./utils/prepare_data.sh || { cat "$logs/prepare-data.log" >&2; exit 1; }
fi
train2 native "$native" || { cat "$work/native.log" >&2; exit 1; }
sed -n 's/^cpu: /    native banner: cpu: /p;T;q' "$work/native.log"
end ok

if [[ -n $do_aarch64 ]]; then
  [[ -x $build/trident && -f $stamp ]] || { echo "cross-check: no aarch64 build at $build or no sysroot at $sysroot (run without --skip-build)" >&2; exit 1; }
  for entry in "${aarch64_cpus[@]}"; do
    read -r name cpu path <<<"$entry"
    if [[ -z $skip_unit ]]; then
      begin "aarch64 $name: ${#unit_tests[@]} unit test binaries"
      for t in "${unit_tests[@]}"; do
        t0=$(date +%s)
        if logged "$work/$name-$t.log" qemu_aarch64 "$cpu" "$build/tests/$t" --gtest_filter="${unit_filter[$t]:-*}"; then
          echo "    $t: $(sed -n 's/^\[  PASSED  \] \([0-9]*\) tests\{0,1\}\./\1 passed/p' "$work/$name-$t.log")$(sed -n 's/^\[  SKIPPED \] \([0-9]*\) tests\{0,1\}, listed below:/, \1 skipped/p' "$work/$name-$t.log") ($(($(date +%s) - t0)) s)"
        else
          tail -n 30 "$work/$name-$t.log" >&2
          failed "$t under qemu -cpu $cpu (log $work/$name-$t.log)"
        fi
      done
      close_phase
    fi
    begin "aarch64 $name: --help, tiny.ini 2 ranks $steps steps vs native"
    if logged "$work/$name-help.log" qemu_aarch64 "$cpu" "$build/trident" --help; then
      echo "    --help: $(sed -n 1p "$work/$name-help.log")"
    else
      failed "trident --help under qemu -cpu $cpu: $(cat "$work/$name-help.log")"
    fi
    emulated_curve "$name" "$path" "qemu -cpu $cpu" qemu-aarch64-static -L "$sysroot" -cpu "$cpu" "$build/trident"
    close_phase
  done
fi

if [[ -n $do_x86 ]]; then
  # QEMU's TCG emulates AVX2 but not AVX-512: as Skylake-Server the processor reports no AVX-512
  # (qemu says which features it drops) and the avx2 path runs.
  for entry in "${x86_cpus[@]}"; do
    read -r name cpu path <<<"$entry"
    begin "x86 $name: tiny.ini 2 ranks $steps steps vs native"
    emulated_curve "$name" "$path" "qemu-x86_64 -cpu $cpu" qemu-x86_64-static -cpu "$cpu" "$native"
    close_phase
  done
fi
