"""GPU-machine checks (marker gpu; skipped without CuPy and a CUDA GPU):
CuPy arrays in and out of the projector, FDK, FBP, the iterative
algorithms and PET (projectors, FFT reference, reconstruction) without a
host copy (the pointers the library receives are the
CuPy arrays' own), the same bits as the host path. The binding's overhead is a benchmark, not a test
(python/bench/binding_overhead.py, against the C benchmark)."""
import numpy as np
import pytest

import pyctrecon
from pyctrecon import iterative

cupy = pytest.importorskip("cupy")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(pyctrecon.cuda_device_count() == 0, reason="no CUDA GPU")]


class Recorder:
    """Stands for the extension's lib in a module: records, for the calls it
    forwards whose names `record` accepts, the pointers `pointers(args)`
    gives."""

    def __init__(self, lib, record, pointers):
        self.lib, self.record, self.pointers, self.calls = lib, record, pointers, []

    def __getattr__(self, name):
        fn = getattr(self.lib, name)
        if not self.record(name):
            return fn

        def rec(*args):
            self.calls.append((name, self.pointers(args)))
            return fn(*args)
        return rec


def _ptr(ffi, p):
    return int(ffi.cast("uintptr_t", p))


def _projector(parallel, nu, nviews, nslices, n):
    """A CUDA projector: parallel beam (nu bins, nviews angles, nslices
    slices) or a circular cone beam onto an n^3 volume."""
    ctx = pyctrecon.Context("cuda")
    if parallel:
        return pyctrecon.Projector(pyctrecon.ParallelGeometry(nu, nviews), nslices=nslices, ctx=ctx)
    sid = 3.0 * nu + 12.0
    g = pyctrecon.ConeGeometry.circular(sid=sid, sdd=1.5 * sid, nu=nu, nv=nu, nviews=nviews,
                                        volume=pyctrecon.Volume.cube(n))
    return pyctrecon.Projector(g, ctx=ctx)


@pytest.mark.parametrize("parallel", [False, True])
def test_cupy_in_place(parallel, monkeypatch):
    pr = _projector(parallel, 96, 60, 5, 48)
    rng = np.random.default_rng(7)
    x_host = rng.random(pr.volume_shape, dtype=np.float32)
    y_host = pr.forward(x_host)
    back_host = pr.adjoint(y_host)
    x = cupy.asarray(x_host)
    y = cupy.empty(pr.projection_shape, cupy.float32)
    # the calls that move data (the others ask for shapes)
    rec = Recorder(iterative.lib, lambda n: n.endswith("_device"),
                   lambda args: [_ptr(iterative.ffi, a) for a in args[1:]])
    monkeypatch.setattr(iterative, "lib", rec)
    out = pr.forward(x, out=y)
    back = pr.adjoint(y)
    assert out is y and isinstance(back, cupy.ndarray)
    # they get the CuPy arrays' own pointers
    assert rec.calls == [("ctr_projector_forward_device", [x.data.ptr, y.data.ptr]),
                         ("ctr_projector_adjoint_device", [y.data.ptr, back.data.ptr])]
    assert cupy.asnumpy(y).tobytes() == y_host.tobytes()
    assert cupy.asnumpy(back).tobytes() == back_host.tobytes()


