"""The Python binding's overhead on FDK at 512^3 (the C benchmark's case A:
496 views of 1248 x 960, bench/bench_fdk_cuda.c), on a GPU machine.

    python python/bench/binding_overhead.py [--repeats 7] [--c-bench build/bench/bench_fdk_cuda]

For each repeat it times pyctrecon.fdk(...) from numpy (pageable) arrays in
Python (perf_counter around the call) and reads the library's own wall time
of the same call (ctr_fdk_stream_report.timings.total, set-up included): the
difference is what the binding adds (argument checks, struct set-up, the
GIL release, the progress callbacks). With --c-bench it also runs the C
benchmark and prints its end-to-end pageable figure (texture), the same
pipeline called from C: both sides use texture interpolation (the C line's),
so the two figures compare like for like. Prints JSON."""
import argparse
import json
import subprocess
import sys
import time

import numpy as np

import pyctrecon


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=7)
    ap.add_argument("--c-bench", default=None)
    ap.add_argument("--size", type=int, default=512)
    a = ap.parse_args()
    ctx = pyctrecon.Context("cuda")
    n = a.size
    g = pyctrecon.ConeGeometry.circular(sid=750.0, sdd=1200.0, nu=1248 * n // 512,
                                        nv=960 * n // 512,
                                        du=0.55 * 512 / n, dv=0.55 * 512 / n, nviews=496,
                                        volume=pyctrecon.Volume.cube(n, 0.5 * 512 / n))
    proj = pyctrecon.Phantom.shepp_logan(0.95 * n * 0.5 * 512 / n / 2).project(g, ctx=ctx,
                                                                              progress=False)
    vol = np.zeros(g.volume_shape, np.float32)
    pyctrecon.fdk(proj, g, out=vol, ctx=ctx, progress=False, interp="texture")  # warm-up
    rows = []
    for _ in range(a.repeats):
        t0 = time.perf_counter()
        _, rep = pyctrecon.fdk(proj, g, out=vol, ctx=ctx, progress=False, interp="texture",
                               return_report=True)
        wall = time.perf_counter() - t0
        rows.append((wall, rep["timings"]["total"]))
    walls = sorted(w for w, _ in rows)
    overheads = sorted(w - t for w, t in rows)
    med = walls[len(walls) // 2]
    out = {"size": n, "repeats": a.repeats, "python_wall_median_s": med,
           "binding_overhead_median_s": overheads[len(overheads) // 2],
           "binding_overhead_fraction": overheads[len(overheads) // 2] / med,
           "device": pyctrecon.cuda_device_info(ctx.devices[0])["name"]}
    if a.c_bench:
        r = subprocess.run([a.c_bench, "--case", "A", "--variants", "none", "--repeats",
                            str(a.repeats)], capture_output=True, text=True, check=True)
        for line in r.stdout.splitlines():
            if "end to end texture" in line and "pageable" in line:
                c_ms = float(line.split(":")[1].split("ms")[0])
                out["c_end_to_end_pageable_s"] = c_ms / 1e3
                out["python_vs_c_fraction"] = med / (c_ms / 1e3) - 1.0
    json.dump(out, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
