"""The array rules (docs/python.md, "Arrays"): C-contiguous float32 input is
used in place; other real arrays are converted to float32 (the same result
as converting them first); a wrong shape, complex data, or an `out` array
that cannot take the result in place is an error naming the argument."""
import numpy as np
import pytest

import pyctrecon
from pyctrecon import _core

from conftest import same


@pytest.fixture(scope="module")
def setup():
    pg = pyctrecon.ParallelGeometry(32, 24)
    sino = pyctrecon.Phantom.shepp_logan(12.0).sinogram(pg, [-1.0, 0.0, 1.0])
    return pg, sino, pyctrecon.fbp(sino, pg, ctx=pyctrecon.Context("cpu"))


def test_contiguous_float32_is_not_copied(setup):
    _, sino, _ = setup
    assert _core.host_in(sino, "x") is sino
    ro = sino.copy()
    ro.flags.writeable = False
    assert _core.host_in(ro, "x") is ro  # read-only input: used as it is
    assert _core.host_in(sino[:, ::2], "x") is not sino


def test_conversions_give_the_converted_result(setup):
    pg, sino, want = setup
    cpu = pyctrecon.Context("cpu")
    assert same(pyctrecon.fbp(sino.astype(np.float64), pg, ctx=cpu), want)
    wide = np.zeros((3, 24, 64), np.float32)
    wide[:, :, ::2] = sino
    assert same(pyctrecon.fbp(wide[:, :, ::2], pg, ctx=cpu), want)  # strided view
    fortran = np.asfortranarray(sino)
    assert same(pyctrecon.fbp(fortran, pg, ctx=cpu), want)
    ro = sino.copy()
    ro.flags.writeable = False
    assert same(pyctrecon.fbp(ro, pg, ctx=cpu), want)
    ints = np.round(sino * 100).astype(np.int32)
    assert same(pyctrecon.fbp(ints, pg, ctx=cpu), pyctrecon.fbp(ints.astype(np.float32), pg, ctx=cpu))


def test_wrong_shape_and_dtype(setup):
    pg, sino, _ = setup
    with pytest.raises(ValueError, match=r"sinograms has shape \(3, 24, 31\): expected \(3, 24, 32\)"):
        pyctrecon.fbp(sino[:, :, :31], pg)
    with pytest.raises(TypeError, match="complex"):
        pyctrecon.fbp(sino.astype(np.complex64), pg)
    with pytest.raises(TypeError, match="dtype bool"):
        pyctrecon.fbp(sino > 0, pg)


def test_out(setup):
    pg, sino, want = setup
    cpu = pyctrecon.Context("cpu")
    out = np.empty(want.shape, np.float32)
    assert pyctrecon.fbp(sino, pg, out=out, ctx=cpu) is out and same(out, want)
    with pytest.raises(TypeError, match="out has dtype float64"):
        pyctrecon.fbp(sino, pg, out=np.empty(want.shape), ctx=cpu)
    with pytest.raises(ValueError, match="out has shape"):
        pyctrecon.fbp(sino, pg, out=np.empty((3, 32, 31), np.float32), ctx=cpu)
    with pytest.raises(ValueError, match="not C-contiguous"):
        pyctrecon.fbp(sino, pg, out=np.empty(want.shape[::-1], np.float32).T, ctx=cpu)
    ro = np.empty(want.shape, np.float32)
    ro.flags.writeable = False
    with pytest.raises(ValueError, match="out is read-only"):
        pyctrecon.fbp(sino, pg, out=ro, ctx=cpu)


def test_gpu_array_refused_by_host_functions(setup):
    pg, sino, _ = setup

    class FakeGpu:  # what the binding sees of a CuPy array
        __cuda_array_interface__ = {"shape": (3, 24, 32), "typestr": "<f4", "data": (0, False),
                                    "version": 3}
    # fbp takes GPU arrays now (test_gpu.py); fbp_filter and center_find still refuse them
    with pytest.raises(TypeError, match="sinograms is a GPU array"):
        pyctrecon.fbp_filter(FakeGpu(), pg)
    with pytest.raises(TypeError, match="sinograms is a GPU array"):
        pyctrecon.center_find(FakeGpu(), pg)
    # a GPU out with host sinograms is refused before anything runs
    with pytest.raises(TypeError, match="out is a GPU array but sinograms are not"):
        pyctrecon.fbp(sino, pg, out=FakeGpu())
