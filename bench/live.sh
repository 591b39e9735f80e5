#!/usr/bin/env bash
# The live mode's benchmark (issue 47's targets): bench_sync gen makes the
# scan, bench_live replays it at --rate into a socket (or a growing HDF5
# file) while the live FBP follows, and prints the JSON (bench/bench_live.c
# says what each figure is).
#   bash bench/live.sh BUILD_DIR SCRATCH_DIR [--small] [bench_live options...]
# --small: 256^3 (seconds, any machine); without it the 2048^3 at
# 100 projections/s (about 21 s of acquisition; about 80 GiB of scratch
# disk with float32 output, 64 GiB with --out-dtype uint16).
set -eu
build=$1 dir=$2
shift 2
n=2048 small=
if [ "${1:-}" = --small ]; then n=256 small=--small; shift; fi
mkdir -p "$dir"
"$build/bench/bench_sync" gen --dir "$dir" --n "$n" --angles "$n" >&2
rm -f "$dir/flat.h5.tmp"* "$dir/dark.h5.tmp"* 2>/dev/null || true
"$build/bench/bench_live" --dir "$dir" $small "$@"
rm -f "$dir/scan.h5" "$dir/live_scan.h5" "$dir/live_growing.h5" "$dir"/live_preview*
