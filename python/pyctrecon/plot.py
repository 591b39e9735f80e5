"""Figures of volumes and projections with matplotlib (the optional extra
``pip install "pyctrecon[plot]"``): ``show`` draws three orthogonal slices
through a point of a volume, ``show_projections`` one view or a grid of
views, each with axes in mm where the geometry or the voxel size is known,
a colourbar and the grey window stated. Both return the matplotlib Figure
(``save=`` also writes it to a file)."""
from __future__ import annotations

import math
import os
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from .geometry import ConeGeometry, ParallelGeometry, Volume

__all__ = ["show", "show_projections"]

_PERCENTILES = (0.5, 99.5)  # the CLI previews' window (ctr_png_preview)


def _pyplot():
    """matplotlib.pyplot, or an ImportError that says how to install it."""
    try:
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError("pyctrecon.show and show_projections need matplotlib: "
                          "pip install \"pyctrecon[plot]\" (or pip install matplotlib)") from e
    return plt


def _stack(a: Any, name: str, dims: str) -> np.ndarray:
    """A 3D numpy array of `a` (a 2D one as one image), or a ValueError that
    names it and the dims expected ("(nz, ny, nx)")."""
    a = _host(a, name)
    if a.ndim == 2:
        a = a[None]
    if a.ndim != 3 or 0 in a.shape:
        raise ValueError(f"{name} has shape {a.shape}: expected {dims} or one image")
    return a


def _host(a: Any, name: str) -> np.ndarray:
    """A numpy copy of a numpy, CuPy or torch array (GPU arrays come to the
    host: a figure is drawn there)."""
    if hasattr(a, "detach"):  # torch
        a = a.detach().cpu().numpy()
    elif hasattr(a, "get") and _core.is_gpu_array(a):  # CuPy
        a = a.get()
    a = np.asarray(a)
    if not np.issubdtype(a.dtype, np.number) or np.iscomplexobj(a):
        raise TypeError(f"{name} has dtype {a.dtype}: expected real numbers")
    return a


def _window(values: np.ndarray, vmin: Optional[float], vmax: Optional[float],
            percentiles: Tuple[float, float]) -> Tuple[float, float, str]:
    """(lo, hi, how): the grey window, and the words that state it."""
    finite = values[np.isfinite(values)]
    if vmin is not None and vmax is not None:
        how = "given"
        lo, hi = float(vmin), float(vmax)
    else:
        p0, p1 = percentiles
        if not 0 <= p0 < p1 <= 100:
            raise ValueError(f"percentiles={percentiles!r}: expected (low, high) with "
                             "0 <= low < high <= 100")
        lo, hi = ((float(x) for x in np.percentile(finite, [p0, p1])) if finite.size
                  else (0.0, 1.0))
        how = f"the {p0:g} / {p1:g} % percentiles"
        if vmin is not None:
            lo, how = float(vmin), how + ", vmin given"
        if vmax is not None:
            hi, how = float(vmax), how + ", vmax given"
    if not (math.isfinite(lo) and math.isfinite(hi)):
        raise ValueError(f"vmin={lo!r}, vmax={hi!r}: expected finite values")
    if hi <= lo:  # a constant image: a window about its value
        lo, hi = lo - 0.5, lo + 0.5
    return lo, hi, how


def _spacing(voxel: Any, geometry: Any) -> Tuple[Optional[Tuple[float, float, float]],
                                                    Tuple[float, float, float]]:
    """((dx, dy, dz) mm or None, (ox, oy, oz) the grid's centre in mm)."""
    if voxel is not None and geometry is not None:
        raise TypeError("give voxel= or geometry=, not both")
    if isinstance(geometry, ConeGeometry):
        geometry = geometry.volume
    if isinstance(geometry, Volume):
        return tuple(geometry.voxel), tuple(geometry.offset)
    if isinstance(geometry, ParallelGeometry):
        p = geometry._p
        d = (p.voxel or 1.0) * (p.pixel_size or 1.0)
        return (d, d, p.pixel_size or 1.0), (0.0, 0.0, 0.0)
    if geometry is not None:
        raise TypeError(f"geometry={geometry!r}: expected a ConeGeometry, ParallelGeometry or "
                        "Volume")
    if voxel is None:
        return None, (0.0, 0.0, 0.0)
    v = (float(voxel),) * 3 if np.isscalar(voxel) else tuple(float(x) for x in voxel)
    if len(v) != 3 or not all(x > 0 and math.isfinite(x) for x in v):
        raise ValueError(f"voxel={voxel!r}: expected a size > 0 in mm, or (x, y, z) sizes")
    return v, (0.0, 0.0, 0.0)


