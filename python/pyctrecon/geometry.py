"""Geometries: voxel grids, cone-beam (circular orbits, per-view matrices,
RabbitCT) and parallel-beam. Conventions: docs/geometry.md and
docs/parallel-beam.md. numpy shapes are the reverse of the library's dims:
a volume is (nz, ny, nx), cone-beam projections (nviews, nv, nu),
sinograms (nslices, nangles, nbins)."""
from __future__ import annotations

import os
import warnings
from dataclasses import dataclass
from typing import Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._core import check, cstr, doubles, ffi, lib, new_struct

__all__ = ["Volume", "ConeGeometry", "ParallelGeometry"]

Triple = Union[float, Tuple[float, float, float]]


def _triple(v: Triple, name: str) -> Tuple[float, float, float]:
    if np.ndim(v) == 0:
        return (float(v),) * 3  # type: ignore[return-value]
    t = tuple(float(x) for x in v)  # type: ignore[union-attr]
    if len(t) != 3:
        raise ValueError(f"{name}={v!r}: expected one value or three (x, y, z)")
    return t  # type: ignore[return-value]


@dataclass(frozen=True)
class Volume:
    """A voxel grid: nx x ny x nz voxels of voxel (x, y, z) mm, centred at
    offset (x, y, z) mm. ``shape`` is the numpy shape (nz, ny, nx)."""

    nx: int
    ny: int
    nz: int
    voxel: Tuple[float, float, float] = (1.0, 1.0, 1.0)
    offset: Tuple[float, float, float] = (0.0, 0.0, 0.0)

    @classmethod
    def cube(cls, n: int, voxel: Triple = 1.0, offset: Triple = 0.0) -> "Volume":
        """n x n x n voxels."""
        return cls(n, n, n, _triple(voxel, "voxel"), _triple(offset, "offset"))

    def __post_init__(self):
        object.__setattr__(self, "voxel", _triple(self.voxel, "voxel"))
        object.__setattr__(self, "offset", _triple(self.offset, "offset"))

    @property
    def shape(self) -> Tuple[int, int, int]:
        return (self.nz, self.ny, self.nx)

    def _c(self):
        v = ffi.new("ctr_volume_geometry *")
        _core.assign(v, {"nx": "Volume.nx", "ny": "Volume.ny", "nz": "Volume.nz"},
                     nx=self.nx, ny=self.ny, nz=self.nz)
        v.voxel_x, v.voxel_y, v.voxel_z = self.voxel
        v.offset_x, v.offset_y, v.offset_z = self.offset
        return v

    @classmethod
    def _of(cls, v) -> "Volume":
        return cls(v.nx, v.ny, v.nz, (v.voxel_x, v.voxel_y, v.voxel_z),
                   (v.offset_x, v.offset_y, v.offset_z))


_ROTATION = {"ccw": lib.CTR_ROTATION_CCW, "cw": lib.CTR_ROTATION_CW}
_DETECTOR = {"flat": lib.CTR_DETECTOR_FLAT, "cylindrical": lib.CTR_DETECTOR_CYLINDRICAL}


