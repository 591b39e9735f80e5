"""Cylindrical (curved) detectors (docs/geometry.md, "Curved (cylindrical)
detectors"): the ``detector`` keyword, the file round trip, FDK of exact
projections against the truth, and the iterative projector's refusal."""
import numpy as np
import pytest

import pyctrecon

VOL = pyctrecon.Volume(nx=32, ny=32, nz=16, voxel=1.0)


def _curved(**kw):
    return pyctrecon.ConeGeometry.circular(sid=100, sdd=150, nu=48, nv=32, du=1.5, dv=1.5,
                                           volume=VOL, nviews=120, detector="cylindrical", **kw)


def test_keyword_and_file(tmp_path):
    g = _curved()
    assert g.detector_shape == "cylindrical"
    assert pyctrecon.ConeGeometry.circular(sid=100, sdd=150, nu=48, nv=32, volume=VOL,
                                           nviews=4).detector_shape == "flat"
    g.save(tmp_path / "g.json")
    assert '"shape"' in (tmp_path / "g.json").read_text()
    back = pyctrecon.ConeGeometry.load(tmp_path / "g.json")
    assert back.detector_shape == "cylindrical"
    np.testing.assert_array_equal(back.matrices, g.matrices)
    with pytest.raises(ValueError, match="detector"):
        pyctrecon.ConeGeometry.circular(sid=100, sdd=150, nu=48, nv=32, volume=VOL, nviews=4,
                                        detector="curved")


def test_fdk_of_exact_projections():
    g = _curved()
    ph = pyctrecon.Phantom.shepp_logan(14.0)
    proj = ph.project(g, progress=False)
    truth = ph.voxelize(g, progress=False)
    vol = pyctrecon.fdk(proj, g, window="hann")
    inside = truth != 0
    rmse = float(np.sqrt(np.mean((vol[inside] - truth[inside]) ** 2)))
    assert rmse < 0.2, rmse


def test_iterative_refuses():
    with pytest.raises(pyctrecon.UnsupportedError, match="flat detectors only"):
        pyctrecon.Projector(_curved())
