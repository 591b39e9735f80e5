"""File I/O for every format of the library (docs/file-formats.md): raw,
TIFF (multi-page), TIFF stacks ("dir/img_%04d.tif"), NRRD (.nrrd, .nhdr),
HDF5 ("file.h5:/dataset", reading only) and PNG previews. A stack of
``count`` images of ``height`` x ``width`` is a numpy array of shape
(count, height, width)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._core import check, cstr, ffi, lib, new_struct

__all__ = ["StackInfo", "StackReader", "StackWriter", "load", "save", "info", "format_guess",
           "format_info",
           "hdf5_read_vector", "png_preview", "png_preview_planes", "png_preview_figure",
           "png_write_gray"]

Path = Union[str, os.PathLike]

def file_format(f: Any) -> int:
    """A ctr_file_format from a name ("auto", "raw", "tiff", "tiff-stack",
    "nrrd", "hdf5", "zarr") through the library's parser, or a value."""
    if isinstance(f, str) and f.lower() == "auto":
        return lib.CTR_FORMAT_AUTO
    return _core.parsed(lib.ctr_format_parse, "ctr_file_format", f, "format")


def format_guess(path: Path) -> str:
    """The format the library reads `path` as (from its name)."""
    out = ffi.new("ctr_file_format *")
    check(lib.ctr_format_guess(cstr(path), out))
    return ffi.string(lib.ctr_format_name(out[0])).decode()


def format_info(f: Any) -> dict:
    """What a file format can do (its row of the library's format table,
    ctr_file_format_info): name, extensions, stack_of_files, dtypes (names),
    feature (the build feature it needs, or None), in_order, resumable,
    many_ranks, adds_to_file, partial (how a resumable run names the partial
    output of OUT, or None), needs_hint (reading it needs raw_shape and
    raw_dtype), dataset_path ("file.h5:/group/data" paths), title (how a
    message names it)."""
    fi = new_struct("ctr_file_format_info", lib.ctr_file_format_info_init,
                    lib.CTR_FILE_FORMAT_INFO_VERSION)
    check(lib.ctr_file_format_get_info(file_format(f), fi))
    text = lambda p: ffi.string(p).decode() if p != ffi.NULL else None
    dtypes = [n for n, d in (("float32", lib.CTR_DTYPE_FLOAT32), ("uint16", lib.CTR_DTYPE_UINT16),
                             ("float16", lib.CTR_DTYPE_FLOAT16)) if fi.dtypes & (1 << d)]
    return {"name": text(fi.name), "extensions": text(fi.extensions).split(),
            "stack_of_files": bool(fi.stack_of_files), "dtypes": dtypes,
            "feature": fi.feature or None, "in_order": bool(fi.in_order),
            "resumable": bool(fi.resumable), "many_ranks": bool(fi.many_ranks),
            "adds_to_file": bool(fi.adds_to_file), "partial": text(fi.partial),
            "needs_hint": bool(fi.needs_hint), "dataset_path": bool(fi.dataset_path),
            "title": text(fi.title)}


@dataclass
class StackInfo:
    """A stack's description (ctr_stack_info): sizes, dtype ("float32",
    "uint16", "float16"), spacing (mm, 0 unknown) and origin (NRRD)."""

    width: int = 0
    height: int = 0
    count: int = 0
    dtype: Optional[str] = None
    spacing: Tuple[float, float, float] = (0.0, 0.0, 0.0)
    origin: Tuple[float, float, float] = (0.0, 0.0, 0.0)

    @property
    def shape(self) -> Tuple[int, int, int]:
        return (self.count, self.height, self.width)

    def _c(self):
        s = new_struct("ctr_stack_info", lib.ctr_stack_info_init, lib.CTR_STACK_INFO_VERSION)
        _core.assign(s, width=self.width, height=self.height, count=self.count)
        if self.dtype is not None:
            s.dtype = _core.ctr_dtype(self.dtype)
        for i in range(3):
            s.spacing[i] = self.spacing[i]
            s.origin[i] = self.origin[i]
        return s

    @classmethod
    def _of(cls, s) -> "StackInfo":
        dt = ffi.string(lib.ctr_dtype_name(s.dtype)).decode() if s.dtype else None
        return cls(s.width, s.height, s.count, dt, tuple(s.spacing), tuple(s.origin))


