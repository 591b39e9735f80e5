#!/usr/bin/env bash
# No command replaces a file that exists unless asked (--force): for every
# command that writes files, a second run into the same output is refused
# before it computes anything (exit 2, nothing on stdout), naming the file
# and --force, and leaves the file byte-identical with no temporary beside
# it; any one of a command's outputs that exists is enough (a preview's
# PNG, a table, a file of a TIFF stack, a histo-image's data file); --force
# replaces them. Every such command's --help lists --force.
# Usage: bash cli_force.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

# refused DESC FILE ARGS...: ctrecon ARGS refused because FILE exists: exit 2,
# the message names FILE and --force, FILE unchanged, nothing computed
# (stdout empty), no temporary left
refused() {
  local desc=$1 file=$2; shift 2
  cp "$file" "$TOP/log/before"
  run "$@"
  if [ "$rc" -eq 2 ] && grep -qF -- "'$file'" "$ERR" && grep -qF -- "add --force to replace it" "$ERR" &&
     [ ! -s "$OUT" ] && cmp -s "$file" "$TOP/log/before" &&
     [ -z "$(find . -name '*.tmp.*')" ]; then
    ok "$desc: refused, naming '$file' and --force, the file kept"
  else
    bad "$desc: exit $rc"
  fi
}
# replaced DESC FILE ARGS...: with --force, ctrecon ARGS runs and FILE changes
replaced() {
  local desc=$1 file=$2; shift 2
  cp "$file" "$TOP/log/before"
  run "$@" --force
  if [ "$rc" -eq 0 ] && [ -s "$file" ] && ! cmp -s "$file" "$TOP/log/before"; then
    ok "$desc --force: replaced"
  else
    bad "$desc --force: exit $rc"
  fi
}

echo "# --help"
for cmd in geometry phantom fdk fbp iterate demo rabbitct-make rabbitct "pet simulate" "pet recon"; do
  # shellcheck disable=SC2086
  run $cmd --help
  grep -q -- '--force' "$OUT" && ok "$cmd --help lists --force" || bad "$cmd --help: no --force"
done

echo "# geometry"
G=(geometry --volume 24 --voxel 10 --views 30 --nu 40 --nv 40 --du 8 --dv 8 --quiet)
step "geometry" "${G[@]}" --out g.json
refused "geometry again" g.json "${G[@]}" --out g.json
replaced "geometry --views 31" g.json "${G[@]}" --out g.json --views 31
step "geometry back to 30 views" "${G[@]}" --out g.json --views 30 --force

echo "# phantom: --out and --truth"
P=(phantom --geometry g.json --device cpu --quiet)
step "phantom" "${P[@]}" --out p.nrrd --truth t.nrrd
refused "phantom again" p.nrrd "${P[@]}" --out p.nrrd --truth t2.nrrd
refused "phantom, --truth there" t.nrrd "${P[@]}" --out p2.nrrd --truth t.nrrd
[ ! -e p2.nrrd ] && ok "nothing of the refused run written" || bad "p2.nrrd written"
replaced "phantom --scale 2" p.nrrd "${P[@]}" --out p.nrrd --truth t.nrrd --scale 2
step "phantom back" "${P[@]}" --out p.nrrd --truth t.nrrd --force

echo "# fdk: --out, --preview, a TIFF stack"
F=(fdk --geometry g.json --projections p.nrrd --device cpu --quiet)
step "fdk" "${F[@]}" --out v.nrrd --preview pv
refused "fdk again" v.nrrd "${F[@]}" --out v.nrrd
refused "fdk, a preview there" pv_xy.png "${F[@]}" --out v2.nrrd --preview pv
replaced "fdk --window shepp-logan" v.nrrd "${F[@]}" --out v.nrrd --preview pv --window shepp-logan
mkdir st
step "fdk to a TIFF stack" "${F[@]}" --out 'st/v_%03d.tif'
refused "fdk into the stack again" st/v_000.tif "${F[@]}" --out 'st/v_%03d.tif'
grep -qF "(of the output 'st/v_%03d.tif')" "$ERR" && ok "the refusal names the stack too" ||
  bad "stack refusal: $(cat "$ERR")"
