"""The projector pair as operators for algorithms of one's own (docs/python.md,
"Operators"): Projector.as_linear_operator() with scipy (lsqr on it against
the library's CGLS, the adjoint identity through it) and pyctrecon.torch
(autograd.gradcheck in double, an optimisation loop, modules, errors, CUDA
tensors through DLPack). Tests reported as skipped, with the reason, where
scipy, PyTorch or a CUDA GPU is missing. The matched pair (the exact
adjoint) throughout: lsqr and gradients assume A^T."""
import numpy as np
import pytest

import pyctrecon


def cone_projector(ctx, n=16, nviews=6, nu=24):
    """A circular cone-beam projector (pair "matched") onto an n^3 volume on ctx
    (the `cpu` fixture of conftest.py, or a CUDA context)."""
    g = pyctrecon.ConeGeometry.circular(sid=80, sdd=120, nu=nu, nv=nu, nviews=nviews,
                                        volume=pyctrecon.Volume.cube(n))
    return pyctrecon.Projector(g, ctx=ctx)


# ---- scipy.sparse.linalg.LinearOperator -------------------------------------------

def test_linear_operator_shape_and_adjoint(cpu):
    sla = pytest.importorskip("scipy.sparse.linalg", reason="scipy is not installed")
    pr = cone_projector(cpu)
    op = pr.as_linear_operator()
    n, m = int(np.prod(pr.volume_shape)), int(np.prod(pr.projection_shape))
    assert isinstance(op, sla.LinearOperator)
    assert op.shape == (m, n) and op.dtype == np.float32
    rng = np.random.default_rng(3)
    x = rng.random(n, dtype=np.float32)
    y = rng.random(m, dtype=np.float32)
    ax, aty = op.matvec(x), op.rmatvec(y)
    assert ax.shape == (m,) and aty.shape == (n,)
    # the same values as the projector's own calls
    assert np.array_equal(ax, pr.forward(x.reshape(pr.volume_shape)).ravel())
    assert np.array_equal(aty, pr.adjoint(y.reshape(pr.projection_shape)).ravel())
    # <A x, y> = <x, A^T y>: sums of float32 products over ~1e4 terms, taken in double
    lhs, rhs = np.dot(ax.astype(np.float64), y), np.dot(x.astype(np.float64), aty)
    assert lhs > 0 and abs(lhs - rhs) <= 1e-5 * abs(lhs), (lhs, rhs)
    # through the operator algebra: op.H is the adjoint, op @ X a matrix of columns
    assert np.array_equal(op.H.matvec(y), aty)
    cols = op.matmat(np.stack([x, 2 * x], axis=1))
    assert cols.shape == (m, 2) and np.allclose(cols[:, 1], 2 * ax, rtol=1e-6, atol=1e-6)
    # a wrong length is an error, not a reshaped guess
    with pytest.raises(ValueError):
        op.matvec(np.ones(n + 1, np.float32))


def test_lsqr_matches_cgls(cpu):
    sla = pytest.importorskip("scipy.sparse.linalg", reason="scipy is not installed")
    pr = cone_projector(cpu, n=16, nviews=6)
    phantom = pyctrecon.Phantom.shepp_logan(6.0)
    b = phantom.project(pr.geometry)
    iters = 8
    cgls = pyctrecon.iterate(pr, b, algorithm="cgls", iterations=iters, progress=False)
    op = pr.as_linear_operator()
    res = sla.lsqr(op, b.ravel().astype(np.float64), iter_lim=iters, atol=0, btol=0,
                   conlim=0)
    x_lsqr, itn = res[0], res[2]
    assert itn == iters
    # CGLS and LSQR from x0 = 0 produce the same iterates in exact arithmetic; here the
    # library's float32 CGLS against scipy's float64 LSQR over float32 products. Measured
    # relative differences: 2.5e-7 after 1 to 4 iterations, 4.6e-7 after 8, 3.3e-6 after
    # 16, 3e-3 after 30 (rounding drift in an ill-conditioned system; hence 8 here).
    # 1e-4 leaves 200x margin and fails on any algorithmic difference (a missing or
    # different step or a scaled operator changes the iterate at the 1e-2 level)
    x_cgls = cgls.ravel().astype(np.float64)
    rel = np.linalg.norm(x_lsqr - x_cgls) / np.linalg.norm(x_lsqr)
    assert rel < 1e-4, rel
    # both reduce the residual ||b - A x|| well below ||b|| (x = 0)
    b64 = b.ravel().astype(np.float64)
    for x in (x_lsqr, x_cgls):
        r = np.linalg.norm(b64 - op.matvec(x.astype(np.float32)))
        assert r < 0.5 * np.linalg.norm(b64), r
    # and an iteration later still: LSQR's residual decreases monotonically
    x_more = sla.lsqr(op, b64, iter_lim=iters + 4, atol=0, btol=0, conlim=0)[0]
    assert np.linalg.norm(b64 - op.matvec(x_more)) < np.linalg.norm(b64 - op.matvec(x_lsqr))