def test_dlpack_and_errors():
    ctx = pyctrecon.Context("cuda")
    pr = pyctrecon.Projector(pyctrecon.ParallelGeometry(32, 20), nslices=2, ctx=ctx)
    x = cupy.ones(pr.volume_shape, cupy.float32)

    class OnlyDlpack:
        def __init__(self, a):
            self.a = a

        def __dlpack__(self, **kw):
            return self.a.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.a.__dlpack_device__()
    y = pr.forward(OnlyDlpack(x))
    assert cupy.asnumpy(y).tobytes() == pr.forward(cupy.asnumpy(x)).tobytes()
    with pytest.raises(TypeError, match="float32"):
        pr.forward(x.astype(cupy.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        pr.forward(cupy.ones(pr.volume_shape[::-1], cupy.float32).T)
    # host-only functions keep refusing GPU arrays
    with pytest.raises(TypeError, match="GPU array"):
        pyctrecon.fbp_filter(cupy.ones((2, 20, 32), cupy.float32), pyctrecon.ParallelGeometry(32, 20))


@pytest.mark.parametrize("slabs", [0, 6])
def test_fdk_cupy_in_place(slabs, monkeypatch):
    from pyctrecon import conebeam
    ctx = pyctrecon.Context("cuda")
    g = pyctrecon.ConeGeometry.circular(sid=300, sdd=450, nu=96, nv=80, nviews=60,
                                        volume=pyctrecon.Volume.cube(32))
    proj_host = pyctrecon.Phantom.shepp_logan(14.0).project(g, ctx=ctx, progress=False)
    kw = {"max_slab_slices": slabs} if slabs else {}
    vol_host = pyctrecon.fdk(proj_host, g, ctx=ctx, progress=False, **kw)
    proj = cupy.asarray(proj_host)
    rec = Recorder(conebeam.lib, lambda n: n in ("ctr_fdk", "ctr_fdk_stream_memory"),
                   lambda args: [_ptr(conebeam.ffi, a.data) for a in args[3:5]])
    monkeypatch.setattr(conebeam, "lib", rec)
    vol = pyctrecon.fdk(proj, g, ctx=ctx, progress=False, **kw)
    assert isinstance(vol, cupy.ndarray) and vol.shape == g.volume_shape
    assert [p for _, p in rec.calls] == [[proj.data.ptr, vol.data.ptr]]
    assert cupy.asnumpy(vol).tobytes() == vol_host.tobytes()
    out = cupy.full(g.volume_shape, cupy.nan, cupy.float32)
    assert pyctrecon.fdk(proj, g, ctx=ctx, out=out, progress=False, **kw) is out
    assert cupy.asnumpy(out).tobytes() == vol_host.tobytes()
    with pytest.raises(TypeError, match="out is a GPU array"):
        pyctrecon.fdk(proj_host, g, ctx=ctx, out=out)
    with pytest.raises(pyctrecon.InvalidArgumentError, match="CPU context cannot read"):
        pyctrecon.fdk(proj, g, ctx=pyctrecon.Context("cpu"))


def _sinograms(g, ns, seed=3):
    return np.random.default_rng(seed).random(g.sinogram_shape(ns), dtype=np.float32)


@pytest.mark.parametrize("given_out", [False, True])
def test_fbp_cupy_in_place(given_out, monkeypatch):
    from pyctrecon import parbeam
    ctx = pyctrecon.Context("cuda")
    g = pyctrecon.ParallelGeometry(64, 90, nx=48, ny=48)
    s_host = _sinograms(g, 20)  # two chunks of the GPU pipeline
    ref = pyctrecon.fbp(s_host, g, ctx=ctx, kernel="alu", progress=False)
    s = cupy.asarray(s_host)
    out = cupy.full(g.slice_shape(20), cupy.nan, cupy.float32) if given_out else None
    rec = Recorder(parbeam.lib, lambda n: n == "ctr_fbp",
                   lambda args: [_ptr(parbeam.ffi, a.data) for a in args[3:5]])
    monkeypatch.setattr(parbeam, "lib", rec)
    res = pyctrecon.fbp(s, g, ctx=ctx, kernel="alu", out=out, progress=False)
    assert isinstance(res, cupy.ndarray) and res.shape == g.slice_shape(20)
    assert out is None or res is out
    assert rec.calls == [("ctr_fbp", [s.data.ptr, res.data.ptr])]
    assert cupy.asnumpy(res).tobytes() == ref.tobytes()
    monkeypatch.undo()
    # counts from the device's data policy, as on the host
    bad = s.copy()
    bad[0, 0, 0] = cupy.nan
    bad_host = cupy.asnumpy(bad)
    _, c_host = pyctrecon.fbp(bad_host, g, ctx=ctx, kernel="alu", return_counts=True, progress=False)
    r, c = pyctrecon.fbp(bad, g, ctx=ctx, kernel="alu", return_counts=True, progress=False)
    assert isinstance(r, cupy.ndarray) and c == c_host and c["input"] == 1
    with pytest.raises(TypeError, match="out is a GPU array"):
        pyctrecon.fbp(s_host, g, ctx=ctx, out=res)
    with pytest.raises(pyctrecon.InvalidArgumentError, match="CPU context cannot read"):
        pyctrecon.fbp(s, g, ctx=pyctrecon.Context("cpu"))
    with pytest.raises(TypeError, match="float32"):
        pyctrecon.fbp(s.astype(cupy.float64), g, ctx=ctx)
    with pytest.raises(ValueError, match="C-contiguous"):
        pyctrecon.fbp(cupy.asfortranarray(s), g, ctx=ctx)
    with pytest.raises(ValueError, match="expected"):
        pyctrecon.fbp(s[:, :, :32].copy(), g, ctx=ctx)


def test_fbp_backproject_cupy():
    ctx = pyctrecon.Context("cuda")
    g = pyctrecon.ParallelGeometry(64, 90, nx=48, ny=48)
    f_host = pyctrecon.fbp_filter(_sinograms(g, 3), g)
    ref = pyctrecon.fbp_backproject(f_host, g, ctx=ctx, kernel="alu")
    res = pyctrecon.fbp_backproject(cupy.asarray(f_host), g, ctx=ctx, kernel="alu")
    assert isinstance(res, cupy.ndarray)
    assert cupy.asnumpy(res).tobytes() == ref.tobytes()


def _budget_for(pr, placement):
    """A GPU budget whose SIRT plan (slabs of 2 slices) has `placement`."""
    b = 1 << 16
    while b < 1 << 32:
        try:
            d = iterative.plan_iterate(pr, device="cuda", gpu_budget=b, algorithm="sirt",
                                       max_slab_slices=2)
            if d["placement"] == placement:
                return b
        except pyctrecon.CtreconError:
            pass
        b += b // 8
    raise AssertionError(f"no GPU budget gives placement {placement}")


@pytest.mark.parametrize("parallel,algorithm,init,placement", [
    (True, "sirt", "zero", "device"), (True, "cgls", "fdk", "device"),
    (True, "fista-tv", "array", "device"), (False, "os-sart", "array", "device"),
    (False, "cgls", "zero", "device"), (False, "sirt", "fdk", "device"),
    (True, "sirt", "array", "streamed"), (False, "sirt", "zero", "streamed"),
    (True, "sirt", "fdk", "projections on the device"),
    (False, "sirt", "array", "projections on the device")])
def test_iterate_cupy_in_place(parallel, algorithm, init, placement, monkeypatch):
    pr = _projector(parallel, 40, 30, 3, 24)
    rng = np.random.default_rng(5)
    truth = rng.random(pr.volume_shape, dtype=np.float32) * np.float32(0.02)
    y_host = pr.forward(truth)
    start = rng.random(pr.volume_shape, dtype=np.float32) * np.float32(0.01)
    kw = dict(algorithm=algorithm, iterations=3, subsets=3, tv_weight=1e-3,
              nonneg=algorithm != "cgls", return_report=True, progress=False)
    if placement != "device":  # the slab-wise placements: GPU arrays copied (cudaMemcpyDefault)
        kw.update(gpu_budget=_budget_for(pr, placement), max_slab_slices=2)
    t = truth if placement == "device" else None  # a truth is one volume more in the plan
    ref, rep_host = iterative.iterate(pr, y_host, init=start if init == "array" else init,
                                      truth=t, **kw)
    assert rep_host["plan"]["description"].startswith(f"GPU, {placement}:")
    y = cupy.asarray(y_host)
    rec = Recorder(iterative.lib, lambda n: n == "ctr_iterate",
                   lambda args: [_ptr(iterative.ffi, a) for a in args[2:4]])
    monkeypatch.setattr(iterative, "lib", rec)
    vol, rep = iterative.iterate(pr, y, init=cupy.asarray(start) if init == "array" else init,
                                 truth=None if t is None else cupy.asarray(t), **kw)
    assert isinstance(vol, cupy.ndarray) and vol.shape == pr.volume_shape
    assert rec.calls == [("ctr_iterate", [y.data.ptr, vol.data.ptr])]
    assert cupy.asnumpy(vol).tobytes() == ref.tobytes()
    assert rep["plan"]["placement"] == rep_host["plan"]["placement"]
    assert rep["residual"] == rep_host["residual"]
    out = cupy.full(pr.volume_shape, cupy.nan, cupy.float32)
    assert iterative.iterate(pr, y, init=cupy.asarray(start) if init == "array" else init,
                             out=out, **{**kw, "return_report": False}) is out
    assert cupy.asnumpy(out).tobytes() == ref.tobytes()


def test_iterate_cupy_errors():
    ctx = pyctrecon.Context("cuda")
    pr = pyctrecon.Projector(pyctrecon.ParallelGeometry(40, 30), nslices=3, ctx=ctx)
    y = cupy.ones(pr.projection_shape, cupy.float32)
    with pytest.raises(TypeError, match="float32"):
        iterative.iterate(pr, y.astype(cupy.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        iterative.iterate(pr, cupy.asfortranarray(y))
    with pytest.raises(TypeError, match="out is a GPU array"):
        iterative.iterate(pr, cupy.asnumpy(y), out=cupy.empty(pr.volume_shape, cupy.float32))
    with pytest.raises(ValueError, match="init has shape"):
        iterative.iterate(pr, y, init=cupy.zeros((2, 2, 2), cupy.float32))
    cpu = pyctrecon.Projector(pyctrecon.ParallelGeometry(40, 30), nslices=3,
                              ctx=pyctrecon.Context("cpu"))
    with pytest.raises(pyctrecon.InvalidArgumentError, match="CPU context cannot read"):
        iterative.iterate(cpu, y)
    # fbp_projections still takes host arrays only
    assert "GPU array" in str(pytest.raises(TypeError, pyctrecon.fbp_projections,
                                            cupy.ones((30, 3, 40), cupy.float32),
                                            pyctrecon.ParallelGeometry(40, 30),
                                            np.ones((3, 40), np.float32)).value)


# ---- PET ----------------------------------------------------------------------------

def _pet(ctx):
    """A small system (6 views), simulated data with factors, and its
    projector on ctx."""
    system = pyctrecon.PetSystem(32, 32, 6, 8.0, n_azimuth=6, n_copolar=1,
                                 radial_fwhm_center_mm=8, radial_fwhm_edge_mm=12,
                                 edge_radius_mm=100, axial_fwhm_mm=8)
    histo = pyctrecon.pet_simulate(system, pyctrecon.PetPhantom.with_spheres(4.0), events=3e5,
                                   attenuation=True, seed=11, progress=False)
    assert histo.factors is not None
    return system, histo, pyctrecon.PetProjector(system, ctx=ctx)


@pytest.mark.parametrize("given_out", [False, True])
def test_pet_project_cupy_in_place(given_out, monkeypatch):
    from pyctrecon import pet
    system, _, pr = _pet(pyctrecon.Context("cuda"))
    x_host = np.random.default_rng(3).random(system.image_shape, dtype=np.float32)
    y_host = pr.forward(5, x_host)
    b_host = pr.back(5, y_host)
    x = cupy.asarray(x_host)
    out = cupy.full(system.image_shape, cupy.nan, cupy.float32) if given_out else None
    rec = Recorder(pet.lib, lambda n: n == "ctr_pet_project",
                   lambda args: [_ptr(pet.ffi, a) for a in args[3:5]])
    monkeypatch.setattr(pet, "lib", rec)
    y = pr.forward(5, x, out=out)
    b = pr.back(5, y)
    assert out is None or y is out
    # the library gets the CuPy arrays' own pointers, and gives the host path's bits
    assert [p for _, p in rec.calls] == [[x.data.ptr, y.data.ptr], [y.data.ptr, b.data.ptr]]
    for got, want in ((y, y_host), (b, b_host)):
        assert isinstance(got, cupy.ndarray) and cupy.asnumpy(got).tobytes() == want.tobytes()


def test_pet_project_fft_cupy():
    ctx = pyctrecon.Context("cuda")
    system = pyctrecon.PetSystem(32, 32, 6, 8.0, n_azimuth=6, n_copolar=1)  # invariant kernels
    x_host = np.random.default_rng(4).random(system.image_shape, dtype=np.float32)
    ref = pyctrecon.pet_project_fft(system, 1, x_host, pad=2, ctx=ctx)
    res = pyctrecon.pet_project_fft(system, 1, cupy.asarray(x_host), pad=2, ctx=ctx)
    assert isinstance(res, cupy.ndarray) and cupy.asnumpy(res).tobytes() == ref.tobytes()


@pytest.mark.parametrize("algorithm", ["ramla", "osem", "mlem"])
def test_pet_reconstruct_cupy_in_place(algorithm, monkeypatch):
    from pyctrecon import pet
    system, histo, pr = _pet(pyctrecon.Context("cuda"))
    start_host = np.random.default_rng(5).random(system.image_shape, dtype=np.float32) + \
        np.float32(0.5)
    kw = dict(algorithm=algorithm, iterations=2, progress=False)
    ref = pyctrecon.pet_reconstruct(pr, histo, **kw)  # the uniform start
    ref_start = pyctrecon.pet_reconstruct(pr, histo, image=start_host, **kw)
    start = cupy.asarray(start_host)
    seen = []
    rec = Recorder(pet.lib, lambda n: n == "ctr_pet_reconstruct",
                   lambda args: [_ptr(pet.ffi, args[3])])
    monkeypatch.setattr(pet, "lib", rec)
    img = pyctrecon.pet_reconstruct(pr, histo, image=start,
                                    callback=lambda it, im: seen.append((it, im)), **kw)
    assert isinstance(img, cupy.ndarray) and img is not start
    assert rec.calls == [("ctr_pet_reconstruct", [img.data.ptr])]
    # the callback gets a GPU copy of each iteration's image (its own to keep)
    assert [it for it, _ in seen] == [1, 2]
    assert all(isinstance(im, cupy.ndarray) and im is not img for _, im in seen)
    assert cupy.asnumpy(seen[1][1]).tobytes() == cupy.asnumpy(img).tobytes()
    assert cupy.asnumpy(seen[0][1]).tobytes() != cupy.asnumpy(seen[1][1]).tobytes()
    assert cupy.asnumpy(img).tobytes() == ref_start.tobytes()
    assert cupy.asnumpy(start).tobytes() == start_host.tobytes()  # the start is not modified
    out = cupy.full(system.image_shape, cupy.nan, cupy.float32)
    assert pyctrecon.pet_reconstruct(pr, histo, out=out, **kw) is out  # uniform start, on the GPU
    assert cupy.asnumpy(out).tobytes() == ref.tobytes()
    # a host start into a GPU result
    res = pyctrecon.pet_reconstruct(pr, histo, image=start_host, out=out, **kw)
    assert res is out and cupy.asnumpy(out).tobytes() == ref_start.tobytes()


def test_pet_cupy_errors():
    system, histo, pr = _pet(pyctrecon.Context("cuda"))
    x = cupy.ones(system.image_shape, cupy.float32)
    with pytest.raises(TypeError, match="float32"):
        pr.forward(0, x.astype(cupy.float64))
    with pytest.raises(ValueError, match="C-contiguous"):
        pr.back(0, cupy.asfortranarray(x))
    with pytest.raises(TypeError, match="out is a GPU array"):
        pr.forward(0, cupy.asnumpy(x), out=cupy.empty_like(x))
    with pytest.raises(ValueError, match="image has shape"):
        pr.forward(0, cupy.ones((2, 2, 2), cupy.float32))
    with pytest.raises(TypeError, match="float32"):
        pyctrecon.pet_reconstruct(pr, histo, image=x.astype(cupy.float64), progress=False)
    with pytest.raises(ValueError, match="C-contiguous"):
        pyctrecon.pet_reconstruct(pr, histo, image=cupy.asfortranarray(x), progress=False)
    with pytest.raises(ValueError, match="out has shape"):
        pyctrecon.pet_reconstruct(pr, histo, out=cupy.ones((2, 2, 2), cupy.float32), progress=False)
    cpu = pyctrecon.PetProjector(system, ctx=pyctrecon.Context("cpu"))
    with pytest.raises(pyctrecon.InvalidArgumentError, match="the in array .*CPU context cannot read"):
        cpu.forward(0, x)
    with pytest.raises(pyctrecon.InvalidArgumentError,
                       match="pet_reconstruct: the image array .*CPU context cannot read"):
        pyctrecon.pet_reconstruct(cpu, histo, image=x, iterations=1, progress=False)
    # the simulation and the metrics take host arrays only
    with pytest.raises(TypeError, match="activity is a GPU array"):
        pyctrecon.pet_simulate(system, pyctrecon.PetPhantom(), activity=x, progress=False)
    with pytest.raises(TypeError, match="image is a GPU array"):
        pyctrecon.pet_metrics(system, pyctrecon.PetPhantom.with_spheres(), x)
