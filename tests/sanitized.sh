#!/usr/bin/env bash
# Test launcher of the sanitizer build (CTRECON_SANITIZE=on, make
# test-sanitize): runs one test with the sanitizer reports of every process it
# starts (the test itself, each `ctrecon` of a CLI test) going to files in
# DIR, so that a report fails the test even where a CLI test does not look at
# that command's stderr or exit status. Prints the reports and exits 1 if there
# are any, else exits with the test's own status (77: skipped).
# Usage: bash sanitized.sh DIR COMMAND [ARGS...]
set -u
dir=${1:?usage: bash $0 DIR COMMAND [ARGS...]}
shift
rm -rf "$dir" && mkdir -p "$dir" || exit 1
export ASAN_OPTIONS="${ASAN_OPTIONS:-}:log_path=$dir/report"
export UBSAN_OPTIONS="${UBSAN_OPTIONS:-}:log_path=$dir/report"
"$@"
rc=$?
reports=("$dir"/report.*)
if [ -e "${reports[0]}" ]; then
  for f in "${reports[@]}"; do
    echo "---- sanitizer report $f"
    cat "$f"
  done
  echo "FAIL: ${#reports[@]} sanitizer report(s) above (test exit status $rc)"
  exit 1
fi
exit "$rc"
