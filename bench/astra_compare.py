#!/usr/bin/env python3
"""ASTRA's FDK_CUDA on the projections and geometry dumped by bench_fdk_cuda,
side by side with our volumes.

    astra_compare.py DUMP_DIR CASE_NAME OUT_JSON [--repeats R] [--ours-json FILE]

DUMP_DIR holds proj.raw (float32, view x row x column), geometry.json (ctrecon
circular geometry) and ours_exact.raw / ours_texture.raw (float32 volumes).
ASTRA is timed three ways, median of R runs each after a warm-up:
  run          astra.algorithm.run alone (objects made beforehand; host
               projections -> host volume, ASTRA's own pipeline);
  user-create  as a user runs it end to end from numpy arrays: geometries,
               data3d.create of the projections (a copy) and of the volume,
               algorithm.create, run, data3d.get of the volume;
  user-link    the same with data3d.link of the user's projection and volume
               arrays (no copies; the volume array is allocated and touched
               beforehand, as ours).
The projections are given to ASTRA in its layout (row, angle, column): the
transposition from the detector's view order is not timed (reported apart).
"ASTRA user end to end" is the faster of user-create and user-link; the
headline ratio is that over our pageable texture end to end (bench_fdk_cuda:
malloc'd projections and volume, set-up included). Also reports the relative
difference of the volumes over the inscribed cylinder and central 80 % of
slices, and the least-squares scale between them; the orientation match is
checked, not assumed (the best of the axis flips is reported).
"""
import argparse
import json
import math
import os
import statistics
import sys
import time

import numpy as np
import astra


def astra_vectors(g):
    det = g["detector"]
    ang = g["angles"]
    n = ang["count"]
    direction = -1.0 if ang.get("direction", "ccw") == "cw" else 1.0
    sid, sdd = g["sid"], g["sdd"]
    du, dv = det["du"], det["dv"]
    ou, ov = det.get("offset_u", 0.0), det.get("offset_v", 0.0)
    vec = np.zeros((n, 12))
    for i in range(n):
        t = math.radians(ang["start_deg"] + direction * i * ang["range_deg"] / n)
        e = np.array([math.cos(t), math.sin(t), 0.0])
        u = np.array([-math.sin(t), math.cos(t), 0.0])
        v = np.array([0.0, 0.0, 1.0])
        src = sid * e
        centre = src - sdd * e + ou * u + ov * v  # pixel ((nu-1)/2, (nv-1)/2)
        vec[i] = np.concatenate([src, centre, du * u, dv * v])
    return vec


def astra_geometries(g):
    """ASTRA's projection and volume geometries of a ctrecon circular geometry
    (as loaded from geometry.json), and the sizes: (proj_geom, vol_geom, nu,
    nv, views, nx, ny, nz)."""
    nu, nv = g["detector"]["nu"], g["detector"]["nv"]
    n = g["angles"]["count"]
    nx, ny, nz = g["volume"]["size"]
    vx, vy, vz = g["volume"]["voxel_mm"]
    proj_geom = astra.create_proj_geom("cone_vec", nv, nu, astra_vectors(g))
    vol_geom = astra.create_vol_geom(ny, nx, nz, -nx * vx / 2, nx * vx / 2, -ny * vy / 2,
                                     ny * vy / 2, -nz * vz / 2, nz * vz / 2)
    return proj_geom, vol_geom, nu, nv, n, nx, ny, nz


def compare(a, b, nz):
    """Relative RMS difference of a against b over the inscribed cylinder and
    the central 80 % of slices, and the least-squares scale a ~ s b."""
    z0, z1 = nz // 10, nz - nz // 10
    ny, nx = a.shape[1], a.shape[2]
    yy, xx = np.mgrid[0:ny, 0:nx]
    mask = ((xx - (nx - 1) / 2) ** 2 + (yy - (ny - 1) / 2) ** 2) <= (0.5 * min(nx, ny)) ** 2
    aa = a[z0:z1][:, mask].astype(np.float64)
    bb = b[z0:z1][:, mask].astype(np.float64)
    diff = np.sqrt(np.sum((aa - bb) ** 2) / np.sum(bb ** 2))
    scale = float(np.sum(aa * bb) / np.sum(bb * bb))
    return float(diff), scale