def test_linear_operator_without_scipy(cpu, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_scipy(name, *a, **k):
        if name == "scipy" or name.startswith("scipy."):
            raise ImportError("No module named 'scipy'")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_scipy)
    with pytest.raises(ImportError, match=r"pyctrecon\[scipy\]"):
        cone_projector(cpu, n=8, nviews=2, nu=12).as_linear_operator()


# ---- PyTorch ----------------------------------------------------------------------

def _torch():
    return pytest.importorskip("torch", reason="PyTorch is not installed (pip install torch)")


@pytest.mark.parametrize("parallel", [False, True])
def test_torch_forward_backward_values(cpu, parallel):
    torch = _torch()
    import pyctrecon.torch as pt
    pr = (pyctrecon.Projector(pyctrecon.ParallelGeometry(8, 4), nslices=2, ctx=cpu) if parallel
          else cone_projector(cpu, n=8, nviews=4, nu=12))
    rng = np.random.default_rng(5)
    x = rng.random(pr.volume_shape, dtype=np.float32)
    g = rng.random(pr.projection_shape, dtype=np.float32)
    xt = torch.from_numpy(x.copy()).requires_grad_(True)
    y = pt.project(xt, pr)
    assert isinstance(y, torch.Tensor) and y.dtype == torch.float32 and y.device.type == "cpu"
    assert np.array_equal(y.detach().numpy(), pr.forward(x))
    y.backward(torch.from_numpy(g))
    assert np.array_equal(xt.grad.numpy(), pr.adjoint(g))
    # the backprojection layer: A^T forward, A backward
    gt = torch.from_numpy(g.copy()).requires_grad_(True)
    v = pt.BackprojectorModule(pr)(gt)
    assert np.array_equal(v.detach().numpy(), pr.adjoint(g))
    v.backward(torch.from_numpy(x))
    assert np.array_equal(gt.grad.numpy(), pr.forward(x))
    # a batch: each item as alone; float64 in, float64 out (computed in float32)
    xb = torch.from_numpy(np.stack([x, 2 * x])).double()
    yb = pt.ProjectorModule(pr)(xb)
    assert yb.shape == (2,) + tuple(pr.projection_shape) and yb.dtype == torch.float64
    assert np.array_equal(yb[0].numpy(), pr.forward(x).astype(np.float64))
    assert np.array_equal(yb[1].numpy(), pr.forward(2 * x).astype(np.float64))


def test_torch_gradcheck_double(cpu):
    torch = _torch()
    import pyctrecon.torch as pt
    pr = cone_projector(cpu, n=8, nviews=4, nu=12)
    x = torch.rand(pr.volume_shape, dtype=torch.float64, generator=torch.Generator().manual_seed(1))
    x.requires_grad_(True)
    # The library computes in float32. gradcheck's numerical Jacobian is (f(x + eps e_j)
    # - f(x - eps e_j)) / 2 eps; for a linear map it equals A exactly at any eps, so eps
    # is chosen large (0.5) to keep float32 rounding of f (~6e-8 relative to values of
    # order 10: ~1e-6 absolute) from being amplified by 1/(2 eps). The analytical side is
    # A^T in float32 (the exact adjoint: the same weights, rounded once). Entries of A
    # are intersection lengths of order 1, so atol 1e-4 / rtol 1e-3 leave a margin of
    # ~100x over the rounding and still catch a wrong or transposed weight.
    assert torch.autograd.gradcheck(lambda v: pt.project(v, pr), (x,), eps=0.5,
                                    atol=1e-4, rtol=1e-3)
    y = torch.rand(pr.projection_shape, dtype=torch.float64,
                   generator=torch.Generator().manual_seed(2)).requires_grad_(True)
    # the other direction and second derivatives (the backward is the same Function,
    # adjoint) in gradcheck's fast mode (the Jacobians against random vectors on both
    # sides: the full 576 x 512 comparison above takes ~10 s per check here)
    assert torch.autograd.gradcheck(lambda v: pt.backproject(v, pr), (y,), eps=0.5,
                                    atol=1e-4, rtol=1e-3, fast_mode=True)
    assert torch.autograd.gradgradcheck(lambda v: pt.project(v, pr), (x,), eps=0.5,
                                        atol=1e-4, rtol=1e-3, fast_mode=True)


