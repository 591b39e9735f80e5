"""Parallel-beam CT: FBP of sinograms and projections (flat/dark), and the
synchrotron pipeline (docs/parallel-beam.md, docs/synchrotron.md):
corrections and the streamed FBP between files or arrays. Shapes:
sinograms (nslices, nangles, nbins), projections (nangles, nrows, nbins),
flat and dark (nrows, nbins), slices (nslices, ny, nx)."""
from __future__ import annotations

import os
from dataclasses import dataclass, fields
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core, _gpu
from ._core import check, context, cstr, ffi, lib, new_struct
from .conebeam import window as _window
from .geometry import ParallelGeometry, parallel_params
from .io import StackReader, file_format

__all__ = ["fbp", "fbp_filter", "fbp_backproject", "fbp_projections", "fbp_backproject_reference",
           "flatfield_sinograms", "flatfield_average", "Corrections", "center_find",
           "sinogram_dezinger", "sinogram_remove_stripes", "paganin_filter", "paganin_response",
           "paganin_margin", "stitch_360", "fbp_stream"]

_FBP_INTERP = {"linear": lib.CTR_FBP_LINEAR, "nearest": lib.CTR_FBP_NEAREST}
_CENTER = {"auto": lib.CTR_CENTER_AUTO, "vo": lib.CTR_CENTER_VO,
           "correlation": lib.CTR_CENTER_CORRELATION}
_CENTER_NAME = {v: k for k, v in _CENTER.items()}
_STRIPE = {"none": lib.CTR_STRIPE_NONE, "sorting": lib.CTR_STRIPE_SORTING,
           "wavelet": lib.CTR_STRIPE_WAVELET}


def _fbp_options(window, cutoff, interp, kernel, strict, keep, counts=None, gpu_budget=None):
    o = new_struct("ctr_fbp_options", lib.ctr_fbp_options_init, lib.CTR_FBP_OPTIONS_VERSION)
    o.window = _window(window)
    _core.assign(o, cutoff=cutoff)
    o.interp = _core.enum_value(_FBP_INTERP, interp, "interp")
    o.kernel = _core.kept_cstr(keep, kernel)
    o.strict = int(bool(strict))
    o.gpu_budget = _core.budget(gpu_budget, "gpu_budget")
    if counts is not None:
        o.counts = counts
    return o


def _counts():
    return new_struct("ctr_value_counts", lib.ctr_value_counts_init, lib.CTR_VALUE_COUNTS_VERSION)


def _nslices(a: Any, name: str) -> int:
    """The first of 3 dimensions of a numpy array or a GPU array's view."""
    if len(a.shape) != 3:
        raise ValueError(f"{name} has shape {tuple(a.shape)}: expected 3 dimensions")
    return a.shape[0]


def _slices_of(geometry: ParallelGeometry, rows: int, nslices: Optional[int], out: Any) -> int:
    """The slices to reconstruct: a row a slice without a tilt; with one,
    ``nslices``, else out's, else as many as detector rows."""
    if geometry.tilt == 0:
        if nslices is not None and nslices != rows:
            raise ValueError(f"nslices={nslices}: without a tilt every sinogram is a slice "
                             f"({rows} here)")
        return rows
    if nslices is not None:
        return int(nslices)
    return out.shape[0] if out is not None and len(out.shape) == 3 else rows


def _sino_io(a: Any, out: Any, name: str, geometry: ParallelGeometry,
             nslices: Optional[int] = None):
    """Sinograms in, slices out: (slices, ctr_array of the sinograms and of
    the slices, nslices, the input's owner to keep alive). GPU arrays in place
    when either is one (a GPU `out` with host sinograms: TypeError), else
    numpy arrays (the host rule). With a tilt the sinograms have the
    geometry's rows and the slices are ``nslices`` (_slices_of)."""
    d = _gpu.gpu_input(a, out, name)
    if d is not None:
        ns = _slices_of(geometry, _nslices(d, name), nslices, out)
        _gpu.check_shape(d, geometry.sinogram_shape(ns), name)
        res, dv = _gpu.device_out(out, a, geometry.slice_shape(ns))
        _core.distinct(dv, "out", (name, d))
        return res, _gpu.carray(d), _gpu.carray(dv), ns, d
    s = _core.asarray(a, name)
    ns = _slices_of(geometry, _nslices(s, name), nslices, out)
    s = _core.host_in(s, name, geometry.sinogram_shape(ns))
    res = _core.host_out(out, geometry.slice_shape(ns))
    _core.distinct(res, "out", (name, s))
    return res, _core.carray(s), _core.carray(res), ns, s


