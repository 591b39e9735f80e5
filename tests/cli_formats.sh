#!/usr/bin/env bash
# One resume semantics for every streamed command, answered by the format
# table: `ctrecon fdk` and `ctrecon fbp` give the same answer to the same
# format question. Each case runs both commands and compares their exit
# status and what they say: HDF5 and multi-page TIFF are written without
# --resume; --resume into them is refused naming the format; --resume
# without a journal, and a run over an interrupted run's journal without
# --resume, are refused alike. (A distributed run's formats: cli_mpi.sh
# asks both commands the same question.)
# Usage: bash cli_formats.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

NU=24 NV=12 NVIEWS=24 N=12
step "geometry" geometry --out g.json --nu $NU --nv $NV --du 9 --dv 12 --views $NVIEWS \
  --volume $N --voxel 8 --quiet
step "phantom" phantom --geometry g.json --out p.raw --device cpu --quiet
step "parallel demo" demo --parallel --size 24 --views 30 --slices 3 --out-dir pd --device cpu \
  --quiet
FDK=(fdk --geometry g.json --projections p.raw --device cpu --quiet)
FBP=(fbp --sinograms pd/sinograms.tif --pixel-size 2 --device cpu --quiet)

# both OUT EXTRA...: runs fdk and fbp with --out OUT (fdk's output named f-OUT, fbp's b-OUT)
# and EXTRA; FRC/BRC their exit statuses, FERR/BERR their stderr with the name and the
# command's own words made alike (fdk/fbp; fbp's CLI puts its input's name in front of a
# library error that does not name it).
both() {
  local out=$1; shift
  run "${FDK[@]}" --out "f-$out" "$@"
  FRC=$rc FERR=$(sed -e "s/f-//g; s/ctrecon fdk/ctrecon CMD/g; s/ctr_fdk_stream/ctr_X_stream/g" "$ERR")
  run "${FBP[@]}" --out "b-$out" "$@"
  BRC=$rc BERR=$(sed -e "s/b-//g; s/ctrecon fbp/ctrecon CMD/g; s/ctr_fbp_stream/ctr_X_stream/g;
                           s#error: 'pd/sinograms.tif': #error: #" "$ERR")
}
# alike DESC CODE PATTERN: both exited CODE, said the same and matched PATTERN.
alike() {
  if [ "$FRC" -eq "$2" ] && [ "$BRC" -eq "$2" ] && [ "$FERR" = "$BERR" ] &&
     printf '%s\n' "$FERR" | grep -q -e "$3"; then
    ok "$1 (both exit $2)"
  else
    bad "$1: fdk exit $FRC '$FERR'; fbp exit $BRC '$BERR'"
  fi
}

if "$CTR" info | grep -Eq '^ +hdf5 +yes'; then
  both 'v.h5:/volume'
  alike "HDF5 is written without --resume" 0 '^$'
  [ -s f-v.h5 ] && [ -s b-v.h5 ] && ok "both wrote their HDF5 file" || bad "HDF5 files missing"
  both 'w.h5:/volume' --resume
  alike "--resume into HDF5 is refused" 4 "'w.h5:/volume' (hdf5) cannot be resumed"
  [ ! -e f-w.h5 ] && [ ! -e b-w.h5 ] && ok "nothing written" || bad "a refused run wrote"
else
  echo "# HDF5: SKIPPED (not built)"
fi

if "$CTR" info | grep -Eq '^ +tiff +yes'; then
  both v.tif
  alike "a multi-page TIFF is written without --resume" 0 '^$'
  [ -s f-v.tif ] && [ -s b-v.tif ] && ok "both wrote their TIFF" || bad "TIFF files missing"
  both w.tif --resume
  alike "--resume into a multi-page TIFF is refused" 4 "'w.tif' (tiff) cannot be resumed"
else
  echo "# TIFF: SKIPPED (not built)"
fi

both none.raw --resume
alike "--resume without a journal is refused" 1 "none.raw.partial.journal"
clean "refused resumes"

# An interrupted run's journal: a run without --resume must not overwrite it.
printf 'not a journal\n' >f-j.raw.partial.journal
printf 'not a journal\n' >b-j.raw.partial.journal
both j.raw
alike "a journal there without --resume is refused" 3 "holds an interrupted run of this output"
[ ! -e f-j.raw ] && [ ! -e b-j.raw ] && ok "nothing written" || bad "a refused run wrote"
rm -f ./*.partial.journal

finish
