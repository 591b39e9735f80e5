#!/usr/bin/env bash
# One vocabulary with Python and C (docs/vocabulary.md): the renamed options
# (--window, --max-slab-slices, --gpu-budget, --host-budget, geometry's
# --angle-start and --angle-range, rabbitct-make's --angle-range, fbp's
# --stripe, --stripe-size, --stripe-level, --stripe-sigma, --stripe-wavelet and
# --paganin-delta-beta) and their
# deprecated old names, which
# still work (the same output, byte for byte), are left out of --help and of
# "did you mean", and warn once per run naming the new option. FDK's default
# window is ram-lak, as fbp's, Python's and the C library's.
# (python/tests/test_vocabulary.py compares every shared default with Python's.)
# Usage: bash cli_vocabulary.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

# warned_once OLD NEW DESC: stderr has OLD's deprecation exactly once
warned_once() {
  local n
  n=$(grep -cF -- "option $1 is deprecated: use $2" "$ERR")
  if [ "$n" -eq 1 ]; then ok "$3: one warning naming $2"; else bad "$3: $n warnings"; fi
}
# hidden CMD OLD: `ctrecon CMD --help` does not list OLD
hidden() {
  run $1 --help
  if [ "$rc" -eq 0 ] && ! grep -qE -- "^  $2( |\$)" "$OUT"; then ok "$1 --help hides $2"
  else bad "$1 --help lists $2"; fi
}

step "geometry with the new names" geometry --out g.json --volume 24 --voxel 8 --views 30 \
  --nu 40 --nv 32 --du 9 --dv 9 --angle-start 10 --angle-range 220 --quiet
step "geometry with --start and --range" geometry --out g_old.json --volume 24 --voxel 8 \
  --views 30 --nu 40 --nv 32 --du 9 --dv 9 --start 10 --range 220 --quiet
same g.json g_old.json "--start/--range write the geometry of --angle-start/--angle-range"
warned_once --start --angle-start "geometry --start"
warned_once --range --angle-range "geometry --range"
step "phantom" phantom --geometry g.json --out p.raw --quiet

F=(fdk --geometry g.json --projections p.raw --device cpu --quiet)
step "fdk, no window given" "${F[@]}" --out def.raw
step "fdk --window ram-lak" "${F[@]}" --out rl.raw --window ram-lak
same def.raw rl.raw "fdk's default window is ram-lak"
step "fdk --window hann" "${F[@]}" --out hann.raw --window hann
if ! cmp -s def.raw hann.raw; then ok "hann is another window"; else bad "hann = ram-lak"; fi
step "fdk new names" "${F[@]}" --out new.raw --window hann --max-slab-slices 5 \
  --gpu-budget 1G --host-budget 1G
step "fdk old names" "${F[@]}" --out old.raw --filter hann --subvolume-slices 5 --gpu-mem 1G \
  --host-mem 1G
same new.raw old.raw "the old names set what the new ones do"
warned_once --filter --window "fdk --filter"
warned_once --subvolume-slices --max-slab-slices "fdk --subvolume-slices"
warned_once --gpu-mem --gpu-budget "fdk --gpu-mem"
warned_once --host-mem --host-budget "fdk --host-mem"
step "fdk --filter given twice" "${F[@]}" --out twice.raw --filter hann --filter hann
warned_once --filter --window "fdk --filter twice"
run "${F[@]}" --out bad.raw --filter gauss
if [ "$rc" -eq 2 ] && grep -qF -- "--filter 'gauss': expected ram-lak" "$ERR"; then
  ok "a bad value of an old name names the name given"; else bad "--filter gauss: exit $rc"; fi
run "${F[@]}" --out bad.raw --filtr hann
if [ "$rc" -eq 2 ] && ! grep -qF -- "did you mean '--filter'" "$ERR"; then
  ok "\"did you mean\" never suggests a deprecated name"; else bad "--filtr: exit $rc"; fi

