"""The CUDA libraries of a CUDA build of the package (the pyctrecon-cu13 wheel).

libctrecon.so.0 of a CUDA build links the CUDA runtime and cuFFT by soname
(``_build_config.cuda_libraries``: libcudart.so.13, libcufft.so.12). Before
the extension is imported, :func:`preload` looks for each of them, in this
order (docs/python.md, "CUDA wheel"):

1. already loaded in this process (torch or CuPy imported first): that copy is
   used, not a second one;
2. NVIDIA's runtime wheels (nvidia-cuda-runtime, nvidia-cufft): the folder
   ``nvidia/cu13/lib`` of every entry of ``sys.path`` that has it, in
   ``sys.path``'s order (a virtual environment's own site-packages first, then,
   with ``--system-site-packages``, the system's): the first that holds the
   file is loaded;
3. otherwise nothing is loaded here, and the dynamic loader searches as it does
   for any library: ``LD_LIBRARY_PATH``, then libctrecon.so.0's RUNPATH
   (``$ORIGIN/../nvidia/cu13/lib``), then the system's folders
   (``/etc/ld.so.conf``, e.g. a CUDA toolkit's ``lib64``).

A library loaded under its soname is the one libctrecon.so.0 then gets (the
dynamic loader matches what it needs against the sonames already loaded).
:data:`loaded` records, per soname, the file loaded in step 2, ``"(already
loaded)"`` for step 1, or None for step 3. A build without CUDA loads
nothing.
"""
from __future__ import annotations

import ctypes
import os
import sys
from typing import Dict, Optional

try:
    from ._build_config import cuda_libraries, cuda_major, cuda_wheel_dirs
except ImportError:  # the package's modules used without a build (tests/python.sh --asan)
    cuda_libraries, cuda_major, cuda_wheel_dirs = (), None, ()

loaded: Dict[str, Optional[str]] = {}


def _already_loaded(soname: str) -> bool:
    try:
        ctypes.CDLL(soname, mode=os.RTLD_NOLOAD | os.RTLD_GLOBAL)
    except OSError:
        return False
    return True


def _wheel_file(soname: str) -> Optional[str]:
    for entry in sys.path:
        for sub in cuda_wheel_dirs:
            path = os.path.join(entry or os.curdir, "nvidia", sub, soname)
            if os.path.isfile(path):
                return os.path.abspath(path)
    return None


def preload() -> None:
    """Loads each CUDA library of the build from the first place of the order
    above (once; a library that cannot be loaded from a wheel's folder is
    left to the dynamic loader)."""
    for soname in cuda_libraries:
        if soname in loaded:
            continue
        if _already_loaded(soname):
            loaded[soname] = "(already loaded)"
            continue
        path = _wheel_file(soname)
        if path is not None:
            try:
                ctypes.CDLL(path, mode=os.RTLD_GLOBAL)
            except OSError:
                path = None
        loaded[soname] = path


def explain(error: BaseException) -> str:
    """The import error of the extension, with what to install when it is a
    CUDA library that could not be found."""
    text = str(error)
    missing = [s for s in cuda_libraries if s.split(".so")[0] in text]
    if not missing:
        return text
    suffix = "" if (cuda_major or 0) >= 13 else f"-cu{cuda_major}"
    return (f"{text}\npyctrecon was built with CUDA {cuda_major} and needs "
            f"{' and '.join(missing)}: pip install nvidia-cuda-runtime{suffix} "
            f"nvidia-cufft{suffix} "
            f"(NVIDIA's CUDA {cuda_major} runtime wheels; the pyctrecon-cu{cuda_major} wheel "
            f"declares them), or a CUDA {cuda_major} toolkit the dynamic loader finds "
            f"(LD_LIBRARY_PATH or /etc/ld.so.conf); or the CPU wheel: pip install pyctrecon")
