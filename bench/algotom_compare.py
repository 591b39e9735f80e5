#!/usr/bin/env python3
"""ctrecon's rotation-centre finding and stripe (ring) removal against algotom's
(Vo et al. 2014, 2018; Muench et al. 2009, as algotom implements them), on the
CPU, on identical sinograms. docs/synchrotron.md ("Against algotom (CPU)") and
bench/NOTES.md give the results and what they mean.

    python3 -m venv /tmp/algotom-venv
    /tmp/algotom-venv/bin/pip install 'algotom>=1.7,<1.8'
    /tmp/algotom-venv/bin/pip install . --config-settings=cmake.define.CTRECON_CUDA=off
    /tmp/algotom-venv/bin/python bench/algotom_compare.py [--out JSON] [--quick]

Without algotom installed the script says so and exits 0 (nothing measured).
Default output: bench/results/<date>-vm2-algotom-<short rev>.json. About 5
minutes on 2 cores (algotom's find_center_vo takes most of it); --quick runs
one case of each kind.

Data: exact parallel-beam line integrals of the 3D modified Shepp-Logan head
through its plane z = 0 (pyctrecon.Phantom.sinogram), 900 angles over [0, 180)
x 1280 bins, scaled to a largest line integral of 1.5; "noisy": Poisson
counts of 5000 photons per bin before attenuation, -log (seeded).

1. Centre, 180 degrees: axis (nbins - 1) / 2 + {-20.3, 0, 7.5, 33.25} bins,
   clean and noisy. Ours: pyctrecon.center_find method "vo" with 1 and 2
   threads, its default range (the middle half of the detector) and algotom's
   default range. algotom: find_center_vo with its defaults (range width/2 +-
   width/16, step 0.25, ratio 0.5, dsp, ncore = cpu_count - 1), and with the
   range set to ours. Both take the axis as a bin index, (ncol - 1) / 2 the
   middle. Ours: median of 3 timed runs after one untimed run; algotom: one run
   per sinogram (about 5-16 s each here; its summary time is the median over
   the sinograms of the same size), ncore = 2 on two sinograms.
2. Centre, 360 degrees with the axis near the detector's edge (half
   acquisition, 1800 angles over [0, 360)): ours "correlation" against
   algotom's find_center_360 (win_width 100: it has no default; side None,
   its automatic choice, and side 1, told the overlap is on the right).
3. Stripes: three patterns added to the clean sinogram of axis centre + 7.5
   (full-length offsets of 0.01-0.04 on 20 columns; offsets over 20-60 % of
   the angles on 20 columns; 6 groups of 2-6 adjacent columns). Ours:
   "sorting" (size 21) and "wavelet" (its defaults, and algotom's defaults
   mapped); algotom:
   remove_stripe_based_sorting (size 21, dim 1), remove_stripe_based_wavelet_fft
   (its defaults, and ours mapped) and remove_stripe_based_fft (its defaults).
   Every sinogram is reconstructed by the same ctrecon FBP (CPU, ram-lak, true
   axis); RMSE over the whole slice against the clean sinogram's slice, and
   the same correction applied to the clean sinogram (what it damages), and
   the corrected striped slice against the corrected clean one (the stripes
   it leaves).
   Times: median of 3 after one untimed run; ours with 1 and 2 threads.
   Two diagnostic rows (marked so in the JSON, not a way algotom is used):
   remove_stripe_based_wavelet_fft with its damping window's zero moved onto
   the band's DC (algotom's window puts it one index off DC where a band's
   height is even; the patch replaces util.make_2d_damping_window for the
   call only).

Parameter mapping of the wavelet filter: the level and the Daubechies order
are the same numbers (stripe_level = level, stripe_wavelet N = 'dbN'). Both
damp each level's vertical-detail band along the angles by
1 - exp(-k^2 / (2 s^2)), k the band's angular Fourier index; ours transforms
the angles mirror-extended to N0 = 2 nangles (rounded up to a multiple of
2^level), algotom pads them by `pad` = min(150, int(0.1 min(nangles, nbins)))
on each side, so the same physical notch is stripe_sigma = size * N0 /
(nangles + 2 pad) (pywt's boundary extension makes algotom's bands slightly
longer still at deep levels).
"""
import argparse
import datetime
import importlib.metadata as md
import json
import os
import platform
import statistics
import subprocess
import sys
import time
import warnings

try:
    import algotom.prep.calculation as acalc
    import algotom.prep.removal as arem
    import algotom.util.utility as autil
except ImportError as e:
    print(f"algotom_compare: algotom is not installed ({e}; pip install 'algotom>=1.7,<1.8'):"
          " skipped")
    sys.exit(0)