class ConeGeometry:
    """A cone-beam geometry: per-view 3x4 projection matrices (canonical form,
    docs/geometry.md) and the volume grid. Make one with ``circular``,
    ``from_matrices``, ``rabbitct``, ``load`` or ``from_json``."""

    def __init__(self, _ptr):
        self._ptr = ffi.gc(_ptr, lib.ctr_geometry_free)

    @classmethod
    def _make(cls, fn, *args) -> "ConeGeometry":
        out = ffi.new("ctr_geometry **")
        check(fn(*args, out))
        return cls(out[0])

    @classmethod
    def circular(cls, *, sid: float, sdd: float, nu: int, nv: int, volume: Volume,
                 du: float = 1.0, dv: float = 1.0, offset_u: float = 0.0, offset_v: float = 0.0,
                 nviews: Optional[int] = None, angles: Optional[Sequence[float]] = None,
                 angle_start: float = 0.0, angle_range: float = 360.0,
                 direction: str = "ccw", angle_units: Optional[str] = None,
                 detector: str = "flat") -> "ConeGeometry":
        """A circular orbit (ctr_circular_params): source at sid mm from the
        axis, detector at sdd mm from the source, nu x nv pixels of du x dv mm
        shifted by offset_u/v mm; either ``angles`` or ``nviews`` views spread
        over ``angle_range`` from ``angle_start`` in ``direction`` ("ccw" or
        "cw"). Angles are degrees; ``angle_units="rad"`` takes radians, and
        with None a scan spanning under 6.3 degrees warns that it looks like
        radians ("deg" says it is degrees). ``detector="cylindrical"`` puts
        the columns on an arc of radius sdd about the source (clinical CT), du
        (and offset_u) then arc lengths at sdd (docs/geometry.md, "Curved
        (cylindrical) detectors")."""
        angles, angle_start, angle_range = angles_in_degrees(
            angles, angle_start, angle_range, nviews, angle_units, "ConeGeometry.circular")
        p = new_struct("ctr_circular_params", lib.ctr_circular_params_init,
                       lib.CTR_CIRCULAR_PARAMS_VERSION)
        _core.assign(p, sid=sid, sdd=sdd, nu=nu, nv=nv, du=du, dv=dv, offset_u=offset_u,
                     offset_v=offset_v)
        keep = None
        if angles is not None:
            keep = doubles(angles, "angles")
            p.angles_deg = keep
            p.nviews = len(keep)
            if nviews is not None and nviews != p.nviews:
                raise ValueError(f"nviews {nviews} but {p.nviews} angles")
        elif nviews is None:
            raise ValueError("give nviews or angles")
        else:
            _core.assign(p, nviews=nviews)
        _core.assign(p, {"angle_start_deg": "angle_start", "angle_range_deg": "angle_range"},
                     angle_start_deg=angle_start, angle_range_deg=angle_range)
        p.direction = _core.enum_value(_ROTATION, direction, "direction")
        p.detector = _core.enum_value(_DETECTOR, detector, "detector")
        return cls._make(lib.ctr_geometry_create_circular, p, volume._c())

    @classmethod
    def helical(cls, *, sid: float, sdd: float, nu: int, nv: int, volume: Volume, pitch: float,
                nviews: int, angle_range: float, du: float = 1.0, dv: float = 1.0,
                offset_u: float = 0.0, offset_v: float = 0.0, angle_start: float = 0.0,
                direction: str = "ccw", z0: float = 0.0,
                helix_window: Optional[float] = None,
                detector: str = "flat") -> "ConeGeometry":
        """A helical orbit (ctr_helical_params; docs/geometry.md, "Helical
        orbits"): the circular orbit's source, detector and ``nviews`` views
        over ``angle_range`` degrees (any number of turns) from
        ``angle_start``, with the source and detector climbing ``pitch`` mm
        along z per turn (either sign, not 0) from height ``z0`` mm at the
        first view. ``helix_window`` (degrees, 0 .. 90) is FDK's redundancy
        window smoothing width; ``fdk`` reconstructs the helix with it. None
        (the default) takes the widest window up to 10 degrees that the pitch
        allows (``helix_window_used``). ``detector="cylindrical"`` puts the
        columns on an arc of radius sdd about the source, as ``circular``'s."""
        p = new_struct("ctr_helical_params", lib.ctr_helical_params_init,
                       lib.CTR_HELICAL_PARAMS_VERSION)
        _core.assign(p, sid=sid, sdd=sdd, nu=nu, nv=nv, du=du, dv=dv, offset_u=offset_u,
                     offset_v=offset_v, nviews=nviews)
        _core.assign(p, {"angle_start_deg": "angle_start", "angle_range_deg": "angle_range",
                         "pitch_mm": "pitch", "z0_mm": "z0", "window_deg": "helix_window"},
                     angle_start_deg=angle_start, angle_range_deg=angle_range, pitch_mm=pitch,
                     z0_mm=z0)
        if helix_window is not None:
            if not helix_window >= 0:
                raise ValueError(f"helix_window = {helix_window}: expected 0 .. 90 degrees, or "
                                 "None (the widest the pitch allows, up to 10)")
            _core.assign(p, {"window_deg": "helix_window"}, window_deg=helix_window)
        p.direction = _core.enum_value(_ROTATION, direction, "direction")
        p.detector = _core.enum_value(_DETECTOR, detector, "detector")
        return cls._make(lib.ctr_geometry_create_helical, p, volume._c())

    @property
    def helix(self) -> Optional[dict]:
        """A helical geometry's parameters (``pitch``, ``z0``, ``helix_window``:
        None when left to the automatic choice, ``angle_start``,
        ``angle_range``, ``nviews``, ``sid``, ``sdd``, ``detector``), else
        None."""
        p = new_struct("ctr_helical_params", lib.ctr_helical_params_init,
                       lib.CTR_HELICAL_PARAMS_VERSION)
        if not lib.ctr_geometry_get_helical(self._ptr, p):
            return None
        window = None if p.window_deg == lib.CTR_HELIX_WINDOW_AUTO else p.window_deg
        shape = "cylindrical" if p.detector == lib.CTR_DETECTOR_CYLINDRICAL else "flat"
        return {"pitch": p.pitch_mm, "z0": p.z0_mm, "helix_window": window,
                "angle_start": p.angle_start_deg, "angle_range": p.angle_range_deg,
                "nviews": p.nviews, "sid": p.sid, "sdd": p.sdd, "detector": shape}

    @property
    def helix_window_used(self) -> Optional[float]:
        """The window (degrees) helical FDK uses on this helix: ``helix_window``,
        or the automatic choice (ctr_geometry_get_helix_window); -1 when the
        pitch exceeds the detector's height (FDK refuses it); None when the
        geometry is not a helix."""
        w = lib.ctr_geometry_get_helix_window(self._ptr, ffi.NULL)
        return None if w != w else w

    @classmethod
    def from_matrices(cls, matrices, *, nu: int, nv: int, volume: Volume, du: float = 0.0,
                      dv: float = 0.0) -> "ConeGeometry":
        """Arbitrary per-view matrices, shape (nviews, 3, 4), mapping world mm
        to pixel indices up to scale (ctr_geometry_create_matrices)."""
        m = np.ascontiguousarray(matrices, dtype=np.float64)
        if m.ndim != 3 or m.shape[1:] != (3, 4):
            raise ValueError(f"matrices has shape {m.shape}: expected (nviews, 3, 4)")
        return cls._make(lib.ctr_geometry_create_matrices, nu, nv, du, dv, m.shape[0],
                         _core.ptr(m, "double"), volume._c())

    @classmethod
    def from_vectors(cls, vectors, *, nu: int, nv: int, volume: Volume) -> "ConeGeometry":
        """A cone-beam geometry from ASTRA ``cone_vec`` rows
        (ctr_geometry_create_vectors; docs/geometry.md, "Vector geometries").

        ``vectors`` has shape (nviews, 12): per view the source (srcX, srcY,
        srcZ), the detector centre (dX, dY, dZ), u = the vector from pixel
        (0, 0) to (1, 0) (along a row, the column pitch included) and v =
        from (0, 0) to (0, 1) (along a column), all in world mm. ``nu``,
        ``nv`` are the detector's columns and rows: projections are
        (nviews, nv, nu) arrays (ASTRA's are (nv, nviews, nu): transpose
        with ``proj.transpose(1, 0, 2)``). Every view is validated
        (GeometryError naming the view); rows that are exactly a circular
        orbit's (``vectors`` of a circular geometry) build that orbit."""
        v = np.ascontiguousarray(vectors, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 12:
            raise ValueError(f"vectors has shape {v.shape}: expected (nviews, 12)")
        return cls._make(lib.ctr_geometry_create_vectors, nu, nv, v.shape[0],
                         _core.ptr(v, "double"), volume._c())

    @classmethod
    def rabbitct(cls, matrices, *, width: int, height: int, L: int, R_L: float,
                 O_L: float) -> "ConeGeometry":
        """RabbitCT views (matrices (nviews, 12) in RabbitCT's order) with an
        L^3 volume of voxel R_L whose first voxel sits at O_L
        (ctr_geometry_create_rabbitct)."""
        m = np.ascontiguousarray(matrices, dtype=np.float64)
        if m.ndim != 2 or m.shape[1] != 12:
            raise ValueError(f"matrices has shape {m.shape}: expected (nviews, 12)")
        rows = [ffi.new("double[12]", list(r)) for r in m]
        ptrs = ffi.new("double *[]", rows)
        return cls._make(lib.ctr_geometry_create_rabbitct, width, height, m.shape[0],
                         ffi.cast("const double *const *", ptrs), L, R_L, O_L)

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "ConeGeometry":
        """A JSON geometry file (docs/geometry.md); a circular orbit whose
        angles look like radians warns (UserWarning)."""
        return cls._make(lib.ctr_geometry_load_json, cstr(path))._warn_radians(os.fspath(path))

    @classmethod
    def from_json(cls, text: str, name: str = "<string>") -> "ConeGeometry":
        return cls._make(lib.ctr_geometry_from_json_string, cstr(text), cstr(name))._warn_radians(name)

    def _warn_radians(self, name: str) -> "ConeGeometry":
        span = ffi.new("double *")
        if lib.ctr_geometry_angles_look_like_radians(self._ptr, span):
            warnings.warn(f"{name}: the {lib.ctr_geometry_get_view_count(self._ptr)} views span "
                          f"only {span[0]:.4g} degrees: its angles look like radians, and "
                          "\"angles_deg\" and \"range_deg\" take degrees (360 for a full turn)",
                          UserWarning, stacklevel=3)
        return self

    def save(self, path: Union[str, os.PathLike], *, overwrite: bool = False) -> None:
        """A JSON geometry file; an existing one is refused unless
        ``overwrite=True``."""
        check(lib.ctr_geometry_save_json(self._ptr, cstr(path), int(bool(overwrite))))

    def to_json(self) -> str:
        out = ffi.new("char **")
        check(lib.ctr_geometry_to_json_string(self._ptr, out))
        try:
            return ffi.string(out[0]).decode()
        finally:
            lib.free(out[0])

    def copy(self) -> "ConeGeometry":
        return self._make(lib.ctr_geometry_clone, self._ptr)

    @property
    def nviews(self) -> int:
        return lib.ctr_geometry_get_view_count(self._ptr)

    @property
    def detector(self) -> Tuple[int, int, float, float]:
        """(nu, nv, du, dv)."""
        nu, nv = ffi.new("int64_t *"), ffi.new("int64_t *")
        du, dv = ffi.new("double *"), ffi.new("double *")
        lib.ctr_geometry_get_detector(self._ptr, nu, nv, du, dv)
        return nu[0], nv[0], du[0], dv[0]

    @property
    def volume(self) -> Volume:
        return Volume._of(lib.ctr_geometry_get_volume(self._ptr))

    @volume.setter
    def volume(self, vol: Volume) -> None:
        check(lib.ctr_geometry_set_volume(self._ptr, vol._c()))

    @property
    def projection_shape(self) -> Tuple[int, int, int]:
        """(nviews, nv, nu)."""
        nu, nv, _, _ = self.detector
        return (self.nviews, nv, nu)

    @property
    def volume_shape(self) -> Tuple[int, int, int]:
        return self.volume.shape

    def matrix(self, i: int) -> np.ndarray:
        """View i's canonical matrix, shape (3, 4)."""
        if not 0 <= i < self.nviews:
            raise IndexError(f"view {i}: the geometry has {self.nviews}")
        out = np.empty((3, 4), np.float64)
        lib.ctr_geometry_get_matrix(self._ptr, i, _core.wptr(out, "double"))
        return out

    @property
    def matrices(self) -> np.ndarray:
        """Every view's canonical matrix, shape (nviews, 3, 4)."""
        return np.stack([self.matrix(i) for i in range(self.nviews)])

    @property
    def vectors(self) -> np.ndarray:
        """Every view as an ASTRA ``cone_vec`` row, shape (nviews, 12)
        (ctr_geometry_get_vectors): the rows a geometry was built from, a
        circular orbit's by docs/geometry.md's formulas, else derived from
        the matrix (|u| = du when the pitch is known)."""
        out = np.empty((self.nviews, 12), np.float64)
        for i in range(self.nviews):
            lib.ctr_geometry_get_vectors(self._ptr, i, _core.wptr(out[i], "double"))
        return out

    def source(self, i: int) -> np.ndarray:
        if not 0 <= i < self.nviews:
            raise IndexError(f"view {i}: the geometry has {self.nviews}")
        out = np.empty(3, np.float64)
        lib.ctr_geometry_get_source(self._ptr, i, _core.wptr(out, "double"))
        return out

    @property
    def is_circular(self) -> bool:
        return bool(lib.ctr_geometry_is_circular(self._ptr))

    @property
    def detector_shape(self) -> str:
        """The detector's shape, "flat" or "cylindrical"
        (ctr_geometry_get_detector_shape; the ``detector`` keyword of
        ``circular``)."""
        shape = lib.ctr_geometry_get_detector_shape(self._ptr)
        return "cylindrical" if shape == lib.CTR_DETECTOR_CYLINDRICAL else "flat"

    def coverage(self) -> float:
        """Fraction of the field of view's voxels seen in every view."""
        return lib.ctr_geometry_coverage(self._ptr)

    def __repr__(self) -> str:
        nu, nv, du, dv = self.detector
        return f"ConeGeometry(nviews={self.nviews}, detector={nu}x{nv}, volume={self.volume})"


AXIS_CENTER = "center"
AXIS_AUTO = "auto"


def angles_in_degrees(angles, angle_start: float, angle_range: float, n: Optional[int],
                      angle_units: Optional[str], who: str):
    """(angles, angle_start, angle_range) in degrees: ``angle_units`` "rad"
    converts them, "deg" keeps them, None keeps them and warns when the scan
    looks like radians (ctr_angles_look_like_radians, the one check of every
    interface)."""
    if angle_units not in (None, "deg", "rad"):
        raise ValueError(f"angle_units={angle_units!r}: expected 'deg', 'rad' or None")
    if angles is not None:
        angles = np.asarray(angles, dtype=np.float64).ravel()
    if angle_units == "rad":
        k = 180.0 / np.pi
        return (None if angles is None else angles * k), angle_start * k, angle_range * k
    if angle_units is None:
        span = ffi.new("double *")
        count = len(angles) if angles is not None else (n or 0)
        a = ffi.NULL if angles is None else ffi.cast("double *", angles.ctypes.data)
        if lib.ctr_angles_look_like_radians(a, count, angle_range, span):
            warnings.warn(f"{who}: the {count} angles span only {span[0]:.4g} degrees: they look "
                          "like radians, and ctrecon reads degrees; pass angle_units='rad' if "
                          "they are radians, angle_units='deg' if they are degrees",
                          UserWarning, stacklevel=4)
    return angles, angle_start, angle_range


def axis_value(axis) -> float:
    if axis is None or axis == AXIS_CENTER:
        return lib.CTR_AXIS_CENTER
    if axis == AXIS_AUTO:
        return lib.CTR_AXIS_AUTO
    return float(axis)


def parallel_params(nbins: int, nangles: Optional[int], angles, angle_start: float,
                    angle_range: float, axis, axis_shift, nx: int, ny: int, voxel: float,
                    pixel_size: float, angle_units: Optional[str] = None,
                    who: str = "ParallelGeometry", tilt: float = 0.0, nrows: int = 0):
    """A ctr_parallel_params and the arrays it points to (keep both)."""
    p = new_struct("ctr_parallel_params", lib.ctr_parallel_params_init,
                   lib.CTR_PARALLEL_PARAMS_VERSION)
    keep = []
    _core.assign(p, nbins=nbins)
    if angles is None and nangles is not None:
        _core.assign(p, nangles=nangles)  # checked before the radians check counts them
    angles, angle_start, angle_range = angles_in_degrees(angles, angle_start, angle_range,
                                                         nangles, angle_units, who)
    if angles is not None:
        a = doubles(angles, "angles")
        keep.append(a)
        p.angles_deg = a
        n = len(a)
        if nangles is not None and nangles != n:
            raise ValueError(f"nangles {nangles} but {n} angles")
        p.nangles = n
    else:
        if nangles is None:
            raise ValueError("give nangles or angles")
        _core.assign(p, nangles=nangles)
    _core.assign(p, {"angle_start_deg": "angle_start", "angle_range_deg": "angle_range"},
                 angle_start_deg=angle_start, angle_range_deg=angle_range)
    p.axis = axis_value(axis)
    if axis_shift is not None:
        s = doubles(axis_shift, "axis_shift", p.nangles)
        keep.append(s)
        p.axis_shift = s
    _core.assign(p, nx=nx, ny=ny, voxel=voxel, pixel_size=pixel_size)
    _core.assign(p, {"tilt_deg": "tilt"}, tilt_deg=tilt_in_degrees(tilt, angle_units, who),
                 nrows=nrows)
    return p, keep


def tilt_in_degrees(tilt: float, angle_units: Optional[str], who: str) -> float:
    """Laminography's tilt in degrees: ``angle_units`` "rad" converts it; with
    None a tilt of 0 < |tilt| <= pi / 2 warns that it looks like radians
    (laminography tilts are usually 10 to 60 degrees)."""
    t = float(tilt)
    if angle_units == "rad":
        return t * 180.0 / np.pi
    if angle_units is None and t != 0.0 and abs(t) <= 1.5708:
        warnings.warn(f"{who}: tilt={t:g} is under 1.6 degrees: it looks like radians, and "
                      "ctrecon reads degrees; pass angle_units='rad' if it is radians, "
                      "angle_units='deg' if it is degrees", UserWarning, stacklevel=4)
    return t


class ParallelGeometry:
    """A parallel-beam geometry (ctr_parallel_params, docs/parallel-beam.md):
    nbins detector bins, the angles (degrees, or radians with
    ``angle_units="rad"``: a list, or ``nangles`` over ``angle_range`` from
    ``angle_start``; with angle_units None a scan spanning under 6.3 degrees
    warns that it looks like radians), the rotation ``axis`` in bins
    (None or "center": (nbins - 1) / 2), an optional per-angle
    ``axis_shift``, the slice grid nx x ny (0: nbins) of ``voxel`` bins
    (default 1) and ``pixel_size`` mm per bin (default 1).

    Laminography (docs/geometry.md): ``tilt`` degrees (|tilt| < 90, the
    angle units' too) tilts the rotation axis from the detector plane
    towards the beam, and ``nrows`` (required with a tilt) gives the
    detector rows: sinograms are then (nrows, nangles, nbins) whatever the
    number of slices, which FBP and the projector take as ``nslices``."""

    def __init__(self, nbins: int, nangles: Optional[int] = None, *,
                 angles: Optional[Sequence[float]] = None, angle_start: float = 0.0,
                 angle_range: float = 180.0, axis: Union[None, str, float] = None,
                 axis_shift: Optional[Sequence[float]] = None, nx: int = 0, ny: int = 0,
                 voxel: float = 1.0, pixel_size: float = 1.0,
                 angle_units: Optional[str] = None, tilt: float = 0.0, nrows: int = 0,
                 _ptr=None):
        if _ptr is None:
            p, keep = parallel_params(nbins, nangles, angles, angle_start, angle_range, axis,
                                      axis_shift, nx, ny, voxel, pixel_size, angle_units,
                                      tilt=tilt, nrows=nrows)
            out = ffi.new("ctr_parallel_geometry **")
            check(lib.ctr_parallel_create(p, out))
            _ptr = out[0]
        self._ptr = ffi.gc(_ptr, lib.ctr_parallel_free)

    @classmethod
    def from_vectors(cls, vectors, *, nu: int, nv: int):
        """A parallel-beam geometry from ASTRA ``parallel3d_vec`` rows
        (ctr_parallel_params_from_vectors), shape (nviews, 12): per view the
        ray direction, the detector centre, u (pixel (0, 0) to (1, 0)) and v
        ((0, 0) to (0, 1)), mm. Only scans of slices about z are
        representable (rays and u perpendicular to z, u perpendicular to
        the ray with one length, v along z, the rows at the same heights),
        and tilted scans (laminography: v leaning from z by one tilt, with
        u's length, the ray along v x u, the detector centre on the axis
        point's row), which give ``tilt`` and ``nrows``; any other view
        raises (CTR_E_UNSUPPORTED) naming it. Returns ``(geometry, row_z)``:
        each detector row is a slice, at height ``row_z[r]`` mm (tilted:
        the rows' heights along v)."""
        v = np.ascontiguousarray(vectors, dtype=np.float64)
        if v.ndim != 2 or v.shape[1] != 12:
            raise ValueError(f"vectors has shape {v.shape}: expected (nviews, 12)")
        n = v.shape[0]
        angles, shift = np.empty(n, np.float64), np.empty(n, np.float64)
        row_z = np.empty(nv, np.float64)
        p = ffi.new("ctr_parallel_params *")
        check(lib.ctr_parallel_params_from_vectors(
            nu, nv, n, _core.ptr(v, "double"), _core.wptr(angles, "double"),
            _core.wptr(shift, "double"), p, _core.wptr(row_z, "double")))
        out = ffi.new("ctr_parallel_geometry **")
        check(lib.ctr_parallel_create(p, out))
        return cls(0, _ptr=out[0]), row_z

    @classmethod
    def _loaded(cls, fn, *args) -> "ParallelGeometry":
        out = ffi.new("ctr_parallel_geometry **")
        check(fn(*args, out))
        return cls(0, _ptr=out[0])

    @classmethod
    def load(cls, path: Union[str, os.PathLike]) -> "ParallelGeometry":
        """A parallel-beam geometry file (JSON ``"type": "parallel"``,
        docs/parallel-beam.md "Geometry files"), as ``ctrecon fbp --geometry``
        reads it."""
        return cls._loaded(lib.ctr_parallel_load_json, cstr(path))

    @classmethod
    def from_json(cls, text: str, name: str = "<string>") -> "ParallelGeometry":
        return cls._loaded(lib.ctr_parallel_from_json_string, cstr(text), cstr(name))

    def save(self, path: Union[str, os.PathLike], *, overwrite: bool = False) -> None:
        """The geometry as a JSON file (numbers that read back to the same
        bits); an existing file is refused unless ``overwrite=True``."""
        check(lib.ctr_parallel_save_json(self._ptr, cstr(path), int(bool(overwrite))))

    def to_json(self) -> str:
        out = ffi.new("char **")
        check(lib.ctr_parallel_to_json_string(self._ptr, out))
        try:
            return ffi.string(out[0]).decode()
        finally:
            lib.free(out[0])

    @property
    def _p(self):
        return lib.ctr_parallel_get_params(self._ptr)

    nbins = property(lambda self: self._p.nbins)
    nangles = property(lambda self: self._p.nangles)
    axis = property(lambda self: self._p.axis, doc="The rotation axis (bins).")
    nx = property(lambda self: self._p.nx)
    ny = property(lambda self: self._p.ny)
    voxel = property(lambda self: self._p.voxel)
    pixel_size = property(lambda self: self._p.pixel_size)
    tilt = property(lambda self: self._p.tilt_deg,
                    doc="Laminography's tilt of the rotation axis, degrees (0: tomography).")
    nrows = property(lambda self: self._p.nrows,
                     doc="Detector rows of a tilted scan (0: one per slice).")

    @property
    def angles(self) -> np.ndarray:
        p = self._p
        return np.array([p.angles_deg[i] for i in range(p.nangles)], np.float64)

    @property
    def axis_shift(self) -> np.ndarray:
        p = self._p
        return np.array([p.axis_shift[i] for i in range(p.nangles)], np.float64)

    def weight(self, a: int) -> float:
        """Angle a's weight in the backprojection sum (radians)."""
        return lib.ctr_parallel_get_weight(self._ptr, a)

    def sinogram_shape(self, nslices: int) -> Tuple[int, int, int]:
        """The sinograms of nslices slices: with a tilt, the detector's rows."""
        return (self.nrows if self.tilt != 0 else nslices, self.nangles, self.nbins)

    def slice_shape(self, nslices: int) -> Tuple[int, int, int]:
        return (nslices, self.ny, self.nx)

    def stitch_360(self) -> "ParallelGeometry":
        """The 180-degree geometry of a 360-degree offset-axis scan
        (ctr_stitch_360_geometry)."""
        out = ffi.new("ctr_parallel_geometry **")
        check(lib.ctr_stitch_360_geometry(self._ptr, out))
        return ParallelGeometry(0, _ptr=out[0])

    def __repr__(self) -> str:
        return (f"ParallelGeometry(nbins={self.nbins}, nangles={self.nangles}, axis={self.axis}, "
                f"nx={self.nx}, ny={self.ny})")