def fbp(sinograms: Any, geometry: ParallelGeometry, *, window: Any = "ram-lak",
        cutoff: float = 1.0, interp: Any = "linear", kernel: Optional[str] = None,
        strict: bool = False, return_counts: bool = False, out: Optional[np.ndarray] = None,
        gpu_budget: Union[int, str, None] = None, ctx=None, progress: Any = "auto",
        nslices: Optional[int] = None) -> Any:
    """Filtered backprojection (ctr_fbp) of sinograms (nslices, nangles,
    nbins) into slices (nslices, ny, nx), in 1/mm. A tilted geometry
    (laminography) takes sinograms of its rows (nrows, nangles, nbins) and
    gives ``nslices`` slices (default: out's, else nrows), on the CPU or the GPU. window / cutoff: the ramp
    filter's; interp "linear" or "nearest"; kernel: a GPU kernel name
    (docs/parallel-beam.md; None = tuned automatically); strict: bad values
    are an error. return_counts=True returns (slices, counts of bad values
    met, a dict of ctr_value_counts) and logs no warning. gpu_budget: GPU
    memory the call may use on each GPU of a CUDA context (bytes or "4G";
    None or 0: free memory less 1 GiB): the chunks of slices shrink to fit,
    and one too small for chunks of one slice is a DeviceOutOfMemoryError
    naming gpu_budget; the CPU ignores it.

    GPU arrays (CuPy, or any __cuda_array_interface__ / DLPack float32
    C-contiguous array) are used in place on a CUDA context: sinograms on the
    GPU give the slices on the GPU (a new CuPy array, or `out`), with no copy
    through the host and the bits of the numpy path."""
    res, s_a, v_a, ns, owner = _sino_io(sinograms, out, "sinograms", geometry, nslices)
    keep: list = [owner]
    counts = _counts() if return_counts else None
    o = _fbp_options(window, cutoff, interp, kernel, strict, keep, counts, gpu_budget)
    _core.call(progress, lib.ctr_fbp, context(ctx).ptr, geometry._ptr, o, s_a, v_a)
    return (res, _core.struct_dict(counts)) if return_counts else res


def fbp_filter(sinograms: Any, geometry: ParallelGeometry, *, window: Any = "ram-lak",
               cutoff: float = 1.0, strict: bool = False, out: Optional[np.ndarray] = None,
               ctx=None) -> np.ndarray:
    """Ramp-filtered sinograms (ctr_fbp_filter), scaled so that
    fbp_backproject of them is the reconstruction; into ``out`` (default: a
    copy; may be the input itself)."""
    a = _core.asarray(sinograms, "sinograms")
    ns = _nslices(a, "sinograms")
    shape = geometry.sinogram_shape(ns)
    if out is None:
        res = np.array(_core.host_in(a, "sinograms", shape), np.float32, copy=True)
    else:
        res = _core.host_out(out, shape)
        if res is not a:
            res[...] = _core.host_in(a, "sinograms", shape)
    o = _fbp_options(window, cutoff, "linear", None, strict, [])
    check(lib.ctr_fbp_filter(context(ctx).ptr, geometry._ptr, o, ns, _core.wptr(res)))
    return res


