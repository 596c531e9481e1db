#!/usr/bin/env python3
"""Where the water over a gauge line is, frame by frame, from a run's VTU frames.

    python3 scripts/frame_column.py RUN_DIR X Y --dp DP [--from T0] [--to T1] [--png OUT.png [--xlim X0 X1] [--zlim Z0 Z1]]
            [--half-width 0.02] [--band 0.1] [--slab 0.03]

For every frame of RUN_DIR/frames whose time (RUN_DIR/*.pvd) lies in [T0, T1] it prints the
fluid over the square column |x - X|, |y - Y| <= half-width, band by band in z: the water
depth that band holds (the particles' volume m/rho over the column's area, the same measure
as a `water_height` gauge's integral of the fluid fraction) and its mean velocity, printed
`z_band:depth(vz,vx,vy)`. A band high above the others with water falling through it is spray or a
falling sheet; a column filled from the floor is the surface. With --png it also draws, frame by
frame into one image, the fluid of the slab |y - Y| <= slab seen from the side (x, z), coloured by the
x-velocity, the column marked. With --strip X0 X1 Y0 Y1 it also prints, frame by frame, the
water depth of the strip X0 <= x < X1 across y in bins (and each bin's mean vy): where water
arrives along a wall, say. Needs numpy (and matplotlib for --png).
"""
import argparse
import glob
import os
import re
import sys

import numpy as np

from surge_vtu import TYPES, layout