def test_torch_gradcheck_catches_a_wrong_gradient(cpu, monkeypatch):
    """gradcheck with the tolerances above fails when backward is not A^T
    (the check can fail): a backward scaled by 1.01."""
    torch = _torch()
    import pyctrecon.torch as pt
    pr = cone_projector(cpu, n=8, nviews=4, nu=12)
    real = pt._apply

    def off(projector, adjoint, x):
        r = real(projector, adjoint, x)
        return r * 1.01 if adjoint else r
    monkeypatch.setattr(pt, "_apply", off)
    x = torch.rand(pr.volume_shape, dtype=torch.float64).requires_grad_(True)
    with pytest.raises(RuntimeError, match="Jacobian mismatch"):  # torch's GradcheckError
        torch.autograd.gradcheck(lambda v: pt.project(v, pr), (x,), eps=0.5, atol=1e-4,
                                 rtol=1e-3)


def test_torch_optimisation_loop(cpu):
    torch = _torch()
    import pyctrecon.torch as pt
    pr = cone_projector(cpu, n=16, nviews=8)
    b = torch.from_numpy(pyctrecon.Phantom.shepp_logan(6.0).project(pr.geometry))
    layer = pt.ProjectorModule(pr)
    x = torch.zeros(pr.volume_shape, requires_grad=True)
    # step size below 2 / ||A||^2 (||A||^2 estimated by a few power iterations)
    v = torch.ones(pr.volume_shape)
    for _ in range(10):
        v = pt.backproject(pt.project(v, pr), pr)
        v = v / v.norm()
    lip = float((pt.project(v, pr).norm() ** 2))
    opt = torch.optim.SGD([x], lr=0.9 / lip)
    losses = []
    for _ in range(10):
        opt.zero_grad()
        loss = 0.5 * ((layer(x) - b) ** 2).sum()
        loss.backward()
        opt.step()
        losses.append(loss.item())
    assert losses[-1] < 0.5 * losses[0], losses
    assert all(b2 <= a for a, b2 in zip(losses, losses[1:])), losses


def test_torch_errors(cpu):
    torch = _torch()
    import pyctrecon.torch as pt
    pr = cone_projector(cpu, n=8, nviews=4, nu=12)
    with pytest.raises(ValueError, match=r"volume has shape \(8, 8, 9\): expected \(8, 8, 8\)"):
        pt.project(torch.zeros(8, 8, 9), pr)
    with pytest.raises(ValueError, match="projections has shape"):
        pt.backproject(torch.zeros(pr.volume_shape), pr)
    with pytest.raises(TypeError, match="floating-point"):
        pt.project(torch.zeros(pr.volume_shape, dtype=torch.int32), pr)
    with pytest.raises(TypeError, match="projector must be a pyctrecon.Projector"):
        pt.ProjectorModule("not a projector")
    with pytest.raises(TypeError, match="must be a torch.Tensor"):
        pt.project(np.zeros(pr.volume_shape, np.float32), pr)


@pytest.mark.gpu
def test_torch_cuda_dlpack_no_copy(monkeypatch):
    torch = _torch()
    if not torch.cuda.is_available() or pyctrecon.cuda_device_count() == 0:
        pytest.skip("no CUDA GPU (or this PyTorch or pyctrecon build has no CUDA)")
    import pyctrecon.torch as pt
    from pyctrecon import iterative
    ctx = pyctrecon.Context("cuda")
    pr = cone_projector(ctx, n=16, nviews=6)
    rng = np.random.default_rng(9)
    x_host = rng.random(pr.volume_shape, dtype=np.float32)
    x = torch.from_numpy(x_host).cuda().requires_grad_(True)
    calls = []
    real = iterative.lib

    class Rec:
        def __getattr__(self, name):
            fn = getattr(real, name)
            if not name.endswith("_device"):
                return fn

            def rec(*args):
                calls.append((name, [int(iterative.ffi.cast("uintptr_t", a)) for a in args[1:]]))
                return fn(*args)
            return rec
    monkeypatch.setattr(iterative, "lib", Rec())
    y = pt.project(x, pr)
    y.backward(y.detach())
    monkeypatch.undo()
    assert y.is_cuda and x.grad.is_cuda and y.dtype == torch.float32
    # the library read x's and wrote y's own memory, and read the gradient (y's memory:
    # y.detach() shares it) in place: no copy either way
    assert calls[0] == ("ctr_projector_forward_device", [x.data_ptr(), y.data_ptr()])
    assert calls[1][0] == "ctr_projector_adjoint_device" and calls[1][1][0] == y.data_ptr()
    # the same bits as the host path of the same CUDA projector
    y_ref = pr.forward(x_host)
    assert np.array_equal(y.detach().cpu().numpy(), y_ref)
    assert np.array_equal(x.grad.cpu().numpy(), pr.adjoint(y_ref))
