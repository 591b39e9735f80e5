"""The CUDA wheel's steps of scripts/wheel-test.sh --cuda (docs/python.md, "CUDA wheel").

  wheel_cuda.py unpack SDIST DIR    the sdist's files into DIR, writing only those whose
                                    bytes differ from DIR's (and removing those it no
                                    longer has): the sdist gives every file one fixed
                                    time, so a rebuild in the same build folder sees a
                                    changed file by its new time alone
  wheel_cuda.py project PYPROJECT   makes an unpacked sdist's pyproject.toml the
                                    distribution pyctrecon-cu13: its name, and
                                    NVIDIA's CUDA 13 runtime wheels as dependencies
  wheel_cuda.py check WHEEL ARCHS   the repaired wheel: libctrecon.so.0's RUNPATH
                                    names nvidia/cu13/lib, it needs libcudart.so.13
                                    and libcufft.so.12, and its GPU code has SASS
                                    for each sm_NN of ARCHS ("75-real;...;120")
                                    and PTX for the plain entries
"""
import os
import re
import struct
import subprocess
import sys
import tarfile
import tempfile
import zipfile

# The CUDA 13 runtime and cuFFT of NVIDIA's wheels (unsuffixed names from CUDA
# 13 on; both install into site-packages/nvidia/cu13/lib). cuFFT 12.x is the
# cuFFT of CUDA 13.x.
CUDA_DEPENDENCIES = ['"nvidia-cuda-runtime>=13.0,<14"', '"nvidia-cufft>=12.0,<13"']


def replace_once(text, old, new, what):
    if text.count(old) != 1:
        sys.exit(f"wheel_cuda.py: {what}: expected {old!r} once in pyproject.toml")
    return text.replace(old, new)


def project(path):
    text = open(path).read()
    text = replace_once(text, 'name = "pyctrecon"', 'name = "pyctrecon-cu13"', "the name")
    text = replace_once(text, 'dependencies = ["numpy>=1.21", "cffi>=1.15"]',
                        'dependencies = ["numpy>=1.21", "cffi>=1.15", '
                        + ", ".join(CUDA_DEPENDENCIES) + "]", "the dependencies")
    text = replace_once(text, 'description = "CT and PET reconstruction',
                        'description = "(CUDA 13 build) CT and PET reconstruction', "the summary")
    open(path, "w").write(text)


def unpack(sdist, dest):
    kept = set()
    with tarfile.open(sdist) as tar:
        for m in tar.getmembers():
            if not m.isfile():
                continue
            rel = m.name.split("/", 1)[1]  # below the sdist's NAME-VERSION/
            kept.add(os.path.normpath(rel))
            data = tar.extractfile(m).read()
            path = os.path.join(dest, rel)
            if os.path.isfile(path) and open(path, "rb").read() == data:
                continue
            os.makedirs(os.path.dirname(path), exist_ok=True)
            with open(path, "wb") as f:
                f.write(data)
            os.chmod(path, m.mode & 0o777)
    for top, _, files in os.walk(dest):
        for name in files:
            path = os.path.join(top, name)
            if os.path.relpath(path, dest) not in kept:
                os.remove(path)


def dynamic(lib):
    out = subprocess.run(["readelf", "-d", lib], check=True, capture_output=True,
                         text=True).stdout
    needed = re.findall(r"\(NEEDED\).*\[(.*)\]", out)
    runpath = re.findall(r"\((?:RUNPATH|RPATH)\).*\[(.*)\]", out)
    return needed, ":".join(runpath).split(":")


def fatbin_entries(lib):
    """(kind, sm) of every entry of the .nv_fatbin section: kind 1 PTX, 2 SASS
    (ELF). The layout: a 16-byte header (magic 0xBA55ED50, version, header
    size, size), then entries, each a header (kind u16, version u16, header
    size u32, payload size u64, ..., the architecture u32 at byte 28) and its
    payload."""
    out = subprocess.run(["readelf", "-W", "-S", lib], check=True, capture_output=True,
                         text=True).stdout
    m = re.search(r"\.nv_fatbin\s+\S+\s+[0-9a-f]+\s+([0-9a-f]+)\s+([0-9a-f]+)", out)
    if not m:
        sys.exit(f"wheel_cuda.py: no .nv_fatbin section in {lib}")
    off, size = int(m.group(1), 16), int(m.group(2), 16)
    data = open(lib, "rb").read()[off:off + size]
    entries, pos = set(), 0
    while pos + 16 <= len(data):
        magic, _, hsize, fsize = struct.unpack_from("<IHHQ", data, pos)
        if magic != 0xBA55ED50:
            pos += 8  # the fat binaries of the objects are 8-byte aligned
            continue
        e, end = pos + hsize, pos + hsize + fsize
        while e + 32 <= end:
            kind, _, ehsize, esize = struct.unpack_from("<HHIQ", data, e)
            arch = struct.unpack_from("<I", data, e + 28)[0]
            entries.add((kind, arch))
            e += ehsize + esize
        pos = end
    return entries


def check(wheel, archs):
    with tempfile.TemporaryDirectory() as tmp:
        zipfile.ZipFile(wheel).extract("pyctrecon/libctrecon.so.0", tmp)
        lib = os.path.join(tmp, "pyctrecon", "libctrecon.so.0")
        needed, runpath = dynamic(lib)
        entries = fatbin_entries(lib)
    problems = []
    for soname in ("libcudart.so.13", "libcufft.so.12"):
        if soname not in needed:
            problems.append(f"libctrecon.so.0 does not need {soname}: {needed}")
    if "$ORIGIN/../nvidia/cu13/lib" not in runpath:
        problems.append(f"RUNPATH without $ORIGIN/../nvidia/cu13/lib: {runpath}")
    if any(p.startswith("/") for p in runpath):
        problems.append(f"an absolute RUNPATH entry: {runpath}")
    want = set()
    for a in archs.split(";"):
        sm = int(a.split("-")[0])
        if not a.endswith("-virtual"):
            want.add((2, sm))
        if "-" not in a or a.endswith("-virtual"):
            want.add((1, sm))
    if want - entries:
        problems.append(f"GPU code missing (kind 1 PTX, 2 SASS): {sorted(want - entries)}; "
                        f"found {sorted(entries)}")
    if problems:
        sys.exit("wheel_cuda.py: " + "\n".join(problems))
    print(f"libctrecon.so.0: needs {', '.join(n for n in needed if 'cu' in n)}; RUNPATH "
          f"{':'.join(runpath)}; SASS sm_{', sm_'.join(str(s) for k, s in sorted(entries) if k == 2)}"
          f"; PTX compute_{', compute_'.join(str(s) for k, s in sorted(entries) if k == 1)}")


if __name__ == "__main__":
    if len(sys.argv) == 4 and sys.argv[1] == "unpack":
        unpack(sys.argv[2], sys.argv[3])
    elif len(sys.argv) == 3 and sys.argv[1] == "project":
        project(sys.argv[2])
    elif len(sys.argv) == 4 and sys.argv[1] == "check":
        check(sys.argv[2], sys.argv[3])
    else:
        sys.exit(__doc__)
