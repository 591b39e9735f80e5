"""The wrapped calls without a command of their own in the tool, each checked
against an independent computation (numpy, an identity the library
guarantees, or another wrapped call that the tool comparisons cover).
Tolerances are argued where the two sides round differently."""
import numpy as np
import pytest

import pyctrecon
from pyctrecon import io

from conftest import same

CPU = None


def cpu():
    global CPU
    if CPU is None:
        CPU = pyctrecon.Context("cpu")
    return CPU


def small_geometry(nviews=24, n=16):
    return pyctrecon.ConeGeometry.circular(sid=80, sdd=120, nu=32, nv=28, nviews=nviews,
                                           volume=pyctrecon.Volume.cube(n))


# ---- library information, contexts, helpers -------------------------------------

def test_information_and_contexts():
    assert pyctrecon.__version__ == pyctrecon.version() and pyctrecon.version().count(".") == 2
    assert {"tiff", "png"} <= pyctrecon.features()
    assert pyctrecon.cuda_device_count() >= 0
    c = pyctrecon.Context("cpu", threads=1, tuning={"direct_io": "off", "tune": False})
    assert c.device == "cpu" and c.devices == []
    with pytest.raises(pyctrecon.InvalidArgumentError, match="bp_slices"):
        pyctrecon.Context("cpu", tuning={"bp_slices": "many"})
    with pytest.raises(ValueError, match="device"):
        pyctrecon.Context("tpu")
    assert pyctrecon.size_parse("8G") == 8 << 30 and pyctrecon.size_parse("512MiB") == 512 << 20


def test_volume_compare_against_numpy():
    rng = np.random.default_rng(1)
    truth = np.zeros((8, 9, 10), np.float32)
    truth[2:6, 2:7, 3:8] = 1.0
    rec = truth + rng.normal(0, 0.1, truth.shape).astype(np.float32)
    e = pyctrecon.volume_compare(rec, truth)
    obj = truth != 0
    rmse = np.sqrt(np.mean((rec[obj].astype(np.float64) - truth[obj]) ** 2))
    assert e["n_object"] == obj.sum()
    assert e["rmse_object"] == pytest.approx(rmse, rel=1e-9)
    assert e["max_abs"] == pytest.approx(np.abs(rec - truth)[obj].max(), rel=1e-6)


# ---- geometry and phantoms ------------------------------------------------------

def test_geometry_accessors():
    g = small_geometry()
    nu, nv, du, dv = g.detector
    assert (nu, nv, du, dv) == (32, 28, 1.0, 1.0) and g.nviews == 24 and g.is_circular
    np.testing.assert_allclose(g.source(0), [80, 0, 0], atol=1e-12)
    m = g.matrices
    g2 = pyctrecon.ConeGeometry.from_matrices(m, nu=32, nv=28, volume=g.volume)
    # canonical matrices given back as they are, and the orbit recognised as circular
    assert same(g2.matrices, m) and g2.is_circular
    g3 = g.copy()
    g3.volume = pyctrecon.Volume(8, 8, 4, voxel=2.0)
    assert g3.volume_shape == (4, 8, 8) and g.volume_shape == (16, 16, 16)
    with pytest.raises(IndexError):
        g.matrix(24)
    pg = pyctrecon.ParallelGeometry(20, angles=[0, 45, 90, 135], axis=10.25, nx=16)
    assert pg.nangles == 4 and pg.axis == 10.25 and pg.nx == 16 and pg.ny == 20
    assert same(pg.angles, np.array([0, 45, 90, 135.0]))
    assert pg.weight(0) == pytest.approx(np.pi / 4)


def test_phantom_queries():
    e = [{"density": 2.0, "ax": 3.0, "ay": 3.0, "az": 3.0}]
    ph = pyctrecon.Phantom(e)
    assert len(ph) == 1 and ph.ellipsoids[0, 0] == 2.0
    # a sphere of radius 3 and density 2: the line through its centre integrates to 12
    assert ph.line_integral([0, 0, -10], [0, 0, 1]) == pytest.approx(12.0)
    assert ph.density([0, 0, 0]) == 2.0 and ph.density([0, 0, 3.5]) == 0.0
    with pytest.raises(ValueError, match="unknown ellipsoid keys"):
        pyctrecon.Phantom([{"density": 1, "radius": 2}])
    pg = pyctrecon.ParallelGeometry(32, 8)
    s = ph.slice(pg, 0.0, supersample=2)
    assert s.shape == (32, 32) and s.max() == 2.0


# ---- FDK pieces -------------------------------------------------------------------