import numpy as np

import pyctrecon

NB, NA = 1280, 900
OFFSETS = [-20.3, 0.0, 7.5, 33.25]
I0 = 5000.0
PEAK = 1.5


def version(pkg):
    try:
        return md.version(pkg)
    except md.PackageNotFoundError:
        return None


def timed(fn, repeats, warm=True):
    """(median seconds, runs, last result)."""
    if warm:
        fn()
    runs, res = [], None
    for _ in range(repeats):
        t0 = time.perf_counter()
        res = fn()
        runs.append(time.perf_counter() - t0)
    return statistics.median(runs), runs, res


def noisy(sino, rng):
    counts = rng.poisson(I0 * np.exp(-sino.astype(np.float64)))
    return (-np.log(np.maximum(counts, 1) / I0)).astype(np.float32)


def phantom_sinogram(nb, angles, axis, extent):
    """The head's z = 0 sinogram (1, nangles, nb), its outline reaching
    `extent` bins from the axis, largest value PEAK; and the geometry."""
    g = pyctrecon.ParallelGeometry(nb, angles=angles, axis=axis)
    ph = pyctrecon.Phantom.shepp_logan(extent / 0.92, 1.0)  # outer semi-axis 0.92 of radius
    s = ph.sinogram(g, [0.0])
    s *= PEAK / s.max()
    return s, g


def machine():
    cpu = "?"
    try:
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    info = {"host": platform.node(), "cpu": cpu, "cores": os.cpu_count(),
            "python": platform.python_version(), "platform": platform.platform(),
            "loadavg_start": os.getloadavg()}
    try:
        import threadpoolctl
        info["threadpools"] = [{k: p.get(k) for k in ("user_api", "internal_api", "num_threads",
                                                       "version")}
                               for p in threadpoolctl.threadpool_info()]
    except ImportError:
        info["threadpools"] = "threadpoolctl not installed"
    info["thread_env"] = {k: os.environ.get(k) for k in
                          ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS",
                           "NUMBA_NUM_THREADS")}
    return info


def rev():
    try:
        here = os.path.dirname(os.path.abspath(__file__))
        r = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=here,
                           capture_output=True, text=True, check=True).stdout.strip()
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=here, capture_output=True, text=True).stdout.strip()
        return r, bool(dirty)
    except (OSError, subprocess.CalledProcessError):
        return "unknown", False


# ---------------------------------------------------------------------------
# 1, 2: centre
# ---------------------------------------------------------------------------

def log_runs(log, case, head, what):
    for r in case["runs"]:
        log(f"  centre {head} {'noisy' if case['noise'] else 'clean'} {r['tool']:8s} {what(r)}"
            f" err {r['error']:+10.3f}  {r['seconds_median']:.3f} s")