def fbp_backproject(filtered: Any, geometry: ParallelGeometry, *, interp: Any = "linear",
                    kernel: Optional[str] = None, strict: bool = False,
                    out: Optional[np.ndarray] = None, gpu_budget: Union[int, str, None] = None,
                    ctx=None, nslices: Optional[int] = None) -> np.ndarray:
    """The weighted backprojection of filtered sinograms
    (ctr_fbp_backproject); GPU arrays in place on a CUDA context, as fbp.
    gpu_budget as fbp's: all slices at once when they fit in it, else chunks
    of them (the same values). nslices: a tilted geometry's slices, as fbp's."""
    res, f_a, v_a, ns, owner = _sino_io(filtered, out, "filtered", geometry, nslices)
    keep: list = [owner]
    o = _fbp_options("ram-lak", 1.0, interp, kernel, strict, keep, gpu_budget=gpu_budget)
    check(lib.ctr_fbp_backproject(context(ctx).ptr, geometry._ptr, o, ns,
                                  ffi.cast("float *", f_a.data), ffi.cast("float *", v_a.data)))
    return res


def fbp_backproject_reference(filtered: Any, geometry: ParallelGeometry, *,
                              interp: Any = "linear", nslices: Optional[int] = None) -> np.ndarray:
    """The double-precision reference backprojection (CPU), float64 slices
    (nslices: a tilted geometry's slices, as fbp's)."""
    a = _core.asarray(filtered, "filtered")
    ns = _slices_of(geometry, _nslices(a, "filtered"), nslices, None)
    f = _core.host_in(a, "filtered", geometry.sinogram_shape(ns))
    res = np.zeros(geometry.slice_shape(ns), np.float64)
    check(lib.ctr_fbp_backproject_reference(geometry._ptr,
                                            _core.enum_value(_FBP_INTERP, interp, "interp"), ns,
                                            _core.ptr(f), _core.wptr(res, "double")))
    return res


def _flat_dark(flat, dark, nrows, nbins):
    f = _core.host_in(flat, "flat", (nrows, nbins))
    d = None if dark is None else _core.host_in(dark, "dark", (nrows, nbins))
    return f, d


def fbp_projections(projections: Any, geometry: ParallelGeometry, flat: Any,
                    dark: Any = None, *, row0: int = 0, nslices: Optional[int] = None,
                    window: Any = "ram-lak", cutoff: float = 1.0, interp: Any = "linear",
                    kernel: Optional[str] = None, strict: bool = False,
                    out: Optional[np.ndarray] = None, gpu_budget: Union[int, str, None] = None,
                    ctx=None, progress: Any = "auto") -> np.ndarray:
    """Projections (nangles, nrows, nbins; float32 or uint16) to slices in one
    call (ctr_fbp_projections): flat/dark correction and -log, filter,
    backprojection of detector rows [row0, row0 + nslices) (default: all
    from row0). flat and dark: (nrows, nbins) averaged beams (dark None: 0).
    gpu_budget as fbp's."""
    p = _core.asarray(projections, "projections")
    if p.ndim != 3:
        raise ValueError(f"projections has shape {p.shape}: expected (nangles, nrows, nbins)")
    na, nrows, nb = p.shape
    p = _core.host_in(p, "projections", (geometry.nangles, nrows, geometry.nbins),
                      (np.float32, np.uint16))
    f, d = _flat_dark(flat, dark, nrows, nb)
    ns = nrows - row0 if nslices is None else nslices
    res = _core.host_out(out, geometry.slice_shape(ns))
    _core.distinct(res, "out", ("projections", p), ("flat", f), ("dark", d))
    keep: list = []
    o = _fbp_options(window, cutoff, interp, kernel, strict, keep, gpu_budget=gpu_budget)
    _core.call(progress, lib.ctr_fbp_projections, context(ctx).ptr, geometry._ptr, o,
               _core.carray(p), _core.ptr(f), ffi.NULL if d is None else _core.ptr(d), row0,
               _core.carray(res))
    return res


