"""Arrays in GPU memory: CuPy, any object with __cuda_array_interface__
(Numba, PyTorch, JAX...) or a DLPack capsule of a CUDA device. They are
passed to the library's device entry points as device pointers: nothing is
copied. A GPU array must be C-contiguous float32 (no conversion happens on
the GPU: a clear TypeError/ValueError otherwise)."""
from __future__ import annotations

import ctypes
from typing import Any, Optional, Tuple

import numpy as np

from ._core import is_gpu_array
from ._ctrecon import ffi, lib

_KDL_CUDA, _KDL_CUDA_MANAGED = 2, 13


class DeviceArray:
    """A GPU array's pointer, shape, dtype and the object that keeps it alive."""

    def __init__(self, ptr: int, shape: Tuple[int, ...], readonly: bool, owner: Any):
        self.ptr, self.shape, self.readonly, self.owner = ptr, shape, readonly, owner

    def cptr(self) -> Any:
        return ffi.cast("float *", self.ptr)


def _c_strides(shape: Tuple[int, ...], itemsize: int) -> Tuple[int, ...]:
    out, s = [], itemsize
    for n in reversed(shape):
        out.append(s)
        s *= n
    return tuple(reversed(out))


def _check(name: str, shape, itemsize_ok: bool, strides, itemsize: int) -> None:
    if not itemsize_ok:
        raise TypeError(f"{name}: a GPU array must be float32 (no conversion runs on the GPU: "
                        "use .astype(cupy.float32))")
    if strides is not None and tuple(strides) != _c_strides(tuple(shape), itemsize) and \
            int(np.prod(shape)) > 1:
        raise ValueError(f"{name}: a GPU array must be C-contiguous (use cupy.ascontiguousarray)")


def _dlpack_pointer(capsule: Any) -> int:
    get = ctypes.pythonapi.PyCapsule_GetPointer
    get.restype = ctypes.c_void_p
    get.argtypes = [ctypes.py_object, ctypes.c_char_p]
    return get(capsule, b"dltensor")


def device_array(a: Any, name: str) -> DeviceArray:
    """The device view of a GPU array (TypeError/ValueError naming `name` when
    it is not C-contiguous float32 in CUDA memory)."""
    cai = getattr(a, "__cuda_array_interface__", None)
    if cai is not None:
        shape = tuple(cai["shape"])
        _check(name, shape, np.dtype(cai["typestr"]) == np.float32, cai.get("strides"), 4)
        ptr, readonly = cai["data"]
        return DeviceArray(int(ptr or 0), shape, bool(readonly), a)
    capsule = a.__dlpack__()
    t = ffi.cast("ctrpy_dl_tensor *", _dlpack_pointer(capsule))
    if t.device.device_type not in (_KDL_CUDA, _KDL_CUDA_MANAGED):
        raise TypeError(f"{name}: DLPack device type {t.device.device_type} is not CUDA")
    shape = tuple(t.shape[i] for i in range(t.ndim))
    strides = None if t.strides == ffi.NULL else tuple(t.strides[i] * 4 for i in range(t.ndim))
    ok = t.dtype.code == 2 and t.dtype.bits == 32 and t.dtype.lanes == 1
    _check(name, shape, ok, strides, 4)
    ptr = int(ffi.cast("uintptr_t", t.data)) + int(t.byte_offset)
    return DeviceArray(ptr, shape, False, (a, capsule))


def gpu_input(a: Any, out: Any, name: str) -> Optional[DeviceArray]:
    """For a function of one input array and one result: None when neither
    `a` nor `out` is a GPU array (the host path), else the device view of
    `a`. A GPU `out` with a host input is a TypeError (both on the GPU, or
    both on the host)."""
    if not (is_gpu_array(a) or (out is not None and is_gpu_array(out))):
        return None
    if not is_gpu_array(a):
        raise TypeError(f"out is a GPU array but {name} are not: pass both on the GPU "
                        f"(e.g. cupy.asarray({name})) or both on the host")
    return device_array(a, name)


def device_out(out: Any, like: Any, shape: Tuple[int, ...], name: str = "out") -> Tuple[Any, DeviceArray]:
    """The GPU array a result goes to: `out` checked, or a new CuPy array."""
    shape = tuple(int(s) for s in shape)
    if out is None:
        try:
            import cupy
        except ImportError:
            raise TypeError("a GPU input needs CuPy to allocate the result on the GPU: install "
                            "cupy or pass out= (a float32 GPU array)") from None
        out = cupy.empty(shape, dtype=cupy.float32)
    d = device_array(out, name)
    if d.shape != shape:
        raise ValueError(f"{name} has shape {d.shape}: expected {shape}")
    if d.readonly:
        raise ValueError(f"{name} is read-only")
    return out, d


def copy_into(dst: Any, src: Any, shape: Tuple[int, ...], name: str) -> None:
    """dst (a GPU array) = src (a GPU or host array of `shape`), on the GPU
    (CuPy views dst without a copy)."""
    import cupy
    have = tuple(src.shape) if is_gpu_array(src) else np.shape(src)
    if have != tuple(shape):
        raise ValueError(f"{name} has shape {have}: expected {tuple(shape)}")
    cupy.asarray(dst)[...] = cupy.asarray(src, dtype=cupy.float32)


def copy(a: Any) -> Any:
    """A new CuPy array holding a copy of a GPU array, on the GPU."""
    import cupy
    return cupy.array(a, dtype=cupy.float32, copy=True)


def fill(dst: Any, value: float) -> None:
    """Every element of dst (a GPU array) = value, on the GPU."""
    import cupy
    cupy.asarray(dst).fill(value)


def float_io(a: Any, out: Any, name: str, in_shape: Tuple[int, ...],
             out_shape: Tuple[int, ...]) -> Tuple[Any, Any, Any, Any]:
    """One float32 input and one result for a C function of (const float *,
    float *): GPU arrays in place when either is one (gpu_input's rule; the
    result a new CuPy array or `out`), else numpy arrays. Returns (result,
    input pointer, result pointer, the input's owner to keep alive)."""
    from . import _core
    d = gpu_input(a, out, name)
    if d is not None:
        check_shape(d, in_shape, name)
        res, dv = device_out(out, a, out_shape)
        _core.distinct(dv, "out", (name, d))
        return res, d.cptr(), dv.cptr(), d
    x = _core.host_in(a, name, in_shape)
    res = _core.host_out(out, out_shape)
    _core.distinct(res, "out", (name, x))
    return res, _core.ptr(x), _core.wptr(res), x


def check_shape(d: DeviceArray, shape: Tuple[int, ...], name: str) -> None:
    if d.shape != tuple(shape):
        raise ValueError(f"{name} has shape {d.shape}: expected {tuple(shape)}")


def carray(d: DeviceArray) -> Any:
    """A ctr_array describing a float32 GPU array (dims reversed from its shape)."""
    a = ffi.new("ctr_array *")
    a.data = ffi.cast("void *", d.ptr)
    a.dtype = lib.CTR_DTYPE_FLOAT32  # the only dtype accepted on the GPU
    a.ndim = len(d.shape)
    for i, n in enumerate(reversed(d.shape)):
        a.dims[i] = n
    return a