def _hint(raw_shape: Optional[Sequence[int]], raw_dtype: Any, hint: Optional[StackInfo]):
    if raw_shape is not None:
        c, h, w = (int(x) for x in raw_shape)
        dt = np.dtype(raw_dtype if raw_dtype is not None else np.float32).name
        return StackInfo(w, h, c, dt)._c()
    return hint._c() if hint is not None else ffi.NULL


class StackReader(_core.Handle):
    """An open stack (ctr_stack_open); a context manager. Raw files need
    ``raw_shape`` (count, height, width) and ``raw_dtype`` (and skip
    ``raw_offset`` bytes); for other formats a given ``hint`` is checked."""

    def __init__(self, path: Path, format: Any = "auto", *,
                 raw_shape: Optional[Sequence[int]] = None, raw_dtype: Any = None,
                 raw_offset: int = 0, hint: Optional[StackInfo] = None):
        out = ffi.new("ctr_stack_reader **")
        check(lib.ctr_stack_open(cstr(path), file_format(format),
                                 _hint(raw_shape, raw_dtype, hint), raw_offset, out))
        self._ptr = ffi.gc(out[0], lib.ctr_stack_close)
        self.path = os.fspath(path)

    @property
    def info(self) -> StackInfo:
        return StackInfo._of(lib.ctr_stack_reader_get_info(self._ptr))

    def _dtype(self, dtype: Any) -> np.dtype:
        return np.dtype(dtype) if dtype is not None else np.dtype(self.info.dtype)

    def read(self, first: int = 0, n: Optional[int] = None, dtype: Any = np.float32) -> np.ndarray:
        """Images [first, first + n) converted to dtype (None: the file's),
        shape (n, height, width)."""
        i = self.info
        n = i.count - first if n is None else n
        dt = self._dtype(dtype)
        out = np.empty((n, i.height, i.width), dt)
        check(lib.ctr_stack_read(self._ptr, first, n, _core.ctr_dtype(dt),
                                 ffi.cast("void *", _core.wptr(out, "char"))))
        return out

    def read_rows(self, row0: int, nrows: int, first: int = 0, n: Optional[int] = None,
                  dtype: Any = np.float32) -> np.ndarray:
        """Rows [row0, row0 + nrows) of images [first, first + n), shape
        (n, nrows, width) (ctr_stack_read_rows)."""
        i = self.info
        n = i.count - first if n is None else n
        dt = self._dtype(dtype)
        out = np.empty((n, nrows, i.width), dt)
        check(lib.ctr_stack_read_rows(self._ptr, first, n, row0, nrows, _core.ctr_dtype(dt),
                                      ffi.cast("void *", _core.wptr(out, "char"))))
        return out

    def set_direct_io(self, on: bool) -> None:
        lib.ctr_stack_reader_set_direct_io(self._ptr, int(bool(on)))

    def set_read_threads(self, n: int) -> None:
        """Threads reading an unfiltered HDF5 stack (pread); 1: through
        H5Dread, 0: the default (8). No effect on other formats."""
        lib.ctr_stack_reader_set_read_threads(self._ptr, int(n))


class StackWriter(_core.Writer):
    """A stack being written (ctr_stack_create): data goes to a temporary
    name and appears at `path` only on ``commit()``; ``abort()``, an
    exception in a ``with`` block or collection without commit removes it.
    An output that exists is refused here, and one that appears before the
    commit kept (InvalidArgumentError, ``.keyword`` "overwrite"), unless
    ``overwrite=True``."""

    _commit = lib.ctr_stack_commit

    def __init__(self, path: Path, info: StackInfo, format: Any = "auto", *,
                 overwrite: bool = False):
        if info.dtype is None:
            raise ValueError("StackInfo.dtype: the file's dtype is needed")
        out = ffi.new("ctr_stack_writer **")
        check(lib.ctr_stack_create(cstr(path), file_format(format), info._c(), int(bool(overwrite)),
                                   out))
        self._ptr = ffi.gc(out[0], lib.ctr_stack_abort)
        self.info = info

    def write(self, first: int, images: Any) -> None:
        """Images [first, first + len(images)), shape (n, height, width) (or
        (height, width) for one), float32/uint16/float16 (others: float32)."""
        a = _core.asarray(images, "images")
        if a.ndim == 2:
            a = a[None]
        a = _core.host_in(a, "images", (a.shape[0], self.info.height, self.info.width),
                          (np.float32, np.uint16, np.float16))
        check(lib.ctr_stack_write(self.live(), first, a.shape[0], _core.ctr_dtype(a.dtype),
                                  ffi.cast("void *", _core.ptr(a, "char"))))



