"""Vector geometries (docs/geometry.md, "Vector geometries"): ASTRA cone_vec
rows as ConeGeometry.from_vectors, the vectors property, parallel3d_vec rows
as ParallelGeometry.from_vectors."""
import numpy as np
import pytest

import pyctrecon


def _circular():
    return pyctrecon.ConeGeometry.circular(sid=400, sdd=600, nu=48, nv=40, du=1.5, dv=1.5,
                                           nviews=36, volume=pyctrecon.Volume.cube(32))


def test_circular_as_vectors_is_the_circular_orbit():
    g = _circular()
    v = g.vectors
    assert v.shape == (36, 12)
    h = pyctrecon.ConeGeometry.from_vectors(v, nu=48, nv=40, volume=pyctrecon.Volume.cube(32))
    assert h.is_circular
    assert np.array_equal(g.matrices, h.matrices)  # bit for bit
    assert np.array_equal(h.vectors, v)
    # source and detector centre of view 0 (angle 0): (400, 0, 0) and (-200, 0, 0)
    assert np.allclose(v[0, :6], [400, 0, 0, -200, 0, 0])
    assert np.allclose(v[0, 6:], [0, 1.5, 0, 0, 0, 1.5])


def test_json_round_trip(tmp_path):
    rng = np.random.default_rng(3)
    v = _circular().vectors
    v[:, :6] += rng.uniform(-2, 2, (36, 6))  # a wobbling orbit: the general path
    g = pyctrecon.ConeGeometry.from_vectors(v, nu=48, nv=40, volume=pyctrecon.Volume.cube(32))
    assert np.allclose(g.source(7), v[7, :3], rtol=0, atol=1e-9)
    g.save(tmp_path / "v.json")
    h = pyctrecon.ConeGeometry.load(tmp_path / "v.json")
    assert np.array_equal(h.vectors, v)
    assert np.array_equal(h.matrices, g.matrices)


def test_errors_name_the_view():
    v = _circular().vectors
    v[5, 6:9] = 0
    with pytest.raises(pyctrecon.GeometryError, match="view 5: u = .* is zero"):
        pyctrecon.ConeGeometry.from_vectors(v, nu=48, nv=40, volume=pyctrecon.Volume.cube(32))
    with pytest.raises(ValueError, match="expected \\(nviews, 12\\)"):
        pyctrecon.ConeGeometry.from_vectors(v[:, :11], nu=48, nv=40,
                                            volume=pyctrecon.Volume.cube(32))


def test_parallel_from_vectors():
    t = np.deg2rad(np.arange(10) * 18.0)
    z = np.zeros_like(t)
    v = np.stack([np.sin(t), -np.cos(t), z, z, z, z + 1.0,
                  0.5 * np.cos(t), 0.5 * np.sin(t), z, z, z, z + 0.5], axis=1)
    g, row_z = pyctrecon.ParallelGeometry.from_vectors(v, nu=16, nv=3)
    assert g.nbins == 16 and g.nangles == 10
    assert np.allclose(g.angles, np.arange(10) * 18.0)
    assert np.allclose(g.axis_shift, 0) and g.axis == 7.5 and g.pixel_size == 0.5
    assert np.allclose(row_z, [0.5, 1.0, 1.5])
    v[4, 2] = 0.2
    with pytest.raises(pyctrecon.CtreconError, match="view 4: the ray is not perpendicular"):
        pyctrecon.ParallelGeometry.from_vectors(v, nu=16, nv=3)