def test_fdk_halves_and_backprojector():
    g = small_geometry()
    ph = pyctrecon.Phantom.shepp_logan(7.0)
    p = ph.project(g, ctx=cpu())
    f = pyctrecon.fdk_filter(p, g, ctx=cpu())
    assert not np.shares_memory(f, p)
    vol = pyctrecon.fdk_backproject(f, g, ctx=cpu())
    full = pyctrecon.fdk(p, g, ctx=cpu())
    # the same filtered views backprojected by the incremental backprojector
    bp = pyctrecon.Backprojector(g, ctx=cpu())
    bp.add(np.arange(g.nviews), f)
    inc = bp.read()
    ref = pyctrecon.backproject_reference(g, np.arange(g.nviews), f, ctx=cpu())
    scale = np.abs(ref).max()
    # float32 sums of 24 terms against double: a few ulps of the largest value
    assert np.abs(inc - ref).max() <= 1e-5 * scale
    assert np.abs(vol - ref).max() <= 1e-5 * scale
    # the halves are FDK (the same weights and filter)
    assert np.abs(full - vol).max() <= 1e-5 * np.abs(full).max()
    bp.reset()
    assert not bp.read().any()


def test_plans_and_budgets():
    g = small_geometry()
    plan = pyctrecon.plan_fdk(g, host_budget="1G", max_slab_slices=4)
    assert plan["nslabs"] == 4 and "subvolume" in plan["description"]
    with pytest.raises(pyctrecon.OutOfMemoryError, match="host"):
        pyctrecon.plan_fdk(g, host_budget=1000)
    gpu, host = pyctrecon.memory_budgets(cpu())
    assert gpu == 0 and host > 0 and cpu().memory_budgets()[1] > 0
    cpu().release_memory()  # nothing kept on the CPU: a no-op
    assert pyctrecon.ramp_response("ram-lak", 1.0, 0.25) > pyctrecon.ramp_response("hann", 1.0, 0.25)


# ---- parallel beam ----------------------------------------------------------------

def parallel_case(nbins=40, nangles=50, nslices=3, axis=None):
    pg = pyctrecon.ParallelGeometry(nbins, nangles, axis=axis)
    sino = pyctrecon.Phantom.shepp_logan(16.0).sinogram(pg, np.linspace(-2, 2, nslices))
    return pg, sino


def test_fbp_halves():
    pg, sino = parallel_case()
    full = pyctrecon.fbp(sino, pg, ctx=cpu())
    f = pyctrecon.fbp_filter(sino, pg, ctx=cpu())
    halves = pyctrecon.fbp_backproject(f, pg, ctx=cpu())
    ref = pyctrecon.fbp_backproject_reference(f, pg)
    assert np.abs(full - halves).max() <= 1e-5 * np.abs(full).max()
    assert np.abs(halves - ref).max() <= 1e-5 * np.abs(ref).max()
    res, counts = pyctrecon.fbp(sino, pg, return_counts=True, ctx=cpu())
    assert same(res, full) and counts["input"] == 0
    bad = sino.copy()
    bad[0, 0, 0] = np.nan
    with pytest.raises(pyctrecon.FormatError, match="strict"):
        pyctrecon.fbp(bad, pg, strict=True, ctx=cpu())
    _, counts = pyctrecon.fbp(bad, pg, return_counts=True, ctx=cpu())
    assert counts["input"] == 1


def test_fbp_gpu_budget(monkeypatch):
    # fbp, fbp_backproject and fbp_projections take ctr_fbp_options.gpu_budget
    # as fbp_stream does: the keyword reaches the options struct, bytes or text
    from pyctrecon import parbeam
    pg, sino = parallel_case()
    f = pyctrecon.fbp_filter(sino, pg, ctx=cpu())
    proj = np.ascontiguousarray(np.exp(-sino).transpose(1, 0, 2), np.float32)
    flat = np.ones(proj.shape[1:], np.float32)
    seen = []
    real = parbeam._fbp_options

    def spy(*args, **kwargs):
        o = real(*args, **kwargs)
        seen.append(int(o.gpu_budget))
        return o
    monkeypatch.setattr(parbeam, "_fbp_options", spy)
    full = pyctrecon.fbp(sino, pg, ctx=cpu())
    halves = pyctrecon.fbp_backproject(f, pg, ctx=cpu())
    # the CPU ignores it: the same slices under a budget of one byte
    assert same(pyctrecon.fbp(sino, pg, gpu_budget=1, ctx=cpu()), full)
    assert same(pyctrecon.fbp_backproject(f, pg, gpu_budget="4G", ctx=cpu()), halves)
    pyctrecon.fbp_projections(proj, pg, flat, gpu_budget="512MiB", ctx=cpu())
    pyctrecon.fbp(sino, pg, gpu_budget=0, ctx=cpu())
    assert seen == [0, 0, 1, 4 << 30, 512 << 20, 0]
    # errors name the keyword
    calls = [lambda **k: pyctrecon.fbp(sino, pg, ctx=cpu(), **k),
             lambda **k: pyctrecon.fbp_backproject(f, pg, ctx=cpu(), **k),
             lambda **k: pyctrecon.fbp_projections(proj, pg, flat, ctx=cpu(), **k)]
    for call in calls:
        with pytest.raises(ValueError, match=r"gpu_budget=-5: expected a byte count >= 0"):
            call(gpu_budget=-5)
        with pytest.raises(TypeError, match=r"gpu_budget=1.5: expected a byte count"):
            call(gpu_budget=1.5)
        with pytest.raises(ValueError, match=r"gpu_budget"):
            call(gpu_budget="lots")


