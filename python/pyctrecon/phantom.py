"""Analytic ellipsoid phantoms (docs/phantoms.md): exact cone-beam
projections and parallel-beam sinograms, voxelisation."""
from __future__ import annotations

import os
from typing import Any, Optional, Sequence, Union

import numpy as np

from . import _core
from ._core import check, context, cstr, ffi, lib
from .geometry import ConeGeometry, ParallelGeometry, Volume

__all__ = ["Phantom", "ELLIPSOID_FIELDS"]

ELLIPSOID_FIELDS = ("density", "cx", "cy", "cz", "ax", "ay", "az", "phi_deg", "theta_deg",
                    "psi_deg")


class Phantom:
    """A sum of ellipsoids (ctr_ellipsoid: density, centre cx, cy, cz mm,
    semi-axes ax, ay, az mm, Euler angles z-x-z in degrees)."""

    def __init__(self, ellipsoids: Any = None, *, _ptr=None):
        """``ellipsoids``: an array of shape (n, 10) in ELLIPSOID_FIELDS order,
        or a sequence of dicts with those keys (missing angles are 0)."""
        if _ptr is None:
            rows = []
            for e in ellipsoids:
                if isinstance(e, dict):
                    unknown = set(e) - set(ELLIPSOID_FIELDS)
                    if unknown:
                        raise ValueError(f"unknown ellipsoid keys {sorted(unknown)}: expected "
                                         f"{', '.join(ELLIPSOID_FIELDS)}")
                    rows.append([float(e.get(k, 0.0)) for k in ELLIPSOID_FIELDS])
                else:
                    r = [float(x) for x in e]
                    if len(r) != 10:
                        raise ValueError(f"an ellipsoid has 10 values ({', '.join(ELLIPSOID_FIELDS)})")
                    rows.append(r)
            arr = ffi.new("ctr_ellipsoid[]", max(len(rows), 1))
            for i, r in enumerate(rows):
                for k, v in zip(ELLIPSOID_FIELDS, r):
                    setattr(arr[i], k, v)
            out = ffi.new("ctr_phantom **")
            check(lib.ctr_phantom_from_ellipsoids(arr, len(rows), out))
            _ptr = out[0]
        self._ptr = ffi.gc(_ptr, lib.ctr_phantom_free)

    @classmethod
    def shepp_logan(cls, radius: float, scale: float = 1.0) -> "Phantom":
        """The 3D modified Shepp-Logan head, its unit cube spanning ``radius``
        mm, densities times ``scale``."""
        out = ffi.new("ctr_phantom **")
        check(lib.ctr_phantom_shepp_logan(radius, scale, out))
        return cls(_ptr=out[0])

    @classmethod
    def disk_stack(cls, radius: float, thickness: float, gap: float,
                   scale: float = 1.0) -> "Phantom":
        """Laminography's flat phantom (ctr_phantom_disk_stack): three thin
        coaxial disks about z (oblate ellipsoids of semi-axes radius, radius,
        thickness / 2) at z = -(thickness + gap), 0, +(thickness + gap) mm,
        densities 1, 0.5 and 0.75 times scale."""
        out = ffi.new("ctr_phantom **")
        check(lib.ctr_phantom_disk_stack(radius, thickness, gap, scale, out))
        return cls(_ptr=out[0])

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "Phantom":
        """A JSON list of ellipsoids (docs/phantoms.md)."""
        out = ffi.new("ctr_phantom **")
        check(lib.ctr_phantom_load_json(cstr(path), out))
        return cls(_ptr=out[0])

    @property
    def ellipsoids(self) -> np.ndarray:
        """Shape (n, 10), columns in ELLIPSOID_FIELDS order."""
        n = lib.ctr_phantom_get_ellipsoid_count(self._ptr)
        e = lib.ctr_phantom_get_ellipsoids(self._ptr)
        return np.array([[getattr(e[i], k) for k in ELLIPSOID_FIELDS] for i in range(n)],
                        np.float64).reshape(n, 10)

    def line_integral(self, origin: Sequence[float], direction: Sequence[float]) -> float:
        """Exact integral along the whole line through ``origin`` along the
        unit vector ``direction``."""
        return lib.ctr_phantom_line_integral(self._ptr, _core.doubles(origin, "origin", 3),
                                             _core.doubles(direction, "direction", 3))

    def density(self, point: Sequence[float]) -> float:
        return lib.ctr_phantom_density(self._ptr, _core.doubles(point, "point", 3))

    def project(self, geometry: ConeGeometry, supersample: int = 1, *, out=None, ctx=None,
                progress: Any = "auto") -> np.ndarray:
        """Exact cone-beam projections, shape (nviews, nv, nu)
        (ctr_phantom_project): each pixel the mean of supersample^2 rays."""
        res = _core.host_out(out, geometry.projection_shape)
        _core.call(progress, lib.ctr_phantom_project, context(ctx).ptr, self._ptr, geometry._ptr,
                   supersample, _core.carray(res))
        return res

    def voxelize(self, volume: Union[Volume, ConeGeometry], supersample: int = 2, *,
                 z0: int = 0, nz: Optional[int] = None, out=None, ctx=None,
                 progress: Any = "auto") -> np.ndarray:
        """The phantom on a grid (a Volume, or a geometry's volume): slices
        [z0, z0 + nz) (all by default), shape (nz, ny, nx), each voxel the
        mean of supersample^3 samples (default 2, as the CLI's
        --truth-supersample)."""
        vol = volume.volume if isinstance(volume, ConeGeometry) else volume
        n = vol.nz - z0 if nz is None else nz
        res = _core.host_out(out, (n, vol.ny, vol.nx))
        _core.call(progress, lib.ctr_phantom_voxelize, context(ctx).ptr, self._ptr, vol._c(),
                   supersample, z0, _core.carray(res))
        return res

    def sinogram(self, geometry: ParallelGeometry, z: Optional[Sequence[float]] = None,
                 supersample: int = 1, *, out=None) -> np.ndarray:
        """Exact parallel-beam line integrals through the planes z (mm), shape
        (len(z), nangles, nbins) (ctr_phantom_sinogram). A tilted geometry
        (laminography): z are the detector rows' heights (mm along the rows'
        direction), None = its nrows rows."""
        if z is None:
            if geometry.tilt == 0:
                raise ValueError("z: the slice planes (mm); only a tilted geometry has rows of "
                                 "its own (z=None)")
            res = _core.host_out(out, (geometry.nrows, geometry.nangles, geometry.nbins))
            check(lib.ctr_phantom_sinogram(self._ptr, geometry._ptr, geometry.nrows, ffi.NULL,
                                           supersample, _core.wptr(res)))
            return res
        zs = np.atleast_1d(np.asarray(z, np.float64))
        res = _core.host_out(out, (zs.size, geometry.nangles, geometry.nbins))
        check(lib.ctr_phantom_sinogram(self._ptr, geometry._ptr, zs.size,
                                       _core.doubles(zs, "z"), supersample, _core.wptr(res)))
        return res

    def slice(self, geometry: ParallelGeometry, z: float, supersample: int = 1, *,
              out=None) -> np.ndarray:
        """The density on the slice grid at plane z (mm), shape (ny, nx)."""
        res = _core.host_out(out, (geometry.ny, geometry.nx))
        check(lib.ctr_phantom_slice(self._ptr, geometry._ptr, z, supersample, _core.wptr(res)))
        return res

    def __len__(self) -> int:
        return lib.ctr_phantom_get_ellipsoid_count(self._ptr)
