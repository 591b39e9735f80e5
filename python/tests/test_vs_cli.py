"""Each wrapped computation against the `ctrecon` tool (the C library through
its own front end) on the same data, on the CPU: the arrays must be
identical, bit for bit (the binding passes the same numbers to the same
functions; any difference is a binding error: a wrong default, layout,
conversion or option)."""
import os

import numpy as np
import pytest

import pyctrecon
from pyctrecon import io

from conftest import same


def test_geometry_file_matches_parameters(small_cone, tmp_path):
    g_file, _, _ = small_cone
    g = pyctrecon.ConeGeometry.load(g_file)
    mine = pyctrecon.ConeGeometry.circular(sid=1000, sdd=1500, nu=40, nv=32, du=1.5, dv=1.5,
                                           nviews=40, volume=pyctrecon.Volume.cube(24, 1.0))
    assert same(g.matrices, mine.matrices)
    assert g.projection_shape == (40, 32, 40) and g.volume_shape == (24, 24, 24)
    mine.save(tmp_path / "mine.json")
    assert same(pyctrecon.ConeGeometry.load(tmp_path / "mine.json").matrices, g.matrices)
    assert same(pyctrecon.ConeGeometry.from_json(g.to_json()).matrices, g.matrices)


def test_phantom_projection_and_truth(small_cone, cpu):
    g_file, proj, truth = small_cone
    g = pyctrecon.ConeGeometry.load(g_file)
    ph = pyctrecon.Phantom.shepp_logan(0.95 * 24 / 2)
    assert same(ph.project(g, ctx=cpu), io.load(proj))
    assert same(ph.voxelize(g, supersample=2, ctx=cpu), io.load(truth))


def test_fdk_in_memory_and_file(small_cone, cli, cpu, tmp_path):
    g_file, proj, _ = small_cone
    cli("fdk", "--geometry", g_file, "--projections", proj, "--out", tmp_path / "cli.nrrd",
        "--device", "cpu", "--window", "hann")
    want = io.load(tmp_path / "cli.nrrd")
    g = pyctrecon.ConeGeometry.load(g_file)
    p = io.load(proj)
    assert same(pyctrecon.fdk(p, g, window="hann", ctx=cpu), want)
    rep = pyctrecon.fdk_file(proj, g, tmp_path / "py.nrrd", window="hann", ctx=cpu)
    assert same(io.load(tmp_path / "py.nrrd"), want)
    assert rep["plan"]["nslabs"] >= 1 and rep["resumable"] == 0
    # out-of-core: forced subvolumes give the same bits
    pyctrecon.fdk_file(proj, g, tmp_path / "slabs.nrrd", window="hann", max_slab_slices=5, ctx=cpu)
    assert same(io.load(tmp_path / "slabs.nrrd"), want)
    vol, r = pyctrecon.fdk(p, g, window="hann", max_slab_slices=7, return_report=True, ctx=cpu)
    assert same(vol, want) and r["plan"]["nslabs"] == 4


def test_fdk_slices_and_uint16(small_cone, cli, cpu, tmp_path):
    g_file, proj, _ = small_cone
    cli("fdk", "--geometry", g_file, "--projections", proj, "--out", tmp_path / "cli.nrrd",
        "--device", "cpu", "--window", "ram-lak", "--slices", "6:15", "--out-dtype", "uint16", "--out-scale", "1000")
    g = pyctrecon.ConeGeometry.load(g_file)
    pyctrecon.fdk_file(proj, g, tmp_path / "py.nrrd", z0=6, nz=9, out_dtype="uint16",
                       out_scale=1000, ctx=cpu)
    a, b = io.load(tmp_path / "cli.nrrd"), io.load(tmp_path / "py.nrrd")
    assert a.dtype == np.uint16 and same(a, b)


