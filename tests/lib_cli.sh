# Shared by the CLI test scripts (tests/cli_*.sh), sourced with the path of
# the ctrecon binary: a scratch directory removed on exit (cwd: work/), the
# counters and ok/bad/run/step/exits/same/clean helpers, and finish for the summary line.
CTR=${1:?usage: bash $0 path/to/ctrecon}
case $CTR in /*) ;; *) CTR=$PWD/$CTR ;; esac
TOP=$(mktemp -d)
trap 'rm -rf "$TOP"' EXIT
mkdir "$TOP/work" "$TOP/log"
cd "$TOP/work" || exit 1
OUT=$TOP/log/out ERR=$TOP/log/err
pass=0 fail=0
ok() { pass=$((pass + 1)); echo "ok   - $*"; }
bad() {
  fail=$((fail + 1)); echo "FAIL - $*"
  sed 's/^/    stdout: /' "$OUT" | head -5; sed 's/^/    stderr: /' "$ERR" | head -5
}
# run ARGS...: ctrecon ARGS with stdout in $OUT, stderr in $ERR, status in rc.
# An UndefinedBehaviorSanitizer report (sanitizer build) is copied to this
# script's stderr, where the test's FAIL_REGULAR_EXPRESSION sees it.
run() {
  "$CTR" "$@" >"$OUT" 2>"$ERR"; rc=$?
  if grep -q "runtime error: " "$ERR"; then cat "$ERR" >&2; fi
}
# step DESC ARGS...: ctrecon ARGS must succeed.
step() {
  local desc=$1; shift
  run "$@"
  if [ "$rc" -eq 0 ]; then ok "$desc"; else bad "$desc: exit $rc"; fi
}
# exits CODE DESC ARGS...: ctrecon ARGS must exit with CODE.
exits() {
  local code=$1 desc=$2; shift 2
  run "$@"
  if [ "$rc" -eq "$code" ]; then ok "$desc (exit $code)"; else bad "$desc: exit $rc, expected $code"; fi
}
# same A B DESC: A and B are byte-identical files.
same() {
  if [ -f "$1" ] && [ -f "$2" ] && cmp -s "$1" "$2"; then ok "$3"; else bad "$3 ($1 vs $2 differ or missing)"; fi
}
# clean DESC: no partial output, journal, scratch file or temporary anywhere in work/.
clean() {
  local left
  left=$(find . -name '*.partial*' -o -name '*.scratch.*' -o -name '*.tmp.*')
  if [ -z "$left" ]; then ok "$1: nothing left behind"; else bad "$1: left behind: $left"; fi
}
# close_raw A B REL: float32 raw files A and B of one size, differing by at most REL x the
# largest |value| of A (which is not all zero).
close_raw() {
  python3 - "$1" "$2" "$3" <<'PY'
import struct, sys
a, b = (open(f, 'rb').read() for f in sys.argv[1:3])
n = len(a) // 4
x, y = struct.unpack('<%df' % n, a), struct.unpack('<%df' % n, b[:4 * n])
m = max(abs(v) for v in x)
sys.exit(not (len(a) == len(b) and m > 0 and max(abs(u - v) for u, v in zip(x, y)) <= float(sys.argv[3]) * m))
PY
}
finish() {
  echo "$pass passed, $fail failed"
  [ "$fail" -eq 0 ]
}
