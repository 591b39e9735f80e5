"""Iterative reconstruction (docs/iterative.md): the projector pair (Joseph
forward projection A and its exact adjoint A^T) for cone- and parallel-beam
geometries, and SIRT, CGLS, OS-SART, FISTA-TV, PDHG-TV and PWLS on it. Shapes: volumes
(nz, ny, nx) (parallel beam: (nslices, ny, nx)); projections (nviews, nv,
nu) for cone beam, sinograms (nslices, nangles, nbins) for parallel beam.

``Projector.forward`` and ``Projector.adjoint`` also take GPU arrays (CuPy,
__cuda_array_interface__, DLPack) on a CUDA context: they are read and
written in place on the GPU (ctr_projector_forward_device) and the result
is a GPU array."""
from __future__ import annotations

import os
from typing import Any, Callable, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core, _gpu
from ._core import check, context, cstr, ffi, lib, new_struct
from .geometry import ConeGeometry, ParallelGeometry

__all__ = ["Projector", "iterate", "plan_iterate", "iterate_plot"]

# "given" is named so that the error can say how to give the start volume
_INIT = {"zero": lib.CTR_ITERATE_INIT_ZERO, "fdk": lib.CTR_ITERATE_INIT_FDK,
         "fbp": lib.CTR_ITERATE_INIT_FDK, "given": lib.CTR_ITERATE_INIT_GIVEN}
_STOP = {lib.CTR_ITERATE_STOP_ITERATIONS: "iterations", lib.CTR_ITERATE_STOP_TOLERANCE: "tolerance",
         lib.CTR_ITERATE_STOP_CALLBACK: "callback", lib.CTR_ITERATE_STOP_CONVERGED: "converged"}
_DEVICE = {"cpu": lib.CTR_DEVICE_CPU, "cuda": lib.CTR_DEVICE_CUDA}


class Projector:
    """A projector for a geometry (ctr_projector_create_cone / _parallel):
    ``nslices`` slices for a parallel-beam geometry; pair "matched" (the
    exact adjoint) or "fast" (the FDK backprojector, cone beam only);
    gpu_budget (bytes or "8G"; None: free memory less 1 GiB) and
    max_slab_slices (at most that many slices a slab, forcing slab-wise
    projection; 0: as the budget allows); workers (GPU projectors sharing each
    projection by views and each matched adjoint by slices, on the context's
    GPUs in turn; 0: one per GPU; the result does not depend on it)."""

    def __init__(self, geometry: Union[ConeGeometry, ParallelGeometry], *,
                 nslices: Optional[int] = None, pair: str = "matched",
                 gpu_budget: Union[int, str, None] = None, max_slab_slices: int = 0,
                 workers: int = 0, ctx=None):
        o = new_struct("ctr_projector_options", lib.ctr_projector_options_init,
                       lib.CTR_PROJECTOR_OPTIONS_VERSION)
        o.pair = _core.parsed(lib.ctr_projector_pair_parse, "ctr_projector_pair", pair, "pair")
        o.gpu_budget = _core.budget(gpu_budget, "gpu_budget")
        _core.assign(o, max_slab_slices=max_slab_slices, workers=workers)
        self.ctx = context(ctx)
        self.geometry = geometry
        out = ffi.new("ctr_projector **")
        if isinstance(geometry, ParallelGeometry):
            if nslices is None:
                raise ValueError("a parallel-beam projector needs nslices")
            check(lib.ctr_projector_create_parallel(self.ctx.ptr, geometry._ptr, nslices, o, out))
        else:
            if nslices is not None:
                raise ValueError("nslices is for parallel-beam geometries")
            check(lib.ctr_projector_create_cone(self.ctx.ptr, geometry._ptr, o, out))
        self._ptr = ffi.gc(out[0], lib.ctr_projector_free)

    @property
    def volume_shape(self) -> Tuple[int, int, int]:
        d = ffi.new("int64_t[3]")
        lib.ctr_projector_get_volume_dims(self._ptr, d)
        return (d[2], d[1], d[0])

    @property
    def projection_shape(self) -> Tuple[int, int, int]:
        d = ffi.new("int64_t[3]")
        lib.ctr_projector_get_projection_dims(self._ptr, d)
        return (d[2], d[1], d[0])

    @property
    def matched(self) -> bool:
        return bool(lib.ctr_projector_is_matched(self._ptr))

    def _apply(self, forward: bool, a: Any, out: Any, progress: Any) -> Any:
        in_shape, out_shape = ((self.volume_shape, self.projection_shape) if forward
                               else (self.projection_shape, self.volume_shape))
        in_name = "volume" if forward else "projections"
        if _core.is_gpu_array(a):
            d = _gpu.device_array(a, in_name)
            _gpu.check_shape(d, in_shape, in_name)
            res, o = _gpu.device_out(out, a, out_shape)
            _core.distinct(o, "out", (in_name, d))
            fn = lib.ctr_projector_forward_device if forward else lib.ctr_projector_adjoint_device
            _core.call(progress, fn, self._ptr, d.cptr(), o.cptr())
            return res
        x = _core.host_in(a, in_name, in_shape)
        res = _core.host_out(out, out_shape)
        _core.distinct(res, "out", (in_name, x))
        fn = lib.ctr_projector_forward if forward else lib.ctr_projector_adjoint
        _core.call(progress, fn, self._ptr, _core.ptr(x), _core.wptr(res))
        return res

    def forward(self, volume: Any, out: Any = None, *, progress: Any = "auto") -> Any:
        """Projections A volume (ctr_projector_forward): numpy in and out, or
        GPU arrays in place on a CUDA context."""
        return self._apply(True, volume, out, progress)

    def adjoint(self, projections: Any, out: Any = None, *, progress: Any = "auto") -> Any:
        """The volume A^T projections (with pair "fast": the unmatched
        backprojector); numpy or GPU arrays as forward."""
        return self._apply(False, projections, out, progress)

    def as_linear_operator(self, *, progress: Any = False) -> Any:
        """This projector as a ``scipy.sparse.linalg.LinearOperator`` of shape
        (number of projection values, number of voxels) and dtype float32:
        ``matvec`` is ``forward`` of the flattened volume, ``rmatvec`` is
        ``adjoint`` (the exact transpose with pair "matched"; with "fast" the
        unmatched backprojector, so solvers that assume A^T, such as lsqr,
        solve a different problem). Vectors in and out are flat numpy arrays
        (float64 input is rounded to float32, the library's precision).
        Needs scipy (``pip install "pyctrecon[scipy]"``); progress as for
        ``forward`` (default False: solvers call it many times)."""
        try:
            from scipy.sparse.linalg import LinearOperator
        except ImportError:
            raise ImportError("Projector.as_linear_operator needs scipy: pip install scipy "
                              "(or pip install \"pyctrecon[scipy]\")") from None
        vshape, pshape = self.volume_shape, self.projection_shape
        n, m = int(np.prod(vshape)), int(np.prod(pshape))

        def matvec(x: Any) -> np.ndarray:
            return self.forward(np.reshape(x, vshape), progress=progress).reshape(m)

        def rmatvec(y: Any) -> np.ndarray:
            return self.adjoint(np.reshape(y, pshape), progress=progress).reshape(n)

        return LinearOperator((m, n), matvec=matvec, rmatvec=rmatvec, dtype=np.float32)


