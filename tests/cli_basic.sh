#!/usr/bin/env bash
# CLI basics: help of every command, usage errors (exit 2), version, info,
# geometry write and --check.  Usage: bash cli_basic.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
# expect CODE DESC ARGS...: exit code only
expect() {
  local want=$1 desc=$2; shift 2
  run "$@"
  if [ "$rc" -eq "$want" ]; then ok "$desc (exit $rc)"; else bad "$desc: exit $rc, expected $want"; fi
}
# usage_error DESC NEEDLE ARGS...: exit 2, one stderr line with the hint
usage_error() {
  local desc=$1 needle=$2; shift 2
  run "$@"
  local lines; lines=$(wc -l <"$ERR")
  if [ "$rc" -eq 2 ] && [ "$lines" -eq 1 ] && grep -qF -- "$needle" "$ERR" &&
     grep -q "error: .*(see 'ctrecon.* --help')" "$ERR" && [ ! -s "$OUT" ]; then
    ok "$desc (exit 2: $(cat "$ERR"))"
  else
    bad "$desc: exit $rc, $lines stderr line(s), expected exit 2 and one line with '$needle'"
  fi
}
has() { # has FILE NEEDLE DESC
  if grep -qF -- "$2" "$1"; then ok "$3"; else bad "$3: '$2' not found"; fi
}

echo "# help"
for cmd in info geometry phantom fdk demo; do
  run "$cmd" --help
  if [ "$rc" -eq 0 ] && grep -q '^usage: ctrecon' "$OUT" && [ ! -s "$ERR" ] &&
     grep -q -- '--help' "$OUT"; then
    ok "$cmd --help prints usage to stdout, exit 0"
  else
    bad "$cmd --help"
  fi
  run help "$cmd"
  if [ "$rc" -eq 0 ] && grep -q '^usage: ctrecon' "$OUT"; then ok "help $cmd"; else bad "help $cmd"; fi
done
# Every option of the compute commands states its default (or is required / a flag).
for cmd in geometry phantom fdk demo; do
  run "$cmd" --help
  # An option's help may continue on the next line when its name is long.
  missing=$(awk '
    function check() { if (name != "" && text !~ /default|required/ &&
                           name !~ /^--(help|quiet|no-volume|check|truth|preview)$/) print name }
    /^options:/ { o = 1; next }
    /^examples:/ { check(); o = 0; name = "" }
    o && /^  --/ { check(); name = $1; text = $0; next }
    o { text = text " " $0 }
    END { check() }' "$OUT")
  if [ -z "$missing" ]; then ok "$cmd --help states every default"; else bad "$cmd --help: no default for $missing"; fi
done
# The format lists of the help come from the library's format table: every
# format name is in --format / --out-format, no placeholder is left.
names=$("$CTR" fdk --format nope 2>&1 | sed -n "s/.*expected \(.*\) or auto.*/\1/p" | sed 's/, / /g; s/ or / /')
for cmd in phantom fdk iterate fbp "pet recon" "pet metrics" "pet simulate"; do
  run $cmd --help
  left=$(grep -o '{formats}\|{titles}\|{endings}' "$OUT" | head -1)
  lacking=""
  for n in $names; do
    grep -Eq -- "--(out-)?format ([a-z0-9-]+\|)*$n(\||$)" "$OUT" || lacking="$lacking $n"
  done
  case "$cmd" in pet\ metrics|pet\ simulate) lacking="" ;; esac # no --format option
  if [ -z "$left" ] && [ -n "$names" ] && [ -z "$lacking" ]; then
    ok "$cmd --help lists the formats of the table"
  else
    bad "$cmd --help: placeholder '$left', formats missing:$lacking (table: $names)"
  fi
done
for cmd in phantom fdk demo; do
  run "$cmd" --help
  if grep -q -- '--quiet' "$OUT" && grep -q -- '--threads' "$OUT" && grep -q -- '--device' "$OUT"; then
    ok "$cmd has --quiet, --threads, --device"
  else
    bad "$cmd lacks a common option"
  fi
done
run --help
if [ "$rc" -eq 0 ] && grep -q '^usage' "$OUT" && grep -q '^exit codes' "$OUT" &&
   grep -q '^  4 ' "$OUT"; then ok "global --help lists commands and exit codes"; else bad "global --help"; fi
run fdk --bad-option --help
if [ "$rc" -eq 0 ] && grep -q '^usage' "$OUT"; then ok "--help wins over a bad option"; else bad "--help with a bad option"; fi
run --version
if [ "$rc" -eq 0 ] && grep -Eq '^ctrecon [0-9]+\.[0-9]+\.[0-9]+$' "$OUT"; then ok "--version: $(cat "$OUT")"; else bad "--version"; fi

echo "# usage errors"
usage_error "no command" "no command" 
usage_error "unknown command" "unknown command 'frobnicate'" frobnicate
usage_error "unknown global option" "unknown option '--frob'" --frob
usage_error "help of an unknown command" "unknown command 'nope'" help nope
usage_error "command typo: the nearest command" "unknown command 'fdx'; did you mean 'fdk'?" fdx
usage_error "help of a command typo" "unknown command 'phantm'; did you mean 'phantom'?" help phantm
run fdk --zzzzzzzzzz
if [ "$rc" -eq 2 ] && grep -qF "unknown option '--zzzzzzzzzz'" "$ERR" && ! grep -q "did you mean" "$ERR"; then
  ok "an option far from every known one gets no suggestion"
