"""The binding's core: errors, contexts, runs (progress, cancellation) and arrays.

Every library call goes through cffi's API-mode extension pyctrecon._ctrecon,
which releases the GIL for the duration of each C call; the callbacks the
library makes (progress, log, per-iteration) are cffi ``extern "Python"``
functions, which take the GIL back while they run.
"""
from __future__ import annotations

import contextlib
import logging
import os
import re
import sys
import threading
import warnings
from typing import Any, Callable, Iterator, Optional, Sequence, Tuple, Union

import numpy as np

from . import _cudalibs

# a CUDA build's libcudart and libcufft first, from where _cudalibs says
_cudalibs.preload()
try:
    from ._ctrecon import ffi, lib
except ImportError as e:
    raise ImportError(_cudalibs.explain(e)) from e

__all__ = [
    "CtreconError", "InvalidArgumentError", "OutOfMemoryError", "FileIOError", "FormatError",
    "SizeMismatchError", "GeometryError", "UnsupportedError", "NoDeviceError", "DeviceError",
    "DeviceOutOfMemoryError", "FFTError", "CancelledError", "InternalError", "Context",
    "version", "features", "cuda_device_count", "cuda_device_info", "default_context",
    "logger", "memory_budgets",
]

logger = logging.getLogger("pyctrecon")

# ---------------------------------------------------------------------------
# Errors: one class per ctr_status
# ---------------------------------------------------------------------------


class CtreconError(Exception):
    """A library error. ``status`` is the ctr_status value, ``name`` its name
    (``"CTR_E_IO"``), ``detail`` the library's detail text (file, field, what
    was expected); the message holds all three. ``field`` is the API field
    the error is about as the C API names it (ctr_error_get_field:
    ``"ctr_iterate_options.subsets"``, ``"gpu_budget"``) and ``keyword`` the
    keyword argument that sets it (``"subsets"``); both ``""`` when the error
    is about no one field. ``value`` is the offending value of that field as
    it was given, in text (ctr_error_get_value: ``"0"``, ``"0.1"``, a path),
    ``""`` when the error carries none."""

    status: int = 0

    def __init__(self, detail: str = "", status: Optional[int] = None, field: str = "",
                 value: str = ""):
        if status is not None:
            self.status = status
        self.name = ffi.string(lib.ctr_status_name(self.status)).decode()
        self.detail = detail
        self.field = field
        self.keyword = python_keyword(field)
        self.value = value
        msg = ffi.string(lib.ctr_status_message(self.status)).decode()
        super().__init__(f"{msg}: {detail}" if detail else msg)


def _error_class(name: str, status: int, *bases: type) -> type:
    return type(name, (CtreconError,) + bases, {"status": status, "__module__": "pyctrecon"})


InvalidArgumentError = _error_class("InvalidArgumentError", lib.CTR_E_INVALID_ARGUMENT, ValueError)
OutOfMemoryError = _error_class("OutOfMemoryError", lib.CTR_E_OUT_OF_MEMORY, MemoryError)
FileIOError = _error_class("FileIOError", lib.CTR_E_IO, OSError)
FormatError = _error_class("FormatError", lib.CTR_E_FORMAT, ValueError)
SizeMismatchError = _error_class("SizeMismatchError", lib.CTR_E_SIZE_MISMATCH, ValueError)
GeometryError = _error_class("GeometryError", lib.CTR_E_GEOMETRY, ValueError)
UnsupportedError = _error_class("UnsupportedError", lib.CTR_E_UNSUPPORTED)
NoDeviceError = _error_class("NoDeviceError", lib.CTR_E_NO_DEVICE)
DeviceError = _error_class("DeviceError", lib.CTR_E_DEVICE)
DeviceOutOfMemoryError = _error_class("DeviceOutOfMemoryError", lib.CTR_E_DEVICE_OUT_OF_MEMORY,
                                      MemoryError)
FFTError = _error_class("FFTError", lib.CTR_E_FFT)
CancelledError = _error_class("CancelledError", lib.CTR_E_CANCELLED)
InternalError = _error_class("InternalError", lib.CTR_E_INTERNAL)

_ERRORS = {c.status: c for c in (
    InvalidArgumentError, OutOfMemoryError, FileIOError, FormatError, SizeMismatchError,
    GeometryError, UnsupportedError, NoDeviceError, DeviceError, DeviceOutOfMemoryError, FFTError,
    CancelledError, InternalError)}

# OSError's constructor reads (errno, strerror): FileIOError keeps ours.
FileIOError.__init__ = CtreconError.__init__  # type: ignore[method-assign]


