"""Live beamline reconstruction (docs/synchrotron.md, "Live mode"): a scan
followed while it is acquired, from a DXchange HDF5 file that grows (read
under SWMR) or a ZeroMQ socket, with preview slices updated as projections
arrive, and the full reconstruction when the scan ends (the bytes of the
offline ``fbp_stream`` of the finished file). Shapes: a preview (ny, nx), the
previews (npreview, ny, nx)."""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from . import _core
from ._core import check, context, cstr, ffi, lib, new_struct
from .geometry import axis_value
from .io import file_format
from .parbeam import Corrections, _corr, _fbp_options, _stream_report

__all__ = ["Source", "follow", "replay", "LiveUpdate"]


def _source_options(bind: bool, count: int, follow: bool):
    o = new_struct("ctr_source_options", lib.ctr_source_options_init,
                   lib.CTR_SOURCE_OPTIONS_VERSION)
    o.bind = int(bool(bind))
    _core.assign(o, count=count)
    o.follow = int(bool(follow))
    return o


class Source(_core.Handle):
    """A projection source (ctr_source_open): ``"tcp://HOST:PORT"`` (a
    ZeroMQ PULL socket; ``bind=True`` binds it, port 0 a free one:
    ``endpoint`` says which), a DXchange ``scan.h5`` (``follow=True``:
    followed as it grows, under SWMR; False: read as finished) or another
    stack read as finished. ``count``: the scan's projections where the
    source does not say them."""

    def __init__(self, where: Union[str, os.PathLike], *, bind: bool = False, count: int = 0,
                 follow: bool = True):
        o = _source_options(bind, count, follow)
        out = ffi.new("ctr_source **")
        check(lib.ctr_source_open(cstr(where), o, out))
        self._ptr = ffi.gc(out[0], lib.ctr_source_close)

    @property
    def endpoint(self) -> str:
        """The socket's address as bound (the port chosen), or the file's path."""
        return ffi.string(lib.ctr_source_endpoint(self._ptr)).decode()

    def status(self) -> dict:
        """What the source delivered and dropped so far (ctr_source_status)."""
        s = new_struct("ctr_source_status", lib.ctr_source_status_init,
                       lib.CTR_SOURCE_STATUS_VERSION)
        check(lib.ctr_source_get_status(self._ptr, s))
        return _core.struct_dict(s)


def replay(scan: Union[str, os.PathLike], to: Union[str, os.PathLike], *, rate: float = 0.0,
           bind: bool = False, stop_after: int = 0, overwrite: bool = False,
           linger: float = 0.0) -> int:
    """Replays the DXchange file ``scan`` (flats, darks, then projections at
    ``rate`` per second) into ``to``: ``"tcp://HOST:PORT"`` (a ZeroMQ PUSH
    socket) or an HDF5 file written under SWMR (ctr_replay). Returns the
    projections sent. Releases the GIL while it runs (a thread may replay
    while another follows)."""
    o = new_struct("ctr_replay_options", lib.ctr_replay_options_init,
                   lib.CTR_REPLAY_OPTIONS_VERSION)
    _core.assign(o, rate=rate, stop_after=stop_after, linger_s=linger)
    o.bind = int(bool(bind))
    o.overwrite = int(bool(overwrite))
    sent = ffi.new("int64_t *")
    check(lib.ctr_replay(cstr(scan), cstr(to), o, sent))
    return int(sent[0])


@dataclass
class LiveUpdate:
    """One step of ``follow``: the previews after ``projections`` of
    ``expected`` (0: not known yet) projections. ``ended``: 0 acquiring, 1
    complete, 2 stopped early; ``report``: the final run's (a dict, as
    ``fbp_stream``'s) on the last update of a complete scan with ``out``;
    ``seconds``: where the step's time went (``read``, ``filter``,
    ``backproject``, ``accumulate``, ``write``: ctr_live_state's seconds;
    ``write`` is the preview writer thread's last write, off the steps' path;
    ``accumulate_upload``, ``accumulate_kernels``: a GPU's seconds on the last
    batch of the full volume's sum that completed, 0 when none did);
    ``preview_writes``, ``preview_superseded``: previews written, and queued
    ones replaced by a newer state before the writer took them."""
    projections: int
    expected: int
    updated: int
    dropped: int
    ended: int
    rows: Tuple[int, ...]
    previews: np.ndarray
    lag: float
    report: Optional[dict] = field(default=None)
    resumed: int = 0
    accumulated: int = 0
    seconds: Optional[dict] = field(default=None)
    preview_writes: int = 0
    preview_superseded: int = 0