def timed(fn, repeats):
    """fn() once untimed, then `repeats` timed calls: (median, runs)."""
    fn()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("case")
    ap.add_argument("out")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--ours-json", default=None)
    args = ap.parse_args()

    g = json.load(open(f"{args.dump}/geometry.json"))
    proj_geom, vol_geom, nu, nv, n, nx, ny, nz = astra_geometries(g)
    proj = np.fromfile(f"{args.dump}/proj.raw", dtype=np.float32).reshape(n, nv, nu)
    t0 = time.perf_counter()
    sino = np.ascontiguousarray(proj.transpose(1, 0, 2))  # ASTRA: row, angle, column
    transpose_s = time.perf_counter() - t0
    del proj

    def geometries():
        pg, vg = astra_geometries(g)[:2]
        return pg, vg

    def fdk(pid, rid):
        cfg = astra.astra_dict("FDK_CUDA")
        cfg["ProjectionDataId"] = pid
        cfg["ReconstructionDataId"] = rid
        return astra.algorithm.create(cfg)

    # 1. algorithm.run alone.
    pid = astra.data3d.create("-proj3d", proj_geom, sino)
    rid = astra.data3d.create("-vol", vol_geom, 0)
    alg = fdk(pid, rid)

    def run_only():
        astra.data3d.store(rid, 0)
        t = time.perf_counter()
        astra.algorithm.run(alg)
        return time.perf_counter() - t

    run_only()  # warm-up
    run_times = [run_only() for _ in range(args.repeats)]
    rec = astra.data3d.get(rid)  # z, y, x
    astra.algorithm.delete(alg)
    astra.data3d.delete([pid, rid])

    # 2. A user's end to end from numpy arrays, objects created and read back.
    def user_create():
        pg, vg = geometries()
        p = astra.data3d.create("-proj3d", pg, sino)
        r = astra.data3d.create("-vol", vg)
        a = fdk(p, r)
        astra.algorithm.run(a)
        out = astra.data3d.get(r)
        astra.algorithm.delete(a)
        astra.data3d.delete([p, r])
        return out

    create_s, create_runs = timed(user_create, args.repeats)

    # 3. The same with the user's arrays linked (no copies).
    vol = np.zeros((nz, ny, nx), dtype=np.float32)
    vol.fill(0)

    def user_link():
        pg, vg = geometries()
        p = astra.data3d.link("-proj3d", pg, sino)
        r = astra.data3d.link("-vol", vg, vol)
        a = fdk(p, r)
        astra.algorithm.run(a)
        astra.algorithm.delete(a)
        astra.data3d.delete([p, r])
        return vol

    try:
        link_s, link_runs = timed(user_link, args.repeats)
        link_error = None
    except Exception as e:  # an ASTRA without link for this data: reported, not fatal
        link_s, link_runs, link_error = None, [], repr(e)

    cases = [
        {"name": f"{args.case}/astra/FDK_CUDA/run", "seconds": statistics.median(run_times),
         "runs": run_times, "what": "astra.algorithm.run alone"},
        {"name": f"{args.case}/astra/FDK_CUDA/user-create", "seconds": create_s, "runs": create_runs,
         "what": "geometries, data3d.create (projections copied), algorithm.create, run, data3d.get"},
        {"name": f"{args.case}/astra/FDK_CUDA/user-link", "seconds": link_s, "runs": link_runs,
         "what": "geometries, data3d.link of the user's arrays, algorithm.create, run",
         "error": link_error},
    ]
    user = min((c for c in cases[1:] if c["seconds"] is not None), key=lambda c: c["seconds"])
    comparison = {"name": f"{args.case}/comparison", "astra_version": astra.__version__,
                  "astra_run_seconds": cases[0]["seconds"],
                  "astra_user_e2e_seconds": user["seconds"],
                  "astra_user_e2e_variant": user["name"].rsplit("/", 1)[1],
                  "astra_transpose_seconds_untimed": transpose_s}
    for mode in ("exact", "texture"):
        ours = np.fromfile(f"{args.dump}/ours_{mode}.raw", dtype=np.float32).reshape(nz, ny, nx)
        d, sc = compare(ours, rec, nz)
        best = (d, sc, (False, False, False))
        if d > 1e-2:  # conventions differ? try the axis flips
            for fz in (False, True):
                for fy in (False, True):
                    for fx in (False, True):
                        r = rec[::-1 if fz else 1, ::-1 if fy else 1, ::-1 if fx else 1]
                        d, sc = compare(ours, r, nz)
                        if d < best[0]:
                            best = (d, sc, (fz, fy, fx))
        comparison[f"relative_difference_{mode}"] = best[0]
        comparison[f"scale_ours_over_astra_{mode}"] = best[1]
        comparison[f"orientation_flips_zyx_{mode}"] = list(best[2])
    result = {"gpu": None, "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "revision": os.environ.get("CTR_GIT_REVISION", "unknown"),
              "command": "astra_compare.py " + " ".join(sys.argv[1:]),
              "cases": cases + [comparison]}
    if args.ours_json:
        ours = json.load(open(args.ours_json))
        result["gpu"], result["revision"], result["date"] = ours["gpu"], ours["revision"], ours["date"]
        for c in ours["cases"]:
            if "/end-to-end/" in c["name"]:
                key = c["name"].split("/end-to-end/")[1].replace("/", "_")  # interp_memory
                comparison[f"ours_seconds_{key}"] = c["seconds"]
                comparison[f"speedup_vs_astra_run_{key}"] = cases[0]["seconds"] / c["seconds"]
                comparison[f"speedup_vs_astra_user_{key}"] = user["seconds"] / c["seconds"]
        if "ours_seconds_texture_pageable" in comparison:
            comparison["speedup_headline"] = comparison["speedup_vs_astra_user_texture_pageable"]
            comparison["headline"] = ("ASTRA user end to end (faster of user-create and user-link) over "
                                      "ours texture end to end from pageable memory, set-up included")
    json.dump(result, open(args.out, "w"), indent=2)
    print(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
