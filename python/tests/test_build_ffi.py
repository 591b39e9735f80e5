"""build_ffi.py reads the public headers through the C preprocessor with
empty <stddef.h> and <stdint.h> of its own. A compiler whose driver or
environment adds include directories of its own (a wrapper's -isystem, CPATH)
must not put the real stddef.h, whose max_align_t carries __attribute__ that
cffi cannot parse, in front of them: a GPU machine's GCC 13 did."""
import os
import shutil
import stat
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def test_declarations_ignore_the_compilers_own_headers(tmp_path, monkeypatch):
    pytest.importorskip("cffi")  # build_ffi's own import; tests/python.sh installs it
    cc = shutil.which("cc") or shutil.which("gcc")
    if cc is None and os.environ.get("CTRECON_WHEEL_TEST") == "1":
        # scripts/wheel-test.sh: an installed binary wheel on a PATH with no
        # compiler; build_ffi.py runs when a wheel is built, never after
        pytest.skip("no C compiler on PATH (a binary wheel's test: "
                    "build_ffi.py runs at build time)")
    assert cc, "no C compiler"
    real = tmp_path / "real"
    real.mkdir()
    (real / "stddef.h").write_text(
        "typedef struct { long long __max_align_ll "
        "__attribute__((__aligned__(__alignof__(long long)))); } max_align_t;\n")
    (real / "stdint.h").write_text("typedef long long not_cffis_int64;\n")
    wrapper = tmp_path / "cc-wrapper"
    wrapper.write_text('#!/bin/sh\nexec "%s" -isystem "%s" "$@"\n' % (cc, real))
    wrapper.chmod(wrapper.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("CPATH", str(real))
    monkeypatch.setenv("C_INCLUDE_PATH", str(real))
    monkeypatch.syspath_prepend(os.path.join(ROOT, "python"))
    import build_ffi
    text = build_ffi.declarations(str(wrapper), os.path.join(ROOT, "include"))
    assert "ctr_error_detail" in text
    assert "max_align_t" not in text and "not_cffis_int64" not in text
    import cffi
    cffi.FFI().cdef(text)  # parses
