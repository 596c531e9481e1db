#!/usr/bin/env python3
"""Write a fill benchmark case: DIR/torus.stl (binary STL, a torus of major radius 1 m and
minor radius 0.5 m about the z axis, centre z = 0.5 m, 256 x 128 segments, 65 536 facets)
and DIR/torus.toml, a torus of water inside a 3-layer wall along the same surface, with the
lattice spacing DP. Everything is built from the mesh (point-in-mesh and distance queries),
the slowest kind of fill. Particles ~ 10.4e6 * (0.008 / DP)^3: DP = 0.008 gives 10.4 M,
DP = 0.0037 about 105 M.

    scripts/make_torus_case.py DIR DP
    surge check DIR/torus.toml --backend cpu --fill     # times the fill, writes nothing

Standard library only (runs on a GPU host as it is). docs/PERFORMANCE.md, "Building cases".
"""
import math
import os
import struct
import sys

R, r, zc, nu, nv = 1.0, 0.5, 0.5, 256, 128


def point(i, j):
    u, v = 2 * math.pi * (i % nu) / nu, 2 * math.pi * (j % nv) / nv
    return ((R + r * math.cos(v)) * math.cos(u), (R + r * math.cos(v)) * math.sin(u), zc + r * math.sin(v))


def facets():
    for i in range(nu):
        for j in range(nv):
            a, b, c, d = point(i, j), point(i + 1, j), point(i + 1, j + 1), point(i, j + 1)
            # (a, b, c) turns with +u then +v: its normal points out of the tube.
            yield a, b, c
            yield a, c, d


def normal(a, b, c):
    u = [b[k] - a[k] for k in range(3)]
    v = [c[k] - a[k] for k in range(3)]
    n = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    m = math.sqrt(sum(x * x for x in n)) or 1.0
    return [x / m for x in n]


def main():
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    out, dp = sys.argv[1], float(sys.argv[2])
    os.makedirs(out, exist_ok=True)
    tris = list(facets())
    # Outward check on one facet: its normal points away from the tube's centre line.
    a, b, c = tris[0]
    n = normal(a, b, c)
    centre = [R * a[0] / math.hypot(a[0], a[1]), R * a[1] / math.hypot(a[0], a[1]), zc]
    assert sum(n[k] * (a[k] - centre[k]) for k in range(3)) > 0, "facets face inward"
    with open(os.path.join(out, "torus.stl"), "wb") as f:
        f.write(b"surge fill benchmark torus".ljust(80, b" "))
        f.write(struct.pack("<I", len(tris)))
        for a, b, c in tris:
            f.write(struct.pack("<12fH", *normal(a, b, c), *a, *b, *c, 0))
    pad = R + r + 0.1
    with open(os.path.join(out, "torus.toml"), "w") as f:
        f.write(f"""# A torus of water in a torus wall (scripts/make_torus_case.py): a fill benchmark.
name = "torus"
dp = {dp}

[domain]
min = [{-pad}, {-pad}, {zc - r - 0.1}]
max = [{pad}, {pad}, {zc + r + 0.1}]

[physics]
body_force = [0.0, 0.0, -9.81]

[time]
end = 0.1

[[fluid]]
shape = "mesh"
file = "torus.stl"

[[wall]]
shape = "mesh"
file = "torus.stl"
layers = 3
""")


main()
