#!/usr/bin/env bash
# The Python package (docs/python.md), as a user installs it: a fresh virtual
# environment in BUILD/python-check/venv, a wheel built from the source tree by
# pip (scikit-build-core driving the repository's CMake; CUDA off: the CUDA
# objects take minutes on two cores and CI has no GPU, the CPU code is the C
# build's), the wheel installed with numpy, pytest, h5py, tqdm, scipy and matplotlib from
# PyPI (not torch, too large: test_operators.py's torch tests report themselves
# skipped), `import pyctrecon` from outside the tree, then python/tests against the
# tool of this build (CTRECON_CLI: identical arrays).
#
# With --asan (ctest python_asan of the sanitizer build, make test-sanitize):
# the package over this build's AddressSanitizer library instead of a wheel's.
# The cffi extension is compiled here, instrumented too, against
# BUILD/libctrecon.so.0, the package's modules are copied from python/pyctrecon
# into BUILD/python-asan/pkg, and python/tests run with libasan in
# LD_PRELOAD (python itself is not instrumented: the runtime must come first)
# and detect_leaks=0 (python keeps objects at exit by design), so that a
# use-after-free or overflow of library memory through the package is a
# sanitizer report. Exits 77 (skipped) when it cannot run here: no libasan
# of the C compiler ($CC, else cc), no Python.h, or no packages from PyPI.
# Usage: bash python.sh SOURCE_DIR BUILD_DIR CTRECON_TOOL [--asan]
set -u
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) tool=$(readlink -f "$3")
asan=0
[ "${4:-}" = --asan ] && asan=1
work=$build/python-check
[ "$asan" = 1 ] && work=$build/python-asan
venv=$work/venv
rm -rf "$work" && mkdir -p "$work"
py=${PYTHON:-python3}
step() { # step DESC COMMAND...: output shown on failure
  local desc=$1 rc; shift
  "$@" >"$work/step.log" 2>&1
  rc=$?
  if [ "$rc" -ne 0 ]; then
    echo "FAIL - $desc (exit $rc): $*"; tail -n 60 "$work/step.log" | sed 's/^/    /'; exit 1
  fi
  echo "ok - $desc"
}
skip() { # skip WHY: this run cannot happen here (ctest counts 77 as skipped)
  echo "SKIP - $*"; exit 77
}
cc=${CC:-cc}
if [ "$asan" = 1 ]; then
  libasan=$("$cc" -print-file-name=libasan.so 2>/dev/null)
  case $libasan in /*) [ -e "$libasan" ] || skip "no libasan.so of $cc" ;;
                   *) skip "$cc has no libasan.so (gcc's AddressSanitizer runtime)" ;; esac
  [ -e "$build/libctrecon.so.0" ] || skip "no $build/libctrecon.so.0"
  pyinc=$("$py" -c 'import sysconfig; print(sysconfig.get_paths()["include"])' 2>/dev/null)
  [ -e "$pyinc/Python.h" ] || skip "no Python.h for $py (python3-dev)"
  "$py" -m venv "$venv" >"$work/step.log" 2>&1 || skip "$py -m venv failed: $(tail -n 1 "$work/step.log")"
  # no matplotlib here: its C++ extension throws while importing, and ASan's __cxa_throw
  # interceptor is not set up when libasan is preloaded into Python (CHECK failed,
  # asan_interceptors.cpp); the figure tests run (or report a skip) in the plain run
  "$venv/bin/python" -m pip --disable-pip-version-check install -q numpy pytest h5py tqdm scipy cffi \
    >"$work/step.log" 2>&1 || skip "pip install from PyPI failed: $(tail -n 1 "$work/step.log")"
  echo "ok - virtual environment and packages ($($py --version 2>&1))"
  pkg=$work/pkg/pyctrecon
  mkdir -p "$pkg" && cp "$src"/python/pyctrecon/*.py "$src"/python/pyctrecon/py.typed "$pkg"/
  ext=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  step "cffi source of pyctrecon._ctrecon" "$venv/bin/python" "$src/python/build_ffi.py" --cc "$cc" \
    --include "$src/include" --out "$work/_ctrecon.c"
  step "extension over $build/libctrecon.so.0 (AddressSanitizer)" "$cc" -shared -fPIC -O1 -g -w \
    -fsanitize=address,undefined -I"$pyinc" -I"$src/include" "$work/_ctrecon.c" \
    -o "$pkg/_ctrecon$ext" "$build/libctrecon.so.0" -Wl,-rpath,"$build"
  export LD_PRELOAD=$libasan ASAN_OPTIONS="${ASAN_OPTIONS:-}:detect_leaks=0" PYTHONPATH=$work/pkg
  cd "$work" || exit 1
  # the package of pkg/ over the sanitized library, not another one
  step "import pyctrecon (the sanitized library)" "$venv/bin/python" -c "
import pyctrecon, os
assert os.path.dirname(pyctrecon.__file__) == '$pkg', pyctrecon.__file__
maps = open('/proc/self/maps').read()
assert '$(readlink -f "$build/libctrecon.so.0")' in maps and 'libasan' in maps, 'not the ASan library'
print(pyctrecon.version(), sorted(pyctrecon.features()))"
  cat "$work/step.log"
  CTRECON_CLI=$tool exec "$venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$src/python/tests"
fi
step "virtual environment ($($py --version 2>&1))" "$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
step "pip install numpy pytest h5py tqdm scipy matplotlib cffi" "${pip[@]}" install -q numpy pytest h5py tqdm scipy matplotlib cffi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
step "pip wheel (library + extension, CTRECON_CUDA=off)" "${pip[@]}" wheel -q --no-deps \
  -w "$work/wheel" --config-settings=cmake.define.CTRECON_CUDA=off \
  --config-settings=build-dir="$work/build" "$src"
wheel=$(ls "$work"/wheel/pyctrecon-*.whl)
step "pip install $(basename "$wheel")" "${pip[@]}" install -q "$wheel"
# from a directory outside the tree: the installed package, not python/pyctrecon
cd "$work" || exit 1
step "import pyctrecon" "$venv/bin/python" -c \
  "import pyctrecon, os; assert not os.path.realpath(pyctrecon.__file__).startswith('$src/python/'); print(pyctrecon.version(), sorted(pyctrecon.features()))"
cat "$work/step.log"
CTRECON_CLI=$tool exec "$venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$src/python/tests"