def info(path: Path, format: Any = "auto", **raw: Any) -> StackInfo:
    """A stack's description without reading its images."""
    with StackReader(path, format, **raw) as r:
        return r.info


def load(path: Path, format: Any = "auto", *, dtype: Any = None,
         raw_shape: Optional[Sequence[int]] = None, raw_dtype: Any = None, raw_offset: int = 0,
         with_info: bool = False) -> Any:
    """A whole stack as an array of shape (count, height, width), of the
    file's dtype (float32, uint16 or float16) or converted to ``dtype``;
    ``with_info=True`` returns (array, StackInfo)."""
    with StackReader(path, format, raw_shape=raw_shape, raw_dtype=raw_dtype,
                     raw_offset=raw_offset) as r:
        arr = r.read(0, None, dtype)
        i = r.info
    return (arr, i) if with_info else arr


def save(path: Path, array: Any, format: Any = "auto", *, dtype: Any = None,
         spacing: Sequence[float] = (0.0, 0.0, 0.0),
         origin: Sequence[float] = (0.0, 0.0, 0.0), overwrite: bool = False) -> None:
    """Writes a stack (shape (count, height, width), or (height, width)) in
    the file dtype ``dtype`` (default: the array's if float32, uint16 or
    float16, else float32), written whole and renamed into place. A file
    that exists (any file of a TIFF stack, the dataset of an HDF5 file) is
    kept and the call refused, InvalidArgumentError with ``.keyword``
    "overwrite" and ``.value`` the path, unless ``overwrite=True``."""
    a = _core.asarray(array, "array")
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3:
        raise ValueError(f"array has shape {a.shape}: expected (count, height, width)")
    a = _core.host_in(a, "array", None, (np.float32, np.uint16, np.float16))
    fdt = np.dtype(dtype) if dtype is not None else a.dtype
    i = StackInfo(a.shape[2], a.shape[1], a.shape[0], fdt.name, tuple(spacing), tuple(origin))
    check(lib.ctr_stack_save(cstr(path), file_format(format), i._c(), _core.ctr_dtype(a.dtype),
                             ffi.cast("void *", _core.ptr(a, "char")), int(bool(overwrite))))


def hdf5_read_vector(file: Path, dataset: str) -> np.ndarray:
    """A 1D numeric dataset of an HDF5 file (e.g. DXchange's
    "/exchange/theta") as float64; UnsupportedError without HDF5."""
    out, n = ffi.new("double **"), ffi.new("int64_t *")
    check(lib.ctr_hdf5_read_vector(cstr(file), cstr(dataset), out, n))
    try:
        return np.frombuffer(ffi.buffer(out[0], 8 * n[0]), np.float64).copy()
    finally:
        lib.free(out[0])


def hdf5_read_angles(file: Path, dataset: str = "/exchange/theta") -> np.ndarray:
    """Projection angles in degrees from a 1D dataset of an HDF5 file
    (ctr_hdf5_read_angles): its "units" attribute (rad, radian, radians,
    deg, degree, degrees; absent: degrees) honoured, another unit a
    FormatError naming the dataset."""
    out, n = ffi.new("double **"), ffi.new("int64_t *")
    check(lib.ctr_hdf5_read_angles(cstr(file), cstr(dataset), out, n, ffi.NULL))
    try:
        return np.frombuffer(ffi.buffer(out[0], 8 * n[0]), np.float64).copy()
    finally:
        lib.free(out[0])