# The library's detail text names the C API (struct fields, enum constants);
# Python errors name the keyword arguments and values the caller wrote. The
# fields that a keyword of another name sets, per struct, and the object whose
# keyword it is where that is not the call itself:
_KEYWORDS = {
    ("ctr_context_options", "num_threads"): "threads",
    ("ctr_context_options", "ndevices"): "gpus", ("ctr_context_options", "devices"): "gpus",
    ("ctr_context_options", "device_index"): "device",
    ("ctr_iterate_options", "lower"): "box", ("ctr_iterate_options", "upper"): "box",
    ("ctr_parallel_params", "angles_deg"): "angles",
    ("ctr_parallel_params", "angle_start_deg"): "angle_start",
    ("ctr_parallel_params", "angle_range_deg"): "angle_range",
    ("ctr_parallel_params", "tilt_deg"): "tilt",
    ("ctr_fbp_stream_options", "row0"): "rows", ("ctr_fbp_stream_options", "nrows"): "rows",
    ("ctr_fbp_stream_options", "angle_first"): "angle_subset",
    ("ctr_fbp_stream_options", "angle_count"): "angle_subset",
    ("ctr_fbp_stream_options", "angle_step"): "angle_subset",
    ("ctr_circular_params", "angles_deg"): "angles",
    ("ctr_circular_params", "angle_start_deg"): "angle_start",
    ("ctr_circular_params", "angle_range_deg"): "angle_range",
    ("ctr_helical_params", "angle_start_deg"): "angle_start",
    ("ctr_helical_params", "angle_range_deg"): "angle_range",
    ("ctr_helical_params", "pitch_mm"): "pitch", ("ctr_helical_params", "z0_mm"): "z0",
    ("ctr_helical_params", "window_deg"): "helix_window",
    ("ctr_live_options", "timeout_s"): "timeout",
    ("ctr_live_options", "npreview"): "preview_rows",
    ("ctr_replay_options", "linger_s"): "linger",
}
# Members the library's messages also name bare ("num_threads is -2"): those
# whose keyword differs and whose name is no English word (lower and upper
# are): the word becomes the keyword, unless a field's owner has just been
# named ("ParallelGeometry's nrows": that object's own keyword).
_BARE = {name: kw for (_, name), kw in _KEYWORDS.items() if name not in ("lower", "upper")}
_BARE_WORD = re.compile(r"(?<!'s )\b(" + "|".join(sorted(_BARE, key=len, reverse=True)) + r")\b")
# a keyword repeated in a list after that ("rows, rows" of row0, nrows) once
_REPEAT = re.compile(r"\b([a-z][a-z0-9_]*)(?:(?:, | and )\1\b)+")
_OWNERS = {"ctr_context_options": "Context's ", "ctr_tuning": "Context's tuning key ",
           "ctr_corrections": "Corrections' ", "ctr_parallel_params": "ParallelGeometry's ",
           "ctr_circular_params": "ConeGeometry.circular's ",
           "ctr_helical_params": "ConeGeometry.helical's ", "ctr_pet_params": "PetSystem's ",
           "ctr_pet_kernel_params": "PetSystem's ", "ctr_cluster_options": "cluster option "}
_C_FIELD = re.compile(r"\b(ctr_[a-z0-9_]+)\.([a-z0-9_]+)")
_C_ENUM = re.compile(r"\bCTR_(?:ITERATE_INIT|ITERATE|SHORT_SCAN|INTERP|STORE|DEVICE|PAIR|FBP|"
                     r"STRIPE|CENTER|AXIS|FORMAT|PET|ROTATION|SPLIT|PLACE|PENALTY)_([A-Z0-9_]+)\b")
_C_FUNCTION = re.compile(r"\bctr_([a-z0-9_]+)(?=: )")
# a C function cited in brackets as advice: its Python name, or nothing (a
# function the package does not wrap by that name)
_C_CITED = re.compile(r" ?\((ctr_[a-z0-9_]+)\)")
_PY_CITED = {"ctr_iterate": "pyctrecon.iterate", "ctr_fdk": "pyctrecon.fdk",
             "ctr_fbp": "pyctrecon.fbp", "ctr_fbp_stream": "pyctrecon.fbp_stream"}


