#!/usr/bin/env bash
# `ctrecon tune` (docs/cli.md): help, usage errors, --list and --clear of a
# cache written by hand, exit 4 on the CPU (nothing to tune); with a GPU,
# `tune fdk` writes the cache, a second call reads it, --force times again.
# Usage: bash cli_tune.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
has() { # has FILE NEEDLE DESC
  if grep -qF -- "$2" "$1"; then ok "$3"; else bad "$3: '$2' not found"; fi
}
C=--tune=cache_dir=$TOP/work/cache

echo "# help and usage errors"
run tune --help
if [ "$rc" -eq 0 ] && grep -q '^usage: ctrecon tune' "$OUT" && grep -q -- '--force' "$OUT" &&
   grep -q -- '--clear FAMILY|all' "$OUT"; then ok "tune --help"; else bad "tune --help"; fi
run --help
has "$OUT" "tune" "the global help lists tune"
exits 2 "tune with nothing to do" tune
has "$ERR" "nothing to do" "  ... says so"
exits 2 "an unknown family" tune fbq
has "$ERR" "unknown family 'fbq'" "  ... names it"
exits 2 "--clear of an unknown family" tune --clear nonsense
has "$ERR" "expected all, conebeam-bp, pet-projector or fbp-kernel" "  ... lists the families"
exits 2 "tune fdk without --geometry" tune fdk --device cpu "$C"
has "$ERR" "missing --geometry" "  ... names the option"

echo "# the cache"
step "--list of no cache" tune --list "$C"
has "$OUT" "no entries" "  ... says there are none"
mkdir -p cache
cat > cache/kernels.json <<'JSON'
{"version": 1, "entries": [
 {"family": "conebeam-bp", "gpu": "NVIDIA H200", "cc": 90, "driver": 13000,
  "class": "exact-pair views=64 vol=512x512 det=1536x1024", "params": "bp_slices=8,bp_block=8x8",
  "ms": 1.25, "default_ms": 1.25},
 {"family": "pet-projector", "gpu": "NVIDIA H200", "cc": 90, "driver": 13000,
  "class": "lattice=192x192x48 halo=6x6x3 lc=4 const=1", "params": "pet_z=24,pet_block=48x2,pet_split=0",
  "ms": 2.5, "default_ms": 2.6}]}
JSON
echo '{"version": 1, "entries": []}' > cache/fbp-kernels.json
step "--list" tune --list "$C"
has "$OUT" "2 entries" "  ... counts the entries"
has "$OUT" "conebeam-bp | NVIDIA H200 (cc 9.0, driver 13000)" "  ... the family and the GPU key"
has "$OUT" "bp_slices=8,bp_block=8x8" "  ... the parameters"
has "$OUT" "fbp-kernels.json" "  ... and the FBP kernel choice's file"
step "--clear pet-projector --list" tune --clear pet-projector --list "$C"
has "$OUT" "removed 1 cached result (pet-projector)" "  ... one removed"
has "$OUT" "1 entry" "  ... one left"
echo '{ not json' > cache/kernels.json
step "--list of a corrupt cache" tune --list "$C"
has "$OUT" "is not a JSON object" "  ... says so"
step "--clear all" tune --clear all "$C"
if [ ! -e cache/kernels.json ] && [ ! -e cache/fbp-kernels.json ]; then ok "  ... both files gone"
else bad "  ... files left: $(ls cache)"; fi

echo "# on the CPU: nothing to tune"
step "geometry" geometry --out g.json --views 60 --nu 64 --nv 64 --volume 48
exits 4 "tune fdk --device cpu" tune fdk --geometry g.json --device cpu "$C"
has "$ERR" "no launch parameters" "  ... says why"
exits 4 "tune pet --device cpu" tune pet --lattice 32x32x8 --views 4x1 --device cpu "$C"

echo "# on a GPU"
run tune fdk --geometry g.json --interp exact "$C" # the default device: a GPU if there is one
if [ "$rc" -ne 4 ]; then
  if [ "$rc" -eq 0 ]; then ok "tune fdk --interp exact"; else bad "tune fdk --interp exact: exit $rc"; fi
  has "$OUT" "<- chosen" "  ... marks the choice"
  has "$OUT" "(default)" "  ... and the defaults"
  if [ -s cache/kernels.json ] && grep -q conebeam-bp cache/kernels.json; then ok "  ... cache written"
  else bad "  ... no cache"; fi
  step "again" tune fdk --geometry g.json --interp exact "$C"
  has "$OUT" "cached:" "  ... from the cache"
  step "--force" tune fdk --geometry g.json --interp exact --force "$C"
  has "$OUT" "<- chosen" "  ... timed again"
  step "tune pet" tune pet --lattice 64x64x16 --views 6x1 "$C"
  has "$OUT" "pet-projector" "  ... the PET family"
  step "tune=off" tune fdk --geometry g.json --tune tune=off "$C"
  has "$OUT" "not tuned: ctr_tuning.tune is off" "  ... says so"
  clean "tune"
else
  echo "# no GPU: the GPU part is skipped"
fi
finish
