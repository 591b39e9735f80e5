"""Plots Chilingaryan et al. 2020's Tables 18 and 19 study on our GPU
(bench_fbp --study chilingaryan-tables --json FILE) as
docs/images/chilingaryan-tables.png: the occupancy targets of alu (one
slice) and alu2 (two slices), linear and nearest, next to the paper's
Table 19 (NVIDIA Titan X, one slice: its figures are copied below), each relative to its own untargeted default
(the GPUs differ ~6x in speed), the absolute GU/s, registers and
occupancy written on the bars; and our carveout x angle-cache sweep
(Table 18's analogue) at the default occupancy.

Usage: python3 bench/plot_chilingaryan_tables.py RESULT.json [OUT.png]   (matplotlib)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

# Chilingaryan et al. 2020, Table 19 (Titan X): target -> (registers, local
# memory bytes, occupancy %, GU/s).
PAPER = {
    "linear": {"none": (40, 0, 75, 565), "50": (64, 0, 50, 570), "100": (32, 8, 100, 620)},
    "nearest": {"none": (48, 0, 62, 1082), "50": (64, 0, 50, 1158), "100": (32, 40, 100, 954)},
}
TARGETS = ["none", "50", "75", "100"]


def target_of(case):
    return "none" if case["occupancy_target"] in ("auto", "0", "none") else case["occupancy_target"]


def occupancy_panel(ax, cases, interp, kernel):
    ours = [c for c in cases if c["interp"] == interp and c["kernel"] == kernel]
    default = next(c for c in ours if target_of(c) == "none" and c["carveout"] == "driver"
                   and c["angle_cache"] == "shared")
    paper = PAPER[interp]
    w = 0.38
    top = 1.0
    for i, t in enumerate(TARGETS):
        if t in paper:
            regs, local, occ, gups = paper[t]
            h = gups / paper["none"][3]
            ax.bar(i - w / 2, h, w, color="tab:gray", label="paper, Titan X" if i == 0 else None)
            ax.text(i - w / 2, h, f"{gups:.0f}\n{regs} r\n{local} B\n{occ} %", ha="center",
                    va="bottom", fontsize=6)
        at = [c for c in ours if target_of(c) == t and c["carveout"] == "driver"
              and c["angle_cache"] == "shared"]
        best = max((c for c in ours if target_of(c) == t), key=lambda c: c["gups"])
        if at:
            c = at[0]
            h = c["gups"] / default["gups"]
            top = max(top, h)
            ax.bar(i + w / 2, h, w, color="tab:blue", label="ours (driver carveout, shared cache)"
                   if i == 0 else None)
            ax.text(i + w / 2, h, f"{c['gups']:.0f}\n{c['registers']} r\n{c['local_bytes']} B\n"
                    f"{100 * c['theoretical_occupancy']:.0f} %", ha="center", va="bottom", fontsize=6)
        top = max(top, best["gups"] / default["gups"])
        ax.plot([i + w / 2], [best["gups"] / default["gups"]], "k^", ms=5,
                label="ours, best carveout x cache" if i == 0 else None)
    ax.set_xticks(range(len(TARGETS)))
    ax.set_xticklabels(["default" if t == "none" else t + " %" for t in TARGETS])
    ax.set_xlabel("occupancy target (__launch_bounds__)")
    ax.set_ylabel("speed / untargeted default")
    ax.set_ylim(0, 1.45 * max(top, 1.1))
    slices = "two slices" if kernel == "alu2" else "one slice"
    ax.set_title(f"{interp}: {kernel}, {slices} (ours) vs one slice (paper)", fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=6, loc="lower right")


def cache_panel(ax, cases):
    carve = ["driver", "shared", "l1"]
    cache = ["shared", "offset", "registers"]
    runs = [("alu", "linear", plt.cm.Greens), ("alu2", "linear", plt.cm.Blues),
            ("alu", "nearest", plt.cm.Oranges), ("alu2", "nearest", plt.cm.Reds)]
    w = 0.07
    for j, (kernel, interp, cmap) in enumerate(runs):
        for k, cv in enumerate(carve):
            x = [i + (j * 3 + k - 5.5) * w for i in range(len(cache))]
            y = []
            for ac in cache:
                c = [c for c in cases if c["interp"] == interp and c["kernel"] == kernel
                     and target_of(c) == "none" and c["carveout"] == cv and c["angle_cache"] == ac]
                y.append(c[0]["gups"] if c else 0)
            ax.bar(x, y, w, label=f"{kernel} {interp}, carveout {cv}", color=cmap(0.4 + 0.2 * k))
    ax.set_xticks(range(len(cache)))
    ax.set_xticklabels(["c, s, offset in shared", "offset in shared", "registers (shuffles)"],
                       fontsize=7)
    ax.set_ylabel("GUPS (ours)")
    ax.set_title("Table 18's analogue: where the angle constants sit\n(ours, default occupancy)",
                 fontsize=9)
    ax.grid(True, axis="y", alpha=0.3)
    ax.legend(fontsize=6, ncol=4, loc="lower center")


def main():
    res = json.load(open(sys.argv[1]))
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/images/chilingaryan-tables.png"
    cases = res["cases"]
    fig = plt.figure(figsize=(18, 8.4), dpi=110)
    grid = fig.add_gridspec(2, 4)
    for i, (interp, kernel) in enumerate((("linear", "alu"), ("linear", "alu2"), ("nearest", "alu"),
                                          ("nearest", "alu2"))):
        occupancy_panel(fig.add_subplot(grid[0, i]), cases, interp, kernel)
    cache_panel(fig.add_subplot(grid[1, :]), cases)
    c0 = cases[0]
    fig.suptitle(f"Chilingaryan et al. 2020, Tables 18-19, on {res['gpu']} (rev {res['revision']}): "
                 f"{c0['n']}^2 from {c0['angles']} angles, {c0['slices']} slices", fontsize=10)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()