def python_words(text: str) -> str:
    """A library message in the words of the Python interface: a struct field
    as the keyword argument that sets it (Context's / Corrections' ... for
    those objects' keywords), an enum constant as its name in quotes, a
    leading C function name as the Python function's."""
    def field(m: "re.Match") -> str:
        struct, name = m.group(1), m.group(2)
        return _OWNERS.get(struct, "") + _KEYWORDS.get((struct, name), name)
    text = _C_FIELD.sub(field, text)
    text = _C_ENUM.sub(lambda m: "'" + m.group(1).lower().replace("_", "-") + "'", text)
    text = _BARE_WORD.sub(lambda m: _BARE[m.group(1)], text)
    text = _REPEAT.sub(lambda m: m.group(1), text)
    text = _C_CITED.sub(lambda m: (f" ({_PY_CITED[m.group(1)]})" if m.group(1) in _PY_CITED
                                   else ""), text)
    # "ctr_fbp_stream_options: ..." is about the keywords of fbp_stream
    return _C_FUNCTION.sub(lambda m: m.group(1).replace("_options", ""), text)


def python_keyword(field: str) -> str:
    """The keyword argument that sets an API field (ctr_error_get_field's
    name: "ctr_<struct>.<member>" or a member unique in the API); "" for
    none."""
    struct, _, name = field.rpartition(".")
    return _KEYWORDS.get((struct, name), name)


def error_for(status: int) -> CtreconError:
    """The exception of a failed call (its detail and field read now, on this
    thread; the detail in the words of the Python interface: python_words)."""
    detail = python_words(ffi.string(lib.ctr_error_detail()).decode(errors="replace"))
    field = ffi.string(lib.ctr_error_get_field()).decode(errors="replace")
    value = ffi.string(lib.ctr_error_get_value()).decode(errors="replace")
    cls = _ERRORS.get(status)
    return cls(detail, field=field, value=value) if cls else CtreconError(detail, status, field,
                                                                          value)


def check(status: int) -> None:
    """Raises the exception of a ctr_status other than CTR_OK."""
    if status != 0:
        raise error_for(status)


# ---------------------------------------------------------------------------
# Library information
# ---------------------------------------------------------------------------

def version() -> str:
    """The library's version ("0.1.0")."""
    return ffi.string(lib.ctr_version_string()).decode()


_FEATURES = {"openmp": lib.CTR_FEATURE_OPENMP, "cuda": lib.CTR_FEATURE_CUDA,
             "hdf5": lib.CTR_FEATURE_HDF5, "mpi": lib.CTR_FEATURE_MPI,
             "tiff": lib.CTR_FEATURE_TIFF, "png": lib.CTR_FEATURE_PNG,
             "zmq": lib.CTR_FEATURE_ZMQ}


def features() -> frozenset:
    """The features compiled into the library: a subset of {"openmp", "cuda",
    "hdf5", "mpi", "tiff", "png"}."""
    f = lib.ctr_features()
    return frozenset(k for k, bit in _FEATURES.items() if f & bit)


def cuda_device_count() -> int:
    """Usable CUDA devices (0 without CUDA in the build, or without a GPU)."""
    return lib.ctr_cuda_get_device_count()


def cuda_device_info(index: int = 0) -> dict:
    """Name, memory (bytes), compute capability and multiprocessors of GPU
    ``index``; NoDeviceError if there is none."""
    d = new_struct("ctr_device_info", lib.ctr_device_info_init, lib.CTR_DEVICE_INFO_VERSION)
    check(lib.ctr_cuda_get_device_info(index, d))
    return {"name": ffi.string(d.name).decode(), "total_memory": d.total_memory,
            "free_memory": d.free_memory, "compute_capability": (d.cc_major, d.cc_minor),
            "multiprocessors": d.multiprocessors}


def new_struct(ctype: str, init: Callable, version: int) -> Any:
    """A versioned struct holding the library's defaults at the version of the
    headers the extension was generated from (docs/api.md: bindings call the
    init function, not the INIT macro)."""
    s = ffi.new(ctype + " *")
    check(init(s, version))
    return s


def cstr(s: Optional[Union[str, os.PathLike]]) -> Any:
    """A NUL-terminated char array for a str or path (ffi.NULL for None)."""
    if s is None:
        return ffi.NULL
    return ffi.new("char[]", os.fsencode(s))


def kept_cstr(keep: list, s: Optional[Union[str, os.PathLike]]) -> Any:
    """cstr(s), appended to `keep` so that it outlives the struct pointing to it."""
    c = cstr(s)
    keep.append(c)
    return c


def enum_value(table: dict, value: Any, what: str) -> int:
    """A name of `table` (case-insensitive, '_' or '-'); anything but a str is
    a TypeError naming `what` (a number would pass any value through)."""
    if not isinstance(value, str):
        raise TypeError(f"{what}={value!r}: expected a name, one of {', '.join(sorted(table))}")
    key = value.lower().replace("_", "-")
    if key not in table:
        raise ValueError(f"{what}={value!r}: expected one of {', '.join(sorted(table))}")
    return table[key]


_warned: set = set()


