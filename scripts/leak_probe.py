#!/usr/bin/env python3
"""Where fluid leaves a tank: reads one surge VTU frame (raw appended data, as surge writes
it; the state at failure of a run with `domain.on_exit = "stop"` is one) and prints the fluid
outside the box [0, X] x [0, Y] x [0, inf): how many, the 25 highest of them, and how many
lie near each (x, y) (0.1 m by 0.01 m), below the floor or beside the walls. Standard library
only, so it runs on a GPU host as it is (a 5.4-million-particle frame in about 20 s). It
found the slot at Test 2's high faces (docs/PERFORMANCE.md, "The slot at a high face").

    scripts/leak_probe.py FRAME.vtu X Y"""
import array, sys, collections
from surge_vtu import TYPES, layout
path, X, Y = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
raw = open(path, 'rb').read()
n, fields = layout(raw)
arrs = {}
for name, ty, comps, at, nb in fields:
    a = array.array(TYPES[ty][0])
    a.frombytes(raw[at:at + nb])
    arrs[name] = a
P, K, I, V, D = arrs['Points'], arrs['kind'], arrs['id'], arrs['velocity'], arrs['density']
out = []
for i in range(n):
    if K[i] != 0:
        continue
    x, y, z = P[3*i], P[3*i+1], P[3*i+2]
    if z < 0 or y < 0 or y > Y or x < 0 or x > X:
        out.append((z, x, y, I[i], V[3*i], V[3*i+1], V[3*i+2], D[i]))
print(f"{n} particles; {len(out)} fluid outside the tank")
out.sort(reverse=True)
for r in out[:25]:
    print("z %.4f x %.4f y %.4f id %d v (%.2f %.2f %.2f) rho %.1f" % r)
h = collections.Counter((round(r[1], 1), round(r[2], 2), 'below' if r[0] < 0 else 'side') for r in out)
for k, c in sorted(h.items(), key=lambda kv: -kv[1])[:25]:
    print("x~%.1f y~%.2f %s: %d" % (k[0], k[1], k[2], c))
