"""Library errors become exceptions: one class per ctr_status, the detail
text (file, field, expected value) in the message."""
import re

import numpy as np
import pytest

import pyctrecon
from pyctrecon._ctrecon import lib


def test_one_class_per_status():
    classes = [pyctrecon.InvalidArgumentError, pyctrecon.OutOfMemoryError, pyctrecon.FileIOError,
               pyctrecon.FormatError, pyctrecon.SizeMismatchError, pyctrecon.GeometryError,
               pyctrecon.UnsupportedError, pyctrecon.NoDeviceError, pyctrecon.DeviceError,
               pyctrecon.DeviceOutOfMemoryError, pyctrecon.FFTError, pyctrecon.CancelledError,
               pyctrecon.InternalError]
    statuses = [c.status for c in classes]
    assert sorted(statuses) == list(range(-13, 0))
    for c in classes:
        e = c("some detail")
        assert isinstance(e, pyctrecon.CtreconError) and e.detail == "some detail"
        assert e.name.startswith("CTR_E_") and "some detail" in str(e)


def test_missing_file(tmp_path):
    path = tmp_path / "nowhere.json"
    with pytest.raises(pyctrecon.FileIOError, match="nowhere.json") as e:
        pyctrecon.ConeGeometry.load(path)
    assert isinstance(e.value, OSError) and e.value.status == lib.CTR_E_IO
    assert e.value.name == "CTR_E_IO" and "No such file" in e.value.detail


def test_bad_field_named():
    with pytest.raises(pyctrecon.GeometryError) as e:
        pyctrecon.ConeGeometry.circular(sid=-5, sdd=150, nu=8, nv=8, nviews=4,
                                        volume=pyctrecon.Volume.cube(4))
    assert "sid" in str(e.value)
    with pytest.raises(pyctrecon.InvalidArgumentError, match="ram-lak"):
        pyctrecon.ramp_response("triangle", 1.0, 0.1)  # the library's parser lists the names


def test_format_error(tmp_path):
    p = tmp_path / "bad.nrrd"
    p.write_bytes(b"NRRD0004\ntype: what\n\n")
    with pytest.raises(pyctrecon.FormatError, match="bad.nrrd"):
        pyctrecon.io.load(p)


def test_unsupported_device_arrays_on_cpu():
    g = pyctrecon.ConeGeometry.circular(sid=60, sdd=90, nu=16, nv=16, nviews=8,
                                        volume=pyctrecon.Volume.cube(8))
    pr = pyctrecon.Projector(g, ctx=pyctrecon.Context("cpu"))
    from pyctrecon._core import ffi
    st = lib.ctr_projector_forward_device(pr._ptr, ffi.NULL, ffi.NULL)
    assert st == lib.CTR_E_INVALID_ARGUMENT
    x = ffi.new("float[]", 8 * 8 * 8)
    y = ffi.new("float[]", 8 * 16 * 16)
    with pytest.raises(pyctrecon.UnsupportedError, match="CUDA context"):
        pyctrecon._core.check(lib.ctr_projector_forward_device(pr._ptr, x, y))


# ---- keyword arguments: errors name them, in Python's words -------------------------

C_WORDS = re.compile(r"\bctr_[a-z_]+|\bCTR_[A-Z_]+")


def _small():
    pg = pyctrecon.ParallelGeometry(16, 12)
    P = pyctrecon.Projector(pg, nslices=2, ctx=pyctrecon.Context("cpu"))
    return pg, P, P.forward(np.ones(P.volume_shape, np.float32), progress=None)


