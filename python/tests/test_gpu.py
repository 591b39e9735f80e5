"""GPU-machine checks (marker gpu; skipped without CuPy and a CUDA GPU):
CuPy arrays in and out of the projector and of FDK without a host copy (the
pointers the library receives are the CuPy arrays' own), the same bits as the
host path. The binding's overhead is a benchmark, not a test
(python/bench/binding_overhead.py, against the C benchmark)."""
import numpy as np
import pytest

import ctrecon
from ctrecon import iterative

cupy = pytest.importorskip("cupy")
pytestmark = [pytest.mark.gpu,
              pytest.mark.skipif(ctrecon.cuda_device_count() == 0, reason="no CUDA GPU")]


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


@pytest.mark.parametrize("parallel", [False, True])
def test_cupy_in_place(parallel, monkeypatch):
    ctx = ctrecon.Context("cuda")
    if parallel:
        pr = ctrecon.Projector(ctrecon.ParallelGeometry(96, 60), nslices=5, ctx=ctx)
    else:
        g = ctrecon.ConeGeometry.circular(sid=300, sdd=450, nu=96, nv=80, nviews=60,
                                          volume=ctrecon.Volume.cube(48))
        pr = ctrecon.Projector(g, ctx=ctx)
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
    ctx = ctrecon.Context("cuda")
    pr = ctrecon.Projector(ctrecon.ParallelGeometry(32, 20), nslices=2, ctx=ctx)
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
    with pytest.raises(TypeError, match="GPU array"):
        ctrecon.fbp(cupy.ones((2, 20, 32), cupy.float32), ctrecon.ParallelGeometry(32, 20))


@pytest.mark.parametrize("slabs", [0, 6])
def test_fdk_cupy_in_place(slabs, monkeypatch):
    from ctrecon import conebeam
    ctx = ctrecon.Context("cuda")
    g = ctrecon.ConeGeometry.circular(sid=300, sdd=450, nu=96, nv=80, nviews=60,
                                      volume=ctrecon.Volume.cube(32))
    proj_host = ctrecon.Phantom.shepp_logan(14.0).project(g, ctx=ctx, progress=False)
    kw = {"max_slab_slices": slabs} if slabs else {}
    vol_host = ctrecon.fdk(proj_host, g, ctx=ctx, progress=False, **kw)
    proj = cupy.asarray(proj_host)
    rec = Recorder(conebeam.lib, lambda n: n in ("ctr_fdk", "ctr_fdk_stream_memory"),
                   lambda args: [_ptr(conebeam.ffi, a.data) for a in args[3:5]])
    monkeypatch.setattr(conebeam, "lib", rec)
    vol = ctrecon.fdk(proj, g, ctx=ctx, progress=False, **kw)
    assert isinstance(vol, cupy.ndarray) and vol.shape == g.volume_shape
    assert [p for _, p in rec.calls] == [[proj.data.ptr, vol.data.ptr]]
    assert cupy.asnumpy(vol).tobytes() == vol_host.tobytes()
    out = cupy.full(g.volume_shape, cupy.nan, cupy.float32)
    assert ctrecon.fdk(proj, g, ctx=ctx, out=out, progress=False, **kw) is out
    assert cupy.asnumpy(out).tobytes() == vol_host.tobytes()
    with pytest.raises(TypeError, match="out is a GPU array"):
        ctrecon.fdk(proj_host, g, ctx=ctx, out=out)
    with pytest.raises(ctrecon.InvalidArgumentError, match="CPU context cannot read"):
        ctrecon.fdk(proj, g, ctx=ctrecon.Context("cpu"))