def _extent(n: int, d: Optional[float], centre: float) -> Tuple[float, float]:
    """The edges of n samples of pitch d about centre (voxels without d)."""
    if d is None:
        return -0.5, n - 0.5
    half = n * d / 2
    return centre - half, centre + half


def _save(fig: Any, save: Union[str, os.PathLike, None], overwrite: bool, dpi: int) -> None:
    """Writes the figure to a temporary name and renames it (an existing
    file is refused unless overwrite)."""
    if save is None:
        return
    path = os.fspath(save)
    if os.path.exists(path) and not overwrite:
        raise FileExistsError(f"save={path!r}: the file exists: pass overwrite=True to replace it")
    root, ext = os.path.splitext(path)
    tmp = f"{root}.tmp.{os.getpid()}{ext}"
    try:
        fig.savefig(tmp, dpi=dpi)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.remove(tmp)


def _colourbar(fig: Any, image: Any, axes: Any, label: Optional[str]) -> Any:
    cb = fig.colorbar(image, ax=axes, shrink=0.9)
    cb.set_label(label or "value")
    return cb


def _stated(title: str, lo: float, hi: float, how: str) -> str:
    """The figure's title with the grey window stated."""
    return f"{title}\nwindow {lo:.4g} .. {hi:.4g} ({how})"


