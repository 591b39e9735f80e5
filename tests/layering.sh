#!/usr/bin/env bash
# The layering rule of docs/architecture.md ("Layers"), checked in five ways:
#  1. every #include "..." of src/, cli/, modules/ and include/ against the
#     folder rule (a folder includes its own headers and folders of lower
#     layers only; a modality's cpu/ and cuda/ include their parent and lower
#     layers; the parent never includes its own cpu/ or cuda/; cli/ and
#     modules/ include the public API (include/) and their own headers);
#  2. the object files of the library, the CLI and the RabbitCT module with
#     nm: an edge A -> B when A uses a symbol that B defines; a cycle between
#     object files fails, and the CLI and the module must not use the
#     library's internal (ctr__) symbols;
#  3. the seam rule: CTR_HAVE_CUDA (which backends the build has) is said
#     only in cuda/ folders, the backend registries and core's device probe
#     (cuda_allowed below); everywhere else a modality reaches its backends
#     through its ops table (conebeam/engine.h, iterative/backend.h,
#     parbeam/backend.h, pet/backend.h).
#  4. the memory policy: host memory measured in src/core/memory.c only, the
#     GPU buffer cache released through ctr_context_release_memory only, and
#     cudaMalloc only in the cache (src/gpu/gpu_buffers.cu);
#  5. the projection source seam: ZeroMQ only in src/io/io_source_zmq.c,
#     HDF5's SWMR calls only in src/io/io_source_swmr.c.
# Known exceptions are listed one edge a line in ALLOWLIST: each one met is
# printed as a note, and an entry that no longer occurs fails the test (so
# the list cannot rot). Needs bash, awk, coreutils (tsort, realpath) and nm.
#
# Usage: bash layering.sh SOURCE_DIR ALLOWLIST [--objects NAME LIST]...
#                         [--public-objects NAME LIST]...
# LIST: a file with one object file path a line (tests/CMakeLists.txt writes
# them from $<TARGET_OBJECTS:...>). --public-objects sets must not use ctr__
# symbols.
set -u
export LC_ALL=C

src=${1:?usage: bash $0 SOURCE_DIR ALLOWLIST [--objects NAME LIST]...}
allow=${2:?usage: bash $0 SOURCE_DIR ALLOWLIST [--objects NAME LIST]...}
shift 2
src=$(cd "$src" && pwd) || exit 1
[ -r "$allow" ] || { echo "FAIL: allowlist '$allow' not readable"; exit 1; }

# The library's folders and their layers (higher includes lower, never the
# other way; folders on one layer never include each other). A folder of src/
# missing here fails the test: place it in docs/architecture.md and here.
declare -A layer=(
  [core]=1
  [io]=2 [gpu]=2
  [geometry]=3 [distributed]=3 [plot]=3
  [filter]=4 [phantom]=4 [stream]=4
  [conebeam]=5 [parbeam]=5 [pet]=5 [rabbitct]=5
  [iterative]=6 # its fast pair's adjoint is the cone-beam backprojector (conebeam/backprojector.h)
)
backend_dirs=" cpu cuda "

fail=0
failure() { fail=$((fail + 1)); echo "FAIL: $*"; }

tmp=$(mktemp -d) || exit 1
trap 'rm -rf "$tmp"' EXIT