def png_preview(prefix: Path, volume: Any, lo: float = 0.0, hi: float = 0.0, *,
                overwrite: bool = False) -> None:
    """<prefix>_xy.png, _xz.png, _yz.png: the central slices of a volume
    (nz, ny, nx), [lo, hi] mapped to 0..255 (lo == hi: its percentiles).
    Any of the three that exists is refused unless ``overwrite=True``."""
    v = _core.host_in(volume, "volume")
    if v.ndim != 3:
        raise ValueError(f"volume has shape {v.shape}: expected (nz, ny, nx)")
    nz, ny, nx = v.shape
    check(lib.ctr_png_preview(cstr(prefix), _core.ptr(v), nx, ny, nz, lo, hi, int(bool(overwrite))))


def png_preview_planes(prefix: Path, xy: Any, xz: Any, yz: Any, lo: float = 0.0,
                       hi: float = 0.0, *, overwrite: bool = False) -> None:
    """The same previews from the three planes: xy (ny, nx), xz (nz, nx),
    yz (nz, ny)."""
    a = _core.host_in(xy, "xy")
    ny, nx = a.shape
    b = _core.host_in(xz, "xz")
    nz = b.shape[0]
    b = _core.host_in(b, "xz", (nz, nx))
    c = _core.host_in(yz, "yz", (nz, ny))
    check(lib.ctr_png_preview_planes(cstr(prefix), _core.ptr(a), _core.ptr(b), _core.ptr(c), nx,
                                     ny, nz, lo, hi, int(bool(overwrite))))


def png_preview_figure(prefix: Path, volume: Any, lo: float = 0.0, hi: float = 0.0, *,
                       voxel: Optional[Sequence[float]] = None, units: Optional[str] = None,
                       overwrite: bool = False) -> None:
    """The CLI's --preview figures of a volume (nz, ny, nx)
    (ctr_png_preview_figure, docs/cli.md "Previews and plots"):
    <prefix>_xy.png, _xz.png, _yz.png, its central planes enlarged (a thin
    one stretched, as the caption says), with a colourbar of the window [lo,
    hi] (default 0, 0: the 0.5 / 99.5 % percentiles) and, with ``voxel`` (x,
    y, z) mm, a scale bar; ``units`` under the colourbar. Any of the three
    that exists is refused unless ``overwrite=True``."""
    v = _core.host_in(volume, "volume")
    if v.ndim != 3:
        raise ValueError(f"volume has shape {v.shape}: expected (nz, ny, nx)")
    nz, ny, nx = v.shape
    xy = np.ascontiguousarray(v[nz // 2])
    xz = np.ascontiguousarray(v[:, ny // 2, :])
    yz = np.ascontiguousarray(v[:, :, nx // 2])
    o = _core.new_struct("ctr_preview_options", lib.ctr_preview_options_init,
                         lib.CTR_PREVIEW_OPTIONS_VERSION)
    o.lo, o.hi = lo, hi
    if voxel is not None:
        d = [float(x) for x in voxel]
        if len(d) != 3:
            raise ValueError(f"voxel={voxel!r}: expected (x, y, z) sizes in mm")
        o.voxel = d
    keep = []
    o.units = _core.kept_cstr(keep, units)
    o.overwrite = int(bool(overwrite))
    check(lib.ctr_png_preview_figure(cstr(prefix), _core.ptr(xy), _core.ptr(xz), _core.ptr(yz),
                                     nx, ny, nz, o))


def png_write_gray(path: Path, image: Any, lo: float = 0.0, hi: float = 0.0, *,
                   overwrite: bool = False) -> None:
    """One 8-bit grey PNG of an image (height, width); an existing file is
    refused unless ``overwrite=True``."""
    a = _core.host_in(image, "image")
    if a.ndim != 2:
        raise ValueError(f"image has shape {a.shape}: expected (height, width)")
    check(lib.ctr_png_write_gray(cstr(path), _core.ptr(a), a.shape[1], a.shape[0], lo, hi,
                                 int(bool(overwrite))))
