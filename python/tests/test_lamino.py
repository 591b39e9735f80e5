"""Laminography (docs/geometry.md, "Laminography"): ParallelGeometry's tilt
and nrows, exact tilted sinograms, FBP and the projector pair on them, the
disk stack's layers (tests/test_lamino.c holds the full checks)."""
import math
import warnings

import numpy as np
import pytest

import pyctrecon


def _geometry(tilt=20.0, nrows=44, **kw):
    return pyctrecon.ParallelGeometry(48, 120, angle_range=360.0, nx=32, ny=32, tilt=tilt,
                                      nrows=nrows, **kw)


def test_tilt_and_rows():
    g = _geometry()
    assert g.tilt == 20.0 and g.nrows == 44
    assert g.sinogram_shape(12) == (44, 120, 48)  # the rows, whatever the slices
    assert g.slice_shape(12) == (12, 32, 32)
    assert math.isclose(g.weight(0), math.pi * math.cos(math.radians(20.0)) / 120, rel_tol=1e-13)
    with pytest.raises(pyctrecon.GeometryError, match="ParallelGeometry's nrows 0"):
        _geometry(nrows=0)
    with pytest.raises(pyctrecon.GeometryError, match="ParallelGeometry's tilt 91"):
        _geometry(tilt=91.0)


def test_tilt_units():
    r = _geometry(tilt=math.radians(20.0), angle_units="rad",
                  angle_start=0.0)  # the angles' units apply to the tilt
    assert math.isclose(r.tilt, 20.0, rel_tol=1e-12)
    with pytest.warns(UserWarning, match="looks like radians"):
        _geometry(tilt=0.35)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        _geometry(tilt=0.35, angle_units="deg")


def test_layers_fbp_and_cgls():
    """The disk stack at 20 degrees: FBP at its missing-cone limit
    (test_lamino.c derives it), CGLS between it and the truth; the gaps
    below half the middle disk."""
    g = _geometry(nrows=48)
    ph = pyctrecon.Phantom.disk_stack(6.0, 4.0, 4.0)
    sino = ph.sinogram(g)
    assert sino.shape == (48, 120, 48) and sino.max() > 5
    rec = pyctrecon.fbp(sino, g, nslices=22)
    assert rec.shape == (22, 32, 32)
    kappa = 1.0 / math.sqrt(1.0 + (6.0 * math.tan(math.radians(20.0)) / 2.0) ** 2)
    yy, xx = np.mgrid[0:32, 0:32] - 15.5
    core = xx ** 2 + yy ** 2 < 9.0
    z = np.arange(22) - 10.5

    def means(v):
        return [float(v[np.argmin(abs(z - c))][core].mean()) for c in (-8, -4, 0, 4, 8)]

    m = means(rec)
    for got, rho in zip(m[0::2], (1.0, 0.5, 0.75)):
        assert abs(got - kappa * rho) < 0.03
    assert max(m[1], m[3]) < 0.5 * m[2]
    A = pyctrecon.Projector(g, nslices=22)
    assert A.projection_shape == (48, 120, 48) and A.volume_shape == (22, 32, 32)
    x = pyctrecon.iterate(A, sino, algorithm="cgls", iterations=12)
    vol = x[0] if isinstance(x, tuple) else x
    c = means(vol)
    for got, rho in zip(c[0::2], (1.0, 0.5, 0.75)):
        assert kappa * rho - 0.03 < got < rho + 0.03
    assert max(c[1], c[3]) < 0.5 * c[2]


def test_adjoint():
    g = _geometry(tilt=-35.0)
    A = pyctrecon.Projector(g, nslices=9)
    rng = np.random.default_rng(1)
    x = rng.random(A.volume_shape, dtype=np.float32)
    y = rng.random(A.projection_shape, dtype=np.float32)
    lhs = float(np.dot(A.forward(x).ravel().astype(np.float64), y.ravel()))
    rhs = float(np.dot(x.ravel().astype(np.float64), A.adjoint(y).ravel()))
    assert abs(lhs - rhs) <= 1e-6 * abs(lhs)


def test_from_vectors():
    """parallel3d_vec rows of a tilted scan (docs/geometry.md) give it back."""
    t = np.deg2rad(np.arange(12) * 30.0)
    f = np.deg2rad(25.0)
    z = np.zeros_like(t)
    eu = np.stack([np.cos(t), np.sin(t), z], axis=1)
    ev = np.stack([np.sin(f) * np.sin(t), -np.sin(f) * np.cos(t), z + np.cos(f)], axis=1)
    d = np.cross(ev, eu)
    v = np.concatenate([d, 40.0 * d, 0.8 * eu, 0.8 * ev], axis=1)
    g, row_z = pyctrecon.ParallelGeometry.from_vectors(v, nu=20, nv=16)
    assert math.isclose(g.tilt, 25.0, rel_tol=1e-12) and g.nrows == 16
    assert np.allclose(g.angles % 360.0, np.arange(12) * 30.0)
    assert np.allclose(row_z, (np.arange(16) - 7.5) * 0.8)


def test_json_roundtrip(tmp_path):
    """A tilted scan with shifts and an angle list, saved and loaded: the same
    parameters to the bit and the same FBP; an existing file kept unless
    overwrite; a misspelt member refused naming the nearest one."""
    angles = np.linspace(0.0, 360.0, 90, endpoint=False) + 1.0 / 3.0
    g = pyctrecon.ParallelGeometry(40, angles=angles, axis=19.3, axis_shift=np.linspace(-0.2, 0.2, 90),
                                   nx=24, ny=24, voxel=1.0 / 3.0, pixel_size=0.65, tilt=25.0,
                                   nrows=30)
    path = tmp_path / "par.json"
    g.save(path)
    with pytest.raises(pyctrecon.InvalidArgumentError, match="exists and is kept"):
        g.save(path)
    g.save(path, overwrite=True)
    h = pyctrecon.ParallelGeometry.load(path)
    for name in ("nbins", "nangles", "axis", "nx", "ny", "voxel", "pixel_size", "tilt", "nrows"):
        assert getattr(h, name) == getattr(g, name), name
    assert np.array_equal(h.angles, g.angles) and np.array_equal(h.axis_shift, g.axis_shift)
    assert pyctrecon.ParallelGeometry.from_json(g.to_json()).axis == g.axis
    sino = np.random.default_rng(3).random(g.sinogram_shape(8), dtype=np.float32)
    assert np.array_equal(pyctrecon.fbp(sino, g, nslices=8), pyctrecon.fbp(sino, h, nslices=8))
    with pytest.raises(pyctrecon.FormatError, match="tilt: unknown field"):
        pyctrecon.ParallelGeometry.from_json(g.to_json().replace('"tilt_deg"', '"tilt"'))
