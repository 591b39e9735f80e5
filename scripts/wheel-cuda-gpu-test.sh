#!/usr/bin/env bash
# The CUDA wheel pyctrecon-cu13 on a GPU machine with no network
# (docs/python.md, "CUDA wheel"; the wheel and what to carry with it:
# BUILD/wheel-cuda/carry of `make wheel-cuda`):
#  1. a virtual environment with --system-site-packages from $PYTHON (python3
#     unless set), so that the machine's numpy, pytest, CuPy, torch and
#     NVIDIA wheels are seen; where that python is itself a virtual environment
#     (a venv's --system-site-packages reaches its base interpreter's packages
#     only), a .pth file adds that environment's site-packages too;
#  2. `pip install --no-deps --no-index` of the wheel, and of the other wheels
#     in its folder (cffi, pycparser) where the python has no cffi;
#  3. prints the driver's and the runtime's CUDA versions, the GPUs, and which
#     libcudart and libcufft were loaded (from /proc/self/maps) and how
#     (pyctrecon._cudalibs.loaded), with pyctrecon imported alone and after
#     torch and CuPy (then exactly one libcudart.so.13 must be mapped);
#  4. python/tests, the GPU tests included: at least one GPU must be visible.
#     CTRECON_CLI (the ctrecon tool of the same tree) for the comparisons with
#     the tool; without it those tests report themselves skipped.
# Usage: scripts/wheel-cuda-gpu-test.sh WHEEL
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
wheel=$(readlink -f "${1:?usage: scripts/wheel-cuda-gpu-test.sh WHEEL}")
[ -f "$wheel" ] || { echo "wheel-cuda-gpu-test: no wheel at $1" >&2; exit 1; }
py=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/pyctrecon-cu13.XXXXXX")
fail() { echo "wheel-cuda-gpu-test: FAIL - $*" >&2; exit 1; }

# 1. the venv, seeing the machine's packages (pip: the venv's own, else, where the python
# has no ensurepip, the parent's pip pointed at the venv)
vpy=$work/venv/bin/python
pip=("$vpy" -m pip)
if ! "$py" -m venv --system-site-packages "$work/venv" 2>"$work/venv.log"; then
  rm -rf "$work/venv"
  "$py" -m venv --without-pip --system-site-packages "$work/venv" || fail "python -m venv"
  pip=("$py" -m pip --python "$vpy")
fi
site=$("$vpy" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
"$py" -c '
import site, sys
if sys.prefix != sys.base_prefix:  # a venv: its own site-packages, for the new one
    print("\n".join(site.getsitepackages()))' >"$site/_parent_site.pth"

# 2. the wheel (and cffi where the python has none), nothing from an index
wheels=("$wheel")
if ! "$vpy" -c 'import cffi' 2>/dev/null; then
  for w in "$(dirname "$wheel")"/cffi-*.whl "$(dirname "$wheel")"/pycparser-*.whl; do
    [ -f "$w" ] && wheels+=("$w")
  done
fi
"${pip[@]}" --disable-pip-version-check install -q --no-deps --no-index "${wheels[@]}" ||
  fail "pip install --no-deps --no-index ${wheels[*]}"

# 3. the libraries loaded, alone and after torch and CuPy
cd "$work"
for first in "" torch cupy; do
  env -u LD_LIBRARY_PATH "$vpy" - "$first" <<'EOF' || fail "import pyctrecon ${first:+after $first}"
import importlib, os, sys
first = sys.argv[1]
if first:
    try:
        importlib.import_module(first)
        if first == "torch":
            import torch; torch.zeros(1, device="cuda")
        else:
            import cupy; cupy.zeros(1)
    except Exception as e:  # not installed, or no GPU: said, not failed
        print(f"({first}: {type(e).__name__}: {e}; skipped)")
        raise SystemExit(0)
def mapped():
    return sorted({l.split()[-1] for l in open("/proc/self/maps")
                   if "libcudart.so" in l or "libcufft.so" in l})
before = [m for m in mapped() if "libcudart.so.13" in m]
import pyctrecon
from pyctrecon import _cudalibs
maps = mapped()
cudart = [m for m in maps if "libcudart.so.13" in m]
print(f"import pyctrecon{' after ' + first if first else ''}: {pyctrecon.version()}, "
      f"features {sorted(pyctrecon.features())}")
print("  loaded (/proc/self/maps):", *maps, sep="\n    ")
print("  how (pyctrecon._cudalibs.loaded):", _cudalibs.loaded)
assert "cuda" in pyctrecon.features()
import ctypes
rt = ctypes.CDLL("libcudart.so.13")  # the one loaded: the same soname
d, r = ctypes.c_int(), ctypes.c_int()
rt.cudaDriverGetVersion(ctypes.byref(d)), rt.cudaRuntimeGetVersion(ctypes.byref(r))
print(f"  CUDA: the driver's {d.value // 1000}.{d.value % 1000 // 10}, "
      f"the runtime's {r.value // 1000}.{r.value % 1000 // 10}")
# pyctrecon adds no copy of its own where torch or CuPy loaded one, and one where none was
assert cudart == before if before else len(cudart) == 1, ("libcudart.so.13", before, maps)
n = pyctrecon.cuda_device_count()
print(f"  GPUs: {n}", *(pyctrecon.cuda_device_info(i) for i in range(n)))
assert n > 0, "no GPU visible to the wheel's library"
EOF
done

# 4. python/tests, the GPU tests included
[ -n "${CTRECON_CLI:-}" ] || export CTRECON_ALLOW_NO_CLI=1
set +e
env -u LD_LIBRARY_PATH "$vpy" -m pytest -p no:cacheprovider -q -rs "$src/python/tests" 2>&1 |
  tee "$work/pytest.log"
rc=${PIPESTATUS[0]}
set -e
[ "$rc" = 5 ] && fail "pytest collected no tests (exit 5)"
[ "$rc" = 0 ] || fail "python/tests against the CUDA wheel (pytest exit $rc; $work/pytest.log)"
echo "wheel-cuda-gpu-test: ok: $(tail -n 1 "$work/pytest.log")"