def deprecated(old: str, new: str) -> None:
    """Warns once per process that ``old`` (a keyword or value) is the
    deprecated name of ``new`` (docs/vocabulary.md: one vocabulary with the
    CLI and C); the old name keeps working."""
    if old not in _warned:
        _warned.add(old)
        # FutureWarning: shown to users by default (a DeprecationWarning is
        # hidden outside __main__); attributed to the caller's line
        level, f = 2, sys._getframe(1)
        here = os.path.dirname(os.path.abspath(__file__))
        while f is not None and os.path.dirname(os.path.abspath(f.f_code.co_filename)) == here:
            level, f = level + 1, f.f_back
        warnings.warn(f"{old} is deprecated: use {new} (the same setting; docs/vocabulary.md)",
                      FutureWarning, stacklevel=level)


def parsed(parse: Callable, ctype: str, value: Any, what: str) -> int:
    """An enum value of a name through the library's own parser (its names;
    errors name `what`, the keyword); anything but a str is a TypeError."""
    if not isinstance(value, str):
        raise TypeError(f"{what}={value!r}: expected a name (a str)")
    out = ffi.new(ctype + " *")
    try:
        check(parse(value.encode(), out))
    except CtreconError as e:
        raise type(e)(e.detail if e.detail.startswith(what) else f"{what}: {e.detail}",
                      e.status if type(e) is CtreconError else None, e.field, e.value) from None
    return out[0]


def assign(o: Any, names: Optional[dict] = None, **fields: Any) -> None:
    """Sets the fields of the struct `o` (o.FIELD = value); a value the field
    cannot take is a TypeError (wrong type) or ValueError (out of range)
    naming the keyword argument (names.get(FIELD, FIELD)) and what it takes."""
    t = ffi.typeof(o)
    types = dict((t.item if t.kind == "pointer" else t).fields)
    for field, value in fields.items():
        kw = (names or {}).get(field, field)
        t = types[field].type
        integer = t.kind == "primitive" and t.cname not in ("float", "double")
        if integer and (isinstance(value, float) or not isinstance(value, (int, np.integer))):
            raise TypeError(f"{kw}={value!r}: expected an integer")
        try:
            setattr(o, field, value)
        except OverflowError:
            bits = 8 * ffi.sizeof(t)
            signed = ffi.cast(t.cname, -1) < 0
            lo, hi = (-(1 << (bits - 1)), (1 << (bits - 1)) - 1) if signed else (0, (1 << bits) - 1)
            raise ValueError(f"{kw}={value!r}: expected an integer from {lo} to {hi}") from None
        except TypeError:
            raise TypeError(f"{kw}={value!r}: expected a number") from None


# ---------------------------------------------------------------------------
# Runs: progress, cancellation (Ctrl-C) and the exceptions of callbacks
# ---------------------------------------------------------------------------

_tls = threading.local()


class _Run:
    """One library call in progress on this thread: the user's progress
    callback or a tqdm bar, and an exception raised in any callback (Ctrl-C's
    KeyboardInterrupt included), which cancels the call and is raised when
    it returns."""

    def __init__(self, progress: Any):
        self.callback: Optional[Callable[[str, float], Any]] = None
        self.bar = None
        self.bar_stage = None
        self.exc: Optional[BaseException] = None
        self.cancelled = False
        if progress == "auto":
            progress = _tqdm_available() and sys.stderr is not None and sys.stderr.isatty()
        if callable(progress):
            self.callback = progress
        elif progress:
            self.tqdm = _tqdm_module()
            if self.tqdm is None:
                raise ImportError("progress=True needs tqdm "
                                  "(pip install tqdm, or pyctrecon[progress])")

    def step(self, stage: str, fraction: float) -> int:
        if self.exc is not None or self.cancelled:
            return 1
        try:
            if self.callback is not None:
                if self.callback(stage, fraction):
                    self.cancelled = True
                    return 1
            elif getattr(self, "tqdm", None) is not None:
                self._bar(stage, fraction)
        except BaseException as e:  # KeyboardInterrupt from Ctrl-C lands here too
            self.exc = e
            return 1
        return 0

    def _bar(self, stage: str, fraction: float) -> None:
        if self.bar is None or self.bar_stage != stage:
            self.close()
            self.bar = self.tqdm.tqdm(total=1000, desc=stage, leave=False)
            self.bar_stage = stage
        n = int(round(min(max(fraction, 0.0), 1.0) * 1000))
        if n > self.bar.n:
            self.bar.update(n - self.bar.n)

    def close(self) -> None:
        if self.bar is not None:
            self.bar.close()
            self.bar = None

    def result(self, status: int) -> None:
        """Raises what the call ended with: a callback's exception first (the
        library's detail chained), then the library's error."""
        if status == 0 and self.exc is None:
            return
        err = error_for(status) if status != 0 else None
        if self.exc is not None:
            exc, self.exc = self.exc, None
            raise exc from err
        raise err  # type: ignore[misc]