def test_flatfield_against_numpy():
    pg, sino = parallel_case()
    flat = np.full((3, 40), 1000.0, np.float32)
    dark = np.full((3, 40), 10.0, np.float32)
    proj = (dark + (flat - dark) * np.exp(-sino.transpose(1, 0, 2))).astype(np.float32)
    s, clamped = pyctrecon.flatfield_sinograms(proj, flat, dark)
    want = -np.log(np.maximum((proj - dark) / (flat - dark), 1e-6)).transpose(1, 0, 2)
    # float32 -log of the same quotient: a few ulps of the largest value
    assert clamped == 0 and np.abs(s - want).max() <= 1e-5 * np.abs(want).max()
    rec = pyctrecon.fbp_projections(proj, pg, flat, dark, ctx=cpu())
    rec2 = pyctrecon.fbp(s, pg, ctx=cpu())
    assert np.abs(rec - rec2).max() <= 1e-4 * np.abs(rec2).max()
    imgs = np.stack([flat, flat + 2])
    assert np.allclose(pyctrecon.flatfield_average(imgs), flat + 1)


def test_corrections():
    pg, sino = parallel_case(axis=20.5)
    axis, method = pyctrecon.center_find(sino, pg, method="vo")
    # the phantom's sinogram is consistent about 20.5 bins: found within half a bin
    assert method == "vo" and abs(axis - 20.5) <= 0.5
    spiky = sino.copy()
    spiky[1, 10, 20] += 50.0
    c = pyctrecon.Corrections(dezinger=5.0)
    out, n = pyctrecon.sinogram_dezinger(spiky, c, ctx=cpu())
    assert out is spiky and n >= 1 and out[1, 10, 20] < 10.0
    # a stripe (a detector bin 0.5 too high at every angle) on a smooth sinogram
    smooth = np.tile(np.linspace(1.0, 2.0, 40, dtype=np.float32), (2, 50, 1))
    striped = smooth.copy()
    striped[:, :, 15] += 0.5
    pyctrecon.sinogram_remove_stripes(striped, pyctrecon.Corrections(stripe="sorting"), ctx=cpu())
    assert np.abs(striped - smooth)[:, :, 15].max() < 0.05
    c = pyctrecon.Corrections(paganin_delta_beta=100.0, energy_kev=20.0, distance_mm=100.0)
    assert pyctrecon.paganin_response(c, 0.001, 0.0, 0.0) == 1.0
    assert pyctrecon.paganin_response(c, 0.001, 0.25, 0.0) < 1.0
    assert pyctrecon.paganin_margin(c, 0.001) > 0 and pyctrecon.paganin_margin(pyctrecon.Corrections(), 0.001) == 0
    with pytest.raises(ValueError, match="stripe"):
        pyctrecon.Corrections(stripe="rings")._c()


def test_stitch_360():
    angles = np.arange(0, 360, 4.0)
    pg = pyctrecon.ParallelGeometry(30, angles=angles, axis=26.0)
    sino = pyctrecon.Phantom.shepp_logan(20.0).sinogram(pg, [0.0])
    s2, g2 = pyctrecon.stitch_360(sino, pg)
    assert g2.nangles == 45 and s2.shape == (1, 45, g2.nbins) and g2.nbins > 30


# ---- iterative --------------------------------------------------------------------

def test_projector_adjoint_identity():
    for geom, kw in ((small_geometry(), {}), (pyctrecon.ParallelGeometry(24, 18), {"nslices": 3})):
        pr = pyctrecon.Projector(geom, ctx=cpu(), **kw)
        rng = np.random.default_rng(2)
        x = rng.random(pr.volume_shape, dtype=np.float32)
        y = rng.random(pr.projection_shape, dtype=np.float32)
        ax = pr.forward(x)
        aty = pr.adjoint(y)
        lhs, rhs = np.vdot(ax.astype(np.float64), y), np.vdot(x.astype(np.float64), aty)
        # matched pair: equal to float rounding of sums of ~1e4 terms
        assert lhs == pytest.approx(rhs, rel=1e-5)
    assert pr.matched and not pyctrecon.Projector(small_geometry(), pair="fast", ctx=cpu()).matched