def follow(source: Union[str, os.PathLike, Source], out: Union[str, os.PathLike, None] = None, *,
           axis: Union[str, float] = "auto", angles: Optional[Sequence[float]] = None,
           pixel_size: float = 0.0, nx: int = 0, ny: int = 0, voxel: float = 0.0,
           rows: Tuple[int, int] = (0, 0), preview_rows: Optional[Sequence[int]] = None,
           timeout: float = 30.0, bind: bool = False, count: int = 0,
           flat_file: Optional[str] = None, dark_file: Optional[str] = None,
           preview: Union[str, os.PathLike, None] = None, preview_every: int = 16,
           corrections: Optional[Corrections] = None, out_format: Any = "auto",
           out_dtype: Any = "float32", overwrite: bool = False, window: Any = "ram-lak",
           cutoff: float = 1.0, interp: Any = "linear", spool: Optional[str] = None,
           resume: bool = False, accumulate: Union[str, bool] = "off",
           wait: float = 0.2, ctx=None) -> Iterator[LiveUpdate]:
    """Follows a scan as it arrives (ctr_fbp_live_*), yielding a LiveUpdate
    with a copy of the previews each time projections were added, and once
    more when the scan ends.

    ``source``: a Source, or its address (a growing DXchange file, or
    ``"tcp://HOST:PORT"``; ``bind`` and ``count`` as Source's). The previews:
    ``preview_rows`` (detector rows; default the first, middle and last of
    ``rows``), written to ``preview`` + ``_rowNNNNN.png`` and ``.h5`` every
    ``preview_every`` projections when given (by the run's writer thread: the
    steps do not wait for them; the last is written before the last update). The angles come from the source
    (theta, the frames' headers) unless ``angles``; ``axis`` a value in bins
    ("auto": previews about the detector's centre, the final run finds it).
    With ``out``: when every projection arrived, the final reconstruction
    (``fbp_stream``'s options: rows, corrections, out_dtype...) writes it and
    the last update carries its report; a scan that stopped early raises
    InvalidArgumentError naming how many arrived (the previews were yielded
    first). ``timeout``: seconds without a frame after which the scan counts
    as stopped. The projections of a socket wait in ``spool`` (default
    ``out`` + ".spool"), kept with its state when the scan stops early:
    ``resume=True`` continues that run (its projections taken from the
    spool, those sent again dropped as duplicates), to the same bytes.
    ``accumulate``: "on" sums the full volume in memory as projections
    arrive, so that it is written moments after the last one (the same
    bytes; refused, naming the reason, where the run cannot: a GPU context,
    the axis "auto", corrections, angles not known before the projections,
    memory), "auto" where the run allows it, "off" (the default) after the
    scan."""
    if accumulate is True or accumulate is False:
        accumulate = "on" if accumulate else "off"
    modes = {"off": lib.CTR_LIVE_ACCUMULATE_OFF, "on": lib.CTR_LIVE_ACCUMULATE_ON,
             "auto": lib.CTR_LIVE_ACCUMULATE_AUTO}
    if accumulate not in modes:
        raise ValueError(f"accumulate={accumulate!r}: expected 'off', 'on' or 'auto'")
    src = source if isinstance(source, Source) else Source(source, bind=bind, count=count)
    keep: list = []
    p = new_struct("ctr_parallel_params", lib.ctr_parallel_params_init,
                   lib.CTR_PARALLEL_PARAMS_VERSION)
    if angles is not None:
        a = _core.doubles(angles, "angles")
        keep.append(a)
        p.angles_deg, p.nangles = a, len(a)
    p.axis = axis_value(axis)
    _core.assign(p, nx=nx, ny=ny, voxel=voxel, pixel_size=pixel_size)
    fo = _fbp_options(window, cutoff, interp, None, False, keep)
    so = new_struct("ctr_fbp_stream_options", lib.ctr_fbp_stream_options_init,
                    lib.CTR_FBP_STREAM_OPTIONS_VERSION)
    corr = _corr(corrections)
    keep += [fo, corr]
    so.fbp, so.corrections = fo, corr
    _core.assign(so, {"row0": "rows", "nrows": "rows"}, row0=rows[0], nrows=rows[1])
    so.out_dtype = _core.ctr_dtype(out_dtype)
    so.overwrite = int(bool(overwrite))
    lo = new_struct("ctr_live_options", lib.ctr_live_options_init, lib.CTR_LIVE_OPTIONS_VERSION)
    lo.stream = so
    if preview_rows is not None:
        pr = ffi.new("int64_t[]", [int(r) for r in preview_rows])
        keep.append(pr)
        lo.preview_rows, lo.npreview = pr, len(preview_rows)
    _core.assign(lo, timeout_s=timeout)
    if spool is None and out is not None:
        spool = os.fspath(out) + ".spool"  # beside the output, as the tool's
    lo.spool = _core.kept_cstr(keep, spool)
    lo.flat_file = _core.kept_cstr(keep, flat_file)
    lo.dark_file = _core.kept_cstr(keep, dark_file)
    lo.resume = int(bool(resume))
    lo.accumulate = modes[accumulate]
    c = context(ctx)
    lp = ffi.new("ctr_fbp_live **")
    check(lib.ctr_fbp_live_open(c.ptr, src._ptr, p, lo, lp))
    live = ffi.gc(lp[0], lib.ctr_fbp_live_free)
    st = new_struct("ctr_live_state", lib.ctr_live_state_init, lib.CTR_LIVE_STATE_VERSION)
    written = 0
    try:
        while True:
            check(lib.ctr_fbp_live_step(live, float(wait), st))
            if not st.updated and not st.ended:
                continue
            upd = _update(live, st)
            if preview is not None and upd.previews.size and (
                    st.ended or st.projections - written >= preview_every):
                first = written == 0 and not resume  # a resumed run's replace the stopped run's
                # queued for the run's writer thread; the last one written completely
                check(lib.ctr_fbp_live_queue_preview(live, cstr(preview), int(first),
                                                     int(bool(overwrite))))
                if st.ended:
                    check(lib.ctr_fbp_live_flush_preview(live))
                written = st.projections
            if st.ended and out is not None:
                rep = new_struct("ctr_fbp_stream_report", lib.ctr_fbp_stream_report_init,
                                 lib.CTR_FBP_STREAM_REPORT_VERSION)
                if st.ended == 1:
                    check(lib.ctr_fbp_live_finish(live, cstr(out), file_format(out_format), rep))
                    upd.report = _stream_report(rep)
                    yield upd
                    return
                yield upd
                check(lib.ctr_fbp_live_finish(live, cstr(out), file_format(out_format), rep))
            yield upd
            if st.ended:
                return
    finally:
        ffi.release(live)
        del keep
        if not isinstance(source, Source):
            src.close()


def _update(live, st) -> LiveUpdate:
    n = int(st.npreview)
    prev = np.zeros((n, int(st.ny), int(st.nx)), np.float32)
    rows = []
    r = ffi.new("int64_t *")
    for k in range(n):
        check(lib.ctr_fbp_live_preview(live, k, _core.wptr(prev[k]), r))
        rows.append(int(r[0]))
    return LiveUpdate(int(st.projections), int(st.expected), int(st.updated), int(st.dropped),
                      int(st.ended), tuple(rows), prev, float(st.lag_s),
                      resumed=int(st.resumed), accumulated=int(st.accumulated),
                      seconds={k: float(getattr(st, k + "_s")) for k in
                               ("read", "filter", "backproject", "accumulate", "write",
                                "accumulate_upload", "accumulate_kernels")},
                      preview_writes=int(st.preview_writes),
                      preview_superseded=int(st.preview_superseded))
