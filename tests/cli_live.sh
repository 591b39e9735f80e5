#!/usr/bin/env bash
# The live mode from the command line (docs/synchrotron.md, "Live mode"):
# `ctrecon fbp --follow` while `ctrecon hdf5-append` writes a growing SWMR
# file or `ctrecon stream-send` sends on a socket at a fixed rate; the volume
# byte-identical to the offline `ctrecon fbp` of the finished file; a writer
# killed mid-scan and a sender that stops without an end: the previews
# complete, the message says how many projections arrived, no volume; the
# options that would do nothing refused. Loopback (127.0.0.1, ports the
# system chooses) and the scratch folder only.
# Usage: bash cli_live.sh path/to/ctrecon (make_dxchange beside it)
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"
MAKE=$(dirname "$CTR")/tests/make_dxchange
[ -x "$MAKE" ] || MAKE=$(dirname "$CTR")/make_dxchange
if ! "$CTR" info | grep -Eq '^ +hdf5 +yes' || [ ! -x "$MAKE" ]; then
  echo "no HDF5 in this build: skipped"; exit 77
fi
ZMQ=0
"$CTR" info | grep -Eq '^ +zmq +yes' && ZMQ=1

"$MAKE" scan.h5 64 12 90 34.8 180 && ok "DXchange file made" || bad "make_dxchange"
F=(fbp --device cpu --pixel-size 0.01 --axis 34.8)
step "the offline run of the finished file" "${F[@]}" --projections scan.h5 --out offline.nrrd --quiet

# wait_for FILE PATTERN: up to 10 s for PATTERN in FILE.
wait_for() {
  for _ in $(seq 100); do grep -q "$2" "$1" 2>/dev/null && return 0; sleep 0.1; done
  return 1
}

echo "# a growing HDF5 file (SWMR)"
"$CTR" hdf5-append --scan scan.h5 --out grow.h5 --rate 60 --quiet &
WRITER=$!
run "${F[@]}" --follow --projections grow.h5 --out live.nrrd --live-preview lp --preview-every 20
wait "$WRITER"; wrc=$?
[ "$rc" -eq 0 ] && [ "$wrc" -eq 0 ] && ok "fbp --follow while hdf5-append writes at 60/s" ||
  bad "follow a growing file: exit $rc (writer $wrc)"
same live.nrrd offline.nrrd "the followed file's volume is the offline run's, byte for byte"
[ "$(grep -c " of 90 projections, " "$OUT")" -ge 2 ] && ok "progress as projections arrive" ||
  bad "no progress lines"
[ -s lp_row00000.png ] && [ -s lp_row00006.png ] && [ -s lp_row00011.png ] && [ -s lp.h5 ] &&
  ok "previews: first, middle and last rows (PNG) and lp.h5" || bad "previews missing: $(ls)"
clean "a live run"
exits 2 "previews that exist refused without --force" "${F[@]}" --follow --projections grow.h5 \
  --out again.nrrd --live-preview lp --follow-timeout 1
grep -q -- "--force" "$ERR" && ok "... naming --force" || bad "the refusal does not name --force"

echo "# the full volume during the acquisition (--accumulate)"
"$CTR" hdf5-append --scan scan.h5 --out grow2.h5 --rate 60 --quiet &
WRITER=$!
run "${F[@]}" --follow --projections grow2.h5 --out acc.nrrd --accumulate on
wait "$WRITER"
[ "$rc" -eq 0 ] && grep -q "(summed during the acquisition)" "$OUT" &&
  ok "fbp --follow --accumulate on: summed while the file grew" || bad "accumulate: exit $rc"
same acc.nrrd offline.nrrd "... the volume is the offline run's, byte for byte"
rm -f acc.nrrd grow2.h5
exits 2 "--accumulate on with --axis auto" fbp --device cpu --follow --projections scan.h5 \
  --out x.nrrd --accumulate on
grep -q -- "--accumulate on .*give --axis" "$ERR" && ok "... says to give --axis" || bad "accumulate axis"
exits 2 "--accumulate on with --rings" "${F[@]}" --follow --projections scan.h5 --out x.nrrd \
  --accumulate on --rings sorting
exits 2 "--accumulate on a socket without --angles" "${F[@]}" --input tcp://127.0.0.1:0 --bind \
  --out x.nrrd --accumulate on
exits 2 "--accumulate sometimes" "${F[@]}" --follow --projections scan.h5 --out x.nrrd \
  --accumulate sometimes
exits 2 "--accumulate without --follow" "${F[@]}" --projections scan.h5 --out x.nrrd --accumulate on
run "${F[@]}" --follow --projections scan.h5 --out auto.nrrd --accumulate auto --rings sorting \
  --ring-size 5