def _tqdm_module():
    try:
        import tqdm  # noqa: F401
        return tqdm
    except ImportError:
        return None


def _tqdm_available() -> bool:
    return _tqdm_module() is not None


@contextlib.contextmanager
def running(progress: Any = "auto") -> Iterator[_Run]:
    """The state of one call on this thread (callbacks find it here: the
    library calls progress on the calling thread only)."""
    run = _Run(progress)
    prev = getattr(_tls, "run", None)
    _tls.run = run
    try:
        yield run
    finally:
        run.close()
        _tls.run = prev


def current_run() -> Optional[_Run]:
    return getattr(_tls, "run", None)


def call(progress: Any, fn: Callable, *args: Any) -> None:
    """fn(*args) (a library function returning ctr_status) as one run."""
    with running(progress) as run:
        run.result(fn(*args))


def callback_onerror(exc_type, exc_value, tb):
    """onerror of the extern "Python" callbacks that can cancel: an exception
    that escaped one (e.g. Ctrl-C between two of its statements) cancels the
    call (the callback returns 1) and is raised when the call returns."""
    run = current_run()
    if run is not None and run.exc is None:
        run.exc = exc_value
    return 1


@ffi.def_extern(onerror=callback_onerror)
def ctrpy_progress(user, stage, fraction):
    run = current_run()
    if run is None:
        return 0
    return run.step(ffi.string(stage).decode(errors="replace"), fraction)


_LOG_LEVELS = {lib.CTR_LOG_ERROR: logging.ERROR, lib.CTR_LOG_WARNING: logging.WARNING,
               lib.CTR_LOG_INFO: logging.INFO, lib.CTR_LOG_DEBUG: logging.DEBUG}


@ffi.def_extern()
def ctrpy_log(user, level, message):
    # Any thread: the library's messages go to the logger "pyctrecon".
    logger.log(_LOG_LEVELS.get(level, logging.INFO), "%s",
               ffi.string(message).decode(errors="replace"))


# ---------------------------------------------------------------------------
# Objects the library allocates
# ---------------------------------------------------------------------------

class Handle:
    """An object holding a library pointer `_ptr` whose destructor ffi.gc
    runs when it is collected; ``close()`` (or leaving a ``with`` block)
    runs it now."""

    _ptr: Any = None

    def close(self) -> None:
        if self._ptr is not None:
            ffi.release(self._ptr)
            self._ptr = None

    def __enter__(self):
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class Writer(Handle):
    """A file being written: ``commit()`` puts it in place (the library's
    commit function, which frees the writer); ``abort()``, an exception in a
    ``with`` block or collection without commit removes it (the abort
    function given to ffi.gc)."""

    _commit: Callable[[Any], int]

    def live(self) -> Any:
        if self._ptr is None:
            raise ValueError("the writer is committed or aborted")
        return self._ptr

    def commit(self) -> None:
        p = self.live()
        ffi.gc(p, None)
        self._ptr = None
        check(type(self)._commit(p))

    def abort(self) -> None:
        self.close()

    def __exit__(self, exc_type, *exc: Any) -> None:
        if exc_type is None and self._ptr is not None:
            self.commit()
        else:
            self.abort()


# ---------------------------------------------------------------------------
# Contexts
# ---------------------------------------------------------------------------

_DEVICES = {"auto": lib.CTR_DEVICE_AUTO, "cpu": lib.CTR_DEVICE_CPU, "cuda": lib.CTR_DEVICE_CUDA,
            "gpu": lib.CTR_DEVICE_CUDA}


