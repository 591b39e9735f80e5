#!/usr/bin/env python3
"""ASTRA's FP3D_CUDA, SIRT3D_CUDA and CGLS3D_CUDA on the data bench_iterative
dumped (case A: 512^3 from 496 views of 1248 x 960), side by side with ours.

    astra_iterative.py DUMP_DIR OUT_JSON [--repeats R] [--iterations K] [--ours-json FILE]

DUMP_DIR holds vol.raw (float32, z y x: the voxelised head), proj.raw (float32,
view row column: our forward projection of it) and geometry.json (ctrecon
circular geometry). Reports:
 - FP3D_CUDA: seconds of astra.algorithm.run (host volume -> host projections),
   median of R after a warm-up, and the relative difference of its projections
   from ours (the same line integrals up to interpolation: a check that both
   sides project the same data the same way);
 - SIRT3D_CUDA and CGLS3D_CUDA: seconds per iteration, (t(1 + K) - t(1)) / K
   over runs of 1 and 1 + K iterations from zero (ASTRA keeps its data on the
   GPU during a run), medians of R;
and, with --ours-json (bench_iterative's JSON), our figures and the speedups.
"""
import argparse
import json
import statistics
import time

import numpy as np
import astra

from astra_compare import astra_geometries


def timed(fn, repeats):
    fn()  # warm-up
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        times.append(time.perf_counter() - t0)
    return statistics.median(times), times


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("out")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--iterations", type=int, default=3)
    ap.add_argument("--ours-json", default=None)
    args = ap.parse_args()

    g = json.load(open(f"{args.dump}/geometry.json"))
    proj_geom, vol_geom, nu, nv, n, nx, ny, nz = astra_geometries(g)
    vol = np.fromfile(f"{args.dump}/vol.raw", dtype=np.float32).reshape(nz, ny, nx)
    ours = np.fromfile(f"{args.dump}/proj.raw", dtype=np.float32).reshape(n, nv, nu)

    result = {"name": "A/astra", "astra_version": astra.__version__, "volume": nx, "views": n,
              "detector": [nu, nv]}

    # Forward projection of the same volume.
    vid = astra.data3d.create("-vol", vol_geom, vol)
    pid = astra.data3d.create("-proj3d", proj_geom, 0)
    cfg = astra.astra_dict("FP3D_CUDA")
    cfg["VolumeDataId"] = vid
    cfg["ProjectionDataId"] = pid
    fp = astra.algorithm.create(cfg)
    s, runs = timed(lambda: astra.algorithm.run(fp), args.repeats)
    theirs = astra.data3d.get(pid).transpose(1, 0, 2).astype(np.float64)  # ASTRA: row, view, column

    def compare(o):
        o = o.astype(np.float64)
        return (float(np.sqrt(np.sum((theirs - o) ** 2) / np.sum(o ** 2))),
                float(np.sum(theirs * o) / np.sum(o ** 2)))

    diff, scale = compare(ours)
    flips = [False, False]
    if diff > 0.05:  # conventions differ? the detector flips, checked rather than assumed
        for fv in (False, True):
            for fu in (False, True):
                d, sc = compare(ours[:, ::-1 if fv else 1, ::-1 if fu else 1])
                if d < diff:
                    diff, scale, flips = d, sc, [fv, fu]
    result["fp_flips_vu"] = flips
    result["fp3d_seconds"] = s
    result["fp3d_runs"] = runs
    result["fp3d_gups"] = n * nx * ny * nz / s / 1e9
    result["fp_relative_difference"] = diff
    result["fp_scale_astra_over_ours"] = scale
    print(f"FP3D_CUDA: {s:.4f} s ({result['fp3d_gups']:.1f} GUPS); relative difference from ours "
          f"{diff:.4f}, scale {scale:.4f}")
    astra.algorithm.delete(fp)
    astra.data3d.delete(vid)

    # SIRT and CGLS on our projections (in ASTRA's layout).
    astra.data3d.store(pid, ours.transpose(1, 0, 2))
    rid = astra.data3d.create("-vol", vol_geom, 0)
    for name in ("SIRT3D_CUDA", "CGLS3D_CUDA"):
        cfg = astra.astra_dict(name)
        cfg["ReconstructionDataId"] = rid
        cfg["ProjectionDataId"] = pid
        alg = astra.algorithm.create(cfg)

        def run(k):
            astra.data3d.store(rid, 0)
            astra.algorithm.run(alg, k)

        t1, _ = timed(lambda: run(1), args.repeats)
        tk, _ = timed(lambda: run(1 + args.iterations), args.repeats)
        per = (tk - t1) / args.iterations
        key = name.split("3D")[0].lower()
        result[f"{key}_seconds_per_iteration"] = per
        result[f"{key}_seconds_one_iteration_call"] = t1
        print(f"{name}: {per:.4f} s per iteration ({t1:.3f} s for a call of one iteration)")
        astra.algorithm.delete(alg)
    astra.data3d.delete([pid, rid])

    if args.ours_json:
        ours_j = json.load(open(args.ours_json))
        result["gpu"], result["revision"], result["date"] = ours_j["gpu"], ours_j["revision"], ours_j["date"]
        for c in ours_j["cases"]:
            nm = c["name"]
            if nm == "A/forward":
                result["ours_forward_seconds"] = c["seconds"]
                result["speedup_forward"] = result["fp3d_seconds"] / c["seconds"]
            if nm == "A/forward-host":
                result["ours_forward_host_seconds"] = c["seconds"]
                result["speedup_forward_host"] = result["fp3d_seconds"] / c["seconds"]
            for alg in ("sirt", "cgls"):
                for pair in ("matched", "fast"):
                    if nm == f"A/{alg}/{pair}/4-iterations":
                        result[f"ours_{alg}_{pair}_seconds_per_iteration"] = c["seconds_per_iteration"]
                        result[f"speedup_{alg}_{pair}"] = (result[f"{alg}_seconds_per_iteration"] /
                                                          c["seconds_per_iteration"])
    json.dump(result, open(args.out, "w"), indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
