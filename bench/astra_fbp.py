#!/usr/bin/env python3
"""ASTRA's FBP_CUDA as a user with a stack of slices runs it, side by side
with our end to end (bench_fbp --e2e) and our slices.

    astra_fbp.py DUMP_DIR N ANGLES DUMPED_SLICES OUT_JSON [--slices 2048] [--runs 3]
                 [--ours-e2e-json FILE]

DUMP_DIR holds sino.raw (float32, slice x angle x bin, unfiltered, angles
uniform over 180 deg; DUMPED_SLICES of them) and ours.raw (our alu2 slices of
the same sinograms, ram-lak).

What is timed: ASTRA's fastest documented way for many slices. ASTRA has no
batched parallel-beam FBP (FBP_CUDA is 2D; its 3D GPU algorithms are FP3D,
BP3D, FDK, SIRT3D and CGLS3D, and FDK_CUDA takes cone and cone_vec geometries
only), so: the geometries, one 2D sinogram object, one volume object and one
FBP_CUDA algorithm are created once, then for every slice the sinogram is
stored (data2d.store), the algorithm run and the slice copied out of the
volume object (data2d.get_shared) into the user's output array. Each run
covers all SLICES slices and is timed whole, object creation included (the
loop alone is reported too); median of RUNS runs after a one-slice warm-up
(CUDA context, kernels), as our end to end excludes the context and a
16-slice warm-up.

Input: the SLICES sinograms a user would hold, one float32 numpy array in
pageable memory (slice x angle x bin, 32 GiB for 2048^3), built by tiling the
dumped sinograms (the times do not depend on the content; dumping 32 GiB
would cost the disk more than it tells). The output is one float32 array of
SLICES slices, allocated and touched before timing (as ours in bench_fbp).

Accuracy: ASTRA's first DUMPED_SLICES slices against ours over the inscribed
circle: relative RMS difference and the least-squares scale, the best of the
flips/transposes (orientation conventions differ).
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np
import astra


def gpu_name():
    try:
        out = subprocess.run(["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
                             capture_output=True, text=True, timeout=20)
        return out.stdout.strip().splitlines()[0] if out.returncode == 0 and out.stdout.strip() else None
    except (OSError, subprocess.SubprocessError):
        return None


def orientation_match(recs, ours, n):
    """Best of the flips/transposes of ASTRA's slices against ours."""
    yy, xx = np.mgrid[0:n, 0:n]
    mask = ((xx - (n - 1) / 2) ** 2 + (yy - (n - 1) / 2) ** 2) <= (0.45 * n) ** 2
    best = None
    for name, f in [("none", lambda r: r), ("flipud", np.flipud), ("fliplr", np.fliplr),
                    ("rot180", lambda r: r[::-1, ::-1]), ("T", lambda r: r.T),
                    ("T flipud", lambda r: np.flipud(r.T)), ("T fliplr", lambda r: np.fliplr(r.T)),
                    ("T rot180", lambda r: r.T[::-1, ::-1])]:
        aa = np.stack([f(r)[mask] for r in recs]).astype(np.float64)
        bb = np.stack([o[mask] for o in ours]).astype(np.float64)
        scale = float(np.sum(aa * bb) / np.sum(bb * bb))
        diff = float(np.sqrt(np.sum((aa / scale - bb) ** 2) / np.sum(bb ** 2)))
        raw = float(np.sqrt(np.sum((aa - bb) ** 2) / np.sum(bb ** 2)))
        if best is None or diff < best[1]:
            best = (name, diff, scale, raw)
    return best


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("n", type=int)
    ap.add_argument("angles", type=int)
    ap.add_argument("dumped", type=int, help="sinograms in sino.raw / slices in ours.raw")
    ap.add_argument("out")
    ap.add_argument("--slices", type=int, default=2048, help="slices per timed run (a user's stack)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--ours-e2e-json")
    a = ap.parse_args()
    n, na, k, ns = a.n, a.angles, a.dumped, a.slices
    sino = np.fromfile(f"{a.dump}/sino.raw", dtype=np.float32).reshape(k, na, n)
    ours = np.fromfile(f"{a.dump}/ours.raw", dtype=np.float32).reshape(k, n, n)

    t0 = time.perf_counter()
    stack = np.empty((ns, na, n), dtype=np.float32)  # the user's sinograms
    for s in range(0, ns, k):
        m = min(k, ns - s)
        stack[s:s + m] = sino[:m]
    out = np.empty((ns, n, n), dtype=np.float32)  # the user's slices
    out.fill(0)
    prep_s = time.perf_counter() - t0
    print(f"input: {ns} sinograms of {na} x {n} ({stack.nbytes / 2**30:.1f} GiB) tiled from {k} dumped, "
          f"output {out.nbytes / 2**30:.1f} GiB, prepared in {prep_s:.1f} s", flush=True)

    def reconstruct(count):
        """One user run over `count` slices: (total, set-up) seconds."""
        t_start = time.perf_counter()
        vol_geom = astra.create_vol_geom(n, n)
        proj_geom = astra.create_proj_geom("parallel", 1.0, n, np.arange(na) * np.pi / na)
        sid = astra.data2d.create("-sino", proj_geom)
        rid = astra.data2d.create("-vol", vol_geom)
        cfg = astra.astra_dict("FBP_CUDA")
        cfg["ProjectionDataId"] = sid
        cfg["ReconstructionDataId"] = rid
        cfg["FilterType"] = "ram-lak"
        alg = astra.algorithm.create(cfg)
        rec = astra.data2d.get_shared(rid)
        t_setup = time.perf_counter() - t_start
        for s in range(count):
            astra.data2d.store(sid, stack[s])
            astra.algorithm.run(alg)
            out[s] = rec
        total = time.perf_counter() - t_start
        del rec
        astra.algorithm.delete(alg)
        astra.data2d.delete([sid, rid])
        return total, t_setup

    reconstruct(1)  # warm-up
    gpu = gpu_name()
    result = {"gpu": gpu, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
              "revision": os.environ.get("CTR_GIT_REVISION", "unknown"),
              "command": "astra_fbp.py " + " ".join(sys.argv[1:]),
              "astra_version": astra.__version__, "cases": []}
    case = {"name": "astra-fbp-cuda", "method": "2D objects and FBP_CUDA created once; per slice "
            "data2d.store, algorithm.run, copy out of data2d.get_shared; whole run timed, creation "
            "included", "input_memory": "pageable (numpy)", "n": n, "angles": na, "slices": ns,
            "dumped_slices": k, "runs": [], "setup_runs": []}
    result["cases"].append(case)
    ours_e2e = json.load(open(a.ours_e2e_json)) if a.ours_e2e_json and os.path.exists(a.ours_e2e_json) else None
    if ours_e2e and not result["gpu"]:
        result["gpu"] = ours_e2e.get("gpu")

    def summarise():
        case["seconds"] = statistics.median(case["runs"])
        case["seconds_per_slice"] = case["seconds"] / ns
        case["setup_seconds"] = statistics.median(case["setup_runs"])
        if ours_e2e:
            for c in ours_e2e["cases"]:
                if c.get("slices") != ns or c.get("n") != n or c.get("angles") != na:
                    continue
                mem = c.get("memory", "pinned")
                case[f"ours_e2e_seconds_{mem}"] = c["seconds"]
                case[f"ours_e2e_runs_{mem}"] = c.get("runs")
                case[f"speedup_vs_ours_{mem}"] = case["seconds"] / c["seconds"]
            if "speedup_vs_ours_pageable" in case:
                case["speedup_headline"] = case["speedup_vs_ours_pageable"]
                case["headline"] = ("ASTRA user run (pageable numpy input) over ours end to end from "
                                    "pageable memory, both over the same number of slices, set-up included")
        json.dump(result, open(a.out, "w"), indent=1)

    for r in range(a.runs):
        total, setup = reconstruct(ns)
        case["runs"].append(total)
        case["setup_runs"].append(setup)
        summarise()  # a run cut short still leaves the runs so far
        print(f"ASTRA FBP_CUDA run {r + 1}/{a.runs}: {ns} slices in {total:.2f} s "
              f"({total / ns * 1e3:.2f} ms per slice; set-up {setup * 1e3:.1f} ms)", flush=True)

    best = orientation_match(out[:k], ours, n)
    case.update({"orientation": best[0], "relative_difference_after_scale": best[1],
                 "scale_astra_over_ours": best[2], "relative_difference": best[3]})
    summarise()
    print(f"ASTRA FBP_CUDA: {case['seconds']:.2f} s for {ns} slices of {n}^2 from {na} angles, median of "
          f"{a.runs} ({case['seconds_per_slice'] * 1e3:.2f} ms per slice); difference to ours {best[3]:.2e} "
          f"({best[1]:.2e} after the scale {best[2]:.6f}, orientation {best[0]})")
    for mem in ("pageable", "pinned"):
        if f"ours_e2e_seconds_{mem}" in case:
            print(f"ours end to end from {mem} memory (uint16 projections, flat-field, filter, transfers): "
                  f"{case[f'ours_e2e_seconds_{mem}']:.2f} s: ASTRA / ours = {case[f'speedup_vs_ours_{mem}']:.1f}x")


if __name__ == "__main__":
    main()
