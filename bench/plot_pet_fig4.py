"""Plots Ha et al. 2013's Fig. 4 study on our GPU (bench_pet --study fig4
--json FILE) as docs/images/pet-fig4.png: one view's forward projection,
spatial (ours) and cuFFT, over the TOF resolution, the LOR width and the
voxel size, with the paper's reported ratios beside ours (their figure's
points are not given as numbers in the paper: its text gives the growth
from 4 to 2 mm voxels, 54.3x spatial and 9.4x FFT, and the spatial/FFT
ratios, 0.5 at 4 mm and 2.7 at 2 mm, on a GTX 285).

Usage: python3 bench/plot_pet_fig4.py RESULT.json [OUT.png]   (matplotlib)
"""
import json
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def main():
    res = json.load(open(sys.argv[1]))
    out = sys.argv[2] if len(sys.argv) > 2 else "docs/images/pet-fig4.png"
    cases = res["cases"]
    tof = [c for c in cases if c.get("study") == "fig4-tof"]
    lor = [c for c in cases if c.get("study") == "fig4-lor"]
    vox = [c for c in cases if c.get("study") == "fig4-voxel" and "voxel_mm" in c]
    growth = next(c for c in cases if c.get("name") == "fig4_voxel_growth")
    fig, axs = plt.subplots(1, 3, figsize=(13, 4.0), dpi=110)
    for ax, data, key, label in ((axs[0], tof, "tof_ps", "TOF FWHM (ps); LOR 10 mm, axial 5 mm"),
                                 (axs[1], lor, "radial_mm", "LOR radial FWHM (mm); TOF 300 ps")):
        x = [c[key] for c in data]
        ax.plot(x, [c["seconds"] * 1e3 for c in data], "o-", label="spatial (ours)")
        ax.plot(x, [c["cufft_seconds"] * 1e3 for c in data], "s--", label="cuFFT, padded")
        ax.set_xlabel(label)
        ax.set_ylabel("ms per view (forward)")
        ax.set_yscale("log")
        ax.grid(True, which="both", alpha=0.3)
        ax.legend(fontsize=8)
    x = [c["voxel_mm"] for c in vox]
    axs[2].plot(x, [c["seconds"] * 1e3 for c in vox], "o-", label="spatial (ours)")
    axs[2].plot(x, [c["cufft_seconds"] * 1e3 for c in vox], "s--", label="cuFFT, padded")
    axs[2].invert_xaxis()
    axs[2].set_xlabel("voxel (mm), same field of view; TOF 375 ps, LOR 6.5 mm")
    axs[2].set_ylabel("ms per view (forward)")
    axs[2].set_yscale("log")
    axs[2].grid(True, which="both", alpha=0.3)
    axs[2].legend(fontsize=8)
    axs[2].set_title(
        f"4 -> 2 mm: spatial {growth['spatial_growth']:.1f}x (paper 54.3x), "
        f"FFT {growth['cufft_growth']:.1f}x (paper 9.4x)\n"
        f"spatial/FFT {growth['spatial_over_cufft_4mm']:.2f} at 4 mm (paper 0.5), "
        f"{growth['spatial_over_cufft_2mm']:.2f} at 2 mm (paper 2.7)", fontsize=7)
    fig.suptitle(f"Ha et al. 2013, Fig. 4, on {res['gpu']} (rev {res['revision']}): one view, "
                 "spatially invariant kernels", fontsize=10)
    fig.tight_layout()
    fig.savefig(out)


if __name__ == "__main__":
    main()