@pytest.mark.parametrize("kwargs, cls, text", [
    ({"iterations": 2.5}, TypeError, r"iterations=2.5: expected an integer"),
    ({"iterations": 2 ** 70}, ValueError, r"iterations=1180591620717411303424: expected an integer"),
    ({"iterations": 0}, ValueError, r"iterations is 0: expected 1 .. 1e9"),
    ({"host_budget": -5}, ValueError, r"host_budget=-5: expected a byte count >= 0"),
    ({"gpu_budget": 1.5}, TypeError, r"gpu_budget=1.5: expected a byte count"),
    ({"host_budget": "lots"}, ValueError, r"host_budget"),
    ({"tolerance": "a"}, TypeError, r"tolerance='a': expected a number"),
    ({"relaxation": 5.0}, ValueError, r"relaxation is 5: expected 0 < lambda < 2"),
    ({"resume": True}, ValueError, r"resume needs checkpoint"),
    ({"algorithm": 3}, TypeError, r"algorithm=3: expected a name"),
    ({"algorithm": "x"}, ValueError, r"algorithm 'x': expected sirt"),
    ({"box": (0.0, 1.0, 2.0)}, ValueError, r"box=\(0.0, 1.0, 2.0\): expected \(lower, upper\)"),
    ({"ctx": "cpu"}, TypeError, None),  # not an iterate keyword: Projector's
])
def test_iterate_keywords_named(kwargs, cls, text):
    _, P, p = _small()
    if "ctx" in kwargs:
        with pytest.raises(TypeError, match=r"ctx='cpu': expected a pyctrecon.Context"):
            pyctrecon.Projector(P.geometry, nslices=2, ctx="cpu")
        return
    with pytest.raises(cls, match=text) as e:
        pyctrecon.iterate(P, p, progress=None, **kwargs)
    assert not C_WORDS.search(str(e.value)), str(e.value)


@pytest.mark.parametrize("call, cls, text", [
    (lambda pg, s: pyctrecon.fbp(s, pg, window=3), TypeError, r"window=3: expected a name"),
    (lambda pg, s: pyctrecon.fbp(s, pg, window="x"), ValueError, r"window: unknown filter window 'x'"),
    (lambda pg, s: pyctrecon.fbp(s, pg, cutoff=2.0), ValueError, r"cutoff = 2, expected 0 < cutoff"),
    (lambda pg, s: pyctrecon.fbp(s, pg, interp=1), TypeError, r"interp=1: expected a name"),
    (lambda pg, s: pyctrecon.fbp(s, pg, ctx="cpu"), TypeError, r"ctx='cpu': expected a pyctrecon"),
    (lambda pg, s: pyctrecon.Context("cpu", threads=1.5), TypeError, r"threads=1.5: expected an integer"),
    (lambda pg, s: pyctrecon.Context(0), TypeError, r"device=0: expected a name"),
    (lambda pg, s: pyctrecon.Projector(pg, nslices=1, pair="fast"), pyctrecon.UnsupportedError,
     r"pair = 'fast': the fast pair is cone beam only"),
    (lambda pg, s: pyctrecon.fbp_stream(s, sinograms=True, rows=(0,)), ValueError,
     r"rows=\(0,\).*expected \(row0, nrows\)"),
    (lambda pg, s: pyctrecon.fbp_stream(s, sinograms=True, read_ahead=2.5), TypeError,
     r"read_ahead=2.5: expected an integer"),
    (lambda pg, s: pyctrecon.fbp_stream(s, sinograms=True, gpu_budget=-5), ValueError,
     r"gpu_budget=-5"),
    (lambda pg, s: pyctrecon.ParallelGeometry(16, 12.0), TypeError, r"nangles=12.0: expected an integer"),
    (lambda pg, s: pyctrecon.ConeGeometry.circular(sid=100, sdd=150, nu=8.5, nv=8, nviews=4,
                                                   volume=pyctrecon.Volume.cube(4)),
     TypeError, r"nu=8.5: expected an integer"),
    (lambda pg, s: pyctrecon.Volume.cube(4, voxel=(1, 2)), ValueError,
     r"voxel=\(1, 2\): expected one value or three"),
    (lambda pg, s: pyctrecon.fbp_stream(s, sinograms=True,
                                        corrections=pyctrecon.Corrections(stripe_size=2.5)),
     TypeError, r"Corrections.stripe_size=2.5: expected an integer"),
    (lambda pg, s: pyctrecon.fbp_stream(s, sinograms=True,
                                        corrections=pyctrecon.Corrections(stripe_level=99)),
     ValueError, r"Corrections' stripe_level = 99: expected 1 .. 8"),
])
def test_keywords_named(call, cls, text):
    pg = pyctrecon.ParallelGeometry(16, 12)
    s = np.zeros((1, 12, 16), np.float32)
    with pytest.raises(cls, match=text) as e:
        call(pg, s)
    assert not C_WORDS.search(str(e.value)), str(e.value)


