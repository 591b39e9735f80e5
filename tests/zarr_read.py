"""Reads ctrecon's OME-Zarr outputs with zarr-python (tests/zarr_python.sh).

Usage: python3 zarr_read.py OUT.zarr RAW DTYPE [OUT.zarr RAW DTYPE ...]
For each: the OME-NGFF 0.5 metadata (axes z, y, x in millimetres, one dataset
per level with its scale), level "0" equal voxel for voxel to the raw output
RAW (DTYPE, the same shape), and every further level the 2x2x2 mean of the
level before (fewer voxels at an odd edge) computed here in float64 and
stored as the dtype stores it (uint16: rounded half up); where tensorstore
is importable, its reading of level 0 too. Exit 0 when all hold; prints what
differs otherwise."""
import sys

import numpy as np
import zarr

try:  # optional: a second reader
    import tensorstore
except ImportError:
    tensorstore = None


def mean2(a):
    """2x2x2 mean in float64, edges padded out of the sum and the count."""
    n = [(s + 1) // 2 for s in a.shape]
    pad = [(0, 2 * m - s) for m, s in zip(n, a.shape)]
    val = np.pad(a.astype(np.float64), pad)
    cnt = np.pad(np.ones(a.shape), pad)
    s = val.reshape(n[0], 2, n[1], 2, n[2], 2).sum(axis=(1, 3, 5))
    c = cnt.reshape(n[0], 2, n[1], 2, n[2], 2).sum(axis=(1, 3, 5))
    return s / c


def check(path, raw, dtype):
    errors = []
    g = zarr.open_group(path, mode="r")
    ome = g.attrs["ome"]
    ms = ome["multiscales"][0]
    if ome["version"] != "0.5":
        errors.append("version %r" % ome["version"])
    if [a["name"] for a in ms["axes"]] != ["z", "y", "x"] or any(
            a["type"] != "space" or a["unit"] != "millimeter" for a in ms["axes"]):
        errors.append("axes %r" % ms["axes"])
    levels = [d["path"] for d in ms["datasets"]]
    if levels != [str(i) for i in range(len(levels))]:
        errors.append("datasets %r" % levels)
    a0 = g["0"][...]
    want = np.fromfile(raw, dtype=dtype)
    if a0.dtype != np.dtype(dtype) or a0.size != want.size:
        errors.append("level 0 is %s %r, %s holds %d %s" % (a0.dtype, a0.shape, raw, want.size, dtype))
    elif not np.array_equal(a0.reshape(-1), want, equal_nan=dtype == "float32"):
        errors.append("level 0 differs from %s in %d voxels" % (raw, int((a0.reshape(-1) != want).sum())))
    prev = a0
    s0 = ms["datasets"][0]["coordinateTransformations"][0]["scale"]
    for i in range(1, len(levels)):
        cur = g[str(i)][...]
        m = mean2(prev)
        m = np.floor(m + 0.5).astype(np.uint16) if dtype == "uint16" else m.astype(np.float32)
        if cur.shape != m.shape or not np.array_equal(cur, m):
            errors.append("level %d is not the 2x2x2 mean of level %d" % (i, i - 1))
        scale = ms["datasets"][i]["coordinateTransformations"][0]["scale"]
        if scale != [v * 2 ** i for v in s0]:
            errors.append("level %d's scale %r" % (i, scale))
        prev = cur
    if tensorstore is not None:
        spec = {"driver": "zarr3", "kvstore": {"driver": "file", "path": path + "/0"}}
        t = tensorstore.open(spec).result().read().result()
        if not np.array_equal(t, a0, equal_nan=dtype == "float32"):
            errors.append("tensorstore reads another level 0")
        else:
            print("ok   - tensorstore reads %s's level 0 as zarr-python does" % path)
    for e in errors:
        print("%s: %s" % (path, e))
    if not errors:
        print("ok   - zarr-python reads %s: %d level(s), %s %r, every voxel of level 0 as %s"
              % (path, len(levels), a0.dtype, a0.shape, raw))
    return not errors


def main():
    args = sys.argv[1:]
    good = all([check(*args[i:i + 3]) for i in range(0, len(args), 3)])
    sys.exit(0 if good else 1)


if __name__ == "__main__":
    main()