class Context(Handle):
    """Where computations run, as the CLI's common options say it.

    device: "auto" (default: a usable GPU if the library has CUDA, else the
        CPU), "cpu", "cuda" (every visible GPU) or "cuda:N" (GPU N alone),
        as ``--device``.
    gpus: the GPU ordinals to use, e.g. ``[0, 1, 3]`` (default None: every
        visible one), as ``--gpus 0,1,3``.
    threads: CPU threads (default 0: OpenMP's default, all cores), as
        ``--threads``.
    tuning: a dict of the library's tuning switches (docs/tuning.md, e.g.
        ``{"bp_slices": 8}``), as ``--tune KEY=VALUE``.
    device_index (deprecated: device="cuda:N") and devices (deprecated:
    gpus) are the old names and still work.

    Progress and log messages of the calls made with it reach the call's
    ``progress`` argument and the logger "pyctrecon". One call at a time
    uses a context; the default context is per thread. A CUDA context keeps
    the GPU buffers of its runs (every modality's) for the next one (a
    repeated reconstruction skips their allocation); ``release_memory()``
    and ``close()`` give them back, as does a run that finds the GPU full.
    Projectors and backprojectors made with it hold it: closing it first
    frees the rest of it with the last of them."""

    def __init__(self, device: str = "auto", *, gpus: Optional[Sequence[int]] = None,
                 threads: int = 0, tuning: Optional[dict] = None, device_index: int = -1,
                 devices: Optional[Sequence[int]] = None):
        o = new_struct("ctr_context_options", lib.ctr_context_options_init,
                       lib.CTR_CONTEXT_OPTIONS_VERSION)
        if isinstance(device, str) and ":" in device:
            kind, _, index = device.partition(":")
            if kind.lower() not in ("cuda", "gpu") or not index.isdigit():
                raise ValueError(f"device={device!r}: expected \"auto\", \"cpu\", \"cuda\" "
                                 "or \"cuda:N\" (N: a GPU ordinal, e.g. \"cuda:1\")")
            device, device_index = kind, int(index)
        elif device_index != -1:
            deprecated("Context(device_index=N)", 'Context(device="cuda:N")')
        if devices is not None:
            deprecated("Context(devices=...)", "Context(gpus=...)")
            if gpus is not None:
                raise TypeError("gpus= and devices= name the same setting: give gpus= alone")
            gpus = devices
        devices = gpus
        o.device = enum_value(_DEVICES, device, "device")
        assign(o, {"num_threads": "threads", "device_index": "device"},
               device_index=device_index, num_threads=threads)
        o.progress = lib.ctrpy_progress
        o.log = lib.ctrpy_log
        keep = []
        if devices is not None:
            arr = ffi.new("int[]", [int(d) for d in devices])
            keep.append(arr)
            o.ndevices = len(devices)
            o.devices = arr
        if tuning:
            t = new_struct("ctr_tuning", lib.ctr_tuning_init, lib.CTR_TUNING_VERSION)
            for k, v in tuning.items():
                val = cstr(v if isinstance(v, str) else
                           ("on" if v is True else "off" if v is False else str(v)))
                keep.append(val)
                check(lib.ctr_tuning_set(t, str(k).encode(), val))
            o.tuning = t
            keep.append(t)
        out = ffi.new("ctr_context **")
        check(lib.ctr_context_create(o, out))
        self._ptr = ffi.gc(out[0], lib.ctr_context_free)

    @property
    def ptr(self) -> Any:
        if self._ptr is None:
            raise ValueError("the context is closed")
        return self._ptr

    @property
    def device(self) -> str:
        """The backend it resolved to: "cpu" or "cuda"."""
        return "cuda" if lib.ctr_context_get_device(self.ptr) == lib.CTR_DEVICE_CUDA else "cpu"

    @property
    def devices(self) -> list:
        """The GPU ordinals it uses ([] on the CPU)."""
        n = lib.ctr_context_get_device_count(self.ptr)
        return [lib.ctr_context_get_device_ordinal(self.ptr, i) for i in range(n)]

    def memory_budgets(self) -> Tuple[int, int]:
        """(gpu_budget, host_budget) in bytes: what every budget left at 0 is
        (ctr_context_get_memory_budgets: free GPU memory and the buffers the
        context keeps, which it gives back first, less 1 GiB, 0 on the CPU;
        available host memory less 10 %, at least 1 GiB)."""
        g, h = ffi.new("uint64_t *"), ffi.new("uint64_t *")
        check(lib.ctr_context_get_memory_budgets(self.ptr, g, h))
        return int(g[0]), int(h[0])

    def release_memory(self) -> None:
        """Frees the GPU buffers the context keeps between its runs
        (ctr_context_release_memory)."""
        lib.ctr_context_release_memory(self.ptr)

    def __repr__(self) -> str:
        return f"Context(device={self.device!r}, devices={self.devices})" if self._ptr else "Context(closed)"


def memory_budgets(ctx: Optional[Context] = None) -> Tuple[int, int]:
    """(gpu_budget, host_budget) in bytes from the machine for ctx (None: this
    thread's default context): Context.memory_budgets."""
    return context(ctx).memory_budgets()


def default_context() -> Context:
    """This thread's default context (device "auto"), made on first use."""
    ctx = getattr(_tls, "ctx", None)
    if ctx is None:
        ctx = _tls.ctx = Context()
    return ctx


