"""pyctrecon.show and show_projections (docs/python.md, "Figures"): the
figure's axes, their labels and limits, the colourbar and the window it
states, the file save= writes; with the Agg backend, where matplotlib is
installed (skipped without it). Pixels are not compared: what is drawn is
matplotlib's; what is checked is what the package chose."""
import builtins
import os

import numpy as np
import pytest

import pyctrecon

mpl = pytest.importorskip("matplotlib")
mpl.use("Agg")
plt = pytest.importorskip("matplotlib.pyplot")


@pytest.fixture(autouse=True)
def close_figures():
    yield
    plt.close("all")


def _images(fig):
    """The image axes (not the colourbar's), in order."""
    return [ax for ax in fig.axes if ax.images and ax.get_label() != "<colorbar>"]


def _colourbars(fig):
    return [ax for ax in fig.axes if ax.get_label() == "<colorbar>"]


def _volume():
    z, y, x = np.mgrid[0:20, 0:24, 0:32].astype(np.float32)
    return x + 100 * y + 10000 * z  # each voxel's value says where it is


def test_show_three_planes_through_the_centre():
    v = _volume()
    fig = pyctrecon.show(v)
    assert isinstance(fig, mpl.figure.Figure)
    xy, xz, yz = _images(fig)
    assert [a.get_title() for a in (xy, xz, yz)] == ["xy, z = 10", "xz, y = 12", "yz, x = 16"]
    assert (xy.get_xlabel(), xy.get_ylabel()) == ("x (voxel)", "y (voxel)")
    assert (xz.get_xlabel(), xz.get_ylabel()) == ("x (voxel)", "z (voxel)")
    assert (yz.get_xlabel(), yz.get_ylabel()) == ("y (voxel)", "z (voxel)")
    # the planes shown are those of the point
    assert np.array_equal(xy.images[0].get_array(), v[10])
    assert np.array_equal(xz.images[0].get_array(), v[:, 12, :])
    assert np.array_equal(yz.images[0].get_array(), v[:, :, 16])
    # axes in voxels: pixel centres at integers
    assert xy.images[0].get_extent() == [-0.5, 31.5, -0.5, 23.5]
    assert len(_colourbars(fig)) == 1
    # the default window: the 0.5 / 99.5 % percentiles of the planes shown
    shown = np.concatenate([v[10].ravel(), v[:, 12, :].ravel(), v[:, :, 16].ravel()])
    lo, hi = np.percentile(shown, [0.5, 99.5])
    for ax in (xy, xz, yz):
        assert ax.images[0].get_clim() == pytest.approx((lo, hi))
    title = fig._suptitle.get_text()
    assert "point (z, y, x) = (10, 12, 16)" in title
    assert f"window {lo:.4g} .. {hi:.4g} (the 0.5 / 99.5 % percentiles)" in title


def test_show_mm_axes_point_and_window():
    v = _volume()
    vol = pyctrecon.Volume(32, 24, 20, voxel=(0.5, 0.25, 2.0), offset=(10.0, 0.0, -5.0))
    g = pyctrecon.ConeGeometry.circular(sid=500, sdd=800, nu=16, nv=16, nviews=8, volume=vol)
    fig = pyctrecon.show(v, geometry=g, point=(3, 4, 5), vmin=-1, vmax=7, label="mu (1/mm)")
    xy, xz, yz = _images(fig)
    assert (xy.get_xlabel(), xy.get_ylabel()) == ("x (mm)", "y (mm)")
    assert (yz.get_xlabel(), yz.get_ylabel()) == ("y (mm)", "z (mm)")
    # x: 32 voxels of 0.5 mm about 10 mm; y: 24 of 0.25 about 0; z: 20 of 2 about -5
    assert xy.images[0].get_extent() == pytest.approx([2, 18, -3, 3])
    assert xz.images[0].get_extent() == pytest.approx([2, 18, -25, 15])
    assert np.array_equal(xz.images[0].get_array(), v[:, 4, :])
    for ax in (xy, xz, yz):
        assert ax.images[0].get_clim() == (-1, 7)
    cb, = _colourbars(fig)
    assert cb.get_ylabel() == "mu (1/mm)"
    title = fig._suptitle.get_text()
    assert "window -1 .. 7 (given)" in title
    # x: 10 + (5 - 15.5) * 0.5 = 4.75; y: (4 - 11.5) * 0.25; z: -5 + (3 - 9.5) * 2 = -18
    assert "(3, 4, 5) = (-18, -1.875, 4.75) mm" in title
    fig = pyctrecon.show(v, voxel=2.0)
    assert _images(fig)[0].images[0].get_extent() == pytest.approx([-32, 32, -24, 24])


