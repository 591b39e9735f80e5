"""Progress, cancellation and the GIL. A progress callback that returns True
or raises cancels the run (CancelledError, or the callback's exception);
Ctrl-C during a run raises KeyboardInterrupt when the library next reports
progress; either way a streamed run leaves no output file, only the
`.partial` file and journal that resume=True finishes, bit-identical to an
uninterrupted run. The library runs without the GIL: a thread blocked
inside a library call does not stop the other threads."""
import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import pyctrecon
from pyctrecon import io

from conftest import same


@pytest.fixture(scope="module")
def scan(tmp_path_factory):
    d = tmp_path_factory.mktemp("scan")
    g = pyctrecon.ConeGeometry.circular(sid=200, sdd=300, nu=64, nv=48, nviews=72,
                                        volume=pyctrecon.Volume.cube(32))
    g.save(d / "g.json")
    io.save(d / "proj.nrrd", pyctrecon.Phantom.shepp_logan(15.0).project(g, progress=False))
    return d, g


def test_progress_reaches_the_callback(scan):
    d, g = scan
    seen = []
    pyctrecon.fdk(io.load(d / "proj.nrrd"), g, progress=lambda s, f: seen.append((s, f)),
                  ctx=pyctrecon.Context("cpu"))
    assert seen and all(s == "fdk" for s, _ in seen)
    fr = [f for _, f in seen]
    assert fr == sorted(fr) and fr[-1] == 1.0


def test_cancel_leaves_no_output_and_resumes(scan, tmp_path):
    d, g = scan
    cpu = pyctrecon.Context("cpu")
    full = tmp_path / "full.nrrd"
    pyctrecon.fdk_file(d / "proj.nrrd", g, full, max_slab_slices=4, ctx=cpu)
    out = tmp_path / "vol.nrrd"
    calls = []

    def stop_halfway(stage, f):  # 8 subvolumes: some are written and journalled by then
        calls.append(f)
        return f >= 0.5
    with pytest.raises(pyctrecon.CancelledError, match="cancelled") as e:
        pyctrecon.fdk_file(d / "proj.nrrd", g, out, max_slab_slices=4, progress=stop_halfway,
                           ctx=cpu)
    assert not out.exists() and os.path.exists(str(out) + ".partial")
    assert e.value.report["resumable"] == 1 and e.value.report["journal"]
    assert calls[-1] < 1.0
    rep = pyctrecon.fdk_file(d / "proj.nrrd", g, out, max_slab_slices=4, resume=True, ctx=cpu)
    assert rep["slabs_resumed"] >= 1
    assert same(io.load(out), io.load(full))


def test_exception_in_callback_cancels(scan, tmp_path):
    d, g = scan

    class Stop(Exception):
        pass

    def boom(stage, f):
        if f > 0:
            raise Stop("from the callback")
    out = tmp_path / "vol.nrrd"
    with pytest.raises(Stop) as e:
        pyctrecon.fdk_file(d / "proj.nrrd", g, out, max_slab_slices=4, progress=boom,
                           ctx=pyctrecon.Context("cpu"))
    assert isinstance(e.value.__cause__, pyctrecon.CancelledError)
    assert not out.exists()


SIGINT_SCRIPT = textwrap.dedent("""
    import json, os, signal, sys, threading
    import pyctrecon
    d, out = sys.argv[1], sys.argv[2]
    g = pyctrecon.ConeGeometry.load(os.path.join(d, "g.json"))
    seen = []
    def progress(stage, f):
        seen.append(f)
        if len(seen) == 1:   # Ctrl-C from another thread while the library runs
            threading.Thread(target=os.kill, args=(os.getpid(), signal.SIGINT)).start()
    try:
        pyctrecon.fdk_file(os.path.join(d, "proj.nrrd"), g, out, max_slab_slices=1,
                           progress=progress, ctx=pyctrecon.Context("cpu", threads=1))
        result = "completed"
    except KeyboardInterrupt as e:
        result = "KeyboardInterrupt"
        cause = type(e.__cause__).__name__
    print(json.dumps({"result": result, "cause": cause if result != "completed" else None,
                      "last": seen[-1], "calls": len(seen)}))
""")


def test_ctrl_c_cancels_cleanly(scan, tmp_path):
    d, _ = scan
    out = tmp_path / "vol.nrrd"
    r = subprocess.run([sys.executable, "-c", SIGINT_SCRIPT, str(d), str(out)],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr
    res = json.loads(r.stdout)
    assert res["result"] == "KeyboardInterrupt" and res["cause"] == "CancelledError", res
    assert res["last"] < 1.0
    # nothing that looks complete: no output, at most the partial file and its journal
    assert not out.exists()
    assert {p.name for p in tmp_path.iterdir()} <= {"vol.nrrd.partial", "vol.nrrd.partial.journal"}


GIL_SCRIPT = textwrap.dedent("""
    import os, sys, threading
    import pyctrecon
    fifo = sys.argv[1]
    done = []
    def reader():  # blocks inside the library (fopen of a FIFO) until a writer opens it
        try:
            pyctrecon.ConeGeometry.load(fifo)
        except pyctrecon.CtreconError as e:
            done.append(type(e).__name__)
    t = threading.Thread(target=reader)
    t.start()
    # Python code on this thread while the other one is inside the library:
    # possible only if the call released the GIL.
    fd = os.open(fifo, os.O_WRONLY)
    try:
        os.write(fd, b"{}")
    except BrokenPipeError:
        pass  # the library may refuse a FIFO (it cannot seek it) and close it first
    os.close(fd)
    t.join()
    print(done[0] if done else "returned")
""")


def test_gil_released_during_calls(tmp_path):
    fifo = tmp_path / "geometry.json"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-c", GIL_SCRIPT, str(fifo)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() in ("FileIOError", "FormatError", "returned")


def test_tqdm_bar(scan, capsys, monkeypatch):
    tqdm = pytest.importorskip("tqdm")
    bars = []

    class Recorded(tqdm.tqdm):  # tqdm draws at most every 0.1 s: read the bar itself
        def __init__(self, *a, **k):
            super().__init__(*a, **k)
            bars.append(self)
    monkeypatch.setattr(tqdm, "tqdm", Recorded)
    d, g = scan
    pyctrecon.fdk(io.load(d / "proj.nrrd"), g, progress=True, ctx=pyctrecon.Context("cpu"))
    # one bar for the stage, run to its end, drawn on stderr
    assert [b.desc for b in bars] == ["fdk"] and bars[0].n == 1000
    assert "fdk" in capsys.readouterr().err


def test_progress_true_without_tqdm(scan, monkeypatch):
    import builtins
    real = builtins.__import__

    def no_tqdm(name, *a, **k):
        if name == "tqdm":
            raise ImportError("no tqdm")
        return real(name, *a, **k)
    monkeypatch.setattr(builtins, "__import__", no_tqdm)
    d, g = scan
    with pytest.raises(ImportError, match="progress=True needs tqdm"):
        pyctrecon.fdk(io.load(d / "proj.nrrd"), g, progress=True)
