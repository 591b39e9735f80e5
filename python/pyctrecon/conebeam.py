"""Cone-beam FDK: in memory, file to file (out-of-core, resumable), the
memory planner, the incremental backprojector and the two halves of FDK
(docs/out-of-core.md, docs/cuda.md). Projections are (nviews, nv, nu)
line integrals, float32 or uint16; volumes (nz, ny, nx) float32."""
from __future__ import annotations

import os
import warnings
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core, _gpu
from ._core import check, context, cstr, ffi, lib, new_struct
from .geometry import ConeGeometry
from .io import StackReader, file_format

__all__ = ["FdkGeometryWarning", "fdk", "fdk_file", "fdk_filter", "fdk_backproject", "plan_fdk",
           "Backprojector", "backproject_reference", "ramp_response"]

_SHORT_SCAN = {"auto": lib.CTR_SHORT_SCAN_AUTO, "off": lib.CTR_SHORT_SCAN_OFF,
               "parker": lib.CTR_SHORT_SCAN_PARKER}
_INTERP = {"auto": lib.CTR_INTERP_DEFAULT, "exact": lib.CTR_INTERP_EXACT,
           "texture": lib.CTR_INTERP_TEXTURE, "precise": lib.CTR_INTERP_PRECISE}


def _interp(value: Any) -> int:
    """interp= as the CLI's --interp: "auto" (texture on a GPU, exact on the
    CPU), "exact", "texture" or "precise"; "default" is auto's deprecated
    name."""
    if isinstance(value, str) and value.lower() == "default":
        _core.deprecated('interp="default"', 'interp="auto"')
        value = "auto"
    return _core.enum_value(_INTERP, value, "interp")
_STORE = {"auto": lib.CTR_FDK_STORE_AUTO, "device": lib.CTR_FDK_STORE_DEVICE, "host": lib.CTR_FDK_STORE_HOST,
          "scratch": lib.CTR_FDK_STORE_SCRATCH, "none": lib.CTR_FDK_STORE_NONE}
_DEVICE = {"cpu": lib.CTR_DEVICE_CPU, "cuda": lib.CTR_DEVICE_CUDA}


def window(w: Any) -> int:
    """A ctr_window from its name ("ram-lak", "shepp-logan", "cosine",
    "hamming", "hann") through the library's parser."""
    return _core.parsed(lib.ctr_window_parse, "ctr_window", w, "window")


def ramp_response(window_name: Any, cutoff: float, f: float) -> float:
    """The ramp filter's response at f cycles per sample (0 .. 0.5)."""
    return lib.ctr_ramp_response(window(window_name), cutoff, f)


class FdkGeometryWarning(RuntimeWarning):
    """FDK cannot reconstruct the geometry (ctr_geometry_fdk_check, docs/geometry.md):
    not a circular orbit, less than a short scan, or a detector that misses part of
    the field of view in some views. The volume will be wrong; pyctrecon.iterate
    reconstructs such scans. fdk(..., strict=True) refuses them instead."""


def _check_geometry(geometry: ConeGeometry, strict: bool, offset_weight: Any = "auto") -> None:
    """What FDK does with a geometry it cannot reconstruct: a FdkGeometryWarning,
    or with strict a GeometryError. The options then tell the library it was
    checked (ctr_fdk_options.geometry_checked), so it is said once."""
    ok = ffi.new("int *")
    why = ffi.new("char[1024]")
    o = new_struct("ctr_fdk_options", lib.ctr_fdk_options_init, lib.CTR_FDK_OPTIONS_VERSION)
    o.offset_weight = _core.enum_value(_OFFSET_WEIGHT, offset_weight, "offset_weight")
    check(lib.ctr_fdk_check_geometry(geometry._ptr, o, ok, why, len(why)))
    if ok[0]:
        return
    text = _core.python_words(ffi.string(why).decode())
    if strict:
        raise _core.GeometryError(f"geometry: FDK cannot reconstruct it (refused: strict=True): "
                                  f"{text}")
    warnings.warn(f"FDK cannot reconstruct this geometry, the volume will be wrong: {text}",
                  FdkGeometryWarning, stacklevel=3)


