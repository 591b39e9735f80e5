#!/usr/bin/env python3
"""ASTRA's FDK_CUDA on the projections and geometry dumped by bench_fdk_cuda,
side by side with our volumes.

    astra_compare.py DUMP_DIR CASE_NAME OUT_JSON [--repeats R] [--ours-json FILE]

DUMP_DIR holds proj.raw (float32, view x row x column), geometry.json (ctrecon
circular geometry) and ours_exact.raw / ours_texture.raw (float32 volumes).
Times astra.algorithm.run (host projections -> host volume, ASTRA's own
end-to-end), median of R runs after a warm-up, and reports the relative
difference of the volumes over the inscribed cylinder and central 80 % of
slices, plus the least-squares scale between them. The orientation match is
checked, not assumed: the best of the axis flips is reported.
"""
import argparse
import json
import math
import statistics
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
    sino = np.ascontiguousarray(proj.transpose(1, 0, 2))  # ASTRA: row, angle, column
    del proj

    pid = astra.data3d.create("-proj3d", proj_geom, sino)
    rid = astra.data3d.create("-vol", vol_geom, 0)
    cfg = astra.astra_dict("FDK_CUDA")
    cfg["ProjectionDataId"] = pid
    cfg["ReconstructionDataId"] = rid
    alg = astra.algorithm.create(cfg)
    times = []
    for r in range(args.repeats + 1):
        astra.data3d.store(rid, 0)
        t0 = time.perf_counter()
        astra.algorithm.run(alg)
        dt = time.perf_counter() - t0
        if r > 0:
            times.append(dt)
    rec = astra.data3d.get(rid)  # z, y, x
    astra_s = statistics.median(times)

    result = {"name": f"{args.case}/astra/FDK_CUDA", "astra_seconds": astra_s,
              "gpu": None, "revision": None,
              "astra_runs": times, "astra_version": astra.__version__}
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
        result[f"relative_difference_{mode}"] = best[0]
        result[f"scale_ours_over_astra_{mode}"] = best[1]
        result[f"orientation_flips_zyx_{mode}"] = list(best[2])
    if args.ours_json:
        ours = json.load(open(args.ours_json))
        result["gpu"], result["revision"], result["date"] = ours["gpu"], ours["revision"], ours["date"]
        for c in ours["cases"]:
            if "/end-to-end/" in c["name"]:
                key = c["name"].split("/end-to-end/")[1]  # variant/pipeline
                result[f"ours_seconds_{key}"] = c["seconds"]
                result[f"speedup_{key}"] = astra_s / c["seconds"]
    json.dump(result, open(args.out, "w"), indent=2)
    print(json.dumps(result, indent=2))
    astra.algorithm.delete(alg)
    astra.data3d.delete([pid, rid])


if __name__ == "__main__":
    main()