def _iterate_options(algorithm, iterations, tolerance, subsets, relaxation, tv_weight,
                     tv_iterations, power_iterations, nonneg, box, init, gpu_budget,
                     host_budget, max_slab_slices, checkpoint, checkpoint_every, resume, strict,
                     keep, i0=0.0, penalty="none", beta=0.0, huber_delta=0.0):
    o = new_struct("ctr_iterate_options", lib.ctr_iterate_options_init,
                   lib.CTR_ITERATE_OPTIONS_VERSION)
    o.algorithm = _core.parsed(lib.ctr_iterate_algorithm_parse, "ctr_iterate_algorithm", algorithm,
                                 "algorithm")
    _core.assign(o, iterations=iterations, tolerance=tolerance, subsets=subsets,
                 relaxation=relaxation, tv_weight=tv_weight, tv_iterations=tv_iterations,
                 power_iterations=power_iterations, max_slab_slices=max_slab_slices,
                 checkpoint_every=checkpoint_every)
    o.nonneg = int(bool(nonneg))
    if box is not None:
        if len(box) != 2:
            raise ValueError(f"box={box!r}: expected (lower, upper)")
        o.box = 1
        _core.assign(o, {"lower": "box", "upper": "box"}, lower=box[0], upper=box[1])
    o.init = init
    o.gpu_budget = _core.budget(gpu_budget, "gpu_budget")
    o.host_budget = _core.budget(host_budget, "host_budget")
    o.checkpoint = _core.kept_cstr(keep, checkpoint)
    o.resume, o.strict = int(bool(resume)), int(bool(strict))
    o.penalty = _core.parsed(lib.ctr_iterate_penalty_parse, "ctr_iterate_penalty", penalty,
                             "penalty")
    _core.assign(o, i0=i0, beta=beta, huber_delta=huber_delta)
    return o