_OFFSET_WEIGHT = {"auto": lib.CTR_OFFSET_WEIGHT_AUTO, "off": lib.CTR_OFFSET_WEIGHT_OFF,
                  "wang": lib.CTR_OFFSET_WEIGHT_WANG}


def _fdk_options(window_name, cutoff, short_scan, interp, z0, nz, views_per_batch, strict,
                 into=None, offset_weight="auto", offset_overlap=0.0):
    o = into if into is not None else new_struct("ctr_fdk_options", lib.ctr_fdk_options_init,
                                                 lib.CTR_FDK_OPTIONS_VERSION)
    o.window = window(window_name)
    o.short_scan = _core.enum_value(_SHORT_SCAN, short_scan, "short_scan")
    o.interp = _interp(interp)
    _core.assign(o, cutoff=cutoff, z0=z0, nz=nz, views_per_batch=views_per_batch)
    o.strict = int(bool(strict))
    o.geometry_checked = 1  # fdk and fdk_file: _check_geometry
    o.offset_weight = _core.enum_value(_OFFSET_WEIGHT, offset_weight, "offset_weight")
    _core.assign(o, offset_overlap=offset_overlap)
    return o


def _nz(geometry: ConeGeometry, z0: int, nz: int) -> int:
    """The slices of z0 and nz (0: to the last), checked against the volume's."""
    n = geometry.volume.nz
    if not 0 <= z0 < n or not 0 <= nz <= n - z0:
        raise ValueError(f"z0={z0!r}, nz={nz!r}: expected 0 <= z0 < {n} and 0 <= nz <= {n} - z0 "
                         f"(the geometry's volume has {n} slices; nz 0: to the last)")
    return nz if nz else n - z0


def _stream_options(o, *, gpu_budget, host_budget, max_slab_slices, store, scratch_dir,
                    input_scale, out_dtype, out_scale, resume, workers, split, keep):
    o.gpu_budget = _core.budget(gpu_budget, "gpu_budget")
    o.host_budget = _core.budget(host_budget, "host_budget")
    o.store = _core.enum_value(_STORE, store, "store")
    o.scratch_dir = _core.kept_cstr(keep, scratch_dir)
    o.out_dtype = _core.ctr_dtype(out_dtype)
    _core.assign(o, max_slab_slices=max_slab_slices, input_scale=input_scale,
                 out_scale=out_scale, workers=workers)
    o.resume = int(bool(resume))
    o.split = _core.parsed(lib.ctr_fdk_split_parse, "ctr_fdk_split", split, "split")