def _parallel_data(tmp_path, nbins=48, nangles=60, nslices=4):
    pg = pyctrecon.ParallelGeometry(nbins, nangles)
    ph = pyctrecon.Phantom.shepp_logan(20.0)
    sino = ph.sinogram(pg, np.linspace(-3, 3, nslices))
    io.save(tmp_path / "sino.nrrd", sino)
    return pg, sino


def test_fbp_sinograms(tmp_path, cli, cpu):
    pg, sino = _parallel_data(tmp_path)
    cli("fbp", "--sinograms", tmp_path / "sino.nrrd", "--out", tmp_path / "cli.nrrd", "--axis",
        23.5, "--device", "cpu", "--window", "shepp-logan")
    want = io.load(tmp_path / "cli.nrrd")
    slices, rep = pyctrecon.fbp_stream(sino, sinograms=True, axis=23.5, window="shepp-logan",
                                       ctx=cpu)
    assert same(slices, want) and rep["nslices"] == 4
    pyctrecon.fbp_stream(tmp_path / "sino.nrrd", tmp_path / "py.nrrd", sinograms=True, axis=23.5,
                         window="shepp-logan", ctx=cpu)
    assert same(io.load(tmp_path / "py.nrrd"), want)
    # the reader's depth, as the CLI's --read-ahead: same bits
    slices, _ = pyctrecon.fbp_stream(sino, sinograms=True, axis=23.5, window="shepp-logan",
                                     batch=1, read_ahead=5, ctx=cpu)
    assert same(slices, want)
    # a GPU budget (the CLI's --gpu-budget) is the GPU pipeline's: a CPU context ignores it
    slices, _ = pyctrecon.fbp_stream(sino, sinograms=True, axis=23.5, window="shepp-logan",
                                     gpu_budget="1K", ctx=cpu)
    assert same(slices, want)
    with pytest.raises(pyctrecon.InvalidArgumentError, match="read_ahead = 17"):
        pyctrecon.fbp_stream(sino, sinograms=True, axis=23.5, read_ahead=17, ctx=cpu)
    # input_scale, as the CLI's --input-scale: sinograms stored as value x 900
    scaled, _ = pyctrecon.fbp_stream(sino * np.float32(900), sinograms=True, axis=23.5,
                                     window="shepp-logan", input_scale=900, ctx=cpu)
    assert np.allclose(scaled, want, rtol=0, atol=1e-5 * float(np.abs(want).max()))


def _dxchange(path, nangles=90, nrows=6, nbins=64):
    h5py = pytest.importorskip("h5py")
    theta = np.linspace(0.0, 180.0, nangles, endpoint=False)
    pg = pyctrecon.ParallelGeometry(nbins, angles=theta)
    ph = pyctrecon.Phantom.shepp_logan(25.0, 0.02)
    sino = ph.sinogram(pg, np.arange(nrows) - nrows / 2)          # (rows, angles, bins)
    flat = np.full((nrows, nbins), 4000.0, np.float32)
    dark = np.full((nrows, nbins), 100.0, np.float32)
    proj = (dark + (flat - dark) * np.exp(-sino.transpose(1, 0, 2))).astype(np.uint16)
    with h5py.File(path, "w") as f:
        f["/exchange/data"] = proj
        f["/exchange/data_white"] = flat[None].repeat(3, 0).astype(np.uint16)
        f["/exchange/data_dark"] = dark[None].repeat(2, 0).astype(np.uint16)
        f["/exchange/theta"] = theta
    return proj, flat, dark, theta


