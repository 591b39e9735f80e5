"""TOF-PET DIRECT reconstruction from histo-images (docs/pet.md): the
system (lattice, views, system-response kernels), phantoms, list-mode
simulation, the per-view projectors, RAMLA / OSEM / MLEM and the CRC and
noise metrics. Images are (nz, ny, nx) float32; histo-images (nviews, nz,
ny, nx).

GPU arrays (CuPy, or any __cuda_array_interface__ / DLPack float32
C-contiguous array) are used in place on a CUDA context by the projectors
(PetProjector.forward / back), pet_project_fft and pet_reconstruct (the
start and the result image; the histo-images stay a host object): results
come back on the GPU (a new CuPy array, or `out`) with the bits of the numpy
path and no copy through the host. The simulation, the phantoms and the
metrics take host arrays only."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, List, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core, _gpu
from ._core import check, context, cstr, ffi, lib, new_struct

__all__ = ["PetSystem", "PetPhantom", "PetHisto", "PetProjector", "pet_simulate",
           "pet_reconstruct", "pet_metrics", "pet_plot_crc_noise", "pet_project_fft"]

Path = Union[str, os.PathLike]


@ffi.def_extern()
def ctrpy_pet_kernel(user, tof, radial, axial, rho):
    return float(ffi.from_handle(user)(tof, radial, axial, rho))


class PetSystem:
    """The lattice, the views and the SR kernels (ctr_pet_system_create).
    Lattice and views: nx, ny, nz, voxel (mm), n_azimuth, n_copolar,
    acceptance_deg; kernels: the TOF resolution in ps, LOR-radial FWHM at the centre and the edge,
    radial_table of (radius, fwhm) pairs, axial FWHM, asymmetric kernels,
    cut_k, epsilon_mm, or ``custom(tof, radial, axial, rho)`` with its
    support ``custom_extent_mm`` — a Python kernel is called once per table
    entry, slowly). Defaults (the signature's): Ha et al. 2013's system."""

    def __init__(self, nx: int = 144, ny: int = 144, nz: int = 48, voxel: float = 4.0,
                 n_azimuth: int = 40, n_copolar: int = 3, acceptance_deg: float = 10.0, *,
                 tof_fwhm_ps: float = 400.0, radial_fwhm_center_mm: float = 5.8,
                 radial_fwhm_edge_mm: float = 5.8, edge_radius_mm: float = 0.0,
                 radial_table: Optional[Sequence[Tuple[float, float]]] = None,
                 axial_fwhm_mm: float = 5.8, asymmetric: bool = False, asym_weight: float = 0.5,
                 asym_shift_sigma: float = 1.0, cut_k: float = 3.0, epsilon_mm: float = 2.0,
                 custom: Optional[Callable[[float, float, float, float], float]] = None,
                 custom_extent_mm: Tuple[float, float, float] = (0.0, 0.0, 0.0)):
        p = new_struct("ctr_pet_params", lib.ctr_pet_params_init, lib.CTR_PET_PARAMS_VERSION)
        _core.assign(p, nx=nx, ny=ny, nz=nz, voxel=voxel, n_azimuth=n_azimuth,
                     n_copolar=n_copolar, acceptance_deg=acceptance_deg)
        k = new_struct("ctr_pet_kernel_params", lib.ctr_pet_kernel_params_init,
                       lib.CTR_PET_KERNEL_PARAMS_VERSION)
        _core.assign(k, tof_fwhm_ps=tof_fwhm_ps, radial_fwhm_center_mm=radial_fwhm_center_mm,
                     radial_fwhm_edge_mm=radial_fwhm_edge_mm, edge_radius_mm=edge_radius_mm,
                     axial_fwhm_mm=axial_fwhm_mm, asym_weight=asym_weight,
                     asym_shift_sigma=asym_shift_sigma, cut_k=cut_k, epsilon_mm=epsilon_mm)
        keep = []
        if radial_table is not None:
            t = _core.doubles(np.asarray(radial_table, np.float64).ravel(), "radial_table")
            keep.append(t)
            k.radial_table, k.radial_table_n = t, len(t) // 2
        k.asymmetric = int(asymmetric)
        self._custom = None
        if custom is not None:
            self._custom = ffi.new_handle(custom)  # lives as long as the system
            k.custom, k.custom_user = lib.ctrpy_pet_kernel, self._custom
            for i in range(3):
                k.custom_extent_mm[i] = custom_extent_mm[i]
        out = ffi.new("ctr_pet_system **")
        check(lib.ctr_pet_system_create(p, k, out))
        self._ptr = ffi.gc(out[0], lib.ctr_pet_system_free)

    @property
    def params(self) -> dict:
        return _core.struct_dict(lib.ctr_pet_system_get_params(self._ptr))

    @property
    def kernel(self) -> dict:
        return _core.struct_dict(lib.ctr_pet_system_get_kernel(self._ptr))

    @property
    def nviews(self) -> int:
        return lib.ctr_pet_system_get_view_count(self._ptr)

    @property
    def image_shape(self) -> Tuple[int, int, int]:
        p = lib.ctr_pet_system_get_params(self._ptr)
        return (p.nz, p.ny, p.nx)

    def view_info(self, view: int) -> dict:
        """A view's angles, direction and kernel support (builds its tables)."""
        v = new_struct("ctr_pet_view_info", lib.ctr_pet_view_info_init, lib.CTR_PET_VIEW_INFO_VERSION)
        check(lib.ctr_pet_system_get_view_info(self._ptr, view, v))
        return _core.struct_dict(v)

    def radial_fwhm(self, rho_mm: float) -> float:
        return lib.ctr_pet_system_radial_fwhm(self._ptr, rho_mm)

    @property
    def kernel_invariant(self) -> bool:
        return bool(lib.ctr_pet_system_is_kernel_invariant(self._ptr))


@dataclass
class PetPhantom:
    """An activity phantom (ctr_pet_phantom): a cylinder along z (diameter,
    length mm; 0 = none) of ``background`` activity and attenuation
    ``mu_per_mm``, spheres (x, y, z, diameter, activity per volume) and
    point sources (x, y, z, _, total activity)."""

    cylinder_diameter: float = 0.0
    cylinder_length: float = 0.0
    background: float = 0.0
    mu_per_mm: float = 0.0
    spheres: List[Tuple[float, float, float, float, float]] = field(default_factory=list)
    points: List[Tuple[float, float, float, float, float]] = field(default_factory=list)

    _KEYS = ("x", "y", "z", "diameter", "activity")

    def _c(self):
        ph = ffi.new("ctr_pet_phantom *")
        ph.cylinder_diameter, ph.cylinder_length = self.cylinder_diameter, self.cylinder_length
        ph.background, ph.mu_per_mm = self.background, self.mu_per_mm
        for name, items in (("spheres", self.spheres), ("points", self.points)):
            if len(items) > lib.CTR_PET_MAX_SPHERES:
                raise ValueError(f"{len(items)} {name}: at most {lib.CTR_PET_MAX_SPHERES}")
            arr = getattr(ph, name)
            for i, s in enumerate(items):
                for k, v in zip(self._KEYS, s):
                    setattr(arr[i], k, float(v))
        ph.nspheres, ph.npoints = len(self.spheres), len(self.points)
        return ph

    @classmethod
    def _of(cls, ph) -> "PetPhantom":
        def rows(arr, n):
            return [tuple(getattr(arr[i], k) for k in cls._KEYS) for i in range(n)]
        return cls(ph.cylinder_diameter, ph.cylinder_length, ph.background, ph.mu_per_mm,
                   rows(ph.spheres, ph.nspheres), rows(ph.points, ph.npoints))

    @classmethod
    def with_spheres(cls, contrast: float = 4.0) -> "PetPhantom":
        """Ha et al. 2013's phantom: a water cylinder with six 10 mm spheres of
        activity ``contrast`` (ctr_pet_phantom_spheres)."""
        ph = ffi.new("ctr_pet_phantom *")
        lib.ctr_pet_phantom_spheres(ph, contrast)
        return cls._of(ph)

    @classmethod
    def with_points(cls) -> "PetPhantom":
        """Three point sources along y (ctr_pet_phantom_points)."""
        ph = ffi.new("ctr_pet_phantom *")
        lib.ctr_pet_phantom_points(ph)
        return cls._of(ph)

    def voxelize(self, system: PetSystem, supersample: int = 1) -> np.ndarray:
        """The activity on the system's lattice, (nz, ny, nx)."""
        out = np.empty(system.image_shape, np.float32)
        check(lib.ctr_pet_phantom_voxelize(self._c(), lib.ctr_pet_system_get_params(system._ptr),
                                           supersample, _core.wptr(out)))
        return out


class PetHisto:
    """Histo-images of every view (ctr_pet_histo): ``counts`` (nviews, nz,
    ny, nx) and ``factors`` (the same, or None: all 1) are writable numpy
    arrays over the library's memory (no copy; each array keeps this object
    alive, so it stays valid when the histo is dropped); ``events``,
    ``tof_fwhm_ps`` and ``replaced`` (bad values of a loaded file)."""

    def __init__(self, _ptr):
        self._ptr = ffi.gc(_ptr, lib.ctr_pet_histo_free)

    @classmethod
    def create(cls, system: PetSystem, with_factors: bool = False) -> "PetHisto":
        out = ffi.new("ctr_pet_histo **")
        check(lib.ctr_pet_histo_create(lib.ctr_pet_system_get_params(system._ptr),
                                       int(with_factors), out))
        return cls(out[0])

    @classmethod
    def load(cls, path: Path) -> "PetHisto":
        """HDF5 (.h5) or JSON + raw files (docs/file-formats.md)."""
        out = ffi.new("ctr_pet_histo **")
        check(lib.ctr_pet_histo_load(cstr(path), out))
        return cls(out[0])

    def save(self, path: Path, *, overwrite: bool = False) -> None:
        """HDF5 (.h5) or JSON + raw files; when any of them exists, nothing
        is written unless ``overwrite=True``."""
        check(lib.ctr_pet_histo_save(cstr(path), self._ptr, int(bool(overwrite))))

    def _view(self, p) -> Optional[np.ndarray]:
        if p == ffi.NULL:
            return None
        q = self._ptr.params
        shape = (self._ptr.nviews, q.nz, q.ny, q.nx)
        return _core.owned_view(p, shape, np.float32, self)

    @property
    def counts(self) -> np.ndarray:
        return self._view(self._ptr.counts)  # type: ignore[return-value]

    @property
    def factors(self) -> Optional[np.ndarray]:
        return self._view(self._ptr.factors)

    nviews = property(lambda self: self._ptr.nviews)
    events = property(lambda self: self._ptr.events)
    tof_fwhm_ps = property(lambda self: self._ptr.tof_fwhm_ps)
    replaced = property(lambda self: self._ptr.replaced)
    params = property(lambda self: _core.struct_dict(ffi.addressof(self._ptr, "params")))


def pet_simulate(system: PetSystem, phantom: PetPhantom, *, events: float = 2.0e7,
                 attenuation: bool = False, detector_blur: bool = True, seed: int = 1,
                 activity: Any = None, with_factors: bool = True, ctx=None,
                 progress: Any = "auto") -> PetHisto:
    """List-mode simulation into histo-images (ctr_pet_simulate): ``events``
    detected, with ``attenuation`` and ``detector_blur``, the random
    ``seed``, ``with_factors`` (the attenuation factors too); ``activity`` a
    voxel phantom (nz, ny, nx) replacing the analytic one."""
    o = new_struct("ctr_pet_sim_options", lib.ctr_pet_sim_options_init,
                   lib.CTR_PET_SIM_OPTIONS_VERSION)
    _core.assign(o, events=events, seed=seed)
    o.attenuation, o.detector_blur = int(attenuation), int(detector_blur)
    o.with_factors = int(with_factors)
    if activity is not None:
        a = _core.host_in(activity, "activity", system.image_shape)
        o.activity = _core.ptr(a)
    out = ffi.new("ctr_pet_histo **")
    _core.call(progress, lib.ctr_pet_simulate, context(ctx).ptr, system._ptr, phantom._c(), o, out)
    return PetHisto(out[0])


class PetProjector:
    """The per-view projectors of a system on a backend (ctr_pet_projector)."""

    def __init__(self, system: PetSystem, *, ctx=None):
        self.system = system
        self.ctx = context(ctx)
        out = ffi.new("ctr_pet_projector **")
        check(lib.ctr_pet_projector_create(self.ctx.ptr, system._ptr, out))
        self._ptr = ffi.gc(out[0], lib.ctr_pet_projector_free)

    def _project(self, direction: int, view: int, a: Any, out: Any, name: str) -> Any:
        shape = self.system.image_shape
        res, in_ptr, out_ptr, owner = _gpu.float_io(a, out, name, shape, shape)
        check(lib.ctr_pet_project(self._ptr, direction, view, in_ptr, out_ptr))
        del owner
        return res

    def forward(self, view: int, image: Any, out: Any = None) -> Any:
        """The view's histo-image of an image (its spatially variant kernels);
        numpy in and out, or GPU arrays in place on a CUDA context."""
        return self._project(lib.CTR_PET_FORWARD, view, image, out, "image")

    def back(self, view: int, histo_image: Any, out: Any = None) -> Any:
        """The exact adjoint of forward; numpy or GPU arrays as forward."""
        return self._project(lib.CTR_PET_BACK, view, histo_image, out, "histo_image")

    def reconstruct(self, histo: PetHisto, **options: Any) -> Any:
        """pet_reconstruct with this projector."""
        return pet_reconstruct(self, histo, **options)


def pet_project_fft(system: PetSystem, view: int, image: Any, *, pad: int = 0,
                    out: Any = None, ctx=None) -> Any:
    """The FFT reference projection of invariant symmetric kernels
    (ctr_pet_project_fft); GPU arrays in place on a CUDA context."""
    shape = system.image_shape
    res, in_ptr, out_ptr, owner = _gpu.float_io(image, out, "image", shape, shape)
    check(lib.ctr_pet_project_fft(context(ctx).ptr, system._ptr, view, pad, in_ptr, out_ptr))
    del owner
    return res


@ffi.def_extern(onerror=_core.callback_onerror)
def ctrpy_pet_iteration(user, iteration, image):
    cb, shape, gpu_image = ffi.from_handle(user)
    # the library passes the image it works in: the callback gets a copy of
    # it (its own to keep; the work array changes after the call and may be
    # freed with the result)
    img = _gpu.copy(gpu_image) if gpu_image is not None else \
        np.frombuffer(ffi.buffer(image, 4 * int(np.prod(shape))), np.float32).reshape(shape).copy()
    try:
        return 1 if cb(iteration, img) else 0
    except BaseException as e:
        run = _core.current_run()
        if run is not None and run.exc is None:
            run.exc = e
        return 1



def _start_image(image: Any, out: Any, shape: Tuple[int, ...]) -> Tuple[Any, Any]:
    """The array pet_reconstruct works in, holding the start (0: uniform), and
    its pointer: on the GPU when `image` or `out` is a GPU array (a GPU
    `image` must be float32 C-contiguous), else numpy."""
    if (image is not None and _core.is_gpu_array(image)) or \
            (out is not None and _core.is_gpu_array(out)):
        res, d = _gpu.device_out(out, image, shape)
        if image is None:
            _gpu.fill(res, 0.0)
        else:
            if _core.is_gpu_array(image):
                _gpu.check_shape(_gpu.device_array(image, "image"), shape, "image")
            _gpu.copy_into(res, image, shape, "image")
        return res, d.cptr()
    res = _core.host_out(out, shape, zero=True)
    if image is not None:
        res[...] = _core.host_in(image, "image", shape)
    elif out is not None:
        res[...] = 0
    return res, _core.wptr(res)


def pet_reconstruct(projector: PetProjector, histo: PetHisto, *, algorithm: str = "ramla",
                    iterations: int = 10, relax0: float = 0.1, relax_decay: float = 0.1,
                    callback: Optional[Callable[[int, np.ndarray], Any]] = None,
                    strict: bool = False, image: Any = None, out: Any = None,
                    return_timings: bool = False, progress: Any = "auto") -> Any:
    """The activity from histo-images (ctr_pet_reconstruct): algorithm
    "ramla" | "osem" | "mlem", ``iterations``, the relaxation relax0 /
    (1 + relax_decay * k) of RAMLA, ``strict`` (bad histo values an error).
    ``image``: the start (all > 0; default uniform; not modified); the result
    goes to a new array or ``out``; callback(iteration, image) after each
    iteration (the image is a copy of that iteration's, the callback's to
    keep), returning True stops. Returns the image, or (image, timings dict) with
    return_timings.

    On a CUDA context a GPU ``image`` or ``out`` (CuPy, or any
    __cuda_array_interface__ / DLPack float32 C-contiguous array) keeps the
    image on the GPU: the result is a CuPy array (or ``out``) that the
    library reads and writes in place, with the bits of the numpy path; the
    callback then gets a GPU copy of it. The histo-images stay host data."""
    o = new_struct("ctr_pet_recon_options", lib.ctr_pet_recon_options_init,
                   lib.CTR_PET_RECON_OPTIONS_VERSION)
    o.algorithm = _core.parsed(lib.ctr_pet_algorithm_parse, "ctr_pet_algorithm", algorithm,
                                 "algorithm")
    _core.assign(o, iterations=iterations, relax0=relax0, relax_decay=relax_decay)
    o.strict = int(bool(strict))
    shape = projector.system.image_shape
    if isinstance(out, np.ndarray):
        _core.distinct(out, "out", ("histo.counts", histo.counts), ("histo.factors", histo.factors))
    img, img_ptr = _start_image(image, out, shape)
    keep = None
    if callback is not None:
        keep = ffi.new_handle((callback, shape, img if _core.is_gpu_array(img) else None))
        o.on_iteration, o.user = lib.ctrpy_pet_iteration, keep
    t = new_struct("ctr_pet_recon_timings", lib.ctr_pet_recon_timings_init,
                   lib.CTR_PET_RECON_TIMINGS_VERSION)
    _core.call(progress, lib.ctr_pet_reconstruct, projector._ptr, histo._ptr, o, img_ptr, t)
    del keep
    return (img, _core.struct_dict(t)) if return_timings else img


def pet_metrics(system: PetSystem, phantom: PetPhantom, image: Any) -> dict:
    """CRC per sphere and on average, noise and background mean (Ha et al.
    2013, section 6.1; ctr_pet_metrics_compute)."""
    a = _core.host_in(image, "image", system.image_shape)
    m = new_struct("ctr_pet_metrics", lib.ctr_pet_metrics_init, lib.CTR_PET_METRICS_VERSION)
    check(lib.ctr_pet_metrics_compute(lib.ctr_pet_system_get_params(system._ptr), phantom._c(),
                                      _core.ptr(a), m))
    d = _core.struct_dict(m)
    d["crc_sphere"] = d["crc_sphere"][:m.nspheres]
    return d


def pet_plot_crc_noise(path: Path, noise: Sequence[float], crc: Sequence[float],
                       title: str = "", *, overwrite: bool = False) -> None:
    """A CRC-versus-noise plot (PNG); an existing file is refused unless
    ``overwrite=True``."""
    n = np.ascontiguousarray(noise, np.float64)
    c = np.ascontiguousarray(crc, np.float64)
    if n.size != c.size:
        raise ValueError("noise and crc differ in length")
    check(lib.ctr_pet_plot_crc_noise(cstr(path), _core.ptr(n, "double"), _core.ptr(c, "double"),
                                     n.size, cstr(title), int(bool(overwrite))))
