"""docs/python.md's examples run as written: each ```python block, in an
empty directory of its own. A block whose first line is "# gpu-only" runs
only where CuPy and a GPU are usable (skipped otherwise: no GPU here)."""
import os
import re

import pytest

import pyctrecon

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "docs", "python.md")


def blocks():
    text = open(DOC, encoding="utf-8").read()
    found = re.findall(r"```python\n(.*?)```", text, re.S)
    assert len(found) >= 6, "docs/python.md lost examples"
    return found


def gpu_usable():
    try:
        import cupy  # noqa: F401
    except ImportError:
        return False
    return pyctrecon.cuda_device_count() > 0


@pytest.mark.parametrize("index", range(len(blocks())))
def test_example(index, tmp_path, monkeypatch):
    code = blocks()[index]
    if code.startswith("# gpu-only"):
        if not gpu_usable():
            pytest.skip("GPU-only example: no CUDA GPU with CuPy here")
    if "import h5py" in code:
        pytest.importorskip("h5py")
        if "hdf5" not in pyctrecon.features():
            pytest.skip("the library was built without HDF5")
    for module in ("scipy", "torch"):   # the Operators examples (extras scipy, torch)
        if f"import {module}" in code:
            pytest.importorskip(module, reason=f"{module} is not installed")
    if "pyctrecon.show" in code:   # the Figures examples (extra plot)
        pytest.importorskip("matplotlib", reason="matplotlib is not installed")
    monkeypatch.chdir(tmp_path)
    exec(compile(code, f"docs/python.md example {index + 1}", "exec"), {"__name__": "__main__"})
