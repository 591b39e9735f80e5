"""Library errors become exceptions: one class per ctr_status, the detail
text (file, field, expected value) in the message."""
import pytest

import ctrecon
from ctrecon._ctrecon import lib


def test_one_class_per_status():
    classes = [ctrecon.InvalidArgumentError, ctrecon.OutOfMemoryError, ctrecon.FileIOError,
               ctrecon.FormatError, ctrecon.SizeMismatchError, ctrecon.GeometryError,
               ctrecon.UnsupportedError, ctrecon.NoDeviceError, ctrecon.DeviceError,
               ctrecon.DeviceOutOfMemoryError, ctrecon.FFTError, ctrecon.CancelledError,
               ctrecon.InternalError]
    statuses = [c.status for c in classes]
    assert sorted(statuses) == list(range(-13, 0))
    for c in classes:
        e = c("some detail")
        assert isinstance(e, ctrecon.CtreconError) and e.detail == "some detail"
        assert e.name.startswith("CTR_E_") and "some detail" in str(e)


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.json"
    with pytest.raises(ctrecon.FileIOError, match="nowhere.json") as e:
        ctrecon.ConeGeometry.load(path)
    assert isinstance(e.value, OSError) and e.value.status == lib.CTR_E_IO
    assert e.value.name == "CTR_E_IO" and "No such file" in e.value.detail


def test_bad_field_named():
    with pytest.raises(ctrecon.GeometryError) as e:
        ctrecon.ConeGeometry.circular(sid=-5, sdd=150, nu=8, nv=8, nviews=4,
                                      volume=ctrecon.Volume.cube(4))
    assert "sid" in str(e.value)
    with pytest.raises(ctrecon.InvalidArgumentError, match="ram-lak"):
        ctrecon.ramp_response("triangle", 1.0, 0.1)  # the library's parser lists the names


def test_format_error(tmp_path):
    p = tmp_path / "bad.nrrd"
    p.write_bytes(b"NRRD0004\ntype: what\n\n")
    with pytest.raises(ctrecon.FormatError, match="bad.nrrd"):
        ctrecon.io.load(p)


def test_unsupported_device_arrays_on_cpu():
    g = ctrecon.ConeGeometry.circular(sid=60, sdd=90, nu=16, nv=16, nviews=8,
                                      volume=ctrecon.Volume.cube(8))
    pr = ctrecon.Projector(g, ctx=ctrecon.Context("cpu"))
    from ctrecon._core import ffi
    st = lib.ctr_projector_forward_device(pr._ptr, ffi.NULL, ffi.NULL)
    assert st == lib.CTR_E_INVALID_ARGUMENT
    x = ffi.new("float[]", 8 * 8 * 8)
    y = ffi.new("float[]", 8 * 16 * 16)
    with pytest.raises(ctrecon.UnsupportedError, match="CUDA context"):
        ctrecon._core.check(lib.ctr_projector_forward_device(pr._ptr, x, y))