def test_show_thin_stack_is_stretched_and_says_so():
    v = np.zeros((4, 64, 64), np.float32)
    xy, xz, yz = _images(pyctrecon.show(v))
    assert xy.get_title() == "xy, z = 2" and xy.get_aspect() == 1.0
    # 64 x 4 is shown 64 x 16: z stretched by 4
    assert xz.get_title() == "xz, y = 32 (z stretched x4)" and xz.get_aspect() == 4.0
    # a 16-voxel side is a quarter: true proportions
    xy, xz, yz = _images(pyctrecon.show(np.zeros((16, 64, 64), np.float32)))
    assert xz.get_aspect() == 1.0 and xz.get_title() == "xz, y = 32"


def test_show_save_writes_and_refuses_to_replace(tmp_path):
    out = tmp_path / "fig.png"
    pyctrecon.show(_volume(), save=out)
    assert out.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    before = out.read_bytes()
    with pytest.raises(FileExistsError, match="overwrite=True"):
        pyctrecon.show(_volume(), save=out, vmin=0, vmax=1)
    assert out.read_bytes() == before
    pyctrecon.show(_volume(), save=out, vmin=0, vmax=1, overwrite=True)
    assert out.read_bytes() != before
    assert sorted(os.listdir(tmp_path)) == ["fig.png"]  # no temporary left


def test_show_errors_name_the_keyword():
    v = _volume()
    with pytest.raises(ValueError, match=r"point=\(20, 0, 0\): z = 20 is outside 0 .. 19"):
        pyctrecon.show(v, point=(20, 0, 0))
    with pytest.raises(ValueError, match="volume has shape \\(5,\\): expected \\(nz, ny, nx\\) or one image"):
        pyctrecon.show(np.zeros(5))
    with pytest.raises(ValueError, match="voxel=-1"):
        pyctrecon.show(v, voxel=-1)
    with pytest.raises(ValueError, match="percentiles="):
        pyctrecon.show(v, percentiles=(50, 10))


def test_show_one_slice_and_constant_values():
    fig = pyctrecon.show(np.full((8, 10), 3.0, np.float32))
    ax, = _images(fig)
    assert ax.images[0].get_clim() == (2.5, 3.5)  # a window about the one value


def test_show_projections_grid_and_one_view():
    g = pyctrecon.ConeGeometry.circular(sid=500, sdd=800, nu=40, nv=30, du=2.0, dv=1.0,
                                        nviews=8, volume=pyctrecon.Volume.cube(16, 1.0))
    p = np.arange(8 * 30 * 40, dtype=np.float32).reshape(8, 30, 40)
    fig = pyctrecon.show_projections(p, geometry=g)
    axes = _images(fig)
    assert [a.get_title() for a in axes] == ["view 0, 0 deg", "view 2, 90 deg",
                                             "view 4, 180 deg", "view 6, 270 deg"]
    assert all((a.get_xlabel(), a.get_ylabel()) == ("u (mm)", "v (mm)") for a in axes)
    assert axes[0].images[0].get_extent() == pytest.approx([-40, 40, -15, 15])
    assert np.array_equal(axes[1].images[0].get_array(), p[2])
    lo, hi = np.percentile(p[[0, 2, 4, 6]], [0.5, 99.5])
    assert axes[0].images[0].get_clim() == pytest.approx((lo, hi))
    assert len(_colourbars(fig)) == 1
    assert fig._suptitle.get_text().startswith("4 of 8 views\nwindow ")
    fig = pyctrecon.show_projections(p, views=5, vmin=0, vmax=1)
    ax, = _images(fig)
    assert ax.get_title() == "view 5" and ax.get_xlabel() == "u (pixel)"
    assert fig._suptitle.get_text() == "view 5 of 8\nwindow 0 .. 1 (given)"
    fig = pyctrecon.show_projections(p, views=[0, 1, 2, 3, 4], ncols=2)
    assert len(_images(fig)) == 5
    with pytest.raises(ValueError, match="view 8 is outside 0 .. 7"):
        pyctrecon.show_projections(p, views=[8])
    with pytest.raises(ValueError, match="the geometry's detector has 30 x 40"):
        pyctrecon.show_projections(p[:, :, :20], geometry=g)


def test_without_matplotlib_the_error_says_how_to_install(monkeypatch):
    real = builtins.__import__

    def no_matplotlib(name, *args, **kwargs):
        if name.startswith("matplotlib"):
            raise ImportError("No module named 'matplotlib'")
        return real(name, *args, **kwargs)
    monkeypatch.setattr(builtins, "__import__", no_matplotlib)
    with pytest.raises(ImportError, match=r'pip install "pyctrecon\[plot\]"'):
        pyctrecon.show(np.zeros((2, 2, 2)))
    with pytest.raises(ImportError, match=r'pip install "pyctrecon\[plot\]"'):
        pyctrecon.show_projections(np.zeros((2, 2, 2)))
