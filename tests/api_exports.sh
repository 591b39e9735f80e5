#!/usr/bin/env bash
# The shared library exports the public API and nothing else: every dynamic
# symbol it defines is a ctr_ function declared in the public headers (no
# ctr__ internal, no symbol of a dependency or of the C++ runtime of the CUDA
# code), every declared function carries CTR_API and is exported.
# Usage: bash api_exports.sh path/to/libctrecon.so path/to/include
set -u
lib=$1 inc=$2
fail=0
exported=$(nm -D --defined-only "$lib" | awk '{print $NF}' | LC_ALL=C sort -u)
# Function declarations start at column 0: "[CTR_API ]type [*]ctr_name(".
decl='^(CTR_API )?(const )?[a-z_0-9]+ \**ctr_[a-z0-9_]+\('
names() { grep -Eo "$1" | grep -o 'ctr_[a-z0-9_]*($' | tr -d '(' | LC_ALL=C sort -u; }
declared=$(cat "$inc"/ctrecon.h "$inc"/ctrecon/*.h | names "$decl")
unmarked=$(cat "$inc"/ctrecon.h "$inc"/ctrecon/*.h | grep -E "$decl" | grep -v '^CTR_API ' |
           names "$decl")
n_exp=$(printf '%s\n' "$exported" | grep -c .)
n_dec=$(printf '%s\n' "$declared" | grep -c .)
echo "$n_exp symbols exported, $n_dec functions declared"
if [ "$n_exp" -lt 100 ] || [ "$n_dec" -lt 100 ]; then
  echo "FAIL: too few ($n_exp exported, $n_dec declared): the check would prove nothing"
  fail=1
fi
if [ -n "$unmarked" ]; then
  echo "FAIL: public functions declared without CTR_API:"; printf '  %s\n' $unmarked; fail=1
fi
other=$(printf '%s\n' "$exported" | grep -v '^ctr_' || true)
if [ -n "$other" ]; then
  echo "FAIL: exported symbols not named ctr_:"; printf '  %s\n' $other; fail=1
fi
internal=$(printf '%s\n' "$exported" | grep '^ctr__' || true)
if [ -n "$internal" ]; then
  echo "FAIL: internal ctr__ symbols exported:"; printf '  %s\n' $internal; fail=1
fi
extra=$(LC_ALL=C comm -23 <(printf '%s\n' "$exported") <(printf '%s\n' "$declared"))
if [ -n "$extra" ]; then
  echo "FAIL: exported but not declared in the public headers:"; printf '  %s\n' $extra; fail=1
fi
missing=$(LC_ALL=C comm -13 <(printf '%s\n' "$exported") <(printf '%s\n' "$declared"))
if [ -n "$missing" ]; then
  echo "FAIL: declared in the public headers but not exported:"; printf '  %s\n' $missing; fail=1
fi
[ "$fail" -eq 0 ] && echo "ok - the exports are exactly the public functions"
exit "$fail"