def centre_180(ctxs, rng, quick, log):
    angles = np.linspace(0.0, 180.0, NA, endpoint=False)
    mid = (NB - 1) / 2.0
    ours_range = (0.25 * (NB - 1), 0.75 * (NB - 1))          # ours' VO default
    alg_range = (NB // 2 - NB // 16, NB // 2 + NB // 16)      # algotom's default
    cases = []
    offsets = [7.5] if quick else OFFSETS
    for noise in ([True] if quick else [False, True]):
        for off in offsets:
            truth = mid + off
            s, g = phantom_sinogram(NB, angles, truth, 0.37 * NB)
            if noise:
                s = noisy(s, rng)
            case = {"nbins": NB, "nangles": NA, "range_deg": 180, "truth": truth,
                    "offset": off, "noise": f"poisson I0={I0:g}" if noise else None, "runs": []}
            for thr, ctx in ctxs.items():
                for rname, (lo, hi) in (("ours default (middle half)", (0.0, 0.0)),
                                        ("algotom default range", alg_range)):
                    med, runs, (axis, used) = timed(
                        lambda: pyctrecon.center_find(s, g, method="vo", lo=lo, hi=hi, ctx=ctx), 3)
                    case["runs"].append({"tool": "ctrecon", "method": "vo", "range": rname,
                                         "lo_hi": [lo, hi], "threads": thr, "axis": axis,
                                         "error": axis - truth, "seconds_median": med,
                                         "seconds": runs})
            # algotom: one run each (7-16 s here), ncore = None (cpu_count - 1)
            for rname, kw in (("algotom default", {}),
                              ("ours (middle half)", {"start": ours_range[0],
                                                      "stop": ours_range[1]})):
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    med, runs, axis = timed(lambda: acalc.find_center_vo(s[0], **kw), 1, warm=False)
                case["runs"].append({"tool": "algotom", "method": "find_center_vo", "range": rname,
                                     "kwargs": kw, "ncore": "default (cpu_count - 1 = %d)"
                                     % max(os.cpu_count() - 1, 1), "axis": float(axis),
                                     "error": float(axis) - truth, "seconds_median": med,
                                     "seconds": runs,
                                     "warnings": sorted({str(x.message) for x in w})})
            if off == 7.5:
                med, runs, axis = timed(lambda: acalc.find_center_vo(s[0], ncore=2), 1, warm=False)
                case["runs"].append({"tool": "algotom", "method": "find_center_vo",
                                     "range": "algotom default", "ncore": 2, "axis": float(axis),
                                     "error": float(axis) - truth, "seconds_median": med,
                                     "seconds": runs})
            log_runs(log, case, f"180 off {off:+7.2f}",
                     lambda r: f"{r.get('range'):28s} {r.get('threads', r.get('ncore'))!s:26s}")
            cases.append(case)
    return cases


def centre_360(ctxs, rng, quick, log):
    na = 2 * NA
    angles = np.linspace(0.0, 360.0, na, endpoint=False)
    cases = []
    for truth in ([1100.4] if quick else [1100.4, 1180.75]):
        for noise in [False, True]:
            s, g = phantom_sinogram(NB, angles, truth, 0.98 * truth)
            if noise:
                s = noisy(s, rng)
            case = {"nbins": NB, "nangles": na, "range_deg": 360, "truth": truth,
                    "noise": f"poisson I0={I0:g}" if noise else None, "runs": []}
            for thr, ctx in ctxs.items():
                med, runs, (axis, used) = timed(
                    lambda: pyctrecon.center_find(s, g, method="correlation", ctx=ctx), 3)
                case["runs"].append({"tool": "ctrecon", "method": "correlation", "threads": thr,
                                     "axis": axis, "error": axis - truth, "seconds_median": med,
                                     "seconds": runs})
            for side in (None, 1):
                with warnings.catch_warnings(record=True) as w:
                    warnings.simplefilter("always")
                    med, runs, res = timed(lambda: acalc.find_center_360(s[0], 100, side=side), 3)
                case["runs"].append({"tool": "algotom", "method": "find_center_360",
                                     "kwargs": {"win_width": 100, "side": side},
                                     "axis": float(res[0]), "error": float(res[0]) - truth,
                                     "overlap": float(res[1]), "side_found": int(res[2]),
                                     "seconds_median": med, "seconds": runs,
                                     "warnings": sorted({str(x.message) for x in w})})
            log_runs(log, case, f"360 axis {truth:8.2f}",
                     lambda r: f"{r['method']:16s} {r.get('threads', r.get('kwargs'))!s:34s}")
            cases.append(case)
    return cases


# ---------------------------------------------------------------------------
# 3: stripes
# ---------------------------------------------------------------------------

def stripe_pattern(kind, rng):
    """An additive (nangles, nbins) stripe image and its description."""
    p = np.zeros((NA, NB), np.float32)
    cols_in = np.arange(int(0.2 * NB), int(0.8 * NB))          # inside the object's shadow

    def amp(n):
        return (rng.uniform(0.01, 0.04, n) * rng.choice([-1, 1], n)).astype(np.float32)
    if kind == "full":
        cols = np.sort(rng.choice(cols_in, 20, replace=False))
        a = amp(20)
        p[:, cols] = a
        desc = {"columns": cols.tolist(), "offsets": a.tolist()}
    elif kind == "partial":
        cols = np.sort(rng.choice(cols_in, 20, replace=False))
        a = amp(20)
        spans = []
        for c, v in zip(cols, a):
            n = int(rng.uniform(0.2, 0.6) * NA)
            a0 = int(rng.integers(0, NA - n))
            p[a0:a0 + n, c] = v
            spans.append([a0, a0 + n])
        desc = {"columns": cols.tolist(), "offsets": a.tolist(), "angle_spans": spans}
    elif kind == "wide":
        starts = np.sort(rng.choice(cols_in[::16], 6, replace=False))
        widths = rng.integers(2, 7, 6)
        a = amp(6)
        for c, w, v in zip(starts, widths, a):
            p[:, c:c + w] = v
        desc = {"starts": starts.tolist(), "widths": widths.tolist(), "offsets": a.tolist()}
    return p, desc


def dc_centred_window(width, height, size, window_name="gaussian"):
    """Diagnostic only: algotom's damping window with its zero on the
    fftshifted spectrum's DC (index width // 2) for even widths too."""
    xlist = np.arange(width) - (width // 2)
    if window_name == "butter":
        window = 1.0 - 1.0 / (1.0 + np.power(xlist / size, 2))
    else:
        window = 1.0 - np.exp(-xlist ** 2 / (2 * (size ** 2)))
    return np.tile(window, (height, 1))


def stripes(ctxs, rng, quick, log):
    angles = np.linspace(0.0, 180.0, NA, endpoint=False)
    truth = (NB - 1) / 2.0 + 7.5
    clean, g = phantom_sinogram(NB, angles, truth, 0.37 * NB)
    ctx_rec = ctxs[max(ctxs)]

    def rec(s2d):
        return pyctrecon.fbp(s2d[None].astype(np.float32), g, ctx=ctx_rec, progress=False)[0]
    ref = rec(clean[0])

    def rmse(sl, against=None):
        r = ref if against is None else against
        return float(np.sqrt(np.mean((sl.astype(np.float64) - r) ** 2)))

    pad = min(150, int(0.1 * min(NA, NB)))

    def n0(level):
        q = 1 << level
        return (2 * NA + q - 1) // q * q

    sig_for_alg = 1.0 * n0(5) / (NA + 2 * pad)        # algotom default size 1 at level 5
    size_for_ours = 1.0 * (NA + 2 * pad) / n0(3)       # ours' default sigma 1 at level 3
    mapping = {"pad": pad, "N0_level3": n0(3), "N0_level5": n0(5),
               "ours_sigma_for_algotom_size1_level5": sig_for_alg,
               "algotom_size_for_ours_sigma1_level3": size_for_ours}

    def ours(**kw):
        c = pyctrecon.Corrections(**kw)

        def f(s2d, ctx):
            x = np.array(s2d[None], np.float32, copy=True)
            return pyctrecon.sinogram_remove_stripes(x, c, ctx=ctx)[0]
        return f

    def alg(fn, **kw):
        return lambda s2d, ctx: fn(s2d, **kw).astype(np.float32)

    def alg_dc_centred(**kw):
        def f(s2d, ctx):
            orig = autil.make_2d_damping_window
            autil.make_2d_damping_window = dc_centred_window
            try:
                return arem.remove_stripe_based_wavelet_fft(s2d, **kw).astype(np.float32)
            finally:
                autil.make_2d_damping_window = orig
        return f

    methods = [
        ("ctrecon", "sorting", "default (size 21)", ours(stripe="sorting", stripe_size=21)),
        ("algotom", "remove_stripe_based_sorting", "default (size 21, dim 1) = ours",
         alg(arem.remove_stripe_based_sorting, size=21, dim=1)),
        ("ctrecon", "wavelet", "default (level 3, sigma 1, db5)",
         ours(stripe="wavelet", stripe_level=3, stripe_sigma=1.0, stripe_wavelet=5)),
        ("algotom", "remove_stripe_based_wavelet_fft",
         f"ours' default mapped (level 3, size {size_for_ours:.3f}, db5)",
         alg(arem.remove_stripe_based_wavelet_fft, level=3, size=size_for_ours,
             wavelet_name="db5")),
        ("algotom", "remove_stripe_based_wavelet_fft", "default (level 5, size 1, db9)",
         alg(arem.remove_stripe_based_wavelet_fft)),
        ("ctrecon", "wavelet", f"algotom's default mapped (level 5, sigma {sig_for_alg:.3f}, db9)",
         ours(stripe="wavelet", stripe_level=5, stripe_sigma=sig_for_alg, stripe_wavelet=9)),
        ("algotom", "remove_stripe_based_fft", "default (u 20, n 8, v 1)",
         alg(arem.remove_stripe_based_fft)),
        ("algotom (diagnostic)", "remove_stripe_based_wavelet_fft",
         "ours' default mapped, window centred on DC (runtime patch)",
         alg_dc_centred(level=3, size=size_for_ours, wavelet_name="db5")),
        ("algotom (diagnostic)", "remove_stripe_based_wavelet_fft",
         "default, damping window centred on DC (runtime patch)", alg_dc_centred()),
    ]
    out = {"truth_axis": truth, "mapping": mapping, "reconstruction":
           "pyctrecon.fbp, CPU, ram-lak, linear, true axis, 1280^2 slice; "
           "RMSE over the whole slice",
           "clean_slice_rms": float(np.sqrt(np.mean(ref ** 2))), "patterns": []}
    # what each correction does to the clean sinogram, and its time
    damage, clean_rec, times = {}, {}, {}
    for tool, m, params, fn in methods:
        key = (tool, m, params)
        if tool == "ctrecon":
            times[key] = {}
            for thr, ctx in ctxs.items():
                med, runs, x = timed(lambda: fn(clean[0], ctxs[thr]), 1 if quick else 3)
                times[key][thr] = {"seconds_median": med, "seconds": runs}
        else:
            med, runs, x = timed(lambda: fn(clean[0], None), 1 if quick else 3)
            times[key] = {"single": {"seconds_median": med, "seconds": runs}}
        clean_rec[key] = rec(x)
        damage[key] = rmse(clean_rec[key])
    kinds = ["full"] if quick else ["full", "partial", "wide"]
    for kind in kinds:
        p, desc = stripe_pattern(kind, rng)
        striped = clean[0] + p
        pat = {"pattern": kind, "description": desc, "striped_rmse": rmse(rec(striped)),
               "rows": []}
        log(f"  stripes {kind:8s} striped (no correction) RMSE {pat['striped_rmse']:.3e}")
        for tool, m, params, fn in methods:
            key = (tool, m, params)
            x = fn(striped, ctxs[max(ctxs)])
            sl = rec(x)
            row = {"tool": tool, "method": m, "params": params, "rmse": rmse(sl),
                   "residual_rmse": rmse(sl, clean_rec[key]),
                   "clean_damage_rmse": damage[key], "times": times[key]}
            row["rmse_over_striped"] = row["rmse"] / pat["striped_rmse"]
            pat["rows"].append(row)
            t = "  ".join(f"{k}: {v['seconds_median']:.3f} s" for k, v in times[key].items())
            log(f"    {tool:21s} {m:32s} {params:55s} RMSE {row['rmse']:.3e}"
                f" ({row['rmse_over_striped']:.2f} of striped), stripes left"
                f" {row['residual_rmse']:.2e}, on clean {damage[key]:.2e}; {t}")
        out["patterns"].append(pat)
    # the band heights algotom's window sees (even: its zero is one index off DC)
    bands = {}
    for lev, wname in ((3, "db5"), (5, "db9")):
        import pywt
        shp = (NA + 2 * pad, NB + 2 * pad)
        coeffs = pywt.wavedec2(np.zeros(shp), wname, level=lev)
        bands[f"level {lev} {wname}"] = [c[1].shape[0] for c in coeffs[1:]]
    out["algotom_band_heights"] = bands
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=None)
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--seed", type=int, default=20261126)
    args = ap.parse_args()
    r, dirty = rev()
    today = datetime.date.today().isoformat()
    out = args.out or os.path.join(os.path.dirname(os.path.abspath(__file__)), "results",
                                   f"{today}-vm2-algotom-{r}.json")
    lines = []

    def log(s):
        print(s, flush=True)
        lines.append(s)
    rng = np.random.default_rng(args.seed)
    ctxs = {1: pyctrecon.Context("cpu", threads=1), 2: pyctrecon.Context("cpu", threads=2)}
    res = {"date": datetime.datetime.now(datetime.timezone.utc).isoformat(timespec="seconds"),
           "revision": r + (" + working tree" if dirty else ""),
           "command": " ".join([os.path.basename(sys.executable)] + sys.argv),
           "machine": machine(),
           "versions": {"ctrecon": pyctrecon.version(), "algotom": version("algotom"),
                        "numpy": np.__version__, "scipy": version("scipy"),
                        "scikit-image": version("scikit-image"),
                        "PyWavelets": version("PyWavelets"), "numba": version("numba"),
                        "joblib": version("joblib")},
           "threads": {"ctrecon": "Context('cpu', threads=1) and threads=2 (OpenMP)",
                       "algotom": "as it runs: find_center_vo / find_center_360 ncore=None "
                                  "(cpu_count - 1 joblib threads), ncore=2 where marked; the "
                                  "stripe filters are numpy/scipy/pywt calls (one thread)"},
           "data": {"phantom": "3D modified Shepp-Logan, plane z = 0, exact line integrals, "
                               f"scaled to a peak of {PEAK}", "nbins": NB, "nangles_180": NA,
                    "noise": f"Poisson, {I0:g} photons per bin, seed {args.seed}"},
           "quick": args.quick}
    t0 = time.perf_counter()
    log(f"algotom_compare: rev {res['revision']}, load {os.getloadavg()}")
    res["centre_180"] = centre_180(ctxs, rng, args.quick, log)
    res["centre_360"] = centre_360(ctxs, rng, args.quick, log)
    res["stripes"] = stripes(ctxs, rng, args.quick, log)
    res["machine"]["loadavg_end"] = os.getloadavg()
    res["total_seconds"] = time.perf_counter() - t0
    res["log"] = lines
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump(res, f, indent=1)
    print(f"wrote {out} ({res['total_seconds']:.0f} s)")


if __name__ == "__main__":
    main()