[ "$rc" -eq 0 ] && ! grep -q "summed during" "$OUT" && ok "--accumulate auto with --rings: after the scan" ||
  bad "accumulate auto: exit $rc"
rm -f auto.nrrd
clean "accumulate"

echo "# the writer killed mid-scan"
"$CTR" hdf5-append --scan scan.h5 --out killed.h5 --rate 30 --quiet &
WRITER=$!
"$CTR" "${F[@]}" --follow --projections killed.h5 --out k.nrrd --live-preview kp \
  --follow-timeout 1.5 --preview-every 5 >"$OUT" 2>"$ERR" &
READER=$!
wait_for "$OUT" "of 90 projections" && kill -9 "$WRITER"
wait "$WRITER" 2>/dev/null
wait "$READER"; rc=$?
[ "$rc" -eq 3 ] && grep -Eq "stopped after [0-9]+ of 90 projections \(no frame within --follow-timeout" "$ERR" &&
  grep -q "'k.nrrd' was not written" "$ERR" && ok "a killed writer: exit 3, how many arrived, no volume" ||
  bad "killed writer: exit $rc"
[ ! -e k.nrrd ] && [ -s kp.h5 ] && [ -s kp_row00006.png ] && ok "... the previews complete" ||
  bad "killed writer: $(ls)"
clean "a scan cut short"

if [ "$ZMQ" = 1 ]; then
  echo "# a ZeroMQ socket"
  "$CTR" "${F[@]}" --follow --input tcp://127.0.0.1:0 --bind --out z.nrrd --live-preview zp \
    >recv.out 2>recv.err &
  READER=$!
  wait_for recv.out "^endpoint: tcp://127.0.0.1:" || bad "no endpoint printed"
  EP=$(sed -n 's/^endpoint: //p' recv.out)
  [ "$EP" != "tcp://127.0.0.1:0" ] && ok "the port the system chose is printed ($EP)" || bad "endpoint $EP"
  step "stream-send at 100 projections/s" stream-send --scan scan.h5 --to "$EP" --rate 100 --quiet
  wait "$READER"; rrc=$?
  [ "$rrc" -eq 0 ] && ok "fbp --follow --input: the scan received" || { bad "receiver: exit $rrc"; cat recv.err; }
  same z.nrrd offline.nrrd "the socket's volume is the offline run's, byte for byte"
  [ -s zp.h5 ] && [ -s zp_row00006.png ] && ok "... with its previews" || bad "socket previews: $(ls)"
  clean "a socket run"

  echo "# a sender that stops without an end"
  "$CTR" stream-send --scan scan.h5 --to tcp://127.0.0.1:0 --bind --rate 200 --stop-after 30 \
    --quiet >send.out 2>send.err &
  SENDER=$!
  wait_for send.out "^endpoint: " || bad "the sender printed no endpoint"
  EP=$(sed -n 's/^endpoint: //p' send.out)
  exits 3 "stopped after 30: no volume" "${F[@]}" --follow --input "$EP" --out s.nrrd \
    --follow-timeout 1
  grep -q "stopped after 30 of 90 projections" "$ERR" && ok "... the message says 30 of 90" ||
    bad "the stop message"
  wait "$SENDER"
  [ ! -e s.nrrd ] && ok "... and nothing written" || bad "s.nrrd written"
  [ -s s.nrrd.spool ] && [ -s s.nrrd.spool.index ] && [ -e s.nrrd.spool.cal ] &&
    grep -q "'s.nrrd.spool' keeps the 30 projections received: .*--resume" "$ERR" &&
    ok "... the spool and its state kept, --resume named" || bad "stopped spool: $(ls)"
  rm -f s.nrrd.spool s.nrrd.spool.index s.nrrd.spool.cal

  # resume_after SIGNAL NAME: a follower stopped by SIGNAL once 40 projections
  # arrived, then the same command with --resume and the whole scan sent again
  resume_after() {
    local sig=$1 name=$2 rrc
    rm -f "$name".* "$name"p*
    "$CTR" stream-send --scan scan.h5 --to tcp://127.0.0.1:0 --bind --rate 200 --stop-after 40 \
      --quiet >send.out 2>send.err &
    SENDER=$!
    wait_for send.out "^endpoint: " || bad "the sender printed no endpoint"
    EP=$(sed -n 's/^endpoint: //p' send.out)
    "$CTR" "${F[@]}" --follow --input "$EP" --out "$name.nrrd" --live-preview "${name}p" \
      --preview-every 5 >recv.out 2>recv.err &
    READER=$!
    wait_for recv.out "40 of 90 projections" && kill -"$sig" "$READER"
    wait "$READER"; rrc=$?
    wait "$SENDER"
    [ "$rrc" -ne 0 ] && [ -s "$name.nrrd.spool.index" ] && [ ! -e "$name.nrrd" ] &&
      grep -q "^projections 40$" "$name.nrrd.spool.index" &&
      ok "SIG$sig to the follower: exit $rrc, the spool's index lists the 40 projections" ||
      bad "SIG$sig: exit $rrc, $(ls "$name".* 2>&1)"
    "$CTR" "${F[@]}" --follow --input tcp://127.0.0.1:0 --bind --out "$name.nrrd" \
      --live-preview "${name}p" --resume >recv.out 2>recv.err &
    READER=$!
    wait_for recv.out "^endpoint: " || bad "no endpoint printed"
    EP=$(sed -n 's/^endpoint: //p' recv.out)
    step "... the whole scan sent again" stream-send --scan scan.h5 --to "$EP" --quiet
    wait "$READER"; rrc=$?
    [ "$rrc" -eq 0 ] && grep -q "resumed the stopped run: 40 projections" recv.out &&
      ok "... --resume: the 40 taken from the spool" || { bad "resume: exit $rrc"; cat recv.err; }
    same "$name.nrrd" offline.nrrd "... the resumed run's volume is the offline run's, byte for byte"
    [ ! -e "$name.nrrd.spool" ] && [ ! -e "$name.nrrd.spool.index" ] &&
      [ ! -e "$name.nrrd.spool.cal" ] && [ -s "${name}p.h5" ] &&
      ok "... the spool and its state removed, the previews there" || bad "after resume: $(ls)"
  }
  resume_after TERM rt
  resume_after KILL rk
  exits 2 "--resume without a stopped run's spool" "${F[@]}" --follow \
    --input tcp://127.0.0.1:0 --bind --out none.nrrd --resume --follow-timeout 1
  grep -q -- "--resume: no stopped run's spool 'none.nrrd.spool'.*--spool" "$ERR" &&
    ok "... naming --resume and --spool" || bad "resume without a spool: $(cat "$ERR")"
  exits 2 "--resume with a growing file" "${F[@]}" --follow --projections grow.h5 \
    --out none.nrrd --resume
  grep -q -- "--resume in the live mode continues a socket's spool" "$ERR" && ok "... said why" ||
    bad "--resume with a file"

  touch s2.nrrd.spool
  exits 2 "the spool of a killed run (OUT.spool) refused" "${F[@]}" --follow \
    --input tcp://127.0.0.1:0 --bind --out s2.nrrd --follow-timeout 1
  grep -q -- "--spool: 's2.nrrd.spool' exists .*--force" "$ERR" && ok "... naming --spool and --force" ||
    bad "stale spool message"
  exits 3 "... replaced with --force (the scan then times out)" "${F[@]}" --follow \
    --input tcp://127.0.0.1:0 --bind --out s2.nrrd --follow-timeout 1 --force
  [ ! -e s2.nrrd.spool ] && ok "... and removed at the end" || bad "the spool is left"
