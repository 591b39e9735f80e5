"""Shared fixtures. CTRECON_CLI names the `ctrecon` tool of the same source
tree (tests/python.sh sets it): the comparisons run the tool on the same
data and require identical arrays. Without it those tests fail rather than
pass vacuously, unless CTRECON_ALLOW_NO_CLI=1 (a user running the suite
against an installed package alone)."""
import os
import subprocess

import numpy as np
import pytest

import pyctrecon


def pytest_configure(config):
    config.addinivalue_line("markers", "gpu: needs a CUDA GPU and CuPy (skipped without them)")


@pytest.fixture(scope="session")
def cli():
    path = os.environ.get("CTRECON_CLI")
    if not path:
        if os.environ.get("CTRECON_ALLOW_NO_CLI") == "1":
            pytest.skip("CTRECON_CLI is not set")
        pytest.fail("CTRECON_CLI must name the ctrecon tool (tests/python.sh sets it)")

    def run(*args, ok=True):
        r = subprocess.run([path, *[str(a) for a in args]], capture_output=True, text=True)
        if ok and r.returncode != 0:
            raise AssertionError(f"ctrecon {' '.join(map(str, args))} failed ({r.returncode}):\n"
                                 f"{r.stderr}")
        return r
    return run


@pytest.fixture(scope="session")
def cpu():
    """A CPU context: the comparisons with the tool run with --device cpu."""
    return pyctrecon.Context("cpu")


@pytest.fixture
def small_cone(tmp_path, cli):
    """A small circular geometry written by the tool, its Shepp-Logan
    projections and truth (the tool's phantom command)."""
    g = tmp_path / "g.json"
    cli("geometry", "--out", g, "--volume", 24, "--views", 40, "--nu", 40, "--nv", 32,
        "--du", 1.5, "--dv", 1.5, "--voxel", 1.0)
    cli("phantom", "--geometry", g, "--out", tmp_path / "proj.nrrd", "--truth",
        tmp_path / "truth.nrrd", "--device", "cpu")
    return g, tmp_path / "proj.nrrd", tmp_path / "truth.nrrd"


def same(a, b):
    """Identical arrays: same shape, same dtype, same bits."""
    a, b = np.asarray(a), np.asarray(b)
    return a.shape == b.shape and a.dtype == b.dtype and a.tobytes() == b.tobytes()