def fdk(projections: Any, geometry: ConeGeometry, *, window: Any = "ram-lak",
        cutoff: float = 1.0, short_scan: Any = "auto", interp: Any = "auto", z0: int = 0,
        nz: int = 0, views_per_batch: int = 0, strict: bool = False,
        gpu_budget: Union[int, str, None] = None, host_budget: Union[int, str, None] = None,
        max_slab_slices: int = 0, store: Any = "auto", workers: int = 0, split: Any = "auto",
        return_report: bool = False, out: Optional[np.ndarray] = None, ctx=None,
        progress: Any = "auto", offset_weight: Any = "auto",
        offset_overlap: float = 0.0) -> Any:
    """FDK reconstruction in memory: the Feldkamp-Davis-Kress algorithm
    (cosine weights, ramp filter, Parker weights for short scans,
    voxel-driven backprojection), as ``ctrecon fdk`` does it.

    Returns the volume, shape (nz, ny, nx) float32 (slices z0 .. z0 + nz - 1
    of the geometry's volume), in the projections' units per mm; with
    ``return_report=True``, (volume, report dict).

    Example::

        g = pyctrecon.ConeGeometry.circular(sid=1000, sdd=1500, nu=256, nv=256,
                                            du=1.75, dv=1.75, nviews=360,
                                            volume=pyctrecon.Volume(256, 256, 256))
        vol = pyctrecon.fdk(projections, g)            # (256, 256, 256)
        vol = pyctrecon.fdk(projections, g, window="hann", z0=100, nz=40)

    Parameters (each named as the CLI's option: ``window`` is ``--window``,
    ``gpu_budget`` ``--gpu-budget``; docs/vocabulary.md):

    projections: (nviews, nv, nu) line integrals, float32 or uint16; numpy,
        or a GPU array (CuPy, or any __cuda_array_interface__ / DLPack
        float32 C-contiguous array: used in place on a CUDA context, and the
        volume is then a new CuPy array or ``out``, with no copy through the
        host).
    geometry: a ConeGeometry.
    window: the ramp filter's window: "ram-lak" (default: the sharpest),
        "shepp-logan", "cosine", "hamming" or "hann" (less noise and
        ringing).
    cutoff: the filter's cut-off as a fraction of Nyquist, 0 < cutoff <= 1
        (default 1.0).
    short_scan: Parker weights: "auto" (default: when the orbit is under
        360 degrees), "off" or "parker".
    interp: backprojection interpolation: "auto" (default: "texture" on a
        GPU, "exact" on the CPU), "exact" (fp32, ~1e-6), "texture" (GPU
        hardware, ~1e-3) or "precise" (double positions on the GPU, ~1e-7).
    offset_weight: offset (half-fan) detector weights (Wang 2002): "auto"
        (default: on a full turn whose detector's narrow side misses the
        field of view), "off" or "wang".
    offset_overlap: width of their transition in detector columns about the
        principal point (default 0.0: the whole overlap).
    z0, nz: the first slice and the number of slices (default 0 and 0: all
        slices), as the CLI's ``--slices Z0:Z0+NZ``.
    views_per_batch: projections filtered and backprojected per batch
        (default 0: 64 on a GPU, 32 on the CPU, fewer when memory is short).
    strict: NaN, infinite or out-of-range values are an error and so is a
        geometry FDK cannot reconstruct (default False: bad values become 0
        with a warning, such a geometry gives a FdkGeometryWarning).
    gpu_budget, host_budget: memory the run may use, bytes or text as "8G"
        (powers of 1024) (default None: free GPU memory less 1 GiB, available
        host memory less 10 %).
    max_slab_slices: at most this many slices per slab (subvolume) (default
        0: as many as the budgets allow).
    store: where filtered projections wait between slabs: "auto" (default:
        the fastest that fits), "device", "host" or "scratch".
    workers: engines sharing the run (default 0: one per GPU, 1 on the CPU).
    split: how several GPUs share it: "auto" (default), "volume" or
        "projections".
    return_report: also return the plan, timings and value counts.
    out: an array to write the volume into (default None: a new one).
    ctx: a pyctrecon.Context (default None: this thread's, device "auto").
    progress: "auto" (default: a tqdm bar when tqdm is installed and the
        run is long), True, False, a callable(stage, fraction) or a tqdm bar.

    Any of gpu_budget, host_budget, max_slab_slices, store, workers, split
    or return_report runs the planned pipeline between arrays, which the
    plain call is with the default budgets."""
    _check_geometry(geometry, strict, offset_weight)
    nzo = _nz(geometry, z0, nz)
    vshape = (nzo, geometry.volume.ny, geometry.volume.nx)
    d = _gpu.gpu_input(projections, out, "projections")
    if d is not None:
        _gpu.check_shape(d, geometry.projection_shape, "projections")
        vol, dv = _gpu.device_out(out, projections, vshape)
        _core.distinct(dv, "out", ("projections", d))
        proj_a, vol_a = _gpu.carray(d), _gpu.carray(dv)
    else:
        proj = _core.host_in(projections, "projections", geometry.projection_shape,
                             (np.float32, np.uint16))
        vol = _core.host_out(out, vshape)
        _core.distinct(vol, "out", ("projections", proj))
        proj_a, vol_a = _core.carray(proj), _core.carray(vol)
    planned = (gpu_budget is not None or host_budget is not None or max_slab_slices or
               store != "auto" or workers or split != "auto" or return_report)
    if not planned:
        o = _fdk_options(window, cutoff, short_scan, interp, z0, nz, views_per_batch, strict,
                         offset_weight=offset_weight, offset_overlap=offset_overlap)
        _core.call(progress, lib.ctr_fdk, context(ctx).ptr, geometry._ptr, o, proj_a, vol_a)
        return vol
    so = new_struct("ctr_fdk_stream_options", lib.ctr_fdk_stream_options_init, lib.CTR_FDK_STREAM_OPTIONS_VERSION)
    _fdk_options(window, cutoff, short_scan, interp, z0, nz, views_per_batch, strict, so.fdk,
                 offset_weight, offset_overlap)
    keep: list = []
    _stream_options(so, gpu_budget=gpu_budget, host_budget=host_budget,
                    max_slab_slices=max_slab_slices, store=store, scratch_dir=None,
                    input_scale=1.0, out_dtype="float32", out_scale=1.0, resume=False,
                    workers=workers, split=split, keep=keep)
    rep = new_struct("ctr_fdk_stream_report", lib.ctr_fdk_stream_report_init, lib.CTR_FDK_STREAM_REPORT_VERSION)
    _core.call(progress, lib.ctr_fdk_stream_memory, context(ctx).ptr, geometry._ptr, so,
               proj_a, vol_a, rep)
    return (vol, _report(rep)) if return_report else vol