def flatfield_sinograms(projections: Any, flat: Any, dark: Any = None, *, row0: int = 0,
                        nslices: Optional[int] = None) -> Tuple[np.ndarray, int]:
    """Flat-field correction, -log and transposition (ctr_flatfield_sinograms):
    sinograms (nslices, nangles, nbins) of rows [row0, row0 + nslices), and
    the count of transmissions clamped to 1e-6."""
    p = _core.asarray(projections, "projections")
    if p.ndim != 3:
        raise ValueError(f"projections has shape {p.shape}: expected (nangles, nrows, nbins)")
    na, nrows, nb = p.shape
    p = _core.host_in(p, "projections", None, (np.float32, np.uint16))
    f, d = _flat_dark(flat, dark, nrows, nb)
    ns = nrows - row0 if nslices is None else nslices
    res = np.empty((ns, na, nb), np.float32)
    clamped = ffi.new("int64_t *")
    check(lib.ctr_flatfield_sinograms(ffi.cast("void *", _core.ptr(p, "char")),
                                      _core.ctr_dtype(p.dtype), nb, nrows, na, _core.ptr(f),
                                      ffi.NULL if d is None else _core.ptr(d), row0, ns,
                                      _core.wptr(res), clamped))
    return res, int(clamped[0])


def flatfield_average(images: Any) -> np.ndarray:
    """The mean of n images (n, height, width), float32 or uint16
    (ctr_flatfield_average)."""
    a = _core.asarray(images, "images")
    if a.ndim != 3:
        raise ValueError(f"images has shape {a.shape}: expected (n, height, width)")
    a = _core.host_in(a, "images", None, (np.float32, np.uint16))
    res = np.empty(a.shape[1:], np.float32)
    check(lib.ctr_flatfield_average(ffi.cast("void *", _core.ptr(a, "char")),
                                    _core.ctr_dtype(a.dtype), a.shape[1] * a.shape[2], a.shape[0],
                                    _core.wptr(res)))
    return res


# ---------------------------------------------------------------------------
# Corrections (ctr_corrections)
# ---------------------------------------------------------------------------

@dataclass
class Corrections:
    """The synchrotron corrections (ctr_corrections; docs/synchrotron.md).
    Every field at its default is "off" or the CLI's default (the CLI's
    option in brackets): center_method "auto" | "vo" | "correlation"
    (--center-method) and its search range (center_min, center_max: both 0
    = the whole detector; --center-range); dezinger threshold (0 off;
    --dezinger) and dezinger_size (3); stripe "none" | "sorting" | "wavelet"
    (--stripe) with stripe_size (21; --stripe-size), stripe_level (3;
    --stripe-level), stripe_sigma (1; --stripe-sigma), stripe_wavelet (5;
    --stripe-wavelet); Paganin's delta / beta (0 off; --paganin-delta-beta), energy_kev
    (--energy), distance_mm (--distance); stitch_360; bin_x, bin_y (1:
    none; --bin)."""

    center_method: str = "auto"
    center_min: float = 0.0
    center_max: float = 0.0
    dezinger: float = 0.0
    dezinger_size: int = 3
    stripe: str = "none"
    stripe_size: int = 21
    stripe_level: int = 3
    stripe_sigma: float = 1.0
    stripe_wavelet: int = 5
    paganin_delta_beta: float = 0.0
    energy_kev: float = 0.0
    distance_mm: float = 0.0
    stitch_360: bool = False
    bin_x: int = 1
    bin_y: int = 1

    def _c(self):
        c = new_struct("ctr_corrections", lib.ctr_corrections_init, lib.CTR_CORRECTIONS_VERSION)
        for f in fields(self):
            v = getattr(self, f.name)
            if f.name == "center_method":
                v = _core.enum_value(_CENTER, v, "center_method")
            elif f.name == "stripe":
                v = _core.enum_value(_STRIPE, v, "stripe")
            elif isinstance(v, bool):
                v = int(v)
            _core.assign(c, {f.name: "Corrections." + f.name}, **{f.name: v})
        return c


def _corr(c: Optional[Corrections]):
    return (c or Corrections())._c()


