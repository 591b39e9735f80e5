#!/usr/bin/env bash
# Builds and runs the two HDF5 fuzz targets (fuzz_hdf5, fuzz_pet_hdf5) against
# HDF5 1.14.5 instead of the system's, out of tree (tests/fuzz/README.md,
# "Long runs").
#
# Why: Debian 12's libhdf5 1.10.8 is slow under the fuzzer (300-600 exec/s) and
# corrupts its own memory on damaged files, so the HDF5 targets' 10 M-execution
# runs are done against Debian trixie's HDF5 1.14.5 static library. That
# library was built against glibc 2.38+, whose C23 `__isoc23_*` scanf/strto*
# symbols glibc 2.36 lacks: a small shim forwards them to the 2.36 functions.
# HDF5 is not instrumented and leaks or over-reads on its own on some damaged
# files; its leaks (`leak:H5`, LSan) are suppressed, its over-reads are not
# (each is a damaged file our storage check must refuse first). (The targets'
# built-in suppressions name `libhdf5`, which matches only the shared library.)
#
#   tests/fuzz/hdf5-114.sh build                 download, shim, configure, build,
#                                                replay both committed corpora
#   tests/fuzz/hdf5-114.sh replay                replay both committed corpora
#   tests/fuzz/hdf5-114.sh run TARGET SECONDS    libFuzzer fork mode (one job at a
#                                                time, crashes logged and skipped) for
#                                                SECONDS; TARGET is hdf5 or pet_hdf5
#   tests/fuzz/hdf5-114.sh start TARGET SECONDS  `run`, detached (setsid nohup nice -n 19)
#   tests/fuzz/hdf5-114.sh bundle DIR AT         the built targets with every library they
#                                                load (the loader too), patched to run from
#                                                AT on another machine, into DIR (a machine
#                                                with more cores, as in the long runs of
#                                                2026-11-27: copy DIR to AT there and run
#                                                AT/run.sh TARGET SECONDS JOBS RESULTS)
#
# Environment: WORK (default /tmp/fz14) holds everything: the packages (deb/,
# root/), the shim (shim/), the build (build/), the corpus copies
# (corpus/TARGET/, seeded from tests/fuzz/corpus/TARGET and kept between runs),
# the findings (art/TARGET-*), the logs (fork-TARGET.log) and the targets'
# temporary directories (tmp/TARGET/). CTR_SRC (default: the checkout this
# script is in) is the source tree that `build` compiles.
# Needs clang with libFuzzer (libclang-rt-14-dev), cmake, apt-get, and the
# system's zlib, libcurl and libcrypto (HDF5's ROS3 driver is linked in,
# never used; libcurl4-openssl-dev, libssl-dev).
#
# Executions so far: the last fork-mode status line,
#   grep -E '^#[0-9]+: ' WORK/fork-TARGET.log | tail -1     (#RUNS: cov: ... exec/s ...)
# The run ends with "INFO: exiting: 0 time: ...s"; findings with "CRASH:",
# "TIMEOUT:" or "OOM:" lines there and files in WORK/art/.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
SRC=${CTR_SRC:-$(cd "$here/../.." && pwd)}
WORK=${WORK:-/tmp/fz14}
SUITE=trixie
ML=usr/lib/x86_64-linux-gnu
H5DIR=$WORK/root/$ML/hdf5/serial
# The options scripts/fuzz.sh runs every target with.
common=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -entropic_scale_per_exec_time=1)

usage() {
  sed -n '16,28p' "$0" >&2
  exit 2
}

target_name() { # hdf5 | fuzz_hdf5 | pet_hdf5 | fuzz_pet_hdf5 -> hdf5 | pet_hdf5
  case "${1#fuzz_}" in
    hdf5 | pet_hdf5) echo "${1#fuzz_}" ;;
    *) echo "hdf5-114: unknown target '$1' (hdf5 or pet_hdf5)" >&2; exit 2 ;;
  esac
}

# HDF5's leaks are suppressed (leak:H5); its over-reads are not: each one an
# input reaches through our readers is a finding for ctr__h5_check_storage
# (until 2026-11-27 `interceptor_via_fun:H5` hid the memcpy over-reads here,
# and only machines without a symbolizer, where it matched nothing, saw them).
sanitizer_env() {
  printf 'leak:H5\n' > "$WORK/lsan.supp"
  export LSAN_OPTIONS="suppressions=$WORK/lsan.supp${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
}

