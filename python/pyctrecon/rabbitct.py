"""RabbitCT data files, geometry and scoring (docs/rabbitct.md; Rohkohl et
al. 2009). Matrices are 12 doubles in RabbitCT's order (element (r, c) at
A[c * 3 + r]); images (height, width) float32; reference volumes (L, L, L)
uint16."""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._core import check, cstr, ffi, lib

__all__ = ["RabbitCTFile", "RabbitCTWriter", "rabbitct_weight", "rabbitct_to_hu",
           "rabbitct_score"]

Path = Union[str, os.PathLike]


def _header_dict(h) -> dict:
    return {"version": h.version, "width": h.width, "height": h.height, "nviews": h.nviews,
            "hu0": h.hu0, "hu1": h.hu1, "ref_sizes": [h.ref_sizes[i] for i in range(h.nref)]}


class RabbitCTFile(_core.Handle):
    """An open RabbitCT file (ctr_rabbitct_open); a context manager."""

    def __init__(self, path: Path):
        out = ffi.new("ctr_rabbitct **")
        check(lib.ctr_rabbitct_open(cstr(path), out))
        self._ptr = ffi.gc(out[0], lib.ctr_rabbitct_close)

    @property
    def header(self) -> dict:
        """version, width, height, nviews, hu0, hu1, ref_sizes."""
        return _header_dict(lib.ctr_rabbitct_get_header(self._ptr))

    def read_view(self, i: int) -> Tuple[np.ndarray, np.ndarray]:
        """View i: (matrix (12,), image (height, width))."""
        h = lib.ctr_rabbitct_get_header(self._ptr)
        m = np.empty(12, np.float64)
        img = np.empty((h.height, h.width), np.float32)
        check(lib.ctr_rabbitct_read_view(self._ptr, i, _core.wptr(m, "double"), _core.wptr(img)))
        return m, img

    def read_reference(self, L: int) -> np.ndarray:
        """The L^3 uint16 reference volume."""
        out = np.empty((L, L, L), np.uint16)
        check(lib.ctr_rabbitct_read_reference(self._ptr, L, _core.wptr(out, "uint16_t")))
        return out


class RabbitCTWriter(_core.Writer):
    """Writes a RabbitCT file (ctr_rabbitct_create): views in order, then the
    declared reference volumes; the file appears only on ``commit()`` (a
    ``with`` block commits when it ends without an exception). An existing
    file is refused unless ``overwrite=True``."""

    _commit = lib.ctr_rabbitct_commit

    def __init__(self, path: Path, *, width: int, height: int, nviews: int, hu0: float = 0.0,
                 hu1: float = 0.0, ref_sizes: Sequence[int] = (), overwrite: bool = False):
        h = ffi.new("ctr_rabbitct_header *")
        _core.assign(h, width=width, height=height, nviews=nviews, hu0=hu0, hu1=hu1)
        if len(ref_sizes) > 8:
            raise ValueError("at most 8 reference volumes")
        h.nref = len(ref_sizes)
        for i, L in enumerate(ref_sizes):
            h.ref_sizes[i] = L
        self.width, self.height = width, height
        out = ffi.new("ctr_rabbitct_writer **")
        check(lib.ctr_rabbitct_create(cstr(path), h, int(bool(overwrite)), out))
        self._ptr = ffi.gc(out[0], lib.ctr_rabbitct_abort)

    def write_view(self, matrix: Sequence[float], image: Any) -> None:
        m = np.ascontiguousarray(matrix, np.float64).ravel()
        if m.size != 12:
            raise ValueError("a RabbitCT matrix has 12 values")
        img = _core.host_in(image, "image", (self.height, self.width))
        check(lib.ctr_rabbitct_write_view(self.live(), _core.ptr(m, "double"), _core.ptr(img)))

    def write_reference(self, L: int, volume: Any) -> None:
        v = np.ascontiguousarray(volume, np.uint16)
        if v.shape != (L, L, L):
            raise ValueError(f"volume has shape {v.shape}: expected {(L, L, L)}")
        check(lib.ctr_rabbitct_write_reference(self.live(), L, _core.ptr(v, "uint16_t")))



def rabbitct_weight(matrix: Sequence[float]) -> float:
    """1 / A[2][3]^2: the canonical 1 / c^2 weight to RabbitCT's 1 / w^2."""
    return lib.ctr_rabbitct_weight(_core.doubles(matrix, "matrix", 12))


def rabbitct_to_hu(volume: Any, hu0: float, hu1: float) -> np.ndarray:
    """HU = round(hu0 f + hu1) for f > 0, else 0, clipped at 4095 (uint16)."""
    f = _core.host_in(volume, "volume")
    out = np.empty(f.shape, np.uint16)
    lib.ctr_rabbitct_to_hu(_core.ptr(f), f.size, hu0, hu1, _core.wptr(out, "uint16_t"))
    return out


def rabbitct_score(volume: Any, reference: Any, hu0: float, hu1: float) -> dict:
    """RabbitCT's figures (HU): rmse, mse, max_error, psnr."""
    ref = np.ascontiguousarray(reference, np.uint16)
    if ref.ndim != 3 or len(set(ref.shape)) != 1:
        raise ValueError(f"reference has shape {ref.shape}: expected (L, L, L)")
    f = _core.host_in(volume, "volume", ref.shape)
    s = ffi.new("ctr_rabbitct_score *")
    check(lib.ctr_rabbitct_score_volume(_core.ptr(f), _core.ptr(ref, "uint16_t"), ref.shape[0],
                                        hu0, hu1, s))
    return {"rmse": s.rmse, "mse": s.mse, "max_error": s.max_error, "psnr": s.psnr}