@ffi.def_extern(onerror=_core.callback_onerror)
def ctrpy_iterate(user, info):
    cb = ffi.from_handle(user)
    run = _core.current_run()
    if run is not None and run.exc is not None:
        return 1
    try:
        stop = cb({"iteration": info.iteration, "iterations": info.iterations,
                   "residual": info.residual, "relative_residual": info.relative_residual,
                   "error": info.error, "seconds": info.seconds,
                   "resumed": bool(info.resumed)})
    except BaseException as e:
        if run is not None:
            run.exc = e
        return 1
    return 1 if stop else 0


def iterate(projector: Projector, projections: Any, *, algorithm: str = "sirt",
            iterations: int = 10, tolerance: float = 0.0, subsets: int = 10,
            relaxation: float = 1.0, tv_weight: float = 0.0, tv_iterations: int = 10,
            power_iterations: int = 15, nonneg: bool = False,
            box: Optional[Tuple[float, float]] = None, init: Any = "zero", truth: Any = None,
            callback: Optional[Callable[[dict], Any]] = None,
            gpu_budget: Union[int, str, None] = None, host_budget: Union[int, str, None] = None,
            max_slab_slices: int = 0, checkpoint: Union[str, os.PathLike, None] = None,
            checkpoint_every: int = 1, resume: bool = False, strict: bool = False,
            weights: Any = None, i0: float = 0.0, penalty: str = "none", beta: float = 0.0,
            huber_delta: float = 0.0, return_report: bool = False,
            out: Optional[np.ndarray] = None, progress: Any = "auto") -> Any:
    """Reconstructs a volume from projections on the projector's geometry and
    backend (ctr_iterate). algorithm "sirt" | "cgls" | "os-sart" |
    "fista-tv" | "pdhg-tv" (FISTA-TV's problem by the primal-dual method of
    Chambolle and Pock: exact TV steps; tv_weight as fista-tv's) | "pwls"
    (penalised weighted least squares, min (Ax - b)^T W (Ax - b) / 2 + beta
    R(x), by preconditioned conjugate gradients, unconstrained: ``weights``
    (default None) an array of the projections' shape, finite and >= 0, 0
    for a dead pixel, e.g. the raw detected counts of log data; or ``i0``
    (default 0.0: off) > 0, the weights i0 exp(-b) of log data taken with
    i0 counts per unattenuated ray; neither: W = 1; ``penalty`` "none"
    (default) | "quadratic" | "huber" over the pairs of 6-neighbours,
    ``beta`` (default 0.0; > 0 with a penalty) its weight, ``huber_delta``
    (default 0.0; > 0 with "huber") the step in the volume's units beyond
    which Huber's penalty grows linearly; docs/iterative.md, "PWLS");
    ``iterations`` 1 .. 1e9, ``tolerance`` (stop when the
    relative residual is below it; default 0.0: never), subsets (os-sart's
    ordered subsets, default 10), relaxation (sirt, os-sart: the step in
    (0, 2), default 1.0), tv_weight (fista-tv, pdhg-tv, default 0.0: no TV),
    tv_iterations (fista-tv's inner iterations, default 10),
    power_iterations (estimating ||A||^2, default 15), nonneg (default
    False); box=(lower, upper) clamps (default None: no box);
    gpu_budget, host_budget (bytes or "8G", default None: free GPU memory
    less 1 GiB, available host memory less 10 %), max_slab_slices (default
    0: as memory allows), checkpoint_every (default 1), as the CLI's
    options of the same names (``ctrecon iterate``, docs/vocabulary.md);
    init "zero", "fdk" (FDK or FBP start) or an array (the start volume);
    truth: a reference volume for the per-iteration error; callback(info
    dict) after each iteration, returning True stops the run; checkpoint /
    resume: a file of the state after finished iterations and their history,
    resumed bit for bit (the callback first sees the checkpoint's iterations
    again, with info["resumed"] True); the checkpoint stays after the call,
    and as fdk_file's journal it is never overwritten: a checkpoint there
    without resume is an InvalidArgumentError (keyword "resume"), resume
    without one a FileIOError. Returns the volume, or (volume, report dict) with return_report.

    GPU arrays (CuPy, or any __cuda_array_interface__ / DLPack float32
    C-contiguous array) are used in place with a CUDA projector: projections
    on the GPU give the volume on the GPU (a new CuPy array, or `out`, which
    is itself the iterate when the plan keeps volumes on the GPU), with the
    bits of the numpy path; init and truth may then be GPU arrays too."""
    vshape = projector.volume_shape
    vol, p_ptr, v_ptr, p_owner = _gpu.float_io(projections, out, "projections",
                                               projector.projection_shape, vshape)
    if isinstance(init, str):
        init_v = _core.enum_value(_INIT, init, "init")
        if init_v == lib.CTR_ITERATE_INIT_GIVEN:
            raise ValueError("init='given' needs the start volume: pass it as init=ARRAY "
                             f"(shape {tuple(vshape)})")
    else:
        if _core.is_gpu_array(vol):
            _gpu.copy_into(vol, init, vshape, "init")
        else:
            vol[...] = _core.host_in(init, "init", vshape)
        init_v = lib.CTR_ITERATE_INIT_GIVEN
    keep: list = [p_owner]
    o = _iterate_options(algorithm, iterations, tolerance, subsets, relaxation, tv_weight,
                         tv_iterations, power_iterations, nonneg, box, init_v, gpu_budget,
                         host_budget, max_slab_slices, checkpoint, checkpoint_every, resume,
                         strict, keep, i0, penalty, beta, huber_delta)
    if weights is not None and _core.is_gpu_array(weights):
        dw = _gpu.device_array(weights, "weights")
        _gpu.check_shape(dw, projector.projection_shape, "weights")
        keep.append(dw)
        o.weights = dw.cptr()
    elif weights is not None:
        w = _core.host_in(weights, "weights", projector.projection_shape)
        keep.append(w)
        o.weights = _core.ptr(w)
    if truth is not None and _core.is_gpu_array(truth):
        dt = _gpu.device_array(truth, "truth")
        _gpu.check_shape(dt, vshape, "truth")
        _core.distinct(vol, "out", ("truth", dt))
        keep.append(dt)
        o.truth = dt.cptr()
    elif truth is not None:
        t = _core.host_in(truth, "truth", vshape)
        _core.distinct(vol, "out", ("truth", t))
        keep.append(t)
        o.truth = _core.ptr(t)
    if callback is not None:
        h = ffi.new_handle(callback)
        keep.append(h)
        o.on_iteration, o.user = lib.ctrpy_iterate, h
    rep = new_struct("ctr_iterate_report", lib.ctr_iterate_report_init,
                     lib.CTR_ITERATE_REPORT_VERSION)
    _core.call(progress, lib.ctr_iterate, projector._ptr, o, p_ptr, v_ptr, rep)
    if not return_report:
        return vol
    d = _core.struct_dict(rep)
    d["stop"] = _STOP.get(d["stop"], d["stop"])
    d["plan"]["description"] = _describe(ffi.addressof(rep, "plan"))
    return vol, d


