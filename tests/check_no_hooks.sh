#!/usr/bin/env bash
# The fault-injection hooks compile only into test builds, and the library
# reads the environment in one file only (docs/tuning.md).
#   --user FILE...: what users get (the library archive, the CLI, the
#     RabbitCT module). No file may hold a hook's variable name or the test
#     hook ctr__io_fault_reset; in a library archive only tuning.c's object
#     may call getenv (XDG_CACHE_HOME and HOME, for the default cache).
#   --test FILE...: the test library and CLI. Each must hold both variable
#     names: the search above would otherwise pass by finding nothing
#     anywhere.
# Usage: bash check_no_hooks.sh --user FILE... --test FILE...
set -u
fails=0 checks=0
ok() { checks=$((checks + 1)); echo "ok: $*"; }
bad() { checks=$((checks + 1)) fails=$((fails + 1)); echo "FAIL: $*"; }

HOOKS=(CTRECON_INJECT_ENOSPC_AFTER CTRECON_INJECT_STOP_AFTER_SLABS CTRECON_INJECT_KILL_AFTER_SLABS
       CTRECON_INJECT_HANG CTRECON_INJECT_RANK CTRECON_INJECT_DELAY_MS)
side=
for f in "$@"; do
  case $f in --user | --test) side=$f; continue ;; esac
  if [ ! -s "$f" ]; then
    bad "$f: missing or empty"
    continue
  fi
  if [ "$side" = --user ]; then
    for h in "${HOOKS[@]}" ctr__io_fault_reset; do
      if grep -aq "$h" "$f"; then bad "$f holds '$h'"; else ok "$f: no '$h'"; fi
    done
    case $f in
      *.a)
        # members whose code calls getenv (nm -A: "archive:member: U getenv")
        callers=$(nm -A "$f" 2> /dev/null | awk '$NF ~ /^(secure_)?getenv$/ && $(NF-1) == "U" {
                    n = split($1, p, ":"); print p[n - 1] }' | sort -u | tr '\n' ' ')
        if [ "$callers" = "tuning.c.o " ]; then ok "$f: getenv only in tuning.c.o"
        else bad "$f: getenv called by: ${callers:-nothing (expected tuning.c.o)}"; fi ;;
    esac
  elif [ "$side" = --test ]; then
    for h in "${HOOKS[@]}"; do
      if grep -aq "$h" "$f"; then ok "$f holds '$h'"; else bad "$f lacks '$h'"; fi
    done
  else
    bad "$f: give --user or --test first"
  fi
done
[ "$checks" -gt 0 ] || bad "no file checked"
echo "$checks checks, $fails failed"
[ "$fails" -eq 0 ]