else
  exits 4 "stream-send without ZeroMQ: unsupported" stream-send --scan scan.h5 --to tcp://127.0.0.1:5
  grep -q "built without ZeroMQ" "$ERR" && ok "... says built without ZeroMQ" || bad "no ZeroMQ message"
fi

echo "# options"
exits 2 "--live-preview without --follow" "${F[@]}" --projections scan.h5 --out x.nrrd --live-preview p
grep -q -- "--live-preview applies to the live mode" "$ERR" && ok "... named" || bad "--live-preview alone"
exits 2 "--bind without --input" "${F[@]}" --follow --projections scan.h5 --out x.nrrd --bind
exits 2 "--input that is not tcp://" "${F[@]}" --input udp://1.2.3.4:5 --out x.nrrd
exits 2 "--follow with --sinograms" "${F[@]}" --follow --sinograms s.tif --out x.nrrd
exits 2 "--follow with both sources" "${F[@]}" --follow --projections scan.h5 \
  --input tcp://127.0.0.1:5 --out x.nrrd
exits 2 "--preview-rows not numbers" "${F[@]}" --follow --projections scan.h5 --out x.nrrd \
  --preview-rows 1,a
exits 0 "stream-send --help" stream-send --help
grep -q -- "--rate N" "$OUT" && ok "... lists --rate" || bad "stream-send --help"
exits 0 "hdf5-append --help" hdf5-append --help
exits 2 "hdf5-append onto an existing file" hdf5-append --scan scan.h5 --out grow.h5
grep -q -- "--force" "$ERR" && ok "... naming --force" || bad "hdf5-append refusal"
exits 2 "stream-send to a file" stream-send --scan scan.h5 --to x.h5
finish
