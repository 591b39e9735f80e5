#!/usr/bin/env bash
# `ctrecon geometry` at the documented maximum of 16,777,216 views: writing
# the file and its summary (angular coverage, field-of-view coverage) must
# finish. The coverage summary once checked every sampled voxel against every
# view (over 10 minutes here); the hang guard is this test's ctest TIMEOUT
# (tests/CMakeLists.txt), no timing is asserted.
# Usage: bash cli_geometry_max_views.sh path/to/ctrecon
set -u
. "$(dirname "${BASH_SOURCE[0]}")/lib_cli.sh" "$@"

run geometry --out max.json --views 16777216
if [ "$rc" -eq 0 ] && grep -q "views          16777216 over 360.0 deg (ccw" "$OUT" &&
   grep -q "coverage       100.0 % of the volume's field of view" "$OUT" && [ ! -s "$ERR" ]; then
  ok "16777216 views: written with its summary"
else
  bad "16777216 views: exit $rc"
fi
grep -q '"count":[[:space:]]*16777216' max.json && ok "the file holds 16777216 views" ||
  bad "the file holds 16777216 views: $(head -c 300 max.json)"
finish