def _report(rep) -> dict:
    d = _core.struct_dict(rep)
    d["plan"]["description"] = _describe(ffi.addressof(rep, "plan"))
    return d


def _describe(plan) -> str:
    """ctr_fdk_plan_describe of a ctr_fdk_plan pointer."""
    buf = ffi.new("char[]", max(lib.ctr_fdk_plan_describe(plan, ffi.NULL, 0), 0) + 1)
    lib.ctr_fdk_plan_describe(plan, buf, len(buf))
    return ffi.string(buf).decode()


def fdk_file(projections: Union[str, os.PathLike, StackReader], geometry: ConeGeometry,
             out: Union[str, os.PathLike], *, out_format: Any = "auto", window: Any = "ram-lak",
             cutoff: float = 1.0, short_scan: Any = "auto", interp: Any = "auto", z0: int = 0,
             nz: int = 0, views_per_batch: int = 0, strict: bool = False,
             gpu_budget: Union[int, str, None] = None, host_budget: Union[int, str, None] = None,
             max_slab_slices: int = 0, store: Any = "auto",
             scratch_dir: Union[str, os.PathLike, None] = None, input_scale: float = 1.0,
             out_dtype: Any = "float32", out_scale: float = 1000.0, resume: bool = False,
             overwrite: bool = False, workers: int = 0, split: Any = "auto", ctx=None,
             progress: Any = "auto") -> dict:
    """Streamed FDK from a projection file to a volume file, as ``ctrecon fdk
    --projections FILE --out OUT`` (docs/out-of-core.md): neither needs to fit
    in memory.

    projections: a path (its format from the extension), or a StackReader
        for raw files. out: the volume file; out_format "auto" (default: from
        the extension), "raw", "tiff", "tiff-stack", "nrrd", "hdf5", "zarr".
    input_scale: the input values are divided by it (default 1.0), as
        ``--input-scale``.
    out_dtype: "float32" (default) or "uint16"; out_scale: uint16 stores
        value x out_scale, clamped to 0 .. 65535 (default 1000.0, as
        ``--out-scale``; float32 ignores it).
    scratch_dir: where filtered projections spill to disk (default None:
        beside ``out``).
    resume: continue an interrupted run (default False); overwrite: replace
        an existing ``out`` (default False: refused before anything is read,
        InvalidArgumentError with ``.keyword`` "overwrite"), the CLI's
        ``--force``.
    The other keywords and their defaults are fdk()'s.

    The output appears at ``out`` only when complete; a failed or cancelled
    run (Ctrl-C) keeps ``out``.partial and its journal, and ``resume=True``
    with the same arguments finishes it. Returns the report (plan, timings,
    value counts). On failure the exception's ``report`` attribute holds the
    report (``resumable``, ``journal``). A geometry FDK cannot reconstruct
    warns (FdkGeometryWarning), or with ``strict=True`` is refused
    (GeometryError), as in fdk."""
    _check_geometry(geometry, strict)
    reader = projections if isinstance(projections, StackReader) else StackReader(projections)
    so = new_struct("ctr_fdk_stream_options", lib.ctr_fdk_stream_options_init, lib.CTR_FDK_STREAM_OPTIONS_VERSION)
    _fdk_options(window, cutoff, short_scan, interp, z0, nz, views_per_batch, strict, so.fdk)
    keep: list = []
    _stream_options(so, gpu_budget=gpu_budget, host_budget=host_budget,
                    max_slab_slices=max_slab_slices, store=store, scratch_dir=scratch_dir,
                    input_scale=input_scale, out_dtype=out_dtype, out_scale=out_scale,
                    resume=resume, workers=workers, split=split, keep=keep)
    so.overwrite = int(bool(overwrite))
    rep = new_struct("ctr_fdk_stream_report", lib.ctr_fdk_stream_report_init, lib.CTR_FDK_STREAM_REPORT_VERSION)
    try:
        _core.call(progress, lib.ctr_fdk_stream, context(ctx).ptr, geometry._ptr, so, reader._ptr,
                   cstr(out), file_format(out_format), rep)
    except BaseException as e:
        e.report = _report(rep)  # type: ignore[attr-defined]
        raise
    return _report(rep)


