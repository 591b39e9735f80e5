#!/usr/bin/env python3
"""ASTRA's FBP_CUDA on the sinograms dumped by bench_fbp --dump, side by side
with our slices.

    astra_fbp.py DUMP_DIR N ANGLES SLICES OUT_JSON [--repeats R] [--ours-e2e-json FILE]

DUMP_DIR holds sino.raw (float32, slice x angle x bin, unfiltered, angles
uniform over 180 deg) and ours.raw (our alu2 slices, ram-lak). Times ASTRA
host to host per slice (data create, FBP_CUDA run, result read), median over
the slices after a warm-up, and compares its slices with ours over the
inscribed circle: relative RMS difference and the least-squares scale, the
best of the flips/transposes (orientation conventions differ).
"""
import argparse
import json
import statistics
import time

import numpy as np
import astra


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dump")
    ap.add_argument("n", type=int)
    ap.add_argument("angles", type=int)
    ap.add_argument("slices", type=int)
    ap.add_argument("out")
    ap.add_argument("--ours-e2e-json")
    a = ap.parse_args()
    n, na, ns = a.n, a.angles, a.slices
    sino = np.fromfile(f"{a.dump}/sino.raw", dtype=np.float32).reshape(ns, na, n)
    ours = np.fromfile(f"{a.dump}/ours.raw", dtype=np.float32).reshape(ns, n, n)
    vol_geom = astra.create_vol_geom(n, n)
    theta = np.arange(na) * np.pi / na
    proj_geom = astra.create_proj_geom("parallel", 1.0, n, theta)
    times, recs = [], []
    for s in range(-1, ns):  # -1 warms up
        src = sino[max(s, 0)]
        t0 = time.perf_counter()
        sid = astra.data2d.create("-sino", proj_geom, src)
        rid = astra.data2d.create("-vol", vol_geom)
        cfg = astra.astra_dict("FBP_CUDA")
        cfg["ProjectionDataId"] = sid
        cfg["ReconstructionDataId"] = rid
        cfg["option"] = {"FilterType": "ram-lak"}
        alg = astra.algorithm.create(cfg)
        astra.algorithm.run(alg)
        rec = astra.data2d.get(rid)
        t1 = time.perf_counter()
        astra.algorithm.delete(alg)
        astra.data2d.delete([sid, rid])
        if s >= 0:
            times.append(t1 - t0)
            recs.append(rec)
    astra_s = statistics.median(times)
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
    case = {"name": "astra-fbp-cuda", "astra_seconds_per_slice": astra_s, "n": n, "angles": na,
            "slices": ns, "orientation": best[0], "relative_difference_after_scale": best[1],
            "scale_astra_over_ours": best[2], "relative_difference": best[3]}
    print(f"ASTRA FBP_CUDA: {astra_s * 1e3:.2f} ms per {n}^2 slice from {na} angles (host to host, "
          f"median of {ns}); difference to ours {best[3]:.2e} ({best[1]:.2e} after the scale "
          f"{best[2]:.6f}, orientation {best[0]})")
    if a.ours_e2e_json:
        e = json.load(open(a.ours_e2e_json))["cases"][0]
        per = e["seconds"] / e["slices"]
        case["ours_e2e_seconds_per_slice"] = per
        case["speedup"] = astra_s / per
        print(f"ours end to end (uint16 projections, flat-field, filter, transfers): {per * 1e3:.2f} ms "
              f"per slice: {astra_s / per:.1f}x ASTRA")
    json.dump({"gpu": "see fbp_kernels.json", "command": "astra_fbp.py", "cases": [case]},
              open(a.out, "w"), indent=1)


if __name__ == "__main__":
    main()
