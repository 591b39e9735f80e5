#!/usr/bin/env bash
# The Python package (docs/python.md), as a user installs it: a fresh virtual
# environment in BUILD/python-check/venv, a wheel built from the source tree by
# pip (scikit-build-core driving the repository's CMake; CUDA off: the CUDA
# objects take minutes on two cores and CI has no GPU, the CPU code is the C
# build's), the wheel installed with numpy, pytest, h5py and tqdm from PyPI,
# `import ctrecon` from outside the tree, then python/tests against the
# tool of this build (CTRECON_CLI: identical arrays).
# Usage: bash python.sh SOURCE_DIR BUILD_DIR CTRECON_TOOL
set -u
src=$(cd "$1" && pwd) build=$(cd "$2" && pwd) tool=$(readlink -f "$3")
work=$build/python-check
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
step "virtual environment ($($py --version 2>&1))" "$py" -m venv "$venv"
pip=("$venv/bin/python" -m pip --disable-pip-version-check)
step "pip install numpy pytest h5py tqdm cffi" "${pip[@]}" install -q numpy pytest h5py tqdm cffi
export CMAKE_BUILD_PARALLEL_LEVEL=${CMAKE_BUILD_PARALLEL_LEVEL:-2}
step "pip wheel (library + extension, CTRECON_CUDA=off)" "${pip[@]}" wheel -q --no-deps \
  -w "$work/wheel" --config-settings=cmake.define.CTRECON_CUDA=off \
  --config-settings=build-dir="$work/build" "$src"
wheel=$(ls "$work"/wheel/ctrecon-*.whl)
step "pip install $(basename "$wheel")" "${pip[@]}" install -q "$wheel"
# from a directory outside the tree: the installed package, not python/ctrecon
cd "$work" || exit 1
step "import ctrecon" "$venv/bin/python" -c \
  "import ctrecon, os; assert not os.path.realpath(ctrecon.__file__).startswith('$src/python/'); print(ctrecon.version(), sorted(ctrecon.features()))"
cat "$work/step.log"
CTRECON_CLI=$tool exec "$venv/bin/python" -m pytest -p no:cacheprovider -q -rs "$src/python/tests"
