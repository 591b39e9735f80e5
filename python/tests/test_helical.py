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
    assert h["pitch"] == 4.8 and h["z0"] == -6.75 and h["helix_window"] == 10.0
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
    steep = pyctrecon.ConeGeometry.helical(volume=_volume(), **{**KW, "pitch": 9.6})
    sp = ph.project(steep, ctx=cpu)
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # refused, not warned about first
        with pytest.raises(pyctrecon.GeometryError, match="pitch = 9.6: helical FDK takes at most"):
            pyctrecon.fdk(sp, steep, ctx=cpu)