def fdk_filter(projections: Any, geometry: ConeGeometry, *, v0: int = 0, window: Any = "ram-lak",
               cutoff: float = 1.0, short_scan: Any = "auto", strict: bool = False,
               out: Optional[np.ndarray] = None, ctx=None) -> np.ndarray:
    """The filtering half of FDK on the CPU (ctr_fdk_filter): views [v0, v0 +
    n) of the geometry, given as (n, nv, nu), weighted and ramp-filtered.
    Writes into ``out`` (default: a copy); out may be the input array. A
    geometry FDK cannot reconstruct warns or, with strict, is refused, as in fdk."""
    _check_geometry(geometry, strict)
    nu, nv, _, _ = geometry.detector
    a = _core.asarray(projections, "projections")
    n = a.shape[0] if a.ndim == 3 else -1
    if out is None:
        res = np.array(_core.host_in(a, "projections", (n, nv, nu)), np.float32, copy=True)
    else:
        res = _core.host_out(out, (n, nv, nu))
        if res is not a:
            res[...] = _core.host_in(a, "projections", (n, nv, nu))
    o = _fdk_options(window, cutoff, short_scan, "auto", 0, 0, 0, strict)
    check(lib.ctr_fdk_filter(context(ctx).ptr, geometry._ptr, o, v0, n, _core.wptr(res)))
    return res


def fdk_backproject(filtered: Any, geometry: ConeGeometry, *, v0: int = 0, z0: int = 0,
                    nz: int = 0, interp: Any = "auto", out: Optional[np.ndarray] = None,
                    ctx=None) -> np.ndarray:
    """Adds the backprojection of filtered views [v0, v0 + n) into ``out``
    (slices [z0, z0 + nz); default: a new zero volume) (ctr_fdk_backproject)."""
    nu, nv, _, _ = geometry.detector
    f = _core.asarray(filtered, "filtered")
    n = f.shape[0] if f.ndim == 3 else -1
    f = _core.host_in(f, "filtered", (n, nv, nu))
    nzo = _nz(geometry, z0, nz)
    vol = _core.host_out(out, (nzo, geometry.volume.ny, geometry.volume.nx), zero=True)
    _core.distinct(vol, "out", ("filtered", f))
    o = _fdk_options("ram-lak", 1.0, "auto", interp, z0, nz, 0, False)
    check(lib.ctr_fdk_backproject(context(ctx).ptr, geometry._ptr, o, v0, n, _core.ptr(f),
                                  _core.carray(vol)))
    return vol


