#!/usr/bin/env python3
"""Write configs/geometry/breakwater.stl: a trapezoidal breakwater block (ASCII STL, metres),
the geometry of configs/dam_break_breakwater_3d.toml. Cross-section in x-z: 0.3 m wide at
the floor (x 0.6 to 0.9), 0.1 m wide at its crest (x 0.7 to 0.8), 0.2 m tall; it spans y
0.2 to 0.6. Closed, outward normals, counter-clockwise facets seen from outside."""
import os

x0, x1, xt0, xt1, top, ylo, yhi = 0.6, 0.9, 0.7, 0.8, 0.2, 0.2, 0.6
A, B, C, D = (x0, ylo, 0.0), (x1, ylo, 0.0), (xt1, ylo, top), (xt0, ylo, top)
A2, B2, C2, D2 = ((p[0], yhi, p[2]) for p in (A, B, C, D))
facets = [
    (A, B, C), (A, C, D),        # y = ylo, normal -y
    (A2, C2, B2), (A2, D2, C2),  # y = yhi, normal +y
    (A, B2, B), (A, A2, B2),     # floor, normal -z
    (D, C, C2), (D, C2, D2),     # crest, normal +z
    (B, B2, C2), (B, C2, C),     # seaward slope, normal +x +z
    (A, D, D2), (A, D2, A2),     # landward slope, normal -x +z
]


def normal(a, b, c):
    u = [b[i] - a[i] for i in range(3)]
    v = [c[i] - a[i] for i in range(3)]
    n = [u[1] * v[2] - u[2] * v[1], u[2] * v[0] - u[0] * v[2], u[0] * v[1] - u[1] * v[0]]
    m = sum(x * x for x in n) ** 0.5
    return [x / m for x in n]


out = os.path.join(os.path.dirname(__file__), "..", "configs", "geometry", "breakwater.stl")
with open(out, "w") as f:
    f.write("solid breakwater\n")
    for a, b, c in facets:
        f.write("  facet normal %g %g %g\n    outer loop\n" % tuple(normal(a, b, c)))
        for p in (a, b, c):
            f.write("      vertex %g %g %g\n" % p)
        f.write("    endloop\n  endfacet\n")
    f.write("endsolid breakwater\n")
print(out)
