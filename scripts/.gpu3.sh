# Call B (and C): before/after rounds, accumulated in /tmp/ba across calls while warm.
export LD_LIBRARY_PATH=/tmp/ctr_runlibs
ROUNDS=${1:-2}
mkdir -p /tmp/ba/runs
# rounds numbered after those already there
n0=$(ls /tmp/ba/runs/fdk_base_*.json 2>/dev/null | wc -l)
for r in $(seq $((n0+1)) $((n0+ROUNDS))); do
  BA_FBP_SLICES=2048 bash scripts/before-after.sh .base/build-gpu build-gpu /tmp/ba_one 1 > /tmp/ba_one.log 2>&1
  for f in /tmp/ba_one/runs/*_1.json; do b=$(basename $f _1.json); cp $f /tmp/ba/runs/${b}_$r.json; done
  rm -rf /tmp/ba_one; echo "round $r done"
done
n=$(ls /tmp/ba/runs/fdk_base_*.json | wc -l)
# the summary over every round so far (before-after.sh's own table code, no new runs)
sed -n '/^python3 - "\$OUT" "\$ROUNDS" <<.PY.$/,/^PY$/p' scripts/before-after.sh | sed '1d;$d' > /tmp/ba_sum.py
python3 /tmp/ba_sum.py /tmp/ba $n | grep -v "pet_view\|spatial_vs" 
cp /tmp/ba/before_after.json $OUT/
cd /tmp/ba && tar czf $OUT/ba_runs.tgz runs