def center_find(sinograms: Any, geometry: ParallelGeometry, *, method: str = "auto",
                lo: float = 0.0, hi: float = 0.0, ctx=None) -> Tuple[float, str]:
    """The rotation axis (bins) of sinograms (nslices, nangles, nbins)
    (ctr_center_find) and the method that found it."""
    a = _core.asarray(sinograms, "sinograms")
    ns = _nslices(a, "sinograms")
    s = _core.host_in(a, "sinograms", geometry.sinogram_shape(ns))
    axis, used = ffi.new("double *"), ffi.new("ctr_center_method *")
    check(lib.ctr_center_find(context(ctx).ptr, geometry._ptr,
                              _core.enum_value(_CENTER, method, "method"), lo, hi, ns,
                              _core.ptr(s), axis, used))
    return axis[0], _CENTER_NAME.get(used[0], str(used[0]))


def _inplace(a: Any, name: str) -> np.ndarray:
    """An array the library changes in place: a writable C-contiguous float32
    numpy array is changed itself; anything else is converted to a new one."""
    if isinstance(a, np.ndarray) and a.dtype == np.float32 and a.flags.c_contiguous and \
            a.flags.writeable:
        return a
    return np.array(_core.host_in(a, name), np.float32, copy=True)


def sinogram_dezinger(sinograms: Any, corrections: Corrections, *, ctx=None) -> Tuple[np.ndarray, int]:
    """Dezinger of sinograms (nslices, nangles, nbins) (corrections.dezinger,
    dezinger_size): in place when the input is a writable C-contiguous
    float32 array; returns (sinograms, values replaced)."""
    s = _inplace(sinograms, "sinograms")
    ns, na, nb = s.shape
    n = ffi.new("int64_t *")
    check(lib.ctr_sinogram_dezinger(context(ctx).ptr, corrections._c(), nb, na, ns, _core.wptr(s), n))
    return s, int(n[0])


def sinogram_remove_stripes(sinograms: Any, corrections: Corrections, *, ctx=None) -> np.ndarray:
    """Stripe (ring) removal of sinograms (corrections.stripe ...): in place
    as sinogram_dezinger; returns the sinograms."""
    s = _inplace(sinograms, "sinograms")
    ns, na, nb = s.shape
    check(lib.ctr_sinogram_remove_stripes(context(ctx).ptr, corrections._c(), nb, na, ns,
                                          _core.wptr(s)))
    return s


def paganin_filter(images: Any, corrections: Corrections, pixel_mm: float, *, ctx=None) -> np.ndarray:
    """Paganin's filter on transmission images (n, height, width), in place
    as sinogram_dezinger (ctr_paganin_filter)."""
    s = _inplace(images, "images")
    n, h, w = s.shape
    check(lib.ctr_paganin_filter(context(ctx).ptr, corrections._c(), pixel_mm, w, h, n,
                                 _core.wptr(s)))
    return s


def paganin_response(corrections: Corrections, pixel_mm: float, fx: float, fy: float) -> float:
    return lib.ctr_paganin_response(corrections._c(), pixel_mm, fx, fy)


def paganin_margin(corrections: Corrections, pixel_mm: float) -> int:
    return lib.ctr_paganin_margin(corrections._c(), pixel_mm)


def stitch_360(sinograms: Any, geometry: ParallelGeometry) -> Tuple[np.ndarray, ParallelGeometry]:
    """Joins a 360-degree offset-axis scan's sinograms into those of the
    180-degree geometry of the doubled field of view (ctr_stitch_360)."""
    a = _core.asarray(sinograms, "sinograms")
    ns = _nslices(a, "sinograms")
    s = _core.host_in(a, "sinograms", geometry.sinogram_shape(ns))
    g2 = geometry.stitch_360()
    res = np.empty(g2.sinogram_shape(ns), np.float32)
    check(lib.ctr_stitch_360(geometry._ptr, g2._ptr, ns, _core.ptr(s), _core.wptr(res)))
    return res, g2


# ---------------------------------------------------------------------------
# The streamed FBP
# ---------------------------------------------------------------------------