else bad "--zzzzzzzzzz: exit $rc"; fi
for cmd in info geometry phantom fdk demo; do
  usage_error "$cmd: unknown option" "unknown option '--frob'" "$cmd" --frob
done
usage_error "missing value at the end" "--geometry needs a value" fdk --geometry
usage_error "missing value before an option" "--out needs a value" geometry --out --quiet
usage_error "missing required option" "missing required option --out" geometry
usage_error "missing required --projections" "missing required option --projections" fdk --geometry g.json --out r.nrrd
usage_error "stray argument" "unexpected argument 'extra'" phantom extra
usage_error "flag with a value" "--quiet takes no value" demo --quiet=yes
usage_error "bad number" "--sid 'abc'" geometry --out g.json --sid abc
usage_error "negative size" "--views '-3'" geometry --out g.json --views -3
usage_error "bad list" "--volume '1,2'" geometry --out g.json --volume 1,2
usage_error "bad offset list" "--vol-offset '1,2'" geometry --out g.json --vol-offset 1,2
usage_error "bad direction" "expected ccw or cw" geometry --out g.json --direction up
usage_error "bad device" "expected auto, cpu, cuda or cuda:N" demo --device tpu
usage_error "bad threads" "--threads 'many'" demo --threads many
usage_error "bad cutoff" "0 < cutoff <= 1" fdk --cutoff 1.5
usage_error "bad slices" "--slices '9:3'" fdk --slices 9:3
usage_error "bad short-scan" "expected auto, off or parker" fdk --short-scan maybe
usage_error "--check with geometry options" "--check takes no geometry options" geometry --check g.json --sid 5
if [ -z "$(ls -A)" ]; then ok "usage errors leave no files"; else bad "usage errors left files: $(ls -A)"; fi

echo "# info"
run info
if [ "$rc" -eq 0 ] && grep -q '^ctrecon ' "$OUT" && grep -Eq '^  openmp +(yes|no)$' "$OUT" &&
   grep -Eq '^  cuda +(yes|no)$' "$OUT" && grep -q '^OpenMP max threads: [0-9]' "$OUT" &&
   grep -q '^GPUs: ' "$OUT"; then
  ok "info: $(grep '^GPUs' "$OUT")"
else
  bad "info"
fi

echo "# geometry"
G="--nu 48 --nv 40 --du 9 --dv 12 --views 30 --volume 32 --voxel 8"
expect 0 "geometry --out" geometry --out g.json $G
has g.json '"circular"' "geometry file is circular JSON"
has g.json '"count":	30' "geometry file has 30 views"
expect 0 "geometry --check" geometry --check g.json
has "$OUT" "30 over 360.0 deg" "check: angular coverage"
has "$OUT" "48 x 40 pixels of 9 x 12 mm" "check: detector"
has "$OUT" "32 x 32 x 32 voxels of 8 x 8 x 8 mm" "check: volume"
has "$OUT" "detector 1500 mm from the source" "check: sdd recovered from the matrices"
has "$OUT" "100.0 % of the volume's field of view" "check: full coverage"
if [ ! -s "$ERR" ]; then ok "check: no warning for a covering detector"; else bad "check warned"; fi
expect 0 "geometry with --opt=value, lists, cw, short scan" geometry --out=s.json --nu=48 --nv 40 \
  --du 9 --dv 12 --views 20 --angle-range 220 --direction cw --volume 32,32,16 --voxel 8,8,16 \
  --vol-offset 0,0,10 --angle-start -30 --offset-u 2 --quiet
if [ ! -s "$OUT" ]; then ok "geometry --quiet prints nothing"; else bad "geometry --quiet printed"; fi
expect 0 "geometry --angle-range 6.28 (radians)" geometry --out r.json $G --angle-range 6.2832 --quiet
has "$ERR" "--angle-range 6.2832: the 30 views span only 6.074 degrees: this looks like radians" \
  "--angle-range in radians warns, naming --angle-range"
rm -f r.json
# a JSON geometry written in radians: every command that loads it says so
sed 's/"range_deg":[[:space:]]*[0-9.]*/"range_deg": 3.14159/' s.json > rad.json
expect 0 "geometry --check of a JSON range in radians" geometry --check rad.json
has "$ERR" "'rad.json': the 20 views span only 2.985 degrees: its angles look like radians" \
  "a JSON geometry in radians warns, naming the file"
rm -f rad.json
expect 0 "geometry --check of the short scan" geometry --check s.json
has "$OUT" "short scan" "check: short scan recognised"
has "$OUT" "cw" "check: clockwise"
has "$OUT" "centre (0, 0, 10) mm" "check: volume offset"
expect 0 "default geometry" geometry --out d.json --quiet
expect 0 "default geometry --check" geometry --check d.json
has "$OUT" "256 x 256 pixels of 1.75 x 1.75 mm" "defaults: detector 256 x 256 of 1.75 mm"
has "$OUT" "360 over 360.0 deg (ccw" "defaults: 360 views, ccw"
has "$OUT" "256 x 256 x 256 voxels of 1 x 1 x 1 mm" "defaults: 256^3 of 1 mm"
has "$OUT" "1000 mm from the axis" "defaults: sid 1000"
leftover=$(ls -A | grep -v -x -e g.json -e s.json -e d.json)
if [ -z "$leftover" ]; then ok "no temporaries left"; else bad "left: $leftover"; fi

finish
