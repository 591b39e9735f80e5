"""Draws the cone-beam geometries' frames for docs/geometry.md (one PNG each
in docs/images/): the circular orbit with a flat detector, the offset
(half-fan) detector, the short scan, the cylindrical (curved) detector, the
helical orbit, and one view of a vector geometry (ASTRA's cone_vec row). The
conventions drawn are the page's: world mm, rotation axis z, the source of
view angle t at sid (cos t, sin t, 0), the detector's u axis (-sin t, cos t,
0) and v along +z; pixel (0, 0) at the detector's lower left seen from the
source.

Usage: python3 scripts/geometry-frames.py [OUT_DIR]   (numpy, matplotlib)
"""
import math
import os
import sys

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402

SID, SDD = 1.0, 1.6
FOV = 0.42  # the field of view's radius drawn
BLUE, RED, GREY, GREEN = "#1f5fbf", "#c0392b", "#7f8c8d", "#218c4a"


def top_view(title):
    fig, ax = plt.subplots(figsize=(5.2, 4.6), dpi=120)
    ax.set_aspect("equal")
    ax.set_xlim(-1.25, 1.45)
    ax.set_ylim(-1.15, 1.15)
    ax.axhline(0, color=GREY, lw=0.5)
    ax.axvline(0, color=GREY, lw=0.5)
    ax.annotate("x", (1.4, -0.07), color=GREY)
    ax.annotate("y", (0.03, 1.08), color=GREY)
    ax.set_title(title, fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.add_patch(plt.Circle((0, 0), FOV, fill=False, ls="--", color=GREY, lw=0.8))
    ax.annotate("field of view", (0.05, -FOV - 0.09), color=GREY, fontsize=7)
    return fig, ax


def frame_at(t):
    src = SID * np.array([math.cos(t), math.sin(t)])
    eu = np.array([-math.sin(t), math.cos(t)])
    det = src - SDD * np.array([math.cos(t), math.sin(t)])
    return src, eu, det


def flat_detector(ax, t, half, offset=0.0, color=BLUE, label=True):
    src, eu, det = frame_at(t)
    c = det + offset * eu
    a, b = c - half * eu, c + half * eu
    ax.plot([a[0], b[0]], [a[1], b[1]], color=color, lw=3)
    for e in (a, b):
        ax.plot([src[0], e[0]], [src[1], e[1]], color=color, lw=0.6, alpha=0.6)
    ax.plot(*src, "o", color=RED)
    if label:
        ax.annotate("source", src + np.array([0.04, 0.04]), color=RED, fontsize=8)
        off = 0.08 * (c - src) / np.linalg.norm(c - src)  # beside the detector, away from the source
        ax.annotate("", xy=c + off + 0.35 * eu, xytext=c + off,
                    arrowprops=dict(arrowstyle="-|>", color=BLUE, lw=1.5))
        ax.annotate("u", c + off + 0.38 * eu, color=BLUE, fontsize=10)
    return src, c


def save(fig, out, name):
    fig.tight_layout()
    fig.savefig(os.path.join(out, name))
    plt.close(fig)


def circular(out):
    fig, ax = top_view("circular orbit, flat detector (seen from +z), view angle t")
    t = math.radians(25)
    src, c = flat_detector(ax, t, 0.75)
    ax.plot([src[0], c[0]], [src[1], c[1]], color=RED, lw=0.8, ls=":")
    ax.annotate("principal ray (pixel u0, v0)", (c + src) / 2 + np.array([0.0, -0.12]), fontsize=7,
                color=RED)
    ax.add_patch(plt.Circle((0, 0), SID, fill=False, color=RED, lw=0.5, ls=":"))
    ax.annotate("t", (0.18, 0.03), fontsize=9)
    ax.annotate("sid", src * 0.55 + np.array([0.02, 0.05]), fontsize=8)
    ax.annotate("v: +z (out of the page)", (-1.2, -1.08), fontsize=8, color=BLUE)
    save(fig, out, "frame-circular.png")


def offset(out):
    fig, ax = top_view("offset (half-fan) detector on a full turn")
    for k, t in enumerate((math.radians(20), math.radians(200))):
        flat_detector(ax, t, 0.42, offset=0.34, color=BLUE if k == 0 else GREEN, label=k == 0)
    ax.annotate("view t", (0.95, 0.55), color=BLUE, fontsize=8)
    ax.annotate("view t + 180", (-1.2, -0.7), color=GREEN, fontsize=8)
    ax.annotate("overlap: the rays near the axis,\nweighted smoothly (Wang 2002)", (-1.2, 0.85),
                fontsize=7)
    save(fig, out, "frame-offset.png")


def short_scan(out):
    fig, ax = top_view("short scan: 180 degrees plus the fan angle")
    fan = 2 * math.atan(0.55 / SDD)
    ts = np.linspace(0, math.pi + fan, 60)
    ax.plot(SID * np.cos(ts), SID * np.sin(ts), color=RED, lw=2)
    for t in (0.0, math.pi + fan):
        flat_detector(ax, t, 0.55, label=t == 0.0)
    ax.annotate("180 + fan", (-0.3, 1.03), color=RED, fontsize=8)
    ax.annotate("Parker's weights (a range parameter\nfor longer scans)", (-1.2, -1.05), fontsize=7)
    save(fig, out, "frame-short-scan.png")


def curved(out):
    fig, ax = top_view("cylindrical (curved) detector: columns equally spaced in gamma")
    t = math.radians(25)
    src, eu, _ = frame_at(t)
    ax.plot(*src, "o", color=RED)
    ax.annotate("source", src + np.array([0.04, 0.04]), color=RED, fontsize=8)
    back = -np.array([math.cos(t), math.sin(t)])
    g = np.linspace(-0.45, 0.45, 60)
    arc = np.array([src + SDD * (math.cos(a) * back + math.sin(a) * eu) for a in g])
    ax.plot(arc[:, 0], arc[:, 1], color=BLUE, lw=3)
    for a in (-0.45, 0.0, 0.3, 0.45):
        e = src + SDD * (math.cos(a) * back + math.sin(a) * eu)
        ax.plot([src[0], e[0]], [src[1], e[1]], color=BLUE, lw=0.6, alpha=0.6)
    ax.annotate("gamma", (src + 0.45 * SDD * (math.cos(0.15) * back + math.sin(0.15) * eu)),
                fontsize=8, color=BLUE)
    ax.annotate("radius sdd about the source;\nu = u0 + gamma sdd / du, v along +z",
                (-1.2, -1.05), fontsize=7)
    save(fig, out, "frame-curved.png")


def helical(out):
    fig = plt.figure(figsize=(5.2, 4.6), dpi=120)
    ax = fig.add_subplot(projection="3d")
    ts = np.linspace(0, 4 * math.pi, 300)
    pitch = 0.5
    ax.plot(SID * np.cos(ts), SID * np.sin(ts), pitch * ts / (2 * math.pi), color=RED, lw=1.5)
    zs = np.linspace(-0.1, 1.1, 2)
    th = np.linspace(0, 2 * math.pi, 40)
    for z in zs:
        ax.plot(FOV * np.cos(th), FOV * np.sin(th), z, color=GREY, lw=0.6, ls="--")
    ax.plot([0, 0], [0, 0], [-0.2, 1.3], color=GREY, lw=0.8)
    t = 2.5 * math.pi
    s = np.array([SID * math.cos(t), SID * math.sin(t), pitch * t / (2 * math.pi)])
    ax.scatter(*s, color=RED)
    ax.text(s[0], s[1], s[2] + 0.08, "source", color=RED, fontsize=8)
    ax.text(1.05, 0, pitch * 0.0 + 0.02, "z rises pitch_mm a turn", fontsize=7)
    ax.set_title("helical orbit: the source on a helix about z", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_zticks([])
    save(fig, out, "frame-helical.png")


def vectors(out):
    fig = plt.figure(figsize=(5.2, 4.6), dpi=120)
    ax = fig.add_subplot(projection="3d")
    src = np.array([1.0, 0.25, 0.2])
    d = np.array([-0.6, -0.15, -0.1])
    u = np.array([0.05, -0.22, 0.0])
    v = np.array([0.0, 0.03, 0.2])
    corners = [d + a * u * 2.5 + b * v * 2.5 for a, b in ((-1, -1), (1, -1), (1, 1), (-1, 1), (-1, -1))]
    c = np.array(corners)
    ax.plot(c[:, 0], c[:, 1], c[:, 2], color=BLUE, lw=2)
    ax.scatter(*src, color=RED)
    ax.text(*(src + 0.05), "src", color=RED, fontsize=9)
    ax.plot([src[0], d[0]], [src[1], d[1]], [src[2], d[2]], color=RED, lw=0.8, ls=":")
    ax.text(*(d + np.array([0, 0, -0.12])), "d (detector centre)", color=BLUE, fontsize=8)
    for vec, name in ((u, "u: pixel (0,0) -> (1,0)"), (v, "v: pixel (0,0) -> (0,1)")):
        ax.quiver(*d, *vec, color=GREEN, lw=1.5)
        ax.text(*(d + vec * 1.2), name, color=GREEN, fontsize=7)
    ax.set_title("a vector geometry's view (ASTRA cone_vec row: src, d, u, v)", fontsize=10)
    ax.set_xticks([])
    ax.set_yticks([])
    ax.set_zticks([])
    save(fig, out, "frame-vectors.png")


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..",
                                                             "docs", "images")
    os.makedirs(out, exist_ok=True)
    for draw in (circular, offset, short_scan, curved, helical, vectors):
        draw(out)


if __name__ == "__main__":
    main()