def fbp_stream(input: Any, out: Union[str, os.PathLike, None] = None, *,
               angles: Optional[Sequence[float]] = None, angle_start: float = 0.0,
               angle_range: float = 180.0, axis: Union[str, float] = "auto",
               axis_shift: Optional[Sequence[float]] = None, nx: int = 0, ny: int = 0,
               voxel: float = 1.0, pixel_size: float = 1.0, flat: Any = None, dark: Any = None,
               corrections: Optional[Corrections] = None, sinograms: bool = False,
               rows: Tuple[int, int] = (0, 0), angle_subset: Tuple[int, int, int] = (0, 0, 1),
               center_row: int = -1, out_format: Any = "auto", out_dtype: Any = "float32",
               out_scale: float = 1000.0, out_offset: float = 0.0, batch: int = 0,
               read_ahead: int = 2,
               host_budget: Union[int, str, None] = None,
               gpu_budget: Union[int, str, None] = None, resume: bool = False,
               overwrite: bool = False,
               window: Any = "ram-lak", cutoff: float = 1.0, interp: Any = "linear",
               kernel: Optional[str] = None, strict: bool = False,
               angle_units: Optional[str] = None, input_scale: float = 1.0,
               out_array: Optional[np.ndarray] = None, ctx=None,
               progress: Any = "auto") -> Any:
    """The synchrotron pipeline (ctr_fbp_stream; docs/synchrotron.md):
    corrections, centre finding and FBP, band of slices after band.

    ``input``: a projection file (DXchange "scan.h5:/exchange/data", TIFF,
    raw through a StackReader, NRRD) or an array (projections (nangles,
    nrows, nbins) float32/uint16, or sinograms (nslices, nangles, nbins)
    with ``sinograms=True``). With ``out`` (a path) the slices go to that
    file (written whole and renamed; ``resume`` continues an interrupted
    run; a file that exists is refused before anything is read unless
    ``overwrite=True``) and the report (a dict) is returned; without it, (slices, report)
    with slices (nslices, ny, nx) float32 in memory.

    The angles: ``angles`` or angle_start + i * angle_range / nangles, in
    degrees (``angle_units="rad"``: radians; None warns for a scan that
    looks like radians, as ParallelGeometry); ``axis``: "auto" (found from
    the data, the report gives it),
    "center" or a value in bins; flat/dark: (nrows, nbins) averaged beams
    (flat None: the projections are transmissions); rows: (row0, nrows)
    (nrows 0: to the last); angle_subset: (first, count, step) (count 0:
    all); out_dtype "float32" | "float16" | "uint16" (round((v - out_offset)
    * out_scale)); input_scale: sinograms are divided by it (e.g. a uint16
    scale; projections take none); read_ahead: bands the reader may hold
    ahead, 1 to 16 (default 2); center_row: the row whose band finds the centre
    (-1: the middle of the rows); batch: slices per band (0: 16 on the CPU,
    64 per GPU); host_budget: memory for the band buffers (0: 90 % of what is
    free); gpu_budget: GPU memory each GPU's pipeline may use (bytes or "4G";
    0: free memory less 1 GiB; too small for chunks of one slice:
    DeviceOutOfMemoryError). The other options are fbp()'s."""
    if isinstance(input, (str, os.PathLike)):
        input = StackReader(input)
    keep: list = []
    if isinstance(input, StackReader):
        i = input.info
        nbins, nangles, height = i.width, (i.height if sinograms else i.count), \
            (i.count if sinograms else i.height)
        arr = None
    else:
        arr = _core.asarray(input, "input")
        if arr.ndim != 3:
            raise ValueError(f"input has shape {arr.shape}: expected 3 dimensions")
        arr = _core.host_in(arr, "input", None,
                            (np.float32,) if sinograms else (np.float32, np.uint16))
        nbins = arr.shape[2]
        nangles, height = (arr.shape[1], arr.shape[0]) if sinograms else (arr.shape[0], arr.shape[1])
    p, pk = parallel_params(nbins, None if angles is not None else nangles, angles, angle_start,
                            angle_range, axis, axis_shift, nx, ny, voxel, pixel_size, angle_units,
                            "fbp_stream")
    keep += pk
    fo = _fbp_options(window, cutoff, interp, kernel, strict, keep)
    corr = _corr(corrections)
    o = new_struct("ctr_fbp_stream_options", lib.ctr_fbp_stream_options_init,
                   lib.CTR_FBP_STREAM_OPTIONS_VERSION)
    o.fbp, o.corrections, o.sinograms = fo, corr, int(bool(sinograms))
    if len(rows) != 2 or len(angle_subset) != 3:
        raise ValueError(f"rows={rows!r}, angle_subset={angle_subset!r}: expected (row0, nrows) "
                         "and (first, count, step)")
    _core.assign(o, {"row0": "rows", "nrows": "rows"}, row0=rows[0], nrows=rows[1])
    _core.assign(o, {"angle_first": "angle_subset", "angle_count": "angle_subset",
                     "angle_step": "angle_subset"}, angle_first=angle_subset[0],
                 angle_count=angle_subset[1], angle_step=angle_subset[2])
    o.out_dtype = _core.ctr_dtype(out_dtype)
    _core.assign(o, center_row=center_row, out_scale=out_scale, out_offset=out_offset,
                 batch=batch, read_ahead=read_ahead, input_scale=input_scale)
    o.host_budget = _core.budget(host_budget, "host_budget")
    o.gpu_budget = _core.budget(gpu_budget, "gpu_budget")
    o.resume = int(bool(resume))
    o.overwrite = int(bool(overwrite))
    f = d = None
    if flat is not None and not sinograms:
        f, d = _flat_dark(flat, dark, height, nbins)
    fp = ffi.NULL if f is None else _core.ptr(f)
    dp = ffi.NULL if d is None else _core.ptr(d)
    rep = new_struct("ctr_fbp_stream_report", lib.ctr_fbp_stream_report_init,
                     lib.CTR_FBP_STREAM_REPORT_VERSION)
    c = context(ctx).ptr
    if arr is None:
        if out is None:
            raise ValueError("a file input needs out= (a path): read it with pyctrecon.io.load for an "
                             "array input")
        try:
            _core.call(progress, lib.ctr_fbp_stream, c, p, o, input._ptr, fp, dp, cstr(out),
                       file_format(out_format), rep)
        except BaseException as e:
            e.report = _stream_report(rep)  # type: ignore[attr-defined]
            raise
        return _stream_report(rep)
    if out is not None:
        raise ValueError("an array input gives an array: out= (a path) needs a file input "
                         "(save the array with pyctrecon.io.save first)")
    if out_array is None:
        # The slices' size depends on binning, stitching and the axis found:
        # a first call with an empty description reports it (and the axis,
        # which the second call then uses instead of searching again).
        probe = ffi.new("ctr_array *")
        probe.data = ffi.cast("void *", ffi.new("float[1]"))
        probe.dtype, probe.ndim = lib.CTR_DTYPE_FLOAT32, 3
        probe.dims[0] = probe.dims[1] = probe.dims[2] = 0
        st = lib.ctr_fbp_stream_memory(c, p, o, _core.carray(arr), fp, dp, probe, rep)
        if st != lib.CTR_E_SIZE_MISMATCH:
            check(st)
        found, method = rep.axis_found, rep.center_method
        if found:
            p.axis = rep.axis
        out_array = np.empty((rep.nslices, rep.ny, rep.nx), np.float32)
    else:
        found = None
        out_array = _core.host_out(out_array, out_array.shape, "out_array")
        _core.distinct(out_array, "out_array", ("input", arr), ("flat", f), ("dark", d))
    rep2 = new_struct("ctr_fbp_stream_report", lib.ctr_fbp_stream_report_init,
                      lib.CTR_FBP_STREAM_REPORT_VERSION)
    _core.call(progress, lib.ctr_fbp_stream_memory, c, p, o, _core.carray(arr), fp, dp,
               _core.carray(out_array), rep2)
    r = _stream_report(rep2)
    if found:
        r["axis_found"], r["center_method"] = 1, _CENTER_NAME.get(method, method)
    return out_array, r


def _stream_report(rep) -> dict:
    d = _core.struct_dict(rep)
    d["center_method"] = _CENTER_NAME.get(d["center_method"], d["center_method"])
    return d