@pytest.mark.parametrize("kwargs, field, keyword, value", [
    ({"relaxation": 5.0}, "ctr_iterate_options.relaxation", "relaxation", "5"),
    ({"relaxation": 0.1 + 2}, "ctr_iterate_options.relaxation", "relaxation", "2.1"),
    ({"resume": True}, "ctr_iterate_options.resume", "resume", ""),
    ({"host_budget": 1024}, "host_budget", "host_budget", "1024"),
])
def test_error_field_and_keyword(kwargs, field, keyword, value):
    # the field an error is about travels beside the detail (ctr_error_get_field),
    # and so does its value as given where the error is about one
    _, P, p = _small()
    with pytest.raises(pyctrecon.CtreconError) as e:
        pyctrecon.iterate(P, p, progress=None, **kwargs)
    assert (e.value.field, e.value.keyword) == (field, keyword), str(e.value)
    assert e.value.value == value, str(e.value)


def test_error_keyword_of_a_field_named_otherwise():
    from pyctrecon._core import python_keyword
    assert python_keyword("ctr_fbp_stream_options.row0") == "rows"
    assert python_keyword("ctr_parallel_params.angle_start_deg") == "angle_start"
    assert python_keyword("gpu_budget") == "gpu_budget" and python_keyword("") == ""
    with pytest.raises(pyctrecon.CtreconError) as e:
        pyctrecon.fbp_stream(np.zeros((1, 12, 16), np.float32), sinograms=True, rows=(0, 5))
    assert (e.value.field, e.value.keyword) == ("ctr_fbp_stream_options.row0", "rows"), str(e.value)
    assert e.value.value == ""  # a pair of members (row0, nrows): no one value
    with pytest.raises(pyctrecon.CtreconError) as e:
        pyctrecon.fbp_stream(np.zeros((1, 12, 16), np.float32), sinograms=True, read_ahead=40)
    assert (e.value.keyword, e.value.value) == ("read_ahead", "40"), str(e.value)
    e = pyctrecon.InvalidArgumentError("some detail")
    assert e.field == "" and e.keyword == "" and e.value == ""


def test_library_messages_in_python_words():
    # the texts of the C API, as the library writes them, in the words of the keywords
    from pyctrecon._core import python_words
    assert python_words("smaller lattice, or the CPU (ctr_context_options.device = CTR_DEVICE_CPU)") \
        == "smaller lattice, or the CPU (Context's device = 'cpu')"
    assert python_words("ctr_iterate_options.resume needs ctr_iterate_options.checkpoint") == \
        "resume needs checkpoint"
    assert python_words("ctr_fbp: ctr_fbp_options.interp = 3, expected CTR_FBP_LINEAR or "
                        "CTR_FBP_NEAREST") == "fbp: interp = 3, expected 'linear' or 'nearest'"
    assert python_words("ctr_corrections.stripe = 7: expected CTR_STRIPE_NONE") == \
        "Corrections' stripe = 7: expected 'none'"
    assert python_words("ctr_context_options.num_threads is -1") == "Context's threads is -1"
    assert python_words("(ctr_fdk_stream_options.resume)") == "(resume)"
    if "cuda" not in pyctrecon.features():
        with pytest.raises(pyctrecon.UnsupportedError) as e:
            pyctrecon.Context("cuda")
        assert "Context's device = 'cpu'" in str(e.value) and not C_WORDS.search(str(e.value))
    elif pyctrecon.cuda_device_count() == 0:
        # a CUDA build with no usable GPU (the CUDA wheel on a machine without one): says why
        with pytest.raises(pyctrecon.NoDeviceError) as e:
            pyctrecon.Context("cuda")
        assert "no usable GPU was found: " in str(e.value), e.value
        assert re.search(r"driver|cudaGetDeviceCount", str(e.value)), e.value
        assert "Context's device = 'cpu'" in str(e.value) and not C_WORDS.search(str(e.value))


def test_docstrings_name_no_c_fields():
    # the defaults and meanings of keywords are said in Python's words, not as a struct's
    import inspect
    for name in pyctrecon.__all__:
        obj = getattr(pyctrecon, name)
        doc = inspect.getdoc(obj) or ""
        assert not re.search(r"ctr_[a-z_]+(options|params)'|as ctr_[a-z_]+(options|params)\b",
                             doc), f"{name}: {doc}"
