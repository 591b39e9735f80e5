"""Comparisons and small helpers of the core API."""
from __future__ import annotations

from typing import Any

from . import _core
from ._core import check, ffi, lib, new_struct

__all__ = ["volume_compare", "size_parse"]


def volume_compare(reconstruction: Any, truth: Any, margin: int = 0) -> dict:
    """Errors of a reconstruction against a truth, both (nz, ny, nx)
    (ctr_volume_compare): rmse_object, rmse_flat, max_abs, n_object, n_flat;
    ``margin`` slices at the top and bottom left out."""
    t = _core.host_in(truth, "truth")
    if t.ndim != 3:
        raise ValueError(f"truth has shape {t.shape}: expected (nz, ny, nx)")
    r = _core.host_in(reconstruction, "reconstruction", t.shape)
    e = new_struct("ctr_volume_error", lib.ctr_volume_error_init, lib.CTR_VOLUME_ERROR_VERSION)
    nz, ny, nx = t.shape
    check(lib.ctr_volume_compare(_core.ptr(r), _core.ptr(t), nx, ny, nz, margin, e))
    return _core.struct_dict(e)


def size_parse(text: str) -> int:
    """Bytes of a size with an optional suffix: "8G", "512MiB", "1.5T"."""
    return _core.budget(text, "text")