def show(volume: Any, *, point: Optional[Sequence[int]] = None,
         geometry: Union[ConeGeometry, ParallelGeometry, Volume, None] = None,
         voxel: Union[float, Sequence[float], None] = None, vmin: Optional[float] = None,
         vmax: Optional[float] = None, percentiles: Tuple[float, float] = _PERCENTILES,
         cmap: str = "gray", label: Optional[str] = None, title: Optional[str] = None,
         save: Union[str, os.PathLike, None] = None, overwrite: bool = False, dpi: int = 100,
         figsize: Optional[Tuple[float, float]] = None) -> Any:
    """Three orthogonal slices through a point of a volume, as TIGRE's
    plotImg or CIL's show2D: xy (the slice z), xz (the row y) and yz (the
    column x), one grey window and a colourbar.

    volume: (nz, ny, nx) real values (numpy, CuPy or torch; a 2D slice
        (ny, nx) is shown alone).
    point: (z, y, x) voxel indices the slices pass through (default None:
        the centre, (nz // 2, ny // 2, nx // 2)).
    geometry: a ConeGeometry, ParallelGeometry or Volume: the axes in mm
        about the volume's centre (its offset). voxel: the voxel size in mm
        instead (a number or (x, y, z)). Neither (default): axes in voxels.
    vmin, vmax: the grey window (default None: the 0.5 and 99.5 %
        percentiles of the finite values shown, as the CLI's previews; or
        ``percentiles=(low, high)``). The title states the window and where
        it came from.
    cmap: a matplotlib colour map (default "gray"); label: what the values
        are, the colourbar's label (default "value"); title: the figure's
        title above the window's line (default: the point in voxels, and in
        mm where known).
    save: also write the figure to this file (its format from the
        extension, e.g. .png, .pdf); an existing file is refused unless
        ``overwrite=True``. dpi: its resolution (default 100).

    Returns the matplotlib Figure (``plt.show()`` or a notebook displays it).
    """
    plt = _pyplot()
    v = _stack(volume, "volume", "(nz, ny, nx)")
    nz, ny, nx = v.shape
    z, y, x = (nz // 2, ny // 2, nx // 2) if point is None else (int(i) for i in point)
    if point is not None and len(point) != 3:
        raise ValueError(f"point={point!r}: expected (z, y, x) voxel indices")
    for name, i, n in (("z", z, nz), ("y", y, ny), ("x", x, nx)):
        if not 0 <= i < n:
            raise ValueError(f"point={point!r}: {name} = {i} is outside 0 .. {n - 1}")
    d, o = _spacing(voxel, geometry)
    unit = "mm" if d else "voxel"
    dx, dy, dz = d if d else (None, None, None)
    ex, ey, ez = _extent(nx, dx, o[0]), _extent(ny, dy, o[1]), _extent(nz, dz, o[2])
    planes = [(v[z], (ex, ey), ("x", "y"), f"xy, z = {z}"),
              (v[:, y, :], (ex, ez), ("x", "z"), f"xz, y = {y}"),
              (v[:, :, x], (ey, ez), ("y", "z"), f"yz, x = {x}")]
    if nz == 1:
        planes = planes[:1]
    lo, hi, how = _window(np.concatenate([q[0].ravel() for q in planes]), vmin, vmax,
                          percentiles)
    fig = plt.figure(figsize=figsize or (4.2 * len(planes) + 1.2, 4.4), layout="constrained")
    axes = fig.subplots(1, len(planes), squeeze=False)[0]
    im = None
    for ax, (img, (eh, ev), (h, w), name) in zip(axes, planes):
        aspect, note = _aspect(eh[1] - eh[0], ev[1] - ev[0], h, w)
        im = ax.imshow(img, cmap=cmap, vmin=lo, vmax=hi, origin="lower", interpolation="nearest",
                       extent=(eh[0], eh[1], ev[0], ev[1]), aspect=aspect)
        ax.set_xlabel(f"{h} ({unit})")
        ax.set_ylabel(f"{w} ({unit})")
        ax.set_title(name + note)
    _colourbar(fig, im, list(axes), label)
    if title is None:
        title = f"point (z, y, x) = ({z}, {y}, {x})"
        if d:
            pos = [c + (i - (n - 1) / 2) * s for c, i, n, s in
                   ((o[2], z, nz, dz), (o[1], y, ny, dy), (o[0], x, nx, dx))]
            title += " = ({:.4g}, {:.4g}, {:.4g}) mm".format(*pos)
    fig.suptitle(_stated(title, lo, hi, how))
    _save(fig, save, overwrite, dpi)
    return fig


def _aspect(width: float, height: float, h: str, v: str) -> Tuple[Union[str, float], str]:
    """(matplotlib aspect, caption note) of an image of width x height data
    units: true proportions, unless one side is under a quarter of the other
    (a thin stack's xz, 256 x 16): that side is then stretched to a quarter
    of the other, and the note says by how much."""
    if min(width, height) * 4 >= max(width, height):
        return "equal", ""
    if height < width:
        a = width / (4 * height)
        return a, f" ({v} stretched x{a:.3g})"
    a = 4 * width / height
    return a, f" ({h} stretched x{1 / a:.3g})"


def _views(views: Any, n: int) -> list:
    if views is None:
        return sorted(set(int(round(i * n / 4)) % n for i in range(min(4, n))))
    if np.isscalar(views):
        views = [views]
    out = [int(i) for i in views]
    for i in out:
        if not 0 <= i < n:
            raise ValueError(f"views={views!r}: view {i} is outside 0 .. {n - 1}")
    if not out:
        raise ValueError("views=[]: expected at least one view")
    return out


def _detector(geometry: Any, pixel: Any, nu: int, nv: int) -> Tuple[Optional[float],
                                                                      Optional[float]]:
    if pixel is not None and geometry is not None:
        raise TypeError("give pixel= or geometry=, not both")
    if isinstance(geometry, ConeGeometry):
        gu, gv, du, dv = geometry.detector
        if (gu, gv) != (nu, nv):
            raise ValueError(f"projections of {nv} x {nu} pixels (nv x nu), the geometry's "
                             f"detector has {gv} x {gu}")
        return (du or None), (dv or None)
    if isinstance(geometry, ParallelGeometry):
        d = geometry._p.pixel_size or 1.0
        return d, d
    if geometry is not None:
        raise TypeError(f"geometry={geometry!r}: expected a ConeGeometry or ParallelGeometry")
    if pixel is None:
        return None, None
    p = (float(pixel),) * 2 if np.isscalar(pixel) else tuple(float(x) for x in pixel)
    if len(p) != 2 or not all(x > 0 and math.isfinite(x) for x in p):
        raise ValueError(f"pixel={pixel!r}: expected a pixel size > 0 in mm, or (du, dv)")
    return p


def _view_angle(geometry: Any, i: int) -> Optional[float]:
    if isinstance(geometry, ConeGeometry):
        s = geometry.source(i)  # the source's angle about the axis, 0 .. 360
        return round(math.degrees(math.atan2(s[1], s[0])) % 360.0, 6) % 360.0 + 0.0
    if isinstance(geometry, ParallelGeometry):
        return float(geometry.angles[i])
    return None


def show_projections(projections: Any, *, views: Union[int, Sequence[int], None] = None,
                     geometry: Union[ConeGeometry, ParallelGeometry, None] = None,
                     pixel: Union[float, Sequence[float], None] = None,
                     vmin: Optional[float] = None, vmax: Optional[float] = None,
                     percentiles: Tuple[float, float] = _PERCENTILES, ncols: int = 4,
                     cmap: str = "gray", label: Optional[str] = None,
                     title: Optional[str] = None, save: Union[str, os.PathLike, None] = None,
                     overwrite: bool = False, dpi: int = 100,
                     figsize: Optional[Tuple[float, float]] = None) -> Any:
    """One view or a grid of views of a projection stack, one grey window
    and a colourbar.

    projections: (nviews, nv, nu) real values (numpy, CuPy or torch; a 2D
        image (nv, nu) is one view).
    views: a view index or a list of them (default None: four views a
        quarter turn of the stack apart, 0, n/4, n/2, 3n/4).
    geometry: a ConeGeometry (the detector's pitch du, dv) or a
        ParallelGeometry (its pixel_size): axes in mm about the detector's
        centre, and each view's angle in its title. pixel: the pixel size in
        mm instead (a number or (du, dv)). Neither (default): axes in pixels.
    vmin, vmax, percentiles, cmap, label, title, save, overwrite, dpi: as
        show(). ncols: views per row of the grid (default 4).

    Returns the matplotlib Figure.
    """
    plt = _pyplot()
    p = _stack(projections, "projections", "(nviews, nv, nu)")
    n, nv, nu = p.shape
    chosen = _views(views, n)
    du, dv = _detector(geometry, pixel, nu, nv)
    unit = "mm" if du else "pixel"
    eu, ev = _extent(nu, du, 0.0), _extent(nv, dv, 0.0)
    lo, hi, how = _window(p[chosen], vmin, vmax, percentiles)
    if not isinstance(ncols, int) or ncols < 1:
        raise ValueError(f"ncols={ncols!r}: expected an int >= 1")
    cols = min(ncols, len(chosen))
    rows = -(-len(chosen) // cols)
    fig = plt.figure(figsize=figsize or (3.6 * cols + 1.2, 3.4 * rows + 0.6),
                     layout="constrained")
    axes = fig.subplots(rows, cols, squeeze=False).ravel()
    im = None
    for ax, i in zip(axes, chosen):
        aspect, note = _aspect(eu[1] - eu[0], ev[1] - ev[0], "u", "v")
        im = ax.imshow(p[i], cmap=cmap, vmin=lo, vmax=hi, origin="lower", interpolation="nearest",
                       extent=(eu[0], eu[1], ev[0], ev[1]), aspect=aspect)
        ax.set_xlabel(f"u ({unit})")
        ax.set_ylabel(f"v ({unit})")
        a = _view_angle(geometry, i)
        ax.set_title(f"view {i}" + ("" if a is None else f", {a:.4g} deg") + note)
    for ax in axes[len(chosen):]:
        ax.set_axis_off()
    _colourbar(fig, im, list(axes[:len(chosen)]), label)
    if title is None:
        title = f"{len(chosen)} of {n} views" if len(chosen) > 1 else f"view {chosen[0]} of {n}"
    fig.suptitle(_stated(title, lo, hi, how))
    _save(fig, save, overwrite, dpi)
    return fig
