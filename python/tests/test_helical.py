"""Helical orbits (docs/geometry.md, "Helical orbits"): ConeGeometry.helical
and its helix, the JSON file the tool writes for the same helix, errors in
Python's words, and helical FDK against the truth and against the tool."""
import warnings

import numpy as np
import pytest

import pyctrecon

from conftest import same

# sid 200, sdd 400, 24 rows of 0.8 mm (9.6 mm at the axis), pitch 4.8 mm
KW = dict(sid=200, sdd=400, nu=72, nv=24, du=0.8, dv=0.8, pitch=4.8, nviews=505,
          angle_range=1010, z0=-6.75)
CLI = ["--sid", 200, "--sdd", 400, "--nu", 72, "--nv", 24, "--du", 0.8, "--dv", 0.8, "--pitch",
       4.8, "--views", 505, "--angle-range", 1010, "--z0", -6.75, "--volume", "48,48,12",
       "--voxel", 0.5]


def _volume():
    return pyctrecon.Volume(48, 48, 12, (0.5, 0.5, 0.5))


def test_helix_and_sources():
    g = pyctrecon.ConeGeometry.helical(volume=_volume(), **KW)
    h = g.helix
    assert h["pitch"] == 4.8 and h["z0"] == -6.75 and h["helix_window"] is None
    assert h["detector"] == "flat" and g.helix_window_used == 10.0  # automatic: the widest <= 10
    assert g.nviews == 505
    # view i: 2 degrees a view, 4.8 mm a turn
    s = g.source(90)
    assert np.allclose(s, [200 * np.cos(np.pi), 0, -6.75 + 2.4], atol=1e-9)
    assert pyctrecon.ConeGeometry.circular(sid=200, sdd=400, nu=8, nv=8, nviews=10,
                                           volume=_volume()).helix is None


def test_same_as_the_tool(cli, tmp_path):
    cli("geometry", "--out", tmp_path / "h.json", *CLI, "--quiet")
    t = pyctrecon.ConeGeometry.load(tmp_path / "h.json")
    g = pyctrecon.ConeGeometry.helical(volume=_volume(), **KW)
    assert np.array_equal(t.matrices, g.matrices)
    assert t.helix == g.helix


def test_errors_name_keywords():
    with pytest.raises(pyctrecon.GeometryError, match="pitch = 0: .*circular"):
        pyctrecon.ConeGeometry.helical(volume=_volume(), **{**KW, "pitch": 0})
    with pytest.raises(pyctrecon.GeometryError, match="helix_window = 95"):
        pyctrecon.ConeGeometry.helical(volume=_volume(), helix_window=95, **KW)
    with pytest.raises(ValueError, match="helix_window = -1"):
        pyctrecon.ConeGeometry.helical(volume=_volume(), helix_window=-1, **KW)
    with pytest.raises(ValueError, match="detector"):
        pyctrecon.ConeGeometry.helical(volume=_volume(), detector="round", **KW)


def test_fdk_truth_and_tool(cli, cpu, tmp_path):
    g = pyctrecon.ConeGeometry.helical(volume=_volume(), **KW)
    ph = pyctrecon.Phantom([dict(density=1.0, cx=0, cy=0, cz=0, ax=9, ay=8, az=70),
                            dict(density=0.5, cx=3, cy=0, cz=1, ax=2, ay=2, az=2)])
    proj = ph.project(g, ctx=cpu)
    vol = pyctrecon.fdk(proj, g, ctx=cpu)
    truth = ph.voxelize(g, ctx=cpu)
    rmse = float(np.sqrt(np.mean((vol - truth) ** 2)))
    assert rmse < 0.08, rmse
    g.save(tmp_path / "h.json")
    pyctrecon.io.save(tmp_path / "p.nrrd", proj)
    cli("fdk", "--geometry", tmp_path / "h.json", "--projections", tmp_path / "p.nrrd",
        "--out", tmp_path / "v.nrrd", "--device", "cpu", "--quiet")
    assert same(vol, pyctrecon.io.load(tmp_path / "v.nrrd"))
    # pitch 9.6 (1.0 of the height): the automatic window narrows to 0 and FDK runs; a window
    # of 10 given explicitly is refused
    auto = pyctrecon.ConeGeometry.helical(volume=_volume(), **{**KW, "pitch": 9.6})
    assert auto.helix_window_used == 0.0 and auto.helix["helix_window"] is None
    steep = pyctrecon.ConeGeometry.helical(volume=_volume(), helix_window=10,
                                           **{**KW, "pitch": 9.6})
    sp = ph.project(steep, ctx=cpu)
    va, rep = pyctrecon.fdk(sp, auto, ctx=cpu, return_report=True)
    assert float(np.sqrt(np.mean((va - truth) ** 2))) < 0.08
    assert rep["helix_window_deg"] == 0.0 and rep["helix_window_auto"] == 1
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused, not warned about first
        with pytest.raises(pyctrecon.GeometryError, match="pitch = 9.6: helical FDK takes at most"):
            pyctrecon.fdk(sp, steep, ctx=cpu)


def test_curved_helix(cli, cpu, tmp_path):
    """A helix over a cylindrical detector: the tool's file, its shape, and helical FDK
    against the truth."""
    g = pyctrecon.ConeGeometry.helical(volume=_volume(), detector="cylindrical", **KW)
    assert g.detector_shape == "cylindrical" and g.helix["detector"] == "cylindrical"
    cli("geometry", "--out", tmp_path / "c.json", *CLI, "--detector", "cylindrical", "--quiet")
    t = pyctrecon.ConeGeometry.load(tmp_path / "c.json")
    assert np.array_equal(t.matrices, g.matrices) and t.helix == g.helix
    ph = pyctrecon.Phantom([dict(density=1.0, cx=0, cy=0, cz=0, ax=9, ay=8, az=70),
                            dict(density=0.5, cx=3, cy=0, cz=1, ax=2, ay=2, az=2)])
    vol = pyctrecon.fdk(ph.project(g, ctx=cpu), g, ctx=cpu)
    rmse = float(np.sqrt(np.mean((vol - ph.voxelize(g, ctx=cpu)) ** 2)))
    assert rmse < 0.08, rmse
