"""The CUDA libraries' loader of a CUDA build (pyctrecon/_cudalibs.py; docs/python.md,
"CUDA wheel"): the order it looks in, and the import error's advice. Runs in any build: the
loader's functions are given the sonames and folders a CUDA 13 build has."""
import os

import pytest

from pyctrecon import _cudalibs

CU13 = ("libcudart.so.13", "libcufft.so.12")


@pytest.fixture
def cu13(monkeypatch):
    monkeypatch.setattr(_cudalibs, "cuda_libraries", CU13)
    monkeypatch.setattr(_cudalibs, "cuda_wheel_dirs", ("cu13/lib",))
    monkeypatch.setattr(_cudalibs, "cuda_major", 13)
    monkeypatch.setattr(_cudalibs, "loaded", {})


def _wheel(root, *sonames):
    d = root / "nvidia" / "cu13" / "lib"
    d.mkdir(parents=True)
    for s in sonames:
        (d / s).write_bytes(b"not an ELF file")
    return d


def test_wheel_folders_in_sys_path_order(cu13, tmp_path, monkeypatch):
    venv, system = tmp_path / "venv", tmp_path / "system"
    _wheel(venv, "libcudart.so.13")
    _wheel(system, *CU13)
    monkeypatch.setattr("sys.path", [str(tmp_path / "elsewhere"), str(venv), str(system)])
    # the first entry of sys.path that has the file, each library on its own
    assert _cudalibs._wheel_file("libcudart.so.13") == str(venv / "nvidia/cu13/lib/libcudart.so.13")
    assert _cudalibs._wheel_file("libcufft.so.12") == str(system / "nvidia/cu13/lib/libcufft.so.12")
    monkeypatch.setattr("sys.path", [str(tmp_path / "elsewhere")])
    assert _cudalibs._wheel_file("libcudart.so.13") is None


def test_preload_already_loaded_first(cu13, monkeypatch):
    # a library already in the process (as torch's libcudart would be) is used as it is
    monkeypatch.setattr(_cudalibs, "cuda_libraries", ("libc.so.6",))
    _cudalibs.preload()
    assert _cudalibs.loaded == {"libc.so.6": "(already loaded)"}


def test_preload_leaves_an_unloadable_file_to_the_loader(cu13, tmp_path, monkeypatch):
    _wheel(tmp_path, *CU13)  # files that are no libraries: dlopen fails, nothing is raised
    monkeypatch.setattr("sys.path", [str(tmp_path)])
    if any(_cudalibs._already_loaded(s) for s in CU13):
        pytest.skip("a CUDA 13 runtime is already loaded in this process")
    _cudalibs.preload()
    assert _cudalibs.loaded == {s: None for s in CU13}


def test_preload_without_cuda_loads_nothing(monkeypatch):
    monkeypatch.setattr(_cudalibs, "cuda_libraries", ())
    monkeypatch.setattr(_cudalibs, "loaded", {})
    _cudalibs.preload()
    assert _cudalibs.loaded == {}


def test_import_error_names_what_to_install(cu13):
    e = ImportError("libcufft.so.12: cannot open shared object file: No such file or directory")
    text = _cudalibs.explain(e)
    assert text.startswith(str(e)) and "libcufft.so.12" in text
    assert "pip install nvidia-cuda-runtime nvidia-cufft" in text and "CUDA 13" in text
    assert "pip install pyctrecon" in text  # or the CPU wheel
    other = ImportError("libfoo.so.1: cannot open shared object file")
    assert _cudalibs.explain(other) == str(other)


def test_build_config_matches_the_library():
    # the installed package's record of its build agrees with what the library says
    import pyctrecon
    cuda = "cuda" in pyctrecon.features()
    try:
        from pyctrecon import _build_config
    except ImportError:
        pytest.skip("the package's modules without a build (no _build_config.py)")
    assert (_build_config.cuda_major is not None) == cuda
    assert bool(_build_config.cuda_libraries) == cuda
    if cuda:
        maps = open("/proc/self/maps").read()
        for soname in _build_config.cuda_libraries:
            assert soname in maps, f"{soname} is not loaded"
            assert os.path.basename(soname).startswith(("libcudart.so.", "libcufft.so."))