def test_projector_workers():
    # the split's result does not depend on the worker count (the CPU runs one; the GPU
    # variant is test_gpu_iterate); a count beyond 16 names the keyword
    g = small_geometry()
    x = np.random.default_rng(3).random(pyctrecon.Projector(g, ctx=cpu()).volume_shape,
                                        dtype=np.float32)
    one = pyctrecon.Projector(g, ctx=cpu()).forward(x)
    assert np.array_equal(pyctrecon.Projector(g, workers=2, ctx=cpu()).forward(x), one)
    with pytest.raises(ValueError, match="workers"):
        pyctrecon.Projector(g, workers=17, ctx=cpu())


def test_iterate_callback_checkpoint_and_plan(tmp_path):
    g = small_geometry()
    ph = pyctrecon.Phantom.shepp_logan(7.0)
    p = ph.project(g, ctx=cpu())
    truth = ph.voxelize(g, ctx=cpu())
    pr = pyctrecon.Projector(g, ctx=cpu())
    infos = []
    vol, rep = pyctrecon.iterate(pr, p, iterations=10, truth=truth, return_report=True,
                                 callback=lambda i: (infos.append(i), i["iteration"] == 3)[1])
    assert rep["stop"] == "callback" and rep["iterations"] == 3 and len(infos) == 3
    assert infos[-1]["error"] < infos[0]["error"] < 1.0
    straight = pyctrecon.iterate(pr, p, algorithm="cgls", iterations=4)
    ck = tmp_path / "run.ckpt"
    pyctrecon.iterate(pr, p, algorithm="cgls", iterations=2, checkpoint=ck)
    again = []
    resumed, rep = pyctrecon.iterate(pr, p, algorithm="cgls", iterations=4, checkpoint=ck,
                                     resume=True, return_report=True, callback=again.append)
    assert rep["resumed"] == 2 and same(resumed, straight)
    # the checkpoint's history first, then the new iterations
    assert [(i["iteration"], i["resumed"]) for i in again] == [(1, True), (2, True), (3, False),
                                                                (4, False)]
    # one resume semantics (fdk's and fbp's journals too): the checkpoint stays after success;
    # a run without resume is refused naming resume and the file, which it leaves alone; and
    # resume without a checkpoint is refused naming it
    kept = ck.read_bytes()
    with pytest.raises(pyctrecon.InvalidArgumentError, match="holds the state of an earlier run") as e:
        pyctrecon.iterate(pr, p, algorithm="cgls", iterations=4, checkpoint=ck)
    assert e.value.keyword == "resume" and str(ck) in str(e.value) and ck.read_bytes() == kept
    ck.unlink()
    with pytest.raises(pyctrecon.FileIOError, match="cannot resume: no checkpoint") as e:
        pyctrecon.iterate(pr, p, algorithm="cgls", iterations=4, checkpoint=ck, resume=True)
    assert e.value.keyword == "resume" and not ck.exists()
    start = pyctrecon.iterate(pr, p, iterations=1, init=straight)
    assert not same(start, pyctrecon.iterate(pr, p, iterations=1))
    plan = pyctrecon.plan_iterate(pr, host_budget="1G")
    assert plan["placement"] == "host" and plan["description"]
    pyctrecon.iterate_plot(tmp_path / "conv.png", [1.0, 0.5, 0.25], [1.0, 0.7, 0.6], "test")
    assert (tmp_path / "conv.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


# ---- PET ----------------------------------------------------------------------------

def test_pet_pieces(tmp_path):
    system = pyctrecon.PetSystem(40, 40, 8, 8.0, 6, 1)
    assert system.nviews == 6 and system.image_shape == (8, 40, 40) and system.kernel_invariant
    info = system.view_info(0)
    assert info["support"] > 0 and len(info["dir"]) == 3
    assert system.radial_fwhm(0.0) == pytest.approx(5.8)
    phantom = pyctrecon.PetPhantom.with_spheres(4.0)
    assert len(phantom.spheres) == 6
    img = phantom.voxelize(system, 2)
    m = pyctrecon.pet_metrics(system, phantom, img)
    # the truth's CRC: 1 up to partial volume of 10 mm spheres on 8 mm voxels
    assert 0.2 < m["crc"] <= 1.05 and len(m["crc_sphere"]) == 6
    pp = pyctrecon.PetProjector(system, ctx=cpu())
    rng = np.random.default_rng(3)
    x = rng.random(system.image_shape, dtype=np.float32)
    y = rng.random(system.image_shape, dtype=np.float32)
    lhs = np.vdot(pp.forward(2, x).astype(np.float64), y)
    rhs = np.vdot(x.astype(np.float64), pp.back(2, y))
    assert lhs == pytest.approx(rhs, rel=1e-5)  # the exact adjoint, float rounding
    h = pyctrecon.pet_simulate(system, phantom, events=5e4, ctx=cpu())
    seen = []
    out, t = pyctrecon.pet_reconstruct(pp, h, iterations=3, return_timings=True,
                                       callback=lambda it, im: seen.append(float(im.sum())))
    assert len(seen) == 3 and out.shape == system.image_shape and t["total"] >= 0
    # out= gets the result (from the uniform start, as without it); a start is not modified
    buf = np.full(system.image_shape, np.nan, np.float32)
    assert pyctrecon.pet_reconstruct(pp, h, iterations=3, out=buf) is buf
    assert buf.tobytes() == out.tobytes()
    start = np.ones(system.image_shape, np.float32)
    res = pyctrecon.pet_reconstruct(pp, h, iterations=1, image=start, out=buf)
    assert res is buf and (start == 1).all()
    fft = pyctrecon.pet_project_fft(system, 1, x, pad=2, ctx=cpu())
    assert pyctrecon.pet_project_fft(system, 1, x, pad=2, out=buf, ctx=cpu()) is buf
    assert buf.tobytes() == fft.tobytes()
    pyctrecon.pet_plot_crc_noise(tmp_path / "crc.png", [0.1, 0.2], [0.5, 0.6], "crc")
    assert (tmp_path / "crc.png").exists()
    hh = pyctrecon.PetHisto.create(system, with_factors=True)
    assert hh.counts.shape == (6, 8, 40, 40) and hh.factors is not None and not hh.counts.any()


# ---- RabbitCT -----------------------------------------------------------------------

def test_rabbitct_round_trip(tmp_path):
    rng = np.random.default_rng(4)
    mats = rng.random((3, 12))
    imgs = rng.random((3, 6, 5), dtype=np.float32)
    ref = rng.integers(0, 4000, (16, 16, 16)).astype(np.uint16)
    path = tmp_path / "r.rct"
    with pyctrecon.RabbitCTWriter(path, width=5, height=6, nviews=3, hu0=1000, hu1=-1000,
                                  ref_sizes=[16]) as w:
        for m, im in zip(mats, imgs):
            w.write_view(m, im)
        w.write_reference(16, ref)
    with pyctrecon.RabbitCTFile(path) as r:
        h = r.header
        assert (h["width"], h["height"], h["nviews"], h["ref_sizes"]) == (5, 6, 3, [16])
        for i in range(3):
            m, im = r.read_view(i)
            assert same(m, mats[i]) and same(im, imgs[i])
        assert same(r.read_reference(16), ref)
    w = pyctrecon.RabbitCTWriter(tmp_path / "gone.rct", width=5, height=6, nviews=3)
    w.abort()
    assert not (tmp_path / "gone.rct").exists()
    assert pyctrecon.rabbitct_weight(mats[0]) == pytest.approx(1.0 / mats[0][11] ** 2)
    f = np.array([[[-1.0, 0.5, 10.0]]], np.float32)
    assert same(pyctrecon.rabbitct_to_hu(f, 1000, 24), np.array([[[0, 524, 4095]]], np.uint16))
    vol = np.full((4, 4, 4), 1.0, np.float32)
    s = pyctrecon.rabbitct_score(vol, pyctrecon.rabbitct_to_hu(vol, 1000, 0), 1000, 0)
    assert s["rmse"] == 0.0 and s["max_error"] == 0.0


def test_rabbitct_geometry_matches_matrices():
    # a RabbitCT matrix A (column-major 3x4) is the projection matrix itself
    g = small_geometry(nviews=4, n=8)
    P = g.matrices
    A = np.stack([m.T.ravel() for m in P])  # element (r, c) at c * 3 + r
    gr = pyctrecon.ConeGeometry.rabbitct(A, width=32, height=28, L=8, R_L=1.0, O_L=-3.5)
    assert gr.nviews == 4 and gr.volume_shape == (8, 8, 8)
    pr = pyctrecon.Projector(gr, ctx=cpu())
    assert pr.projection_shape == (4, 28, 32)


# ---- file I/O -----------------------------------------------------------------------

@pytest.mark.parametrize("name", ["a.raw", "a.tif", "a_%03d.tif", "a.nrrd", "a.nhdr"])
@pytest.mark.parametrize("dtype", [np.float32, np.uint16, np.float16])
def test_io_round_trip(tmp_path, name, dtype):
    if name == "a.tif" and dtype == np.float16:
        pytest.skip("TIFF stores float32 and uint16")
    rng = np.random.default_rng(5)
    a = (rng.random((3, 7, 5)) * 1000).astype(dtype)
    path = str(tmp_path / name)
    raw = dict(raw_shape=a.shape, raw_dtype=dtype) if name.endswith(".raw") else {}
    try:
        io.save(path, a, spacing=(0.5, 0.5, 2.0))
    except pyctrecon.UnsupportedError:
        pytest.skip(f"{name} does not store {np.dtype(dtype).name}")
    b, info = io.load(path, with_info=True, **raw)
    assert same(b, a) and info.shape == a.shape and info.dtype == np.dtype(dtype).name
    with io.StackReader(path, **raw) as r:
        assert same(r.read_rows(2, 3, first=1, n=2, dtype=None), a[1:3, 2:5])
        assert same(r.read(1, 1, np.float32), a[1:2].astype(np.float32))


def test_stack_writer_commit_and_abort(tmp_path):
    info = io.StackInfo(width=4, height=3, count=2, dtype="float32")
    with io.StackWriter(tmp_path / "w.nrrd", info) as w:
        w.write(1, np.ones((3, 4)))
        w.write(0, np.zeros((1, 3, 4)))
    assert same(io.load(tmp_path / "w.nrrd"), np.stack([np.zeros((3, 4)), np.ones((3, 4))]).astype(np.float32))
    with pytest.raises(RuntimeError):
        with io.StackWriter(tmp_path / "x.nrrd", info) as w:
            w.write(0, np.ones((3, 4)))
            raise RuntimeError("stop")
    assert not (tmp_path / "x.nrrd").exists()
    assert io.format_guess("a_%04d.tif") == "tiff-stack" and io.format_guess("b.nhdr") == "nrrd"


def test_format_info():
    raw, tiff = io.format_info("raw"), io.format_info("tiff")
    assert raw["name"] == "raw" and ".raw" in raw["extensions"] and raw["resumable"]
    assert raw["many_ranks"] and not raw["stack_of_files"] and "float16" in raw["dtypes"]
    assert raw["partial"] == "OUT.partial"
    assert tiff["in_order"] and not tiff["resumable"] and tiff["partial"] is None
    assert io.format_info("tiff-stack")["stack_of_files"]
    assert io.format_info("nrrd")["dtypes"] == ["float32", "uint16"]
    h5 = io.format_info("hdf5")
    assert h5["adds_to_file"] and not h5["resumable"] and not h5["many_ranks"]
    assert raw["needs_hint"] and not tiff["needs_hint"] and h5["dataset_path"]
    assert io.format_info("tiff-stack")["title"] == "TIFF stack"
    zarr = io.format_info("zarr")
    assert zarr["extensions"] == [".zarr"] and zarr["title"] == "OME-Zarr" and not zarr["in_order"]
    assert zarr["resumable"] and not zarr["many_ranks"] and "uint16" in zarr["dtypes"]
    assert io.format_guess("v.zarr") == "zarr"
    with pytest.raises(pyctrecon.CtreconError, match="expected a format"):
        io.format_info("auto")


def test_png(tmp_path):
    vol = np.random.default_rng(6).random((6, 7, 8), dtype=np.float32)
    io.png_preview(tmp_path / "v", vol)
    io.png_preview_planes(tmp_path / "p", vol[3], vol[:, 3], vol[:, :, 4])
    io.png_write_gray(tmp_path / "g.png", vol[0], 0.0, 1.0)
    for f in ("v_xy.png", "v_xz.png", "v_yz.png", "p_xy.png", "g.png"):
        assert (tmp_path / f).read_bytes()[:4] == b"\x89PNG"
    # the figures (ctr_png_preview_figure): the same files, larger (enlarged planes,
    # colourbar, scale bar); an existing one refused, a bad voxel size named
    io.png_preview_figure(tmp_path / "f", vol, voxel=(0.5, 0.5, 2.0), units="1/mm")
    for f in ("f_xy.png", "f_xz.png", "f_yz.png"):
        b = (tmp_path / f).read_bytes()
        assert b[:4] == b"\x89PNG" and int.from_bytes(b[16:20], "big") >= 256  # width
    with pytest.raises(pyctrecon.InvalidArgumentError, match="exists"):
        io.png_preview_figure(tmp_path / "f", vol)
    with pytest.raises(pyctrecon.InvalidArgumentError, match="expected all three > 0"):
        io.png_preview_figure(tmp_path / "h", vol, voxel=(1.0, 0.0, 1.0))


# ---- outputs are never replaced unless asked (overwrite=True) -------------------------

def _refused(call, path, *files):
    """call() is refused because `path` exists: InvalidArgumentError whose
    .keyword is "overwrite" and .value the path, naming it; every file of
    `files` (default: path) byte-identical, no temporary left."""
    files = files or (path,)
    before = [f.read_bytes() for f in files]
    with pytest.raises(pyctrecon.InvalidArgumentError, match="set overwrite to replace it") as e:
        call()
    assert (e.value.field, e.value.keyword, e.value.value) == ("overwrite", "overwrite", str(path))
    assert [f.read_bytes() for f in files] == before
    assert not list(path.parent.glob("*.tmp.*"))


def test_overwrite(tmp_path):
    a = np.arange(3 * 7 * 5, dtype=np.float32).reshape(3, 7, 5)
    for name in ("s.nrrd", "s.raw", "s.tif", "st_%02d.tif"):
        path = tmp_path / name
        io.save(path, a)
        files = sorted(tmp_path.glob("st_*.tif")) if "%" in name else [path]
        _refused(lambda: io.save(path, a + 1), path, *files)
        _refused(lambda: io.StackWriter(path, io.StackInfo(5, 7, 3, "float32")), path, *files)
        io.save(path, a + 1, overwrite=True)
        raw = dict(raw_shape=a.shape, raw_dtype="float32") if name.endswith(".raw") else {}
        assert same(io.load(path, **raw), a + 1)
    g = small_geometry()
    g.save(tmp_path / "g.json")
    _refused(lambda: g.save(tmp_path / "g.json"), tmp_path / "g.json")
    g.save(tmp_path / "g.json", overwrite=True)
    io.png_write_gray(tmp_path / "g.png", a[0])
    _refused(lambda: io.png_write_gray(tmp_path / "g.png", a[1]), tmp_path / "g.png")
    io.png_write_gray(tmp_path / "g.png", a[1], overwrite=True)
    pyctrecon.iterate_plot(tmp_path / "c.png", [1.0, 0.5])
    _refused(lambda: pyctrecon.iterate_plot(tmp_path / "c.png", [1.0, 0.4]), tmp_path / "c.png")
    # streamed FDK and FBP: refused before anything is read; replaced when asked
    proj = pyctrecon.Phantom.shepp_logan(6.0).project(g, progress=False)
    io.save(tmp_path / "p.nrrd", proj)
    pyctrecon.fdk_file(tmp_path / "p.nrrd", g, tmp_path / "v.nrrd", ctx=cpu(), progress=False)
    _refused(lambda: pyctrecon.fdk_file(tmp_path / "p.nrrd", g, tmp_path / "v.nrrd", ctx=cpu(),
                                        progress=False), tmp_path / "v.nrrd")
    before = (tmp_path / "v.nrrd").read_bytes()
    pyctrecon.fdk_file(tmp_path / "p.nrrd", g, tmp_path / "v.nrrd", window="hann", overwrite=True,
                       ctx=cpu(), progress=False)
    assert (tmp_path / "v.nrrd").read_bytes() != before
    sino = np.random.default_rng(3).random((2, 12, 16), dtype=np.float32)
    io.save(tmp_path / "sino.nrrd", sino)
    pyctrecon.fbp_stream(tmp_path / "sino.nrrd", tmp_path / "r.raw", sinograms=True, axis="center",
                         ctx=cpu(), progress=False)
    _refused(lambda: pyctrecon.fbp_stream(tmp_path / "sino.nrrd", tmp_path / "r.raw", sinograms=True,
                                          axis="center", ctx=cpu(), progress=False),
             tmp_path / "r.raw")
    pyctrecon.fbp_stream(tmp_path / "sino.nrrd", tmp_path / "r.raw", sinograms=True, axis="center",
                         overwrite=True, ctx=cpu(), progress=False)


def test_hdf5_angle_units_written_by_h5py(tmp_path):
    # h5py writes a str attribute as a variable-length UTF-8 string, which the reader once
    # failed to read ("cannot be read": HDF5 converts no ASCII to UTF-8)
    h5py = pytest.importorskip("h5py", reason="h5py is not installed")
    path = tmp_path / "theta.h5"
    with h5py.File(path, "w") as f:
        f["/exchange/theta"] = np.array([0.0, 0.5, 1.0])
        f["/exchange/theta"].attrs["units"] = "radians"
    assert np.allclose(pyctrecon.io.hdf5_read_angles(path), np.degrees([0.0, 0.5, 1.0]), rtol=1e-15)


# ---- angles in radians (the library's one check, ctr_angles_look_like_radians) ----

def test_angles_in_radians_warn_and_convert():
    import warnings
    rad = np.linspace(0, np.pi, 90, endpoint=False)
    with pytest.warns(UserWarning, match=r"ParallelGeometry: the 90 angles span only 3.107 degrees: "
                                         r"they look like radians.*angle_units='rad'.*angle_units='deg'"):
        pyctrecon.ParallelGeometry(64, angles=rad)
    with pytest.warns(UserWarning, match="look like radians"):
        pyctrecon.ParallelGeometry(64, 90, angle_range=3.14159)
    with pytest.warns(UserWarning, match="ConeGeometry.circular: .* look like radians"):
        pyctrecon.ConeGeometry.circular(sid=80, sdd=120, nu=32, nv=28, volume=pyctrecon.Volume.cube(16),
                                        angles=np.linspace(0, 2 * np.pi, 24, endpoint=False))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        g = pyctrecon.ParallelGeometry(64, angles=rad, angle_units="rad")
        assert np.allclose(g.angles, np.linspace(0, 180, 90, endpoint=False))
        g = pyctrecon.ParallelGeometry(64, 90, angle_range=np.pi, angle_units="rad")
        assert np.allclose(g.angles, np.linspace(0, 180, 90, endpoint=False))
        pyctrecon.ParallelGeometry(64, 90, angle_range=3.14159, angle_units="deg")
        pyctrecon.ParallelGeometry(64, angles=np.linspace(0, 180, 90))
        c = pyctrecon.ConeGeometry.circular(sid=80, sdd=120, nu=32, nv=28,
                                            volume=pyctrecon.Volume.cube(16), angle_units="rad",
                                            angles=np.linspace(0, 2 * np.pi, 24, endpoint=False))
        d = pyctrecon.ConeGeometry.circular(sid=80, sdd=120, nu=32, nv=28, nviews=24,
                                            volume=pyctrecon.Volume.cube(16))
        assert np.allclose(c.matrices, d.matrices)
    with pytest.raises(ValueError, match="angle_units='grad'"):
        pyctrecon.ParallelGeometry(64, 9, angle_units="grad")
    # a JSON geometry written in radians (its own units are degrees)
    text = ('{"type": "circular", "sid": 500, "sdd": 1000, "detector": {"nu": 16, "nv": 8, '
            '"du": 1, "dv": 1}, "volume": {"size": [8, 8, 8], "voxel_mm": 1}, '
            '"angles": {"count": 90, "range_deg": %s}}')
    with pytest.warns(UserWarning, match=r"g.json: the 90 views span only 6.2\d* degrees: its angles "
                                         r"look like radians"):
        pyctrecon.ConeGeometry.from_json(text % "6.2832", "g.json")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        pyctrecon.ConeGeometry.from_json(text % "360", "g.json")


def test_iterate_pwls(tmp_path):
    # PWLS: weights from i0 equal the raw counts as an array (to float rounding); a penalty;
    # resume bit for bit; errors name the keyword
    g = small_geometry()
    ph = pyctrecon.Phantom.shepp_logan(7.0)
    p = ph.project(g, ctx=cpu())
    pr = pyctrecon.Projector(g, ctx=cpu())
    a = pyctrecon.iterate(pr, p, algorithm="pwls", i0=500.0, iterations=4)
    counts = (500.0 * np.exp(-p.astype(np.float64))).astype(np.float32)
    b = pyctrecon.iterate(pr, p, algorithm="pwls", weights=counts, iterations=4)
    assert np.linalg.norm(a - b) <= 1e-4 * np.linalg.norm(a)
    kw = dict(algorithm="pwls", i0=500.0, penalty="huber", beta=10.0, huber_delta=0.01)
    straight = pyctrecon.iterate(pr, p, iterations=5, **kw)
    ck = tmp_path / "pwls.ckpt"
    pyctrecon.iterate(pr, p, iterations=3, checkpoint=ck, **kw)
    resumed, rep = pyctrecon.iterate(pr, p, iterations=5, checkpoint=ck, resume=True,
                                     return_report=True, **kw)
    assert rep["resumed"] == 3 and same(resumed, straight)
    with pytest.raises(ValueError, match=r"weights has shape"):
        pyctrecon.iterate(pr, p, algorithm="pwls", weights=counts[:1])
    bad = counts.copy()
    bad[0, 0, 0] = -1
    with pytest.raises(pyctrecon.InvalidArgumentError, match="negative") as e:
        pyctrecon.iterate(pr, p, algorithm="pwls", weights=bad)
    assert e.value.keyword == "weights" and "ctr_" not in str(e.value)
    with pytest.raises(pyctrecon.InvalidArgumentError) as e:
        pyctrecon.iterate(pr, p, algorithm="pwls", beta=3.0)
    assert e.value.keyword == "beta" and "'none'" in str(e.value), str(e.value)
    with pytest.raises(ValueError, match="penalty"):
        pyctrecon.iterate(pr, p, algorithm="pwls", penalty="tv", beta=1.0)
    with pytest.raises(pyctrecon.InvalidArgumentError) as e:
        pyctrecon.iterate(pr, p, algorithm="sirt", i0=100.0)
    assert e.value.keyword == "i0" and "'pwls'" in str(e.value), str(e.value)
