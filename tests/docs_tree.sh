#!/usr/bin/env bash
# docs/architecture.md against the tree, and the file names that the docs and
# the code's comments cite against the files that exist:
#  1. the public headers the layout lists (include/ctrecon/{a,b,...}.h) are
#     exactly include/ctrecon/*.h;
#  2. every folder of src/ (and its cpu/ and cuda/) appears in the layout;
#  3. every file name with a source or doc ending (.c .h .cu .cuh .md .py .sh)
#     that docs/*.md, README.md or a comment in src/, include/, cli/ or
#     python/pyctrecon cites names a file of the repository, system and
#     third-party headers (below) apart.
# Each mismatch prints the file, line and name; any fails the test.
#
# Usage: bash docs_tree.sh SOURCE_DIR
set -u
export LC_ALL=C
src=$(cd "${1:?usage: bash $0 SOURCE_DIR}" && pwd) || exit 1
cd "$src" || exit 1
arch=docs/architecture.md
fail=0
failure() { fail=$((fail + 1)); echo "FAIL: $*"; }

# ---- 1. Public headers -------------------------------------------------------
listed=$(sed 's|include/ctrecon/\*\.h||' "$arch" | tr '\n' ' ' | sed -n 's/.*include\/ctrecon\/{\([^}]*\)}\.h.*/\1/p' | tr -d ' ' | tr ',' '\n' | sort)
[ -n "$listed" ] || failure "$arch: no 'include/ctrecon/{...}.h' list of the public headers"
actual=$(for h in include/ctrecon/*.h; do basename "$h" .h; done | sort)
for h in $(comm -13 <(echo "$listed") <(echo "$actual")); do
  failure "$arch: include/ctrecon/$h.h exists but the layout's header list lacks it"
done
for h in $(comm -23 <(echo "$listed") <(echo "$actual")); do
  failure "$arch: the layout lists include/ctrecon/$h.h, which does not exist"
done

# ---- 2. Folders of src/ --------------------------------------------------------
for d in src/*/; do
  d=${d%/}
  grep -q "^$d/" "$arch" || failure "$arch: folder $d/ is not in the layout"
  for b in cpu cuda; do
    [ -d "$d/$b" ] || continue
    grep -qE "^  $b/|$d/$b/" "$arch" || failure "$arch: folder $d/$b/ is not in the layout"
  done
done

# ---- 3. Cited file names -------------------------------------------------------
# Headers of the system, the compilers and the libraries we use, and
# placeholders that stand for any name.
external=' assert.h cJSON.h complex.h ctype.h cuda.h cuda_fp16.h cuda_runtime.h cufft.h dirent.h dlfcn.h
  errno.h fcntl.h fenv.h fftw3.h float.h hdf5.h H5FDdevelop.h immintrin.h inttypes.h limits.h
  math.h mpi.h omp.h png.h pthread.h Python.h sched.h signal.h stdarg.h stdatomic.h stdbool.h
  stddef.h stdint.h stdio.h stdlib.h string.h tiffio.h time.h unistd.h zlib.h zmq.h
  device_segmented_sort.cuh app.c '
names=$(find . \( -path ./build -o -path './build-*' -o -path ./.git -o -path ./.base -o -path ./.deps \) -prune \
  -o -type f -print | sed 's|.*/||' | sort -u)
cites() { # FILE...: "file:line:name" for each cited name
  grep -noE '[A-Za-z0-9_][A-Za-z0-9_-]*\.(c|h|cu|cuh|md|py|sh)\b' "$@" 2>/dev/null
}
{
  cites docs/*.md README.md
  # code: comments and strings, not #include lines (the compiler checks those)
  find src include cli python/pyctrecon -type f \( -name '*.c' -o -name '*.h' -o -name '*.cu' \
    -o -name '*.cuh' -o -name '*.py' \) -print0 | xargs -0 grep -nE '\.(c|h|cu|cuh|md|py|sh)\b' |
    grep -vE '^[^:]+:[0-9]+:[[:space:]]*#[[:space:]]*include' |
    while IFS=: read -r f l rest; do
      grep -oE '[A-Za-z0-9_][A-Za-z0-9_-]*\.(c|h|cu|cuh|md|py|sh)\b' <<<"$rest" | sed "s|^|$f:$l:|"
    done
} | while IFS=: read -r f l name; do
  case " $external " in *" $name "*) continue ;; esac
  case $name in *NAME*) continue ;; esac # a placeholder: io_NAME.c
  # member access in code (bv.md, ax.h, o.c) is not a file name: stems of
  # fewer than three characters do not count
  stem=${name%.*}
  [ ${#stem} -ge 3 ] || continue
  grep -qxF "$name" <<<"$names" || echo "FAIL: $f:$l cites '$name', which is not a file of the repository"
done >"${TMPDIR:-/tmp}/docs_tree.$$"
if [ -s "${TMPDIR:-/tmp}/docs_tree.$$" ]; then
  cat "${TMPDIR:-/tmp}/docs_tree.$$"
  fail=$((fail + $(wc -l <"${TMPDIR:-/tmp}/docs_tree.$$")))
fi
rm -f "${TMPDIR:-/tmp}/docs_tree.$$"

if [ "$fail" -ne 0 ]; then
  echo "docs_tree: $fail problem(s)"
  exit 1
fi
echo "docs_tree: the layout lists the $(echo "$actual" | wc -l) public headers and every folder; every cited file exists"
