"""Cylindrical (curved) detectors (docs/geometry.md, "Curved (cylindrical)
detectors"): the ``detector`` keyword, the file round trip, FDK of exact
projections against the truth, the iterative projector pair (adjoint, CGLS
against the flat detector's) and the fast pair's refusal."""
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


def test_projector_pair():
    """The matched pair on the curved detector: <A x, y> = <x, A^T y>, and
    CGLS of exact projections as accurate as on the flat detector of about
    the same fan (48 x 1.5 mm at 150 mm: the flat pitch 2 tan(fan / 2) 150 / 48)."""
    g = _curved()
    pr = pyctrecon.Projector(g)
    rng = np.random.default_rng(5)
    x = rng.random(pr.volume_shape, dtype=np.float32)
    y = rng.random(pr.projection_shape, dtype=np.float32)
    lhs = np.dot(pr.forward(x).ravel().astype(np.float64), y.ravel())
    rhs = np.dot(x.ravel().astype(np.float64), pr.adjoint(y).ravel())
    assert lhs > 0 and abs(lhs - rhs) <= 1e-6 * abs(lhs), (lhs, rhs)
    ph = pyctrecon.Phantom.shepp_logan(14.0)
    truth = ph.voxelize(g, progress=False)
    inside = truth != 0
    du_flat = 2 * np.tan(0.5 * 48 * 1.5 / 150) * 150 / 48
    flat = pyctrecon.ConeGeometry.circular(sid=100, sdd=150, nu=48, nv=32, du=du_flat, dv=1.5,
                                           volume=VOL, nviews=120)
    rmse = []
    for geo in (g, flat):
        vol = pyctrecon.iterate(pyctrecon.Projector(geo), ph.project(geo, progress=False),
                                algorithm="cgls", iterations=15, progress=False)
        rmse.append(float(np.sqrt(np.mean((vol[inside] - truth[inside]) ** 2))))
    assert rmse[0] < 0.15 and rmse[0] <= 1.2 * rmse[1], rmse


def test_fast_pair_refused():
    with pytest.raises(pyctrecon.UnsupportedError, match="flat detector"):
        pyctrecon.Projector(_curved(), pair="fast")
