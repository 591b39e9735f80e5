"""The live mode from Python (pyctrecon.follow, replay, Source; docs/python.md):
previews yielded as projections arrive, equal to the final volume's slices
once all arrived; the final volume byte-identical to fbp_stream of the
finished file; a socket scan replayed by another thread at a fixed rate;
a scan cut short raises, naming how many projections arrived. Small sizes,
loopback (a port the system chooses) and tmp_path only."""
import threading

import numpy as np
import pytest

import pyctrecon

W, H, NP, AXIS = 40, 6, 48, 19.6


def _scan():
    g = pyctrecon.ParallelGeometry(nbins=W, nangles=NP, axis=AXIS)
    ph = pyctrecon.Phantom.shepp_logan(15.0, 0.05)
    z = np.arange(H, dtype=np.float64) - 2.5
    sino = ph.sinogram(g, z)  # (rows, nangles, bins)
    flat = np.full((H, W), 20000.0, np.float32) + np.arange(W, dtype=np.float32)
    proj = np.exp(-0.05 * np.transpose(sino, (1, 0, 2))) * flat  # (nangles, rows, bins)
    return np.rint(proj).astype(np.uint16), flat.astype(np.uint16), g.angles


def _dxchange(path, proj, theta, flat=None):
    """A DXchange file (h5py): projections, angles, two flat fields."""
    h5py = pytest.importorskip("h5py")
    with h5py.File(path, "w") as f:
        f["/exchange/data"] = proj
        f["/exchange/theta"] = np.asarray(theta)
        if flat is not None:
            f["/exchange/data_white"] = np.stack([flat, flat])


def _offline(path, angles, out, flat=None):
    pyctrecon.fbp_stream(path, out, angles=angles, axis=AXIS, pixel_size=0.01, flat=flat,
                         ctx=pyctrecon.Context("cpu"), progress=None)


def test_follow_finished_file(tmp_path):
    proj, _, theta = _scan()
    pyctrecon.io.save(tmp_path / "scan.nrrd", proj)
    src = pyctrecon.Source(tmp_path / "scan.nrrd", follow=False)
    ups = list(pyctrecon.follow(src, tmp_path / "live.nrrd", angles=theta, axis=AXIS,
                                pixel_size=0.01, preview_rows=(1, 4), preview=tmp_path / "pv",
                                ctx=pyctrecon.Context("cpu")))
    src.close()
    assert len(ups) >= 2 and ups[0].projections < NP  # the previews grew in steps
    last = ups[-1]
    assert last.ended == 1 and last.projections == NP and last.rows == (1, 4)
    assert last.report is not None and last.report["nslices"] == H
    _offline(tmp_path / "scan.nrrd", theta, tmp_path / "offline.nrrd")
    assert (tmp_path / "live.nrrd").read_bytes() == (tmp_path / "offline.nrrd").read_bytes()
    vol = pyctrecon.io.load(tmp_path / "live.nrrd")
    for k, row in enumerate(last.rows):
        ref = vol[row]
        err = np.sqrt(np.mean((last.previews[k] - ref) ** 2) / np.mean(ref ** 2))
        assert err < 1e-5, (row, err)
    first = ups[0].previews[1]
    assert np.sqrt(np.mean((first - vol[4]) ** 2) / np.mean(vol[4] ** 2)) > 0.05
    assert (tmp_path / "pv_row00001.png").exists() and (tmp_path / "pv_row00004.png").exists()


@pytest.mark.skipif("zmq" not in pyctrecon.features() or "hdf5" not in pyctrecon.features(),
                    reason="needs ZeroMQ and HDF5")
def test_follow_socket(tmp_path):
    proj, flat, theta = _scan()
    _dxchange(tmp_path / "scan.h5", proj, theta, flat)
    src = pyctrecon.Source("tcp://127.0.0.1:0", bind=True)
    sent = []
    t = threading.Thread(target=lambda: sent.append(
        pyctrecon.replay(tmp_path / "scan.h5", src.endpoint, rate=200)))
    t.start()
    ups = list(pyctrecon.follow(src, tmp_path / "z.nrrd", axis=AXIS, pixel_size=0.01,
                                timeout=10, ctx=pyctrecon.Context("cpu")))
    t.join()
    src.close()
    assert sent == [NP] and ups[-1].ended == 1 and len(ups) >= 3
    assert ups[-1].lag >= 0 and ups[-1].dropped == 0
    favg = pyctrecon.flatfield_average(np.stack([flat, flat]).astype(np.float32))
    _offline(tmp_path / "scan.h5:/exchange/data", theta, tmp_path / "offline.nrrd", favg)
    assert (tmp_path / "z.nrrd").read_bytes() == (tmp_path / "offline.nrrd").read_bytes()


