#!/usr/bin/env bash
# README.md "Using it": every line runs, in order, as a newcomer would run it
# (each from the directory the earlier ones wrote into), at smaller sizes so
# the suite stays quick. A README line this script does not know fails: a new
# line needs its small form here, so the list cannot rot unnoticed.
# Usage: bash cli_readme.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
README=$(dirname "${BASH_SOURCE[0]}")/../README.md
case $README in /*) ;; *) README=$OLDPWD/$README ;; esac

# The sh block after "## Using it".
mapfile -t lines < <(awk '/^## Using it/ { s = 1 } s && /^```sh/ { b = 1; next }
                          b && /^```/ { exit } b' "$README")
[ "${#lines[@]}" -ge 10 ] && ok "README 'Using it' has ${#lines[@]} lines" ||
  bad "README 'Using it' block not found (${#lines[@]} lines)"

# small LINE: the line at test size (README arguments, smaller sizes); empty:
# unknown line; "skip REASON": not run.
small() {
  local l=$1
  case $l in
    *" geometry "*"--volume 128 --views 120"*) echo "${l/--volume 128 --views 120/--volume 24 --voxel 10 --views 30 --nu 40 --nv 40 --du 8 --dv 8}" ;;
    *" geometry "*) echo "${l/--volume 256 --views 360/--volume 32 --voxel 8 --views 40 --nu 48 --nv 48 --du 7 --dv 7}" ;;
    *" phantom "* | *" fdk "* | *" fbp "* | *" info"*) echo "$l" ;;
    *" demo --parallel"*) echo "$l --size 32 --views 24 --slices 4" ;;
    *" demo --pet"*) echo "skip 1-2 minutes on the CPU; pet simulate and pet recon below run its chain" ;;
    *" rabbitct-make "*) echo "${l/--sizes 128/--views 24 --width 64 --height 48 --sizes 16}" ;;
    *" rabbitct "*) echo "${l/--size 128/--size 16}" ;;
    *" pet simulate "*) echo "${l/--events 1e8/--events 2e5 --lattice 48x48x12 --views 8x1}" ;;
    *" pet recon "*) echo "$l --iterations 2" ;;
    *" iterate "*) echo "${l/--iterations 5/--iterations 2}" ;;
    *) echo "" ;;
  esac
}

for line in "${lines[@]}"; do
  cmd=${line%%#*}             # without the comment
  cmd=${cmd%"${cmd##*[![:space:]]}"}
  [ -n "$cmd" ] || continue
  case $cmd in
    build/ctrecon\ *) ;;
    *) bad "README line does not start with build/ctrecon: $cmd"; continue ;;
  esac
  s=$(small "$cmd")
  if [ -z "$s" ]; then bad "README line unknown to cli_readme.sh (add its small form): $cmd"; continue; fi
  case $s in skip\ *) echo "skip - $cmd (${s#skip })"; continue ;; esac
  read -ra argv <<<"${s#build/ctrecon }"
  run "${argv[@]}"
  if [ "$rc" -eq 0 ]; then ok "${cmd#build/}"; else bad "${cmd#build/} (as: ${s#build/}): exit $rc"; fi
done
# What the lines promise exists.
for f in g.json proj.tif truth.nrrd vol.nrrd vol_xy.png vol8g.nrrd p128.tif it.nrrd conv.png demo-parallel-out/projections.tif rec.nrrd \
         r.rct data.json pet.nrrd crc.csv crc.png; do
  [ -s "$f" ] && ok "wrote $f" || bad "no $f"
done
[ ! -e demo-out ] && ok "demo --parallel left demo-out/ alone" || bad "demo-out/ written"
finish