def test_fbp_dxchange(tmp_path, cli, cpu):
    if "hdf5" not in pyctrecon.features():
        pytest.skip("the library was built without HDF5")
    h5 = tmp_path / "scan.h5"
    proj, flat, dark, theta = _dxchange(h5)
    cli("fbp", "--projections", h5, "--out", tmp_path / "cli.nrrd", "--device", "cpu",
        "--stripe", "sorting")
    want = io.load(tmp_path / "cli.nrrd")
    flat_avg = pyctrecon.flatfield_average(io.load(f"{h5}:/exchange/data_white"))
    dark_avg = pyctrecon.flatfield_average(io.load(f"{h5}:/exchange/data_dark"))
    angles = io.hdf5_read_vector(h5, "/exchange/theta")
    assert same(angles, theta)
    corr = pyctrecon.Corrections(stripe="sorting")
    rep = pyctrecon.fbp_stream(f"{h5}:/exchange/data", tmp_path / "py.nrrd", angles=angles,
                               flat=flat_avg, dark=dark_avg, corrections=corr, ctx=cpu)
    assert same(io.load(tmp_path / "py.nrrd"), want)
    assert rep["axis_found"] == 1
    # the same from arrays (the axis found again; the report says so)
    slices, rep2 = pyctrecon.fbp_stream(io.load(f"{h5}:/exchange/data"), angles=angles,
                                        flat=flat_avg, dark=dark_avg, corrections=corr, ctx=cpu)
    assert same(slices, want) and rep2["axis"] == rep["axis"] and rep2["axis_found"] == 1


def test_iterate(small_cone, cli, cpu, tmp_path):
    g_file, proj, truth = small_cone
    for alg, extra, kw in (("sirt", ["--nonneg"], {"nonneg": True}),
                           ("cgls", [], {}),
                           ("os-sart", ["--subsets", 4], {"subsets": 4}),
                           ("fista-tv", ["--tv-weight", 0.001], {"tv_weight": 0.001})):
        out = tmp_path / f"cli_{alg}.nrrd"
        cli("iterate", "--geometry", g_file, "--projections", proj, "--out", out, "--algorithm",
            alg, "--iterations", 3, "--device", "cpu", *extra)
        g = pyctrecon.ConeGeometry.load(g_file)
        vol, rep = pyctrecon.iterate(pyctrecon.Projector(g, ctx=cpu), io.load(proj), algorithm=alg,
                                     iterations=3, return_report=True, **kw)
        assert same(vol, io.load(out)), alg
        assert rep["iterations"] == 3 and rep["stop"] == "iterations"


def test_iterate_parallel(tmp_path, cli, cpu):
    pg, sino = _parallel_data(tmp_path)
    cli("iterate", "--sinograms", tmp_path / "sino.nrrd", "--out", tmp_path / "cli.nrrd",
        "--algorithm", "sirt", "--iterations", 4, "--device", "cpu")
    proj = pyctrecon.Projector(pg, nslices=sino.shape[0], ctx=cpu)
    assert same(pyctrecon.iterate(proj, sino, iterations=4), io.load(tmp_path / "cli.nrrd"))


PET = dict(nx=32, ny=32, nz=8, voxel=8.0, n_azimuth=8, n_copolar=1)


def test_pet_simulate_and_recon(tmp_path, cli, cpu):
    d = tmp_path / "data.json"
    cli("pet", "simulate", "--out", d, "--lattice", "32x32x8", "--voxel", 8, "--views", "8x1",
        "--events", "2e5", "--device", "cpu", "--quiet")
    cli("pet", "recon", "--data", d, "--out", tmp_path / "cli.nrrd", "--iterations", 2,
        "--device", "cpu", "--quiet")
    system = pyctrecon.PetSystem(**PET)
    phantom = pyctrecon.PetPhantom.with_spheres(4.0)
    h = pyctrecon.pet_simulate(system, phantom, events=2e5, ctx=cpu)
    data = pyctrecon.PetHisto.load(d)
    assert same(h.counts, data.counts) and h.events == data.events
    img = pyctrecon.PetProjector(system, ctx=cpu).reconstruct(data, iterations=2)
    assert same(img, io.load(tmp_path / "cli.nrrd"))
    # save / load round trip of the histo-images
    h.save(tmp_path / "mine.json")
    assert same(pyctrecon.PetHisto.load(tmp_path / "mine.json").counts, h.counts)