@pytest.mark.skipif("zmq" not in pyctrecon.features() or "hdf5" not in pyctrecon.features(),
                    reason="needs ZeroMQ and HDF5")
def test_follow_cut_short(tmp_path):
    proj, _, theta = _scan()
    _dxchange(tmp_path / "scan.h5", proj, theta)
    src = pyctrecon.Source("tcp://127.0.0.1:0", bind=True)
    t = threading.Thread(target=pyctrecon.replay,
                         args=(tmp_path / "scan.h5", src.endpoint), kwargs={"stop_after": 20})
    t.start()
    ups = []
    with pytest.raises(pyctrecon.InvalidArgumentError, match=f"with 20 of {NP} projections"):
        for u in pyctrecon.follow(src, tmp_path / "c.nrrd", axis=AXIS, timeout=1,
                                  ctx=pyctrecon.Context("cpu")):
            ups.append(u)
    t.join()
    src.close()
    assert ups and ups[-1].ended == 2 and ups[-1].projections == 20
    assert not (tmp_path / "c.nrrd").exists()
    assert src._ptr is None


@pytest.mark.skipif("zmq" not in pyctrecon.features() or "hdf5" not in pyctrecon.features(),
                    reason="needs ZeroMQ and HDF5")
def test_follow_resume_accumulate(tmp_path):
    """A socket scan cut short keeps its spool; resume=True with the whole
    scan sent again continues it, summing the full volume as it comes
    (accumulate="on", the angles given): the offline bytes."""
    proj, flat, theta = _scan()
    _dxchange(tmp_path / "scan.h5", proj, theta, flat)
    out = tmp_path / "r.nrrd"
    src = pyctrecon.Source("tcp://127.0.0.1:0", bind=True)
    t = threading.Thread(target=pyctrecon.replay,
                         args=(tmp_path / "scan.h5", src.endpoint), kwargs={"stop_after": 20})
    t.start()
    with pytest.raises(pyctrecon.InvalidArgumentError, match=f"with 20 of {NP} projections"):
        for _ in pyctrecon.follow(src, out, axis=AXIS, pixel_size=0.01, timeout=1,
                                  angles=theta, accumulate="on", ctx=pyctrecon.Context("cpu")):
            pass
    t.join()
    src.close()
    assert (tmp_path / "r.nrrd.spool").exists() and (tmp_path / "r.nrrd.spool.index").exists()
    src = pyctrecon.Source("tcp://127.0.0.1:0", bind=True)
    t = threading.Thread(target=pyctrecon.replay, args=(tmp_path / "scan.h5", src.endpoint))
    t.start()
    ups = list(pyctrecon.follow(src, out, axis=AXIS, pixel_size=0.01, timeout=10, angles=theta,
                                resume=True, accumulate="on", ctx=pyctrecon.Context("cpu")))
    t.join()
    st = src.status()
    src.close()
    assert ups[0].resumed == 20 and ups[-1].ended == 1 and ups[-1].accumulated == NP
    assert set(ups[-1].seconds) == {"read", "filter", "backproject", "accumulate", "write",
                                    "accumulate_upload", "accumulate_kernels"}
    assert all(v >= 0 for u in ups for v in u.seconds.values())
    assert any(u.seconds["backproject"] > 0 for u in ups if u.updated)
    assert st["dropped_duplicate"] == 20
    favg = pyctrecon.flatfield_average(np.stack([flat, flat]).astype(np.float32))
    _offline(tmp_path / "scan.h5:/exchange/data", theta, tmp_path / "offline.nrrd", favg)
    assert out.read_bytes() == (tmp_path / "offline.nrrd").read_bytes()
    assert not (tmp_path / "r.nrrd.spool").exists()
    with pytest.raises(ValueError, match="accumulate"):
        next(pyctrecon.follow(tmp_path / "scan.h5", accumulate="sometimes"))


def test_follow_bad_row(tmp_path):
    proj, _, theta = _scan()
    pyctrecon.io.save(tmp_path / "scan.nrrd", proj)
    src = pyctrecon.Source(tmp_path / "scan.nrrd", follow=False)
    with pytest.raises(pyctrecon.InvalidArgumentError, match=f"row {H + 3} is not a row") as e:
        for _ in pyctrecon.follow(src, angles=theta, axis=AXIS, preview_rows=[1, H + 3],
                                  ctx=pyctrecon.Context("cpu")):
            pass
    src.close()
    assert e.value.keyword == "preview_rows" and e.value.value == str(H + 3)