def context(ctx: Optional[Context]) -> Context:
    """ctx= of a call: a Context, or None for this thread's default."""
    if ctx is None:
        return default_context()
    if not isinstance(ctx, Context):
        raise TypeError(f"ctx={ctx!r}: expected a pyctrecon.Context "
                        "(e.g. pyctrecon.Context(\"cpu\")) "
                        "or None (this thread's default context)")
    return ctx


# ---------------------------------------------------------------------------
# Arrays
# ---------------------------------------------------------------------------
#
# numpy shapes are the reverse of the library's dims (dims[0] fastest): a
# volume of nx x ny x nz is an array of shape (nz, ny, nx). Inputs: a
# C-contiguous array of an accepted dtype is used in place (no copy); any
# other real array (float64, integers, strided views, read-only or not) is
# converted by np.ascontiguousarray to float32 (a copy); complex, bool and
# object arrays are a TypeError; a wrong shape a ValueError. Outputs
# (out=...): a writable C-contiguous float32 array of the exact shape, else
# TypeError / ValueError (never a silent copy). GPU arrays: see gpu_array.

_DTYPES = {np.dtype(np.float32): lib.CTR_DTYPE_FLOAT32, np.dtype(np.uint16): lib.CTR_DTYPE_UINT16,
           np.dtype(np.float16): lib.CTR_DTYPE_FLOAT16}
_NP_OF = {v: k for k, v in _DTYPES.items()}


def ctr_dtype(dt: Any) -> int:
    """The ctr_dtype of a numpy dtype or a name ("float32", "u16", ...)."""
    if isinstance(dt, str):
        return parsed(lib.ctr_dtype_parse, "ctr_dtype", dt, "dtype")
    d = np.dtype(dt)
    if d not in _DTYPES:
        raise TypeError(f"dtype {d}: ctrecon stores float32, uint16 and float16")
    return _DTYPES[d]


def np_dtype(code: int) -> np.dtype:
    return _NP_OF[code]


def is_gpu_array(a: Any) -> bool:
    if hasattr(a, "__cuda_array_interface__"):
        return True
    dev = getattr(a, "__dlpack_device__", None)
    if dev is not None and not isinstance(a, np.ndarray):
        try:
            return dev()[0] in (2, 3, 13)  # kDLCUDA, kDLCUDAHost? (3: pinned), kDLCUDAManaged
        except Exception:
            return False
    return False


def asarray(a: Any, name: str) -> np.ndarray:
    """np.asarray of a host array; a GPU array is a TypeError naming `name`."""
    if is_gpu_array(a):
        raise TypeError(f"{name} is a GPU array: this function takes host (numpy) arrays; "
                        "GPU arrays are used in place by fdk, fbp, fbp_backproject, iterate, "
                        "Projector.forward and Projector.adjoint, PetProjector.forward and "
                        "PetProjector.back, pet_project_fft and pet_reconstruct (copy to the host "
                        "first, e.g. cupy.asnumpy)")
    return np.asarray(a)


def host_in(a: Any, name: str, shape: Optional[Tuple[int, ...]] = None,
            dtypes: Tuple = (np.float32,)) -> np.ndarray:
    """An input array for the library: `a` itself when it is C-contiguous of
    one of `dtypes`, else a float32 C-contiguous copy (the rule above)."""
    arr = asarray(a, name)
    if arr.dtype.kind not in "fiu":
        raise TypeError(f"{name} has dtype {arr.dtype}: expected a real numeric array")
    if shape is not None and arr.shape != tuple(shape):
        raise ValueError(f"{name} has shape {arr.shape}: expected {tuple(shape)}")
    if arr.dtype not in [np.dtype(d) for d in dtypes] or not arr.flags.c_contiguous:
        arr = np.ascontiguousarray(arr, dtype=np.float32)
    return arr


def host_out(out: Optional[np.ndarray], shape: Tuple[int, ...], name: str = "out",
             dtype: Any = np.float32, zero: bool = False) -> np.ndarray:
    """The array a result is written into: a new one, or `out` checked."""
    shape = tuple(int(s) for s in shape)
    if out is None:
        return np.zeros(shape, dtype) if zero else np.empty(shape, dtype)
    if is_gpu_array(out) or not isinstance(out, np.ndarray):
        raise TypeError(f"{name} must be a numpy array")
    if out.dtype != np.dtype(dtype):
        raise TypeError(f"{name} has dtype {out.dtype}: expected {np.dtype(dtype)}")
    if out.shape != shape:
        raise ValueError(f"{name} has shape {out.shape}: expected {shape}")
    if not out.flags.c_contiguous:
        raise ValueError(f"{name} is not C-contiguous: results are written in place")
    if not out.flags.writeable:
        raise ValueError(f"{name} is read-only")
    return out


