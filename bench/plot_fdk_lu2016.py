"""Plots Lu et al. 2016's Figs. 9-10 study on our GPU (bench_fdk_cuda --case A
--study lu2016 --json FILE) as docs/images/fdk-lu2016.png: the texture
backprojection kernel's throughput over thread-block shapes of 256 threads,
over N' (views per launch) for blocks of 64, 128 and 256 threads, and over Z'
(slices a thread), with the paper's findings beside ours (GTX 980: 16x16
fastest and 256x1 slowest; N' = 20 best with 256-thread blocks).

Usage: python3 bench/plot_fdk_lu2016.py RESULT.json [OUT.png]   (matplotlib)
"""
import json
import re
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

NAME = re.compile(r"^\w+/bp/tex/N(\d+)/Z(\d+)/(\d+)x(\d+)$")


def main():
    res = json.load(open(sys.argv[1]))
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/images/fdk-lu2016.png"
    rows = []
    for c in res["cases"]:
        m = NAME.match(c["name"])
        if m:
            n, z, bx, by = map(int, m.groups())
            rows.append((n, z, bx, by, c["gups"]))
    # the study's order: 5 shapes, then 3 x 7 (block, N'), then 5 Z'
    shapes, grid, zs = rows[:5], rows[5:26], rows[26:31]
    fig, axs = plt.subplots(1, 3, figsize=(13, 4.0), dpi=110)
    axs[0].bar([f"{bx}x{by}" for _, _, bx, by, _ in shapes], [g for *_, g in shapes])
    axs[0].set_ylabel("GUPS")
    axs[0].set_title("Fig. 9: block shapes of 256 threads (N' 20, Z' 8)\n"
                     "paper (GTX 980): 16x16 fastest, 256x1 slowest", fontsize=8)
    for size in sorted({bx * by for _, _, bx, by, _ in grid}):
        pts = [(n, g) for n, _, bx, by, g in grid if bx * by == size]
        label = next(f"{bx}x{by}" for _, _, bx, by, _ in grid if bx * by == size)
        axs[1].plot([p[0] for p in pts], [p[1] for p in pts], "o-", label=f"{label} ({size} threads)")
    axs[1].axvline(20, color="grey", ls=":", lw=1)
    axs[1].set_xlabel("N' (views per launch)")
    axs[1].set_ylabel("GUPS")
    axs[1].set_title("Fig. 10: N' x block size (Z' 8)\npaper: N' = 20 best at 256 threads (dotted)",
                     fontsize=8)
    axs[1].legend(fontsize=7)
    axs[2].plot([z for _, z, *_ in zs], [g for *_, g in zs], "o-")
    axs[2].set_xscale("log", base=2)
    axs[2].set_xlabel("Z' (slices a thread)")
    axs[2].set_ylabel("GUPS")
    n, _, bx, by, _ = zs[0]
    axs[2].set_title(f"Z' at N' {n}, block {bx}x{by}", fontsize=8)
    for ax in axs:
        ax.grid(True, alpha=0.3)
    fig.suptitle(f"Lu et al. 2016, Figs. 9-10, on {res['gpu']} (rev {res['revision']}): texture "
                 f"backprojection, case {res['case']['name']}", fontsize=10)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()