step "iterate --max-slab-slices" iterate --geometry g.json --projections p.raw --device cpu \
  --quiet --out it_new.raw --iterations 2 --max-slab-slices 4
step "iterate --slab-slices" iterate --geometry g.json --projections p.raw --device cpu \
  --quiet --out it_old.raw --iterations 2 --slab-slices 4
same it_new.raw it_old.raw "iterate: --slab-slices is --max-slab-slices"
warned_once --slab-slices --max-slab-slices "iterate --slab-slices"
step "iterate, no --iterations" iterate --geometry g.json --projections p.raw --device cpu \
  --out it_def.raw
if grep -qE "sirt, 10 iterations|10 iterations" "$OUT"; then ok "iterate runs 10 iterations by default"
else bad "iterate's default iterations: $(head -3 "$OUT")"; fi

# fbp's corrections: --stripe*, --paganin-delta-beta (the C fields' and Python's names) and
# their old names --rings, --ring-*, --paganin
step "demo --parallel (small)" demo --parallel --size 32 --views 60 --slices 2 --out-dir pd \
  --device cpu --quiet
PP=(fbp --projections pd/projections.tif --flat pd/flat.tif --dark pd/dark.tif --device cpu
    --quiet --axis 15.5 --pixel-size 0.01)
step "fbp --stripe sorting --paganin-delta-beta" "${PP[@]}" --out c_new.raw --stripe sorting \
  --stripe-size 5 --paganin-delta-beta 50 --energy 20 --distance 100
step "fbp --rings sorting --paganin" "${PP[@]}" --out c_old.raw --rings sorting --ring-size 5 \
  --paganin 50 --energy 20 --distance 100
same c_new.raw c_old.raw "--rings, --ring-size, --paganin are --stripe, --stripe-size, --paganin-delta-beta"
warned_once --rings --stripe "fbp --rings"; warned_once --ring-size --stripe-size "fbp --ring-size"
warned_once --paganin --paganin-delta-beta "fbp --paganin"
step "fbp --stripe wavelet and its options" "${PP[@]}" --out w_new.raw --stripe wavelet \
  --stripe-level 2 --stripe-sigma 1.5 --stripe-wavelet 3
step "fbp --rings wavelet, old names" "${PP[@]}" --out w_old.raw --rings wavelet \
  --ring-level 2 --ring-sigma 1.5 --ring-wavelet 3
same w_new.raw w_old.raw "--ring-level, --ring-sigma, --ring-wavelet are --stripe-*"
if [ -s w_new.raw ] && ! cmp -s c_new.raw w_new.raw; then ok "the two runs differ (not vacuous)"
else bad "sorting with Paganin = wavelet, or no output"; fi
for o in level sigma wavelet; do warned_once --ring-$o --stripe-$o "fbp --ring-$o"; done
run "${PP[@]}" --out e.raw --ring-size 5
if [ "$rc" -eq 2 ] && grep -qF -- "--stripe-size applies to --stripe sorting" "$ERR"; then
  ok "an old name's misuse is told in the new names"; else bad "--ring-size alone: exit $rc"; fi
for o in --rings --ring-size --ring-level --ring-sigma --ring-wavelet --paganin; do hidden fbp $o; done

hidden fdk --filter; hidden fdk --subvolume-slices; hidden fdk --gpu-mem; hidden fdk --host-mem
hidden fbp --filter; hidden fbp --gpu-mem; hidden fbp --host-mem
hidden iterate --slab-slices; hidden iterate --gpu-mem; hidden geometry --start
hidden geometry --range; hidden rabbitct-make --range
run fbp --help
if grep -qE -- "^  --window NAME .*\(default ram-lak\)" "$OUT" &&
   grep -qE -- "^  --cutoff F .*\(default 1\)" "$OUT"; then ok "fbp --help: --window and --cutoff"
else bad "fbp --help lacks --window or --cutoff"; fi
finish
