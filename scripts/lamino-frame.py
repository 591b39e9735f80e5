"""Draws docs/lamino-frame.png: laminography's frame (docs/geometry.md,
"Laminography") in the laboratory, at view angle 0: the parallel beam along
+y, the detector's u (+x) and v (+z) axes, the rotation axis tilted by the
tilt (here 30 degrees) from +z towards the beam, the flat sample (a disk
perpendicular to the axis) and the turn of the view angle about the axis.

Usage: python3 scripts/lamino-frame.py [OUT.png]   (numpy only)
"""
import math
import struct
import sys
import zlib

import numpy as np

W, H = 720, 520
TILT = math.radians(30.0)

# a 5 x 7 font for the labels' letters
GLYPHS = {
    "a": ["     ", "     ", " ### ", "    #", " ####", "#   #", " ####"],
    "b": ["#    ", "#    ", "#### ", "#   #", "#   #", "#   #", "#### "],
    "c": ["     ", "     ", " ### ", "#    ", "#    ", "#    ", " ### "],
    "d": ["    #", "    #", " ####", "#   #", "#   #", "#   #", " ####"],
    "e": ["     ", "     ", " ### ", "#   #", "#####", "#    ", " ### "],
    "i": ["  #  ", "     ", " ##  ", "  #  ", "  #  ", "  #  ", " ### "],
    "l": [" ##  ", "  #  ", "  #  ", "  #  ", "  #  ", "  #  ", " ### "],
    "m": ["     ", "     ", "## # ", "# # #", "# # #", "# # #", "# # #"],
    "n": ["     ", "     ", "#### ", "#   #", "#   #", "#   #", "#   #"],
    "o": ["     ", "     ", " ### ", "#   #", "#   #", "#   #", " ### "],
    "p": ["     ", "#### ", "#   #", "#   #", "#### ", "#    ", "#    "],
    "r": ["     ", "     ", "# ## ", "##  #", "#    ", "#    ", "#    "],
    "s": ["     ", "     ", " ####", "#    ", " ### ", "    #", "#### "],
    "t": ["  #  ", "  #  ", "#####", "  #  ", "  #  ", "  #  ", "   ##"],
    "u": ["     ", "     ", "#   #", "#   #", "#   #", "#   #", " ####"],
    "v": ["     ", "     ", "#   #", "#   #", "#   #", " # # ", "  #  "],
    "x": ["     ", "     ", "#   #", " # # ", "  #  ", " # # ", "#   #"],
    "y": ["     ", "#   #", "#   #", " ####", "    #", "#   #", " ### "],
    "z": ["     ", "     ", "#####", "   # ", "  #  ", " #   ", "#####"],
    "0": [" ### ", "#   #", "#  ##", "# # #", "##  #", "#   #", " ### "],
    "3": [" ### ", "#   #", "    #", "  ## ", "    #", "#   #", " ### "],
    "=": ["     ", "     ", "#####", "     ", "#####", "     ", "     "],
    " ": ["     "] * 7,
}

img = np.full((H, W, 3), 255, np.uint8)

# orthographic view from (1.6, -1.0, 1.1) towards the origin, z up on screen
view = np.array([1.6, -1.0, 1.1])
view /= np.linalg.norm(view)
right = np.cross([0.0, 0.0, 1.0], view)
right /= np.linalg.norm(right)
up = np.cross(view, right)
SCALE, CX, CY = 95.0, W * 0.47, H * 0.56


def screen(p):
    p = np.asarray(p, float)
    return CX + SCALE * float(p @ right), CY - SCALE * float(p @ up)


def dot(x, y, color, r=1.4):
    x0, x1 = int(max(0, x - r - 1)), int(min(W - 1, x + r + 1))
    y0, y1 = int(max(0, y - r - 1)), int(min(H - 1, y + r + 1))
    for j in range(y0, y1 + 1):
        for i in range(x0, x1 + 1):
            if (i - x) ** 2 + (j - y) ** 2 <= r * r:
                img[j, i] = color