def read_vtu(path):
    """id, kind, velocity, density, pressure and Points of one surge VTU frame."""
    with open(path, "rb") as f:
        raw = f.read()
    n, fields = layout(raw)
    out = {}
    for name, ty, comps, at, nb in fields:
        a = np.frombuffer(raw, TYPES[ty][1], nb // np.dtype(TYPES[ty][1]).itemsize, at)
        out[name] = a.reshape(n, comps) if comps > 1 else a
    return out


def read_frame(path):
    """One frame: a .vtu, or a .pvtu's pieces (a run over several devices or ranks) joined."""
    if not path.endswith(".pvtu"):
        return read_vtu(path)
    pieces = re.findall(r'<Piece Source="([^"]+)"', open(path).read())
    parts = [read_vtu(os.path.join(os.path.dirname(path), p)) for p in pieces]
    return {k: np.concatenate([q[k] for q in parts]) for k in parts[0]}


def frame_times(run):
    """(time, path) of every frame the run's .pvd lists."""
    pvd = glob.glob(os.path.join(run, "*.pvd"))
    if not pvd:
        sys.exit(f"{run}: no .pvd time series")
    text = open(pvd[0]).read()
    return [(float(t), os.path.join(run, f)) for t, f in re.findall(r'timestep="([^"]+)"[^>]*file="([^"]+)"', text)]


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("run")
    ap.add_argument("x", type=float)
    ap.add_argument("y", type=float)
    ap.add_argument("--from", dest="t0", type=float, default=0.0)
    ap.add_argument("--to", dest="t1", type=float, default=1e9)
    ap.add_argument("--half-width", type=float, default=0.02)
    ap.add_argument("--band", type=float, default=0.1)
    ap.add_argument("--slab", type=float, default=0.03)
    ap.add_argument("--png")
    ap.add_argument("--xlim", type=float, nargs=2, help="the drawing's x range (default the slab's)")
    ap.add_argument("--zlim", type=float, nargs=2, help="the drawing's z range (default the slab's)")
    ap.add_argument("--strip", type=float, nargs=4, metavar=("X0", "X1", "Y0", "Y1"),
                    help="also the water depth of the strip X0 <= x < X1 across Y0..Y1, in --bins bins of y, and its mean vy")
    ap.add_argument("--bins", type=int, default=10)
    ap.add_argument("--rho0", type=float, default=1000.0)
    ap.add_argument("--dp", type=float, required=True, help="the case's dp: a fluid particle's mass is rho0 dp^3")
    a = ap.parse_args()
    frames = [(t, p) for t, p in frame_times(a.run) if a.t0 - 1e-9 <= t <= a.t1 + 1e-9]
    area, mass = (2 * a.half_width) ** 2, a.rho0 * a.dp**3
    shots = []
    for t, path in frames:
        f = read_frame(path)
        fluid = f["kind"] == 0
        pos, vel = f["Points"][fluid], f["velocity"][fluid]
        volume = mass / f["density"][fluid]  # each fluid particle's m / rho
        col = (np.abs(pos[:, 0] - a.x) <= a.half_width) & (np.abs(pos[:, 1] - a.y) <= a.half_width)
        z, vol, vz, vx, vy = pos[col, 2], volume[col], vel[col, 2], vel[col, 0], vel[col, 1]
        top = max(0.0, float(z.max())) if z.size else 0.0
        bands = np.arange(0.0, top + a.band, a.band)
        cells = []
        for lo in bands:
            s = (z >= lo) & (z < lo + a.band)
            if s.any():
                cells.append(f"{lo:.1f}:{vol[s].sum() / area:.3f}({vz[s].mean():+.1f},{vx[s].mean():+.1f},{vy[s].mean():+.1f})")
        print(f"t {t:.3f}  depth {vol.sum() / area:.3f} m  " + " ".join(cells), flush=True)
        if a.strip:
            x0, x1, y0, y1 = a.strip
            inside = (pos[:, 0] >= x0) & (pos[:, 0] < x1)
            v = volume[inside]
            edges = dict(bins=a.bins, range=(y0, y1))
            cell = (x1 - x0) * (y1 - y0) / a.bins
            depth = np.histogram(pos[inside, 1], weights=v, **edges)[0]
            vy = np.histogram(pos[inside, 1], weights=v * vel[inside, 1], **edges)[0] / np.maximum(depth, 1e-30)
            print(f"      strip x {x0}-{x1}: depth by y " + " ".join(f"{d / cell:.3f}" for d in depth)
                  + "  vy " + " ".join(f"{u:+.1f}" for u in vy), flush=True)
        if a.png:
            s, bnd = np.abs(pos[:, 1] - a.y) <= a.slab, f["Points"][f["kind"] == 1]
            shots.append((t, pos[s], vel[s], bnd[np.abs(bnd[:, 1] - a.y) <= a.slab]))
    if a.png and shots:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt

        cols = 2 if len(shots) > 1 else 1
        rows = (len(shots) + cols - 1) // cols
        fig, axes = plt.subplots(rows, cols, figsize=(6 * cols, 3.2 * rows), squeeze=False, layout="constrained")
        for ax in axes.flat[len(shots):]:
            ax.axis("off")
        every = np.concatenate([np.concatenate([p[:, [0, 2]], b[:, [0, 2]]]) for _, p, _, b in shots])
        lo, hi = every.min(axis=0), every.max(axis=0)
        for ax, (t, pos, vel, bnd) in zip(axes.flat, shots):
            sc = ax.scatter(pos[:, 0], pos[:, 2], c=vel[:, 0], s=0.2, cmap="coolwarm", vmin=-3, vmax=3, rasterized=True)
            ax.scatter(bnd[:, 0], bnd[:, 2], c="k", s=0.1, rasterized=True)
            ax.axvspan(a.x - a.half_width, a.x + a.half_width, color="g", alpha=0.25)
            ax.set_xlim(*(a.xlim or (lo[0], hi[0])))
            ax.set_ylim(*(a.zlim or (lo[1], hi[1])))
            ax.set_aspect("equal")
            ax.set_title(f"t = {t:.3f} s", fontsize=9)
        fig.colorbar(sc, ax=axes, label="vx (m/s)", shrink=0.6)
        fig.suptitle(f"{os.path.basename(os.path.normpath(a.run))}: fluid of |y - {a.y}| <= {a.slab} from the side (x, z in m); the column in green")
        fig.savefig(a.png, dpi=80)
        plt.close(fig)

if __name__ == "__main__":
    main()