# ---- Allowlist -------------------------------------------------------------
# "include FILE -> HEADER" or "link OBJECT -> OBJECT" (repository paths);
# '#' starts a comment.
awk -v f="$allow" '
  { sub(/#.*/, "") }
  NF == 0 { next }
  NF == 4 && ($1 == "include" || $1 == "link") && $3 == "->" { print $1, $2, $4; next }
  { printf "BAD %s:%d: expected \"include FILE -> HEADER\" or \"link OBJECT -> OBJECT\"\n", f, NR }
' "$allow" >"$tmp/allow"
if grep -q '^BAD ' "$tmp/allow"; then
  sed -n 's/^BAD /FAIL: /p' "$tmp/allow"
  exit 1
fi
: >"$tmp/allow_used"
allowed() { grep -qxF "$1 $2 $3" "$tmp/allow" && echo "$1 $2 $3" >>"$tmp/allow_used"; }

# ---- 1. Includes -----------------------------------------------------------

# unit PATH: the folder a repository path belongs to for the rule:
# include, cli, modules/NAME, src/NAME or src/NAME/{cpu,cuda}; "?" otherwise.
unit() {
  local p=$1 rest name sub
  case $p in
    include/*) echo include ;;
    cli/*) echo cli ;;
    modules/*/*) rest=${p#modules/}; echo "modules/${rest%%/*}" ;;
    src/*/*)
      rest=${p#src/}; name=${rest%%/*}; rest=${rest#*/}
      case $rest in
        */*) sub=${rest%%/*}; echo "src/$name/$sub" ;;
        *) echo "src/$name" ;;
      esac ;;
    *) echo "?" ;;
  esac
}

# rule FROM_UNIT TO_UNIT TARGET_PATH: prints why the edge is forbidden, or
# nothing when it is allowed.
rule() {
  local a=$1 b=$2 target=$3
  [ "$a" = "$b" ] && return
  case $a in
    include)
      echo "include/ (the public API) includes only include/" ;;
    cli)
      case $b in
        include) ;;
        modules/*)
          # A module's interface header (modules/NAME/NAME.h: the plugin ABI
          # a runner loads, e.g. RabbitCT's) is public; its code is not.
          local m=${b#modules/}
          [ "$target" = "modules/$m/$m.h" ] ||
            echo "cli/ includes only include/, its own headers and a module's interface header modules/NAME/NAME.h" ;;
        *) echo "cli/ includes only include/ (the public API), its own headers and module interface headers" ;;
      esac ;;
    modules/*)
      [ "$b" = include ] || echo "modules/ include only include/ (the public API) and their own headers" ;;
    src/*)
      [ "$b" = include ] && return
      case $b in
        src/*) ;;
        *) echo "the library (src/) never includes $b/"; return ;;
      esac
      local fa fb sa sb
      fa=${a#src/}; sa=; case $fa in */*) sa=${fa#*/}; fa=${fa%%/*} ;; esac
      fb=${b#src/}; sb=; case $fb in */*) sb=${fb#*/}; fb=${fb%%/*} ;; esac
      if [ -z "${layer[$fb]:-}" ]; then
        echo "src/$fb/ is not in the layer table (docs/architecture.md, tests/layering.sh)"; return
      fi
      if [ -n "$sb" ] && [[ $backend_dirs != *" $sb "* ]]; then
        echo "src/$fb/$sb/: subfolders of a library folder are cpu/ or cuda/ only"; return
      fi
      if [ "$fa" = "$fb" ]; then
        if [ -z "$sa" ]; then
          echo "src/$fa/ never includes its own $sb/ (it reaches its backends through declarations in its own headers)"
        elif [ -n "$sb" ]; then
          echo "src/$fa/$sa/ and src/$fa/$sb/ never include each other"
        fi
        return
      fi
      if [ -n "$sb" ]; then
        echo "src/$fb/$sb/ is the backend of another folder: only src/$fb/ and its cpu/, cuda/ include it"; return
      fi
      local la=${layer[$fa]} lb=${layer[$fb]}
      if [ "$lb" -eq "$la" ]; then
        echo "src/$fa/ and src/$fb/ are on one layer ($la) and never include each other"
      elif [ "$lb" -gt "$la" ]; then
        echo "src/$fa/ (layer $la) is below src/$fb/ (layer $lb): a folder includes only folders below it"
      fi ;;
    *) echo "file outside src/, cli/, modules/, include/" ;;
  esac
}

# Every #include "..." as FILE<TAB>LINE<TAB>NAME.
(cd "$src" && find src cli modules include -type f \
   \( -name '*.c' -o -name '*.h' -o -name '*.cu' -o -name '*.cuh' \) | sort) >"$tmp/files"
(cd "$src" && xargs -a "$tmp/files" awk '
  match($0, /^[ \t]*#[ \t]*include[ \t]*"[^"]+"/) {
    s = substr($0, RSTART, RLENGTH); sub(/^[^"]*"/, "", s); sub(/"$/, "", s)
    printf "%s\t%d\t%s\n", FILENAME, FNR, s
  }') >"$tmp/includes"
nfiles=$(wc -l <"$tmp/files")
nincludes=$(wc -l <"$tmp/includes")
[ "$nfiles" -gt 0 ] && [ "$nincludes" -gt 0 ] ||
  failure "found $nfiles source files and $nincludes includes under $src: nothing to check"

declare -A unit_of
while IFS=$'\t' read -r file line name; do
  # Resolved as the compiler does: the including file's folder first, then
  # the include paths (include/, and src/ for the library and the tests).
  dir=$(dirname "$file") target=
  for base in "$dir" include src; do
    if [ -f "$src/$base/$name" ]; then
      target=$(realpath -m --relative-to="$src" "$src/$base/$name")
      break
    fi
  done
  if [ -z "$target" ]; then
    failure "$file:$line: #include \"$name\" is no file of the repository (quoted includes are the project's own; system headers take <>)"
    continue
  fi
  a=${unit_of[$file]:-} || true
  [ -n "$a" ] || { a=$(unit "$file"); unit_of[$file]=$a; }
  b=${unit_of[$target]:-} || true
  [ -n "$b" ] || { b=$(unit "$target"); unit_of[$target]=$b; }
  why=$(rule "$a" "$b" "$target")
  [ -z "$why" ] && continue
  if allowed include "$file" "$target"; then
    echo "note: $file:$line: #include \"$name\" allowlisted ($why)"
  else
    failure "$file:$line: #include \"$name\" ($target): $why"
  fi
done <"$tmp/includes"
echo "includes: $nincludes in $nfiles files checked"

# ---- 2. Object files -------------------------------------------------------

# The repository path of an object: .../CMakeFiles/TARGET.dir/src/x.c.o -> src/x.c
objname() { local o=${1#*.dir/}; echo "${o%.o}"; }

# check_objects NAME LIST PUBLIC
check_objects() {
  local name=$1 list=$2 public=$3 n=0 missing=0 o
  [ -r "$list" ] || { failure "$name: object list '$list' not readable"; return; }
  : >"$tmp/syms"
  while IFS= read -r o; do
    [ -n "$o" ] || continue
    if [ ! -f "$o" ]; then
      [ "$missing" -eq 0 ] && failure "$name: object file '$o' is missing (build first)"
      missing=$((missing + 1))
      continue
    fi
    n=$((n + 1))
    # nm -P: "NAME TYPE [VALUE SIZE]". Strong global definitions (T D B R,
    # and G S small data) and undefined uses; weak symbols (W V: C++ inline
    # functions, templates) are defined in many objects and make no edge.
    nm -P "$o" 2>/dev/null | awk -v obj="$(objname "$o")" '
      $2 ~ /^[TDBRGS]$/ { print "D", obj, $1 }
      $2 == "U" { print "U", obj, $1 }' >>"$tmp/syms"
  done <"$list"
  [ "$missing" -gt 1 ] && failure "$name: $missing object files missing in all"
  if [ "$n" -eq 0 ]; then
    failure "$name: no object files in '$list'"
    return
  fi
  if [ "$public" = 1 ]; then
    awk '$1 == "U" && $3 ~ /^ctr__/ { print $2, $3 }' "$tmp/syms" | sort -u >"$tmp/internal"
    while read -r obj sym; do
      failure "$name: $obj uses the library's internal symbol $sym: $name uses the public API only"
    done <"$tmp/internal"
  fi
  # Edges "A B SYMBOL" (A uses SYMBOL, defined in B), one symbol per edge.
  awk '$1 == "D" { def[$3] = $2; next }
       $1 == "U" { use[++n] = $2 " " $3 }
       END {
         for (i = 1; i <= n; i++) {
           split(use[i], u, " ")
           if ((u[2] in def) && def[u[2]] != u[1] && !((u[1] " " def[u[2]]) in seen)) {
             seen[u[1] " " def[u[2]]] = 1
             print u[1], def[u[2]], u[2]
           }
         }
       }' "$tmp/syms" | sort >"$tmp/edges.all"
  : >"$tmp/edges"
  local a b sym
  while read -r a b sym; do
    if allowed link "$a" "$b"; then
      echo "note: $name: $a -> $b (uses $sym) allowlisted"
    else
      echo "$a $b $sym" >>"$tmp/edges"
    fi
  done <"$tmp/edges.all"
  # tsort reports each loop it breaks on stderr, its members in order.
  awk '{ print $1, $2 }' "$tmp/edges" | tsort >/dev/null 2>"$tmp/tsort"
  awk '/input contains a loop:/ { if (c) print c; c = ""; next }
       { sub(/^tsort: /, ""); c = c (c ? " " : "") $0 }
       END { if (c) print c }' "$tmp/tsort" >"$tmp/loops"
  local cyc=0 line
  while read -r line; do
    [ -n "$line" ] || continue
    cyc=$((cyc + 1))
    local -a m=($line)
    local k desc=${m[0]} x y s
    for ((k = 0; k < ${#m[@]}; k++)); do
      x=${m[k]} y=${m[(k + 1) % ${#m[@]}]}
      s=$(awk -v x="$x" -v y="$y" '$1 == x && $2 == y { print $3; exit }' "$tmp/edges")
      desc+=" -[${s:-?}]-> $y"
    done
    failure "$name: cycle between object files (A -[a symbol A uses]-> B, which defines it): $desc"
  done <"$tmp/loops"
  echo "$name: $n object files, $(wc -l <"$tmp/edges.all") edges, $cyc cycle(s)"
}

while [ $# -gt 0 ]; do
  case $1 in
    --objects) check_objects "${2:?}" "${3:?}" 0; shift 3 ;;
    --public-objects) check_objects "${2:?}" "${3:?}" 1; shift 3 ;;
    *) echo "FAIL: unknown argument '$1'"; exit 1 ;;
  esac
done

# ---- 3. The seam rule -------------------------------------------------------

# The files outside cuda/ folders that may say CTR_HAVE_CUDA: core's device
# probe and each modality's backend registry. A file named here must exist
# (a rename updates this list).
cuda_allowed=(
  src/core/context.c
  src/conebeam/engines.c
  src/iterative/backends.c
  src/parbeam/backends.c
  src/pet/backends.c
)
for f in "${cuda_allowed[@]}"; do
  [ -f "$src/$f" ] || failure "$f is allowed to say CTR_HAVE_CUDA (tests/layering.sh) but is no file"
done
ncuda=0
while IFS=: read -r file line _; do
  ncuda=$((ncuda + 1))
  case $file in src/*/cuda/*) continue ;; esac
  ok=0
  for f in "${cuda_allowed[@]}"; do [ "$file" = "$f" ] && ok=1; done
  [ "$ok" = 1 ] && continue
  failure "$file:$line: says CTR_HAVE_CUDA: only cuda/ folders, the backend registries and src/core/context.c (the device probe) do; dispatch through the modality's backend table"
done < <(cd "$src" && xargs -a "$tmp/files" grep -nw CTR_HAVE_CUDA /dev/null)
echo "seam rule: $ncuda mention(s) of CTR_HAVE_CUDA checked"

# ---- 4. Memory policy (docs/out-of-core.md, "Budgets") ----------------------
# One budget rule: host memory is measured in src/core/memory.c alone. One GPU
# buffer cache: the context's release (ctr__gpu_cache_release) is called only
# by ctr_context_release_memory (src/core/context.c), and device buffers come
# from the cache (src/gpu/gpu_buffers.h, GPU_GET / GPU_PUT), the only caller
# of cudaMalloc. cuFFT plans and texture arrays, which CUDA allocates itself,
# are made in the lambda of ctr__gpu_retry (gpu_buffers.h: the kept buffers
# go back when the GPU is full): the call is that lambda's `return`.
while IFS=: read -r file line _; do
  failure "$file:$line: calls cudaMalloc: allocate through the context's GPU buffer cache (src/gpu/gpu_buffers.h, GPU_GET/GPU_PUT)"
done < <(cd "$src" && grep -rnE 'cudaMalloc(Async|Managed|Pitch)?\(' src | grep -v '^src/gpu/gpu_buffers.cu:')
nretry=0
while IFS=: read -r file line text; do
  nretry=$((nretry + 1))
  [[ $text =~ ^[[:space:]]*return[[:space:]] ]] ||
    failure "$file:$line: a cuFFT plan or texture array outside ctr__gpu_retry (src/gpu/gpu_buffers.h): make it in the lambda, as \`return cufftPlanMany(...)\`"
done < <(cd "$src" && grep -rnE '(cudaMalloc3DArray|cudaMallocArray|cufftPlan(1d|2d|3d|Many)|cufftMakePlan[A-Za-z0-9]*)\(' src)
echo "memory policy: $nretry cuFFT plan(s) and texture array(s) checked"
while IFS=: read -r file line _; do
  [ "$file" = src/core/context.c ] || [ "$file" = src/gpu/gpu_buffers.cu ] || [ "$file" = src/core/internal.h ] ||
    failure "$file:$line: calls ctr__gpu_cache_release: release through ctr_context_release_memory"
done < <(cd "$src" && grep -rn 'ctr__gpu_cache_release' src cli modules)
while IFS=: read -r file line _; do
  [ "$file" = src/core/memory.c ] ||
    failure "$file:$line: measures host memory: budgets come from ctr_context_get_memory_budgets (src/core/memory.c)"
done < <(cd "$src" && grep -rnE 'MemAvailable|_SC_AVPHYS_PAGES|_SC_PHYS_PAGES' src cli modules)

# ---- 5. The projection source seam (src/io/io_source.h) ---------------------
# A live source's transport lives in its kind's file only: ZeroMQ in
# src/io/io_source_zmq.c, HDF5's SWMR calls in src/io/io_source_swmr.c; the
# live FBP and the replay reach them through the seam's ops table.
while IFS=: read -r file line _; do
  [ "$file" = src/io/io_source_zmq.c ] ||
    failure "$file:$line: uses ZeroMQ: only the socket source kind does (src/io/io_source_zmq.c); go through the source seam (src/io/io_source.h)"
done < <(cd "$src" && grep -rnE '#include <zmq\.h>|(^|[^a-z_])zmq_[a-z_]+\(' src cli modules)
while IFS=: read -r file line _; do
  [ "$file" = src/io/io_source_swmr.c ] ||
    failure "$file:$line: uses HDF5's SWMR: only the growing-file source kind does (src/io/io_source_swmr.c)"
done < <(cd "$src" && grep -rnE 'H5F_ACC_SWMR|H5Fstart_swmr_write|H5Drefresh' src cli modules)
echo "source seam: ZeroMQ and SWMR calls checked"

# ---- Stale allowlist entries -----------------------------------------------
while read -r kind a b; do
  grep -qxF "$kind $a $b" "$tmp/allow_used" ||
    failure "allowlist entry '$kind $a -> $b' no longer occurs: remove it from $allow"
done <"$tmp/allow"

if [ "$fail" -gt 0 ]; then
  echo "layering: $fail failure(s)"
  exit 1
fi
echo "layering: ok"