# trixie's libhdf5-dev (libhdf5_serial.a, headers) and libaec-dev (libsz.a,
# libaec.a: HDF5's szip filter), through a private apt state under WORK.
fetch() {
  mkdir -p "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial" "$WORK/deb"
  echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian $SUITE main" \
    > "$WORK/apt/sources.list"
  local apt=(-o "Dir::Etc::SourceList=$WORK/apt/sources.list" -o Dir::Etc::SourceParts=/dev/null
             -o "Dir::State::Lists=$WORK/apt/lists" -o "Dir::Cache=$WORK/apt/cache"
             -o Dir::State::status=/dev/null -o APT::Architecture=amd64 -o Acquire::Languages=none
             -o APT::Sandbox::User=root)
  apt-get "${apt[@]}" -qq update
  rm -f "$WORK"/deb/*.deb
  (cd "$WORK/deb" && apt-get "${apt[@]}" -qq download libhdf5-dev libaec-dev)
  rm -rf "$WORK/root"
  for d in "$WORK"/deb/*.deb; do
    dpkg-deb -x "$d" "$WORK/root"
    echo "$(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)"
  done
  [ -f "$H5DIR/libhdf5.a" ] && [ -f "$H5DIR/include/hdf5.h" ] ||
    { echo "hdf5-114: $H5DIR/libhdf5.a or include/hdf5.h missing" >&2; exit 1; }
}

# glibc 2.38's C23 variants (they also accept 0b binary prefixes, which HDF5
# never parses) forwarded to glibc 2.36's.
shim() {
  mkdir -p "$WORK/shim"
  cat > "$WORK/shim/isoc23.c" <<'EOF'
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
long __isoc23_strtol(const char *s, char **e, int b) { return strtol(s, e, b); }
long long __isoc23_strtoll(const char *s, char **e, int b) { return strtoll(s, e, b); }
unsigned long __isoc23_strtoul(const char *s, char **e, int b) { return strtoul(s, e, b); }
unsigned long long __isoc23_strtoull(const char *s, char **e, int b) { return strtoull(s, e, b); }
intmax_t __isoc23_strtoimax(const char *s, char **e, int b) { return strtoimax(s, e, b); }
uintmax_t __isoc23_strtoumax(const char *s, char **e, int b) { return strtoumax(s, e, b); }
int __isoc23_vsscanf(const char *s, const char *f, va_list ap) { return vsscanf(s, f, ap); }
int __isoc23_vfscanf(FILE *fp, const char *f, va_list ap) { return vfscanf(fp, f, ap); }
int __isoc23_sscanf(const char *s, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int r = vsscanf(s, f, ap);
  va_end(ap);
  return r;
}
int __isoc23_fscanf(FILE *fp, const char *f, ...) {
  va_list ap;
  va_start(ap, f);
  int r = vfscanf(fp, f, ap);
  va_end(ap);
  return r;
}
EOF
  clang -O1 -g -fPIC -c "$WORK/shim/isoc23.c" -o "$WORK/shim/isoc23.o"
  # every __isoc23 symbol the static libraries call must be forwarded
  local need have missing
  need=$(nm "$H5DIR/libhdf5.a" "$WORK/root/$ML/libsz.a" "$WORK/root/$ML/libaec.a" 2>/dev/null |
         awk '$1 == "U" && $2 ~ /^__isoc23_/ {print $2}' | sort -u)
  have=$(nm "$WORK/shim/isoc23.o" | awk '$2 == "T" {print $3}' | sort -u)
  missing=$(comm -23 <(echo "$need") <(echo "$have"))
  [ -z "$missing" ] || { echo "hdf5-114: shim lacks: $missing" >&2; exit 1; }
  echo "shim: forwards $(echo $need)"
}

build() {
  command -v clang > /dev/null || { echo "hdf5-114: needs clang" >&2; exit 1; }
  local l
  for l in libz.so libcurl.so libcrypto.so; do
    [ -e "/$ML/$l" ] || { echo "hdf5-114: /$ML/$l missing (zlib1g-dev libcurl4-openssl-dev libssl-dev)" >&2; exit 1; }
  done
  mkdir -p "$WORK"
  fetch
  shim
  # The Makefile's fuzz configuration (build-fuzz), with FindHDF5 pointed at
  # the static 1.14 library only (HDF5_ROOT: no system paths, no h5cc), and
  # what that library needs at the end of every link line.
  local extra="$WORK/shim/isoc23.o $WORK/root/$ML/libsz.a $WORK/root/$ML/libaec.a -lcurl -lcrypto -lz -ldl -lm -lpthread"
  rm -rf "$WORK/build"
  cmake -S "$SRC" -B "$WORK/build" -DCMAKE_BUILD_TYPE=Release -DCMAKE_C_COMPILER=clang \
    -DCTRECON_FUZZ=ON -DCTRECON_CUDA=off -DCTRECON_HDF5=on \
    -DHDF5_ROOT="$H5DIR" -DHDF5_USE_STATIC_LIBRARIES=ON -DHDF5_NO_FIND_PACKAGE_CONFIG_FILE=ON \
    -DCMAKE_C_STANDARD_LIBRARIES="$extra" > "$WORK/configure.log"
  grep -E 'HDF5_(C_INCLUDE_DIR|hdf5_LIBRARY_RELEASE):' "$WORK/build/CMakeCache.txt"
  grep -q "HDF5_hdf5_LIBRARY_RELEASE:FILEPATH=$H5DIR/.*libhdf5.a$" "$WORK/build/CMakeCache.txt" ||
    { echo "hdf5-114: CMake did not pick libhdf5.a under $H5DIR (see $WORK/configure.log)" >&2; exit 1; }
  cmake --build "$WORK/build" -j "$(nproc)" --target fuzz_hdf5 fuzz_pet_hdf5 > "$WORK/build.log" 2>&1 ||
    { tail -30 "$WORK/build.log" >&2; exit 1; }
  local t
  for t in hdf5 pet_hdf5; do # the version linked in, as the library reports it
    strings "$WORK/build/tests/fuzz/fuzz_$t" | grep -m1 -o 'HDF5 library version: [0-9.]*' || true
  done
  { date -u +%FT%TZ
    git -C "$SRC" describe --always --dirty 2>/dev/null || echo "$SRC (not a git checkout)"
    for d in "$WORK"/deb/*.deb; do echo "$(dpkg-deb -f "$d" Package) $(dpkg-deb -f "$d" Version)"; done
    clang --version | head -1
  } > "$WORK/build-info.txt"
  replay
}

# Each target over its committed corpus, as `make fuzz-smoke` does for them.
replay() {
  sanitizer_env
  local t fail=0
  for t in hdf5 pet_hdf5; do
    mkdir -p "$WORK/tmp/replay"
    if TMPDIR="$WORK/tmp/replay" "$WORK/build/tests/fuzz/fuzz_$t" "${common[@]}" -runs=0 \
      "$SRC/tests/fuzz/corpus/$t" > "$WORK/replay-$t.log" 2>&1; then
      echo "replay $t: ok ($(grep -o 'Done [0-9]* runs' "$WORK/replay-$t.log"))"
    else
      echo "replay $t: FAILED, see $WORK/replay-$t.log" >&2
      fail=1
    fi
  done
  return "$fail"
}

run() {
  local t secs
  t=$(target_name "${1:?usage: run TARGET SECONDS}")
  secs=${2:?usage: run TARGET SECONDS}
  local bin="$WORK/build/tests/fuzz/fuzz_$t"
  [ -x "$bin" ] || { echo "hdf5-114: $bin missing: run '$0 build' first" >&2; exit 1; }
  mkdir -p "$WORK/corpus/$t" "$WORK/art" "$WORK/tmp/$t"
  cp -n "$SRC/tests/fuzz/corpus/$t"/* "$WORK/corpus/$t/" # seeds; inputs found earlier stay
  sanitizer_env
  export TMPDIR="$WORK/tmp/$t" # the targets' private dirs and libFuzzer's fork dir
  exec "$bin" "${common[@]}" -fork=1 -ignore_crashes=1 -max_total_time="$secs" \
    -artifact_prefix="$WORK/art/$t-" "$WORK/corpus/$t" > "$WORK/fork-$t.log" 2>&1
}

# bundle DIR AT: see the header. Needs patchelf.
bundle() {
  local dir=${1:?usage: bundle DIR AT} at=${2:?usage: bundle DIR AT}
  command -v patchelf > /dev/null || { echo "hdf5-114: bundle needs patchelf" >&2; exit 1; }
  rm -rf "$dir"
  mkdir -p "$dir/lib" "$dir/corpus"
  local t
  for t in hdf5 pet_hdf5; do
    local bin="$WORK/build/tests/fuzz/fuzz_$t"
    [ -x "$bin" ] || { echo "hdf5-114: $bin missing: run '$0 build' first" >&2; exit 1; }
    cp "$bin" "$dir/fuzz_$t"
    ldd "$bin" | awk '$3 ~ /^\// {print $3} $1 ~ /^\/.*ld-linux/ {print $1}' | xargs -r -I{} cp -L -n {} "$dir/lib/"
    # DT_RPATH (--force-rpath), not DT_RUNPATH: it also serves the libraries' own dependencies
    patchelf --set-interpreter "$at/lib/ld-linux-x86-64.so.2" --force-rpath --set-rpath "$at/lib" "$dir/fuzz_$t"
    cp -r "$SRC/tests/fuzz/corpus/$t" "$dir/corpus/$t"
  done
  # a library with its own search path (Open MPI's) would find its
  # dependencies outside the bundle: point it into the bundle too
  local lib
  for lib in "$dir"/lib/*.so*; do
    if [ -n "$(patchelf --print-rpath "$lib" 2>/dev/null)" ]; then
      chmod u+w "$lib"
      patchelf --force-rpath --set-rpath "$at/lib" "$lib"
    fi
  done
  cat > "$dir/run.sh" <<EOF
#!/usr/bin/env bash
# run.sh TARGET SECONDS JOBS RESULTS: libFuzzer fork mode with JOBS jobs at once
# (crashes logged and skipped), the options of tests/fuzz/hdf5-114.sh run.
set -euo pipefail
t=\$1 secs=\$2 jobs=\$3 res=\$4
# A machine lent again may keep an earlier run's RESULTS (2026-11-27: the
# artifacts of two sessions before, mistaken at first for this run's).
if [ -n "\$(ls -A "\$res/art" 2>/dev/null)" ]; then
  echo "run.sh: \$res/art already holds findings of an earlier run: give a new RESULTS folder" >&2
  exit 2
fi
mkdir -p "\$res/art" "\$res/tmp-\$t" "\$res/corpus-\$t"
cp -rn $at/corpus/\$t/* "\$res/corpus-\$t/"
printf 'leak:H5\\n' > "\$res/lsan.supp"
export LSAN_OPTIONS="suppressions=\$res/lsan.supp"
# The targets write each input to a file in TMPDIR and HDF5 opens it: in
# memory (/dev/shm) where the machine has it, so that 60 jobs do not share
# one disk (on the VM, one job: no difference; 64 cores made ~95 executions/s
# a job on 2026-11-27, with TMPDIR on disk and leak reports restarting jobs).
if [ -d /dev/shm ] && [ -w /dev/shm ]; then
  export TMPDIR="/dev/shm/ctr-fz-\$t"
else
  export TMPDIR="\$res/tmp-\$t"
fi
mkdir -p "\$TMPDIR"
# Without llvm-symbolizer the suppressions (function names) match nothing and
# every leak inside HDF5 is reported (the device machine, 2026-11-27: 487
# reports, all HDF5's, all suppressed where symbols exist): leak detection off
# there, and said, through the environment (fork mode's jobs do not inherit
# -detect_leaks=0). Our own leaks are the sanitizer suite's (make test-sanitize).
if ! command -v llvm-symbolizer > /dev/null; then
  export ASAN_OPTIONS=detect_leaks=0
  echo "run.sh: no llvm-symbolizer: leak detection off (HDF5's leaks cannot be told apart)" > "\$res/leaks-\$t.txt"
fi
exec $at/fuzz_\$t ${common[*]} -fork=\$jobs -ignore_crashes=1 -max_total_time=\$secs \\
  -artifact_prefix="\$res/art/\$t-" "\$res/corpus-\$t" > "\$res/fork-\$t.log" 2>&1
EOF
  chmod +x "$dir/run.sh"
  echo "bundle: $dir ($(du -sh "$dir" | cut -f1)), to be copied to $at"
}

case "${1:-}" in
  build) build ;;
  bundle) shift; bundle "$@" ;;
  replay) replay ;;
  run) shift; run "$@" ;;
  start)
    t=$(target_name "${2:?usage: start TARGET SECONDS}")
    : "${3:?usage: start TARGET SECONDS}"
    WORK=$WORK CTR_SRC=$SRC setsid nohup nice -n 19 "$0" run "$t" "$3" > /dev/null 2>&1 < /dev/null &
    echo "started fuzz_$t for $3 s (pid $!): $WORK/fork-$t.log"
    ;;
  *) usage ;;
esac
