"""FDK on a geometry it cannot reconstruct (issue 41): a FdkGeometryWarning
(a RuntimeWarning) naming the iterative solvers, or with strict=True a
GeometryError; a circular orbit passes silently."""
import warnings

import numpy as np
import pytest

import pyctrecon
from pyctrecon.conebeam import FdkGeometryWarning

VOL = pyctrecon.Volume(nx=24, ny=24, nz=8, voxel=2.0)


def _circle(**kw):
    return pyctrecon.ConeGeometry.circular(sid=400, sdd=800, nu=64, nv=16, du=2.0, dv=2.0,
                                           volume=VOL, nviews=kw.pop("nviews", 90), **kw)


def _helix():
    g = _circle(nviews=180, angle_range=720)
    m = g.matrices.copy()
    dz = np.linspace(-8.0, 8.0, len(m), endpoint=False)
    m[:, :, 3] -= m[:, :, 2] * dz[:, None]  # each view shifted along z: a helix
    return pyctrecon.ConeGeometry.from_matrices(m, nu=64, nv=16, du=2.0, dv=2.0, volume=VOL)


def _zeros(g):
    return np.zeros((g.nviews, 16, 64), np.float32)


def test_circle_no_warning():
    g = _circle()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = pyctrecon.fdk(_zeros(g), g, strict=True)
    assert v.shape == (8, 24, 24)


def test_half_fan_no_warning():
    """An offset (half-fan) detector on a full turn: Wang's weights and the
    rows extended (issue 45), on the CPU; no warning, strict passes."""
    g = _circle(offset_u=56.0)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        v = pyctrecon.fdk(_zeros(g), g, strict=True, ctx=pyctrecon.Context("cpu"))
    assert v.shape == (8, 24, 24)


@pytest.mark.parametrize("make, needle, kw", [
    (_helix, "not on one circle", {}),
    (lambda: _circle(offset_u=56.0), "half-fan", {"offset_weight": "off"}),
    (lambda: _circle(angle_range=185), "less than a short scan", {}),
])
def test_warns_then_strict_refuses(make, needle, kw, caplog):
    g = make()
    with pytest.warns(FdkGeometryWarning, match=needle) as rec:
        pyctrecon.fdk(_zeros(g), g, **kw)
    assert issubclass(FdkGeometryWarning, RuntimeWarning)
    assert len(rec) == 1 and "pyctrecon.iterate" in str(rec[0].message)
    assert "ctr_" not in str(rec[0].message)
    # said once: not again through the library's log
    assert not [r for r in caplog.records if "FDK cannot" in r.getMessage()]
    with pytest.raises(pyctrecon.GeometryError, match="strict=True") as e:
        pyctrecon.fdk(_zeros(g), g, strict=True, **kw)
    assert needle in str(e.value) and "ctr_" not in str(e.value)