def plan_fdk(geometry: ConeGeometry, *, device: str = "cpu", gpu_budget: Union[int, str] = 0,
             host_budget: Union[int, str] = 0, proj_dtype: Any = "float32",
             vol_dtype: Any = "float32", interp: Any = "auto", z0: int = 0, nz: int = 0,
             views_per_batch: int = 0, max_slab_slices: int = 0, store: Any = "auto",
             input_in_memory: bool = False, output_in_memory: bool = False, workers: int = 0,
             split: Any = "auto") -> dict:
    """The decomposition of an FDK run within the budgets (ctr_fdk_plan_compute, a
    pure function): a dict of ctr_fdk_plan's members and its ``description``."""
    r = new_struct("ctr_fdk_plan_request", lib.ctr_fdk_plan_request_init, lib.CTR_FDK_PLAN_REQUEST_VERSION)
    r.device = _core.enum_value(_DEVICE, device, "device")
    r.gpu_budget = _core.budget(gpu_budget, "gpu_budget")
    r.host_budget = _core.budget(host_budget, "host_budget")
    r.proj_dtype, r.vol_dtype = _core.ctr_dtype(proj_dtype), _core.ctr_dtype(vol_dtype)
    r.interp = _interp(interp)
    _core.assign(r, z0=z0, nz=nz, views_per_batch=views_per_batch,
                 max_slab_slices=max_slab_slices, workers=workers)
    r.store = _core.enum_value(_STORE, store, "store")
    r.input_in_memory, r.output_in_memory = int(input_in_memory), int(output_in_memory)
    r.split = _core.parsed(lib.ctr_fdk_split_parse, "ctr_fdk_split", split, "split")
    p = new_struct("ctr_fdk_plan", lib.ctr_fdk_plan_init, lib.CTR_FDK_PLAN_VERSION)
    check(lib.ctr_fdk_plan_compute(geometry._ptr, r, p))
    d = _core.struct_dict(p)
    d["description"] = _describe(p)
    return d


class Backprojector:
    """Incremental backprojection of filtered views (ctr_backprojector):
    vol += sum weight_n Q_n / c^2 in a volume the backend keeps (GPU memory
    for CUDA); ``add`` views in any order, ``read`` the volume."""

    def __init__(self, geometry: ConeGeometry, *, interp: Any = "auto", z0: int = 0,
                 nz: int = 0, ctx=None):
        self.geometry = geometry
        self.shape = (_nz(geometry, z0, nz), geometry.volume.ny, geometry.volume.nx)
        o = _fdk_options("ram-lak", 1.0, "auto", interp, z0, nz, 0, False)
        self._ctx = context(ctx)
        out = ffi.new("ctr_backprojector **")
        check(lib.ctr_backprojector_create(self._ctx.ptr, geometry._ptr, o, out))
        self._ptr = ffi.gc(out[0], lib.ctr_backprojector_free)

    def add(self, views: Sequence[int], images: Any, weights: Optional[Sequence[float]] = None,
            progress: Any = "auto") -> None:
        """Adds filtered images (n, nv, nu) of geometry views ``views``."""
        nu, nv, _, _ = self.geometry.detector
        v = np.ascontiguousarray(views, np.int64).ravel()
        img = _core.host_in(images, "images", (v.size, nv, nu))
        ptrs = ffi.new("const float *[]", [_core.ptr(img[i]) for i in range(v.size)])
        w = ffi.NULL if weights is None else ffi.new("float[]", [float(x) for x in weights])
        _core.call(progress, lib.ctr_backprojector_add, self._ptr, v.size, _core.ptr(v, "int64_t"),
                   ptrs, w)

    def read(self, out: Optional[np.ndarray] = None) -> np.ndarray:
        vol = _core.host_out(out, self.shape)
        check(lib.ctr_backprojector_read(self._ptr, _core.wptr(vol)))
        return vol

    def reset(self) -> None:
        check(lib.ctr_backprojector_reset(self._ptr))


def backproject_reference(geometry: ConeGeometry, views: Sequence[int], images: Any,
                          weights: Optional[Sequence[float]] = None,
                          out: Optional[np.ndarray] = None, ctx=None) -> np.ndarray:
    """The double-precision reference of the backprojection sum
    (ctr_fdk_backproject_reference), added into ``out`` (float64, shape
    (nz, ny, nx); default zeros)."""
    nu, nv, _, _ = geometry.detector
    v = np.ascontiguousarray(views, np.int64).ravel()
    img = _core.host_in(images, "images", (v.size, nv, nu))
    ptrs = ffi.new("const float *[]", [_core.ptr(img[i]) for i in range(v.size)])
    w = _core.doubles(weights, "weights", v.size)
    vol = _core.host_out(out, geometry.volume_shape, dtype=np.float64, zero=True)
    _core.distinct(vol, "out", ("images", img))
    check(lib.ctr_fdk_backproject_reference(context(ctx).ptr, geometry._ptr, v.size,
                                            _core.ptr(v, "int64_t"), ptrs, w,
                                            _core.wptr(vol, "double")))
    return vol