def _describe(plan) -> str:
    buf = ffi.new("char[]", max(lib.ctr_iterate_plan_describe(plan, ffi.NULL, 0), 0) + 1)
    lib.ctr_iterate_plan_describe(plan, buf, len(buf))
    return ffi.string(buf).decode()


def plan_iterate(projector: Projector, *, device: str = "cpu", gpu_budget: Union[int, str] = 0,
                 host_budget: Union[int, str] = 0, algorithm: str = "sirt",
                 max_slab_slices: int = 0) -> dict:
    """The plan ctr_iterate would make (ctr_iterate_plan_compute, a pure function):
    placement, slabs, blocks, memory, and its ``description``."""
    o = _iterate_options(algorithm, 10, 0.0, 0, 0.0, 0.0, 0, 0, False, None, 0, 0, 0,
                         max_slab_slices, None, 0, False, False, [])
    p = new_struct("ctr_iterate_plan", lib.ctr_iterate_plan_init, lib.CTR_ITERATE_PLAN_VERSION)
    check(lib.ctr_iterate_plan_compute(projector._ptr, o, _core.enum_value(_DEVICE, device, "device"),
                               _core.budget(gpu_budget, "gpu_budget"),
                               _core.budget(host_budget, "host_budget"), p))
    d = _core.struct_dict(p)
    d["placement"] = ffi.string(lib.ctr_iterate_placement_name(p.placement)).decode()
    d["description"] = _describe(p)
    return d


def iterate_plot(path: Union[str, os.PathLike], relative_residual: Sequence[float],
                 error: Optional[Sequence[float]] = None, title: str = "", *,
                 overwrite: bool = False) -> None:
    """A convergence plot (PNG) of the relative residual (and error) per
    iteration (ctr_iterate_plot); an existing file is refused unless
    ``overwrite=True``."""
    r = np.ascontiguousarray(relative_residual, np.float64)
    e = None if error is None else np.ascontiguousarray(error, np.float64)
    if e is not None and e.size != r.size:
        raise ValueError("error and relative_residual differ in length")
    check(lib.ctr_iterate_plot(cstr(path), _core.ptr(r, "double"),
                               ffi.NULL if e is None else _core.ptr(e, "double"), r.size,
                               cstr(title), int(bool(overwrite))))
