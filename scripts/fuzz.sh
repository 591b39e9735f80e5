#!/usr/bin/env bash
# Runs the libFuzzer targets of a CTRECON_FUZZ build (tests/fuzz/README.md).
#   scripts/fuzz.sh smoke BUILD [SECONDS]   each target over its committed corpus
#                                           for SECONDS (20); one line per target;
#                                           "replay" targets (HDF5) run the corpus only
#   scripts/fuzz.sh long BUILD [RUNS] [JOBS] each target to RUNS executions
#                                           (10000000), JOBS targets at a time
#                                           (nproc); summary in BUILD/fuzz-long/summary.txt
# Exits non-zero when any target reports a finding (crash, sanitizer report,
# leak, timeout, out-of-memory); the input is kept under BUILD/fuzz-*/artifacts/.
# New inputs go to BUILD/fuzz-*/corpus/<target>/, never into the committed corpus.
set -euo pipefail
cd "$(dirname "$0")/.."
mode=${1:?usage: scripts/fuzz.sh smoke|long BUILD [...]}
build=${2:?usage: scripts/fuzz.sh smoke|long BUILD [...]}
list="$build/fuzz-targets.txt"
[ -f "$list" ] || { echo "fuzz: $list missing: configure $build with -DCTRECON_FUZZ=ON" >&2; exit 2; }
mapfile -t targets < "$list"
# -timeout: one input taking longer is a finding (a hang); -rss_limit_mb: so is
# a process growing past 2 GiB. -entropic_scale_per_exec_time: mutate slow
# inputs (a geometry of 300000 views takes 0.5 s) less often, so they do not
# eat the run (geometry_json: 270 -> 12000 executions/s).
common=(-timeout=10 -rss_limit_mb=2048 -print_final_stats=1 -entropic_scale_per_exec_time=1)

# run_one TARGET OUTDIR LIMIT...: runs one target, leaves OUTDIR/TARGET.log and
# prints "TARGET executions exec/s status".
run_one() {
  local t=$1 out=$2
  shift 2
  # the targets' private directories live here (a target stopped by a finding
  # cannot remove its own; the next run of this mode removes $out)
  mkdir -p "$out/corpus/$t" "$out/artifacts" "$out/tmp"
  local rc=0
  TMPDIR="$out/tmp" "$build/tests/fuzz/fuzz_$t" "${common[@]}" "$@" -artifact_prefix="$out/artifacts/$t-" \
    "$out/corpus/$t" "tests/fuzz/corpus/$t" > "$out/$t.log" 2>&1 || rc=$?
  local runs secs
  runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$out/$t.log" | tail -1)
  secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$out/$t.log" | tail -1)
  [ -n "$runs" ] || runs=$(grep -o '#[0-9]*' "$out/$t.log" | tail -1 | tr -d '#')
  local rate=-
  if [ -n "$secs" ] && [ "$secs" -gt 0 ]; then
    rate=$((${runs:-0} / secs))
  elif [ -n "$secs" ]; then
    rate=${runs:-0} # done within a second
  fi
  local status=ok
  if [ "$rc" -ne 0 ]; then
    status="FINDING (exit $rc; see $out/$t.log and $out/artifacts/$t-*)"
  fi
  printf '%-16s %10s executions %8s exec/s  %s\n' "$t" "${runs:-0}" "$rate" "$status"
  [ "$rc" -eq 0 ]
}

case "$mode" in
  smoke)
    secs=${3:-20}
    out="$build/fuzz-smoke"
    rm -rf "$out"
    fail=0
    for line in "${targets[@]}"; do
      read -r t kind <<<"$line"
      if [ "${kind:-}" = replay ]; then
        run_one "$t" "$out" -runs=0 || fail=1 # the corpus only (README.md)
      else
        run_one "$t" "$out" -max_total_time="$secs" || fail=1
      fi
    done
    [ "$fail" -eq 0 ] && echo "fuzz-smoke: ${#targets[@]} targets, no findings" ||
      echo "fuzz-smoke: FINDINGS (logs in $out)" >&2
    exit "$fail"
    ;;
  long)
    runs=${3:-10000000}
    jobs=${4:-$(nproc)}
    out="$build/fuzz-long"
    mkdir -p "$out"
    rm -rf "$out/tmp" "$out/artifacts" # the corpus it grew is kept for the next run
    export -f run_one
    export build
    export common_str="${common[*]}"
    summary="$out/summary.txt"
    printf '# %s: %s executions per target\n' "$(date -u +%FT%TZ)" "$runs" > "$summary"
    fail=0
    printf '%s\n' "${targets[@]}" | cut -d' ' -f1 |
      xargs -P "$jobs" -I{} bash -c 'common=($common_str); run_one "$1" "$2" -runs="$3"' _ {} \
        "$out" "$runs" >> "$summary" || fail=1
    cat "$summary"
    exit "$fail"
    ;;
  *)
    echo "fuzz: unknown mode '$mode' (smoke or long)" >&2
    exit 2
    ;;
esac