step "fdk to another stack" "${F[@]}" --out 'st/w_%03d.tif'
touch st/x_0100.tif # one file of a stack, beyond any count
refused "fdk into a stack one stray file of which is there" st/x_0100.tif \
  "${F[@]}" --out 'st/x_%04d.tif'
replaced "fdk into the stack" st/v_012.tif "${F[@]}" --out 'st/v_%03d.tif' --window shepp-logan
clean "fdk"

echo "# fbp"
step "parallel-beam data" demo --parallel --size 32 --views 24 --slices 4 --device cpu --quiet \
  --out-dir pd
B=(fbp --sinograms pd/sinograms.tif --device cpu --quiet)
step "fbp" "${B[@]}" --out r.raw
refused "fbp again" r.raw "${B[@]}" --out r.raw
replaced "fbp --window hann" r.raw "${B[@]}" --out r.raw --window hann

echo "# iterate: --out, --plot, --residuals"
I=(iterate --geometry g.json --projections p.nrrd --device cpu --iterations 2 --quiet
   --checkpoint-every 0)
step "iterate" "${I[@]}" --out i.nrrd --plot c.png --residuals res.csv
refused "iterate again" i.nrrd "${I[@]}" --out i.nrrd
refused "iterate, the plot there" c.png "${I[@]}" --out i2.nrrd --plot c.png
refused "iterate, the table there" res.csv "${I[@]}" --out i2.nrrd --residuals res.csv
replaced "iterate --iterations 3" res.csv "${I[@]}" --out i.nrrd --plot c.png --residuals res.csv \
  --iterations 3

echo "# pet simulate, pet recon"
S=(pet simulate --events 2e5 --lattice 48x48x12 --views 8x1 --device cpu --quiet)
step "pet simulate" "${S[@]}" --out d.json
refused "pet simulate again" d.json "${S[@]}" --out d.json
mv d.json d-moved.json
refused "pet simulate, its data file there" d.counts.raw "${S[@]}" --out d.json
mv d-moved.json d.json
replaced "pet simulate --seed 3" d.counts.raw "${S[@]}" --out d.json --seed 3
R=(pet recon --data d.json --device cpu --iterations 2 --quiet)
step "pet recon" "${R[@]}" --out img.nrrd --every 1 --metrics m.csv
refused "pet recon again" img.nrrd "${R[@]}" --out img.nrrd
run "${R[@]}" --out img2.nrrd --every 1 --iter-prefix img
[ "$rc" -eq 2 ] && grep -qF "'img_iter001.nrrd'" "$ERR" && grep -qF -- "--force" "$ERR" &&
  [ ! -e img2.nrrd ] && ok "pet recon, an iteration's image there: refused before the run" ||
  bad "pet recon --every into existing iterations: exit $rc"
refused "pet recon, the metrics there" m.csv "${R[@]}" --out img3.nrrd --metrics m.csv
replaced "pet recon --iterations 3" img.nrrd "${R[@]}" --out img.nrrd --every 1 --metrics m.csv \
  --iterations 3

echo "# rabbitct-make, rabbitct --json"
K=(rabbitct-make --views 24 --width 64 --height 48 --sizes 16 --device cpu --quiet)
step "rabbitct-make" "${K[@]}" --out r.rct
refused "rabbitct-make again" r.rct "${K[@]}" --out r.rct
step "rabbitct --json" rabbitct r.rct --size 16 --device cpu --quiet --json j.json
refused "rabbitct --json again" j.json rabbitct r.rct --size 16 --device cpu --quiet --json j.json
run rabbitct r.rct --size 16 --device cpu --quiet --json j.json --force
[ "$rc" -eq 0 ] && [ -s j.json ] && ok "rabbitct --json --force" || bad "rabbitct --force: exit $rc"
clean "every command"
finish