def line(a, b, color, width=1.4, dash=0):
    (x0, y0), (x1, y1) = screen(a), screen(b)
    n = int(max(abs(x1 - x0), abs(y1 - y0)) * 2) + 1
    for k in range(n + 1):
        if dash and (k // dash) % 2:
            continue
        t = k / n
        dot(x0 + t * (x1 - x0), y0 + t * (y1 - y0), color, width)


def arrow(a, b, color, width=1.4):
    line(a, b, color, width)
    a, b = np.asarray(a, float), np.asarray(b, float)
    (x0, y0), (x1, y1) = screen(a), screen(b)
    d = np.array([x1 - x0, y1 - y0])
    d /= np.linalg.norm(d) + 1e-12
    n = np.array([-d[1], d[0]])
    for s in (-1, 1):
        tip = np.array([x1, y1]) - 11 * d + s * 5 * n
        m = 20
        for k in range(m + 1):
            t = k / m
            dot(x1 + t * (tip[0] - x1), y1 + t * (tip[1] - y1), color, width)


def text(p, s, color, size=2):
    x, y = screen(p)
    for c in s:
        g = GLYPHS[c]
        for j, row in enumerate(g):
            for i, ch in enumerate(row):
                if ch == "#":
                    img[int(y) + j * size:int(y) + (j + 1) * size,
                        int(x) + i * size:int(x) + (i + 1) * size] = color
        x += 6 * size


BLACK, GREY, BLUE, RED, GREEN = (0, 0, 0), (150, 150, 150), (30, 80, 200), (200, 40, 40), (20, 140, 60)
axis = np.array([0.0, math.sin(TILT), math.cos(TILT)])
e2 = np.array([0.0, math.cos(TILT), -math.sin(TILT)])  # in the sample's plane, with x

# the beam: parallel rays along +y
for x, z in ((-0.9, 0.55), (0.0, 0.0), (0.9, -0.55)):
    arrow((x, -3.0, z), (x, 2.35, z), GREY, 1.0)
text((0.3, -2.9, 0.35), "beam y", GREY)
# the detector at y = 2.5: u along +x, v along +z
c = [(-1.6, 2.5, -1.3), (1.6, 2.5, -1.3), (1.6, 2.5, 1.3), (-1.6, 2.5, 1.3)]
for k in range(4):
    line(c[k], c[(k + 1) % 4], BLACK, 1.2)
arrow((-1.6, 2.5, -1.3), (-0.6, 2.5, -1.3), BLUE, 1.6)
arrow((-1.6, 2.5, -1.3), (-1.6, 2.5, -0.3), BLUE, 1.6)
text((-0.55, 2.5, -1.25), "u x", BLUE)
text((-1.55, 2.5, -0.05), "v z", BLUE)
text((0.2, 2.5, 1.65), "detector", BLACK)
# the sample: a flat disk perpendicular to the axis
ts = np.linspace(0, 2 * math.pi, 200)
ring = [np.cos(t) * np.array([1.0, 0, 0]) + np.sin(t) * e2 for t in ts]
for k in range(len(ring) - 1):
    line(ring[k], ring[k + 1], GREEN, 1.6)
text((1.0, 0.0, -0.45), "sample", GREEN)
# the axis, tomography's (z, dashed) and the tilt between them
arrow(-1.5 * axis, 1.9 * axis, RED, 1.8)
text(1.95 * axis + np.array([0.08, 0, 0.05]), "axis", RED)
line((0, 0, 0), (0, 0, 1.7), GREY, 1.0, dash=6)
text((0.05, 0, 1.78), "z", GREY)
arc = [1.2 * (math.cos(a) * np.array([0, 0, 1.0]) + math.sin(a) * np.array([0, 1.0, 0]))
       for a in np.linspace(0, TILT, 30)]
for k in range(len(arc) - 1):
    line(arc[k], arc[k + 1], BLACK, 1.0)
text((-0.2, -0.9, 1.45), "tilt=30", BLACK)
# the view angle turns the sample about the axis
spin = [1.55 * axis + 0.3 * (math.cos(a) * np.array([1.0, 0, 0]) + math.sin(a) * e2)
        for a in np.linspace(-2.2, 2.2, 40)]
for k in range(len(spin) - 2):
    line(spin[k], spin[k + 1], RED, 1.0)
arrow(spin[-3], spin[-1], RED, 1.0)


def png(path, a):
    raw = b"".join(b"\x00" + a[j].tobytes() for j in range(a.shape[0]))

    def chunk(t, d):
        return struct.pack(">I", len(d)) + t + d + struct.pack(">I", zlib.crc32(t + d) & 0xFFFFFFFF)
    hdr = struct.pack(">IIBBBBB", a.shape[1], a.shape[0], 8, 2, 0, 0, 0)
    with open(path, "wb") as f:
        f.write(b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", hdr) + chunk(b"IDAT", zlib.compress(raw, 9))
                + chunk(b"IEND", b""))


png(sys.argv[1] if len(sys.argv) > 1 else "docs/lamino-frame.png", img)