class _Owned:
    """The base of an array over library memory: numpy keeps it (and so
    `owner`, the object that frees that memory) alive as long as the array
    or any view of it lives."""

    def __init__(self, p: Any, shape: Tuple[int, ...], dtype: Any, owner: Any):
        self.owner = owner
        self.__array_interface__ = {
            "version": 3, "shape": tuple(int(n) for n in shape),
            "typestr": np.dtype(dtype).str,
            "data": (int(ffi.cast("uintptr_t", p)), False)}


def owned_view(p: Any, shape: Tuple[int, ...], dtype: Any, owner: Any) -> np.ndarray:
    """A writable C-contiguous array over library memory at `p` (no copy)
    that keeps `owner` alive (numpy's base chain: array -> _Owned -> owner)."""
    return np.asarray(_Owned(p, shape, dtype, owner))


def distinct(out: Any, out_name: str, *inputs: Tuple[str, Any]) -> None:
    """ValueError when the result array `out` shares memory with an input
    (name, array) that the library reads while it writes `out`: the result
    would be computed from partly overwritten data. Host (numpy) arrays and
    GPU arrays alike (their address ranges)."""
    lo, hi = _extent(out)
    for name, a in inputs:
        if a is None:
            continue
        alo, ahi = _extent(a)
        if alo < hi and lo < ahi:
            raise ValueError(f"{out_name} shares memory with {name}: the result would overwrite "
                             f"{name} while it is read; pass an {out_name} array of its own "
                             f"(or {out_name}=None for a new one)")


def _extent(a: Any) -> Tuple[int, int]:
    """The byte address range [lo, hi) an array's elements span."""
    if isinstance(a, np.ndarray):
        lo, hi = np.lib.array_utils.byte_bounds(a) if hasattr(np.lib, "array_utils") \
            else np.byte_bounds(a)
        return int(lo), int(hi)
    from . import _gpu
    d = a if isinstance(a, _gpu.DeviceArray) else _gpu.device_array(a, "array")
    return d.ptr, d.ptr + 4 * int(np.prod(d.shape))


def ptr(arr: np.ndarray, ctype: str = "float") -> Any:
    """A pointer to an array's data (no copy; the cdata keeps it alive)."""
    return ffi.from_buffer(ctype + "[]", arr, require_writable=False)


def wptr(arr: np.ndarray, ctype: str = "float") -> Any:
    return ffi.from_buffer(ctype + "[]", arr, require_writable=True)


def carray(arr: np.ndarray) -> Any:
    """A ctr_array describing a host array (dims reversed from its shape)."""
    a = ffi.new("ctr_array *")
    a.data = ffi.cast("void *", ffi.from_buffer(arr))
    a.dtype = ctr_dtype(arr.dtype)
    a.ndim = arr.ndim
    for i, n in enumerate(reversed(arr.shape)):
        a.dims[i] = n
    return a


def doubles(values: Optional[Sequence[float]], name: str, n: Optional[int] = None) -> Any:
    """A double[] of a sequence (None: ffi.NULL)."""
    if values is None:
        return ffi.NULL
    v = np.ascontiguousarray(values, dtype=np.float64).ravel()
    if n is not None and v.size != n:
        raise ValueError(f"{name} has {v.size} values: expected {n}")
    return ffi.new("double[]", v.tolist())


def budget(value: Union[int, str, None], what: str) -> int:
    """A byte count: an int >= 0, or text as "8G", "512MiB" (the library's
    parser); errors name `what`, the keyword."""
    if value is None:
        return 0
    if isinstance(value, str):
        return parsed(lib.ctr_size_parse, "uint64_t", value, what)
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{what}={value!r}: expected a byte count (an int, or text as \"8G\")")
    if not 0 <= value < 1 << 64:
        raise ValueError(f"{what}={value!r}: expected a byte count >= 0 (0: the default)")
    return int(value)


def struct_dict(s: Any, skip: Sequence[str] = ("version",)) -> dict:
    """A plain dict of a struct's numeric members (nested structs too)."""
    out = {}
    for name, field in ffi.typeof(s).item.fields if ffi.typeof(s).kind == "pointer" else \
            ffi.typeof(s).fields:
        if name in skip:
            continue
        v = getattr(s, name)
        t = field.type
        if t.kind == "array" and t.item.kind == "primitive" and t.item.cname == "char":
            out[name] = ffi.string(v).decode(errors="replace")
        elif t.kind == "array" and t.item.kind == "struct":
            out[name] = [struct_dict(x) for x in v]
        elif t.kind == "array":
            out[name] = list(v)
        elif t.kind == "struct":
            out[name] = struct_dict(v)
        elif t.kind == "pointer":
            continue
        else:
            out[name] = v
    return out
