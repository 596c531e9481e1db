//! The cell grid: cell size, cell counts, the linear key order, and the conversion between
//! absolute positions and (cell, offset) pairs.
//!
//! Positions are stored as integer cell coordinates plus a float32 offset from the cell
//! centre, so accuracy does not depend on the distance from the origin. The distance of two
//! particles is `(cell_j - cell_i) * cell_size + (off_j - off_i)`.

use crate::case::Case;

/// The skin added to the kernel support to get the cell size, as a fraction of the support,
/// unless a backend chooses its own ([`Grid::with_skin`]). Neighbour lists stay valid until
/// some particle has moved half the skin; a thicker skin means fewer rebuilds but more
/// candidate neighbours (cell volume grows as (1 + skin)³).
pub const SKIN_FRACTION: f64 = 0.15;

/// Cell count and cell size (exactly representable in float32) along an axis of length
/// `len` for kernel support `support`. A periodic axis holds a whole number of cells, at least
/// three so the stencil never meets a cell twice.
pub fn axis_cells(len: f64, support: f64, skin_fraction: f64, periodic: bool) -> Result<(i32, f64), String> {
    axis_cells_reach(len, support, skin_fraction, 1, periodic)
}

/// As [`axis_cells`] for a stencil reaching `reach` cells on each side: cells of
/// `support (1 + skin) / reach`, and at least `2 reach + 1` of them on a periodic axis.
pub fn axis_cells_reach(
    len: f64,
    support: f64,
    skin_fraction: f64,
    reach: i32,
    periodic: bool,
) -> Result<(i32, f64), String> {
    let min_cell = support * (1.0 + skin_fraction) / reach as f64;
    let least = (2 * reach + 1) as f64;
    let (k, cell) = if periodic {
        let k = (len / min_cell).floor();
        if k < least {
            return Err(format!(
                "{len} m long, less than {least} cells of {min_cell:.4} m; make the domain longer or dp smaller"
            ));
        }
        (k, len / k)
    } else {
        ((len / min_cell).ceil().max(1.0), min_cell)
    };
    if k > (i32::MAX / 4) as f64 {
        return Err(format!("{k} cells of {min_cell} m: too many"));
    }
    Ok((k as i32, cell as f32 as f64))
}

/// Cell geometry of a case.
#[derive(Debug, Clone, PartialEq)]
pub struct Grid {
    /// Lower corner of cell (0,0,0).
    pub origin: [f64; 3],
    /// Cell size per axis (exactly representable as float32).
    pub cell: [f64; 3],
    /// Cell counts per axis (1 along unused axes).
    pub n: [i32; 3],
    /// Periodic axes.
    pub periodic: [bool; 3],
    /// Axes from slowest to fastest varying in the linear index; the split axis is first.
    pub order: [usize; 3],
    /// 2 or 3.
    pub dim: usize,
    /// Kernel support radius 2h.
    pub support: f64,
    /// Smallest `cell - support` over the axes used.
    pub skin: f64,
    /// Cells the neighbour stencil reaches on each side of a particle's cell (1: 27 cells in
    /// 3D; 2: 125 smaller cells, fewer candidate neighbours).
    pub reach: i32,
    /// The cell layers along the split axis (`order[0]`) that this grid holds, `lo..hi`: a
    /// device's window of the whole grid (its slice and the bands of copies beside it).
    /// Linear indices count from layer `lo`; cells of other layers are not neighbours.
    /// `0..n[order[0]]` for the whole grid.
    pub window: (i32, i32),
}

impl Grid {
    /// The grid of a case, with `split_axis` varying slowest in the key order.
    pub fn new(case: &Case, split_axis: usize) -> Result<Grid, String> {
        Grid::with_skin(case, split_axis, SKIN_FRACTION, 1)
    }

    /// As [`Grid::new`] with a skin of `skin_fraction` times the support and a stencil
    /// reaching `reach` cells on each side.
    pub fn with_skin(case: &Case, split_axis: usize, skin_fraction: f64, reach: i32) -> Result<Grid, String> {
        let support = 2.0 * case.h;
        let mut cell = [support * (1.0 + skin_fraction) / reach as f64; 3];
        let mut n = [1i32; 3];
        for a in 0..case.dim {
            (n[a], cell[a]) = axis_cells_reach(
                case.domain.max[a] - case.domain.min[a],
                support,
                skin_fraction,
                reach,
                case.periodic[a],
            )
            .map_err(|e| {
                format!("{}axis {}: {e}", if case.periodic[a] { "periodic " } else { "" }, ["x", "y", "z"][a])
            })?;
        }
        let mut order = [split_axis, 0, 0];
        let mut k = 1;
        for a in 0..3 {
            if a != split_axis {
                order[k] = a;
                k += 1;
            }
        }
        let skin = (0..case.dim).map(|a| reach as f64 * cell[a] - support).fold(f64::INFINITY, f64::min);
        Ok(Grid {
            origin: case.domain.min,
            cell,
            n,
            periodic: case.periodic,
            order,
            dim: case.dim,
            support,
            skin,
            reach,
            window: (0, n[split_axis]),
        })
    }

    /// The fastest-varying axis of the linear index within the case's dimensions (`O2` in
    /// 3D, `O1` in 2D): the axis of the GPU's stencil rows (`RA` in kernels/step.cu).
    pub fn rows_axis(&self) -> usize {
        self.order[if self.dim == 3 { 2 } else { 1 }]
    }

    /// The split axis (varying slowest in the key order).
    pub fn split_axis(&self) -> usize {
        self.order[0]
    }

    /// Cell layers along the split axis in the whole grid.
    pub fn layers(&self) -> i32 {
        self.n[self.order[0]]
    }

    /// This grid restricted to the layers `lo..hi` of the split axis (clamped to the grid).
    pub fn windowed(&self, lo: i32, hi: i32) -> Grid {
        let n = self.layers();
        Grid { window: (lo.clamp(0, n), hi.clamp(0, n)), ..self.clone() }
    }

    /// The whole grid (no window).
    pub fn whole(&self) -> Grid {
        self.windowed(0, self.layers())
    }

    /// Number of cells in the window.
    pub fn cell_count(&self) -> usize {
        let [_, b, f] = self.order;
        (self.window.1 - self.window.0).max(0) as usize * self.n[b] as usize * self.n[f] as usize
    }

    /// Cells per layer of the split axis.
    pub fn layer_cells(&self) -> usize {
        let [_, b, f] = self.order;
        self.n[b] as usize * self.n[f] as usize
    }

    /// Linear index (within the window) of the first cell of layer `l` (`l` may be the
    /// window's end): particles of layers `l0..l1` sit between the cell table's entries
    /// `2 layer_start(l0)` and `2 layer_start(l1)`.
    pub fn layer_start(&self, l: i32) -> usize {
        (l - self.window.0).clamp(0, self.window.1 - self.window.0) as usize * self.layer_cells()
    }

    /// Linear index of a cell inside the window.
    #[inline(always)]
    pub fn linear(&self, c: [i32; 3]) -> usize {
        let [a, b, f] = self.order;
        (((c[a] - self.window.0) as usize * self.n[b] as usize) + c[b] as usize) * self.n[f] as usize + c[f] as usize
    }

    /// The cell of a linear index inside the window ([`Grid::linear`] undone), 0 in w.
    pub fn cell_of(&self, k: usize) -> [i32; 4] {
        let [a, b, f] = self.order;
        let (nb, nf) = (self.n[b] as usize, self.n[f] as usize);
        let mut c = [0i32; 4];
        c[f] = (k % nf) as i32;
        c[b] = (k / nf % nb) as i32;
        c[a] = (k / nf / nb) as i32 + self.window.0;
        c
    }

    /// True when the cell's layer lies in the window.
    #[inline(always)]
    pub fn in_window(&self, c: [i32; 4]) -> bool {
        let l = c[self.order[0]];
        l >= self.window.0 && l < self.window.1
    }

    /// The cell of an absolute position and the offset from that cell's centre.
    pub fn locate(&self, x: [f64; 3]) -> ([i32; 3], [f32; 3]) {
        let mut c = [0i32; 3];
        let mut off = [0f32; 3];
        for a in 0..self.dim {
            let k = ((x[a] - self.origin[a]) / self.cell[a]).floor();
            c[a] = k as i32;
            off[a] = (x[a] - (self.origin[a] + (k + 0.5) * self.cell[a])) as f32;
        }
        (c, off)
    }

    /// The cell of an absolute position clamped into the grid along the axes that are not
    /// periodic (wrapped along the others), and the offset from that cell's centre, past
    /// the cell's half where the position lies beyond the grid; `None` for a position that
    /// is not finite.
    pub fn locate_clamped(&self, x: [f64; 3]) -> Option<([i32; 4], [f32; 4])> {
        if x[..self.dim].iter().any(|v| !v.is_finite()) {
            return None;
        }
        let (k, within) = self.locate(x);
        let mut c = [0i32; 4];
        let mut off = [0f32; 4];
        for a in 0..self.dim {
            if self.periodic[a] {
                // The same place in the cell of its period.
                (c[a], off[a]) = (k[a].rem_euclid(self.n[a]), within[a]);
            } else {
                c[a] = k[a].clamp(0, self.n[a] - 1);
                off[a] = (x[a] - (self.origin[a] + (c[a] as f64 + 0.5) * self.cell[a])) as f32;
            }
        }
        Some((c, off))
    }

    /// The cell layer along the split axis of a coordinate along it, clamped into the grid:
    /// the layer [`Grid::locate`] gives a position there (a function of that coordinate
    /// alone, growing with it), which the slices of a decomposition are cut by.
    pub fn layer_of(&self, x: f64) -> i32 {
        let a = self.split_axis();
        let c = if a < self.dim { ((x - self.origin[a]) / self.cell[a]).floor() as i32 } else { 0 };
        c.clamp(0, self.layers() - 1)
    }

    /// Absolute position of (cell, offset), in float64.
    #[inline]
    pub fn absolute(&self, c: [i32; 4], off: [f32; 4]) -> [f64; 3] {
        let mut x = [0.0; 3];
        for a in 0..self.dim {
            x[a] = self.origin[a] + (c[a] as f64 + 0.5) * self.cell[a] + off[a] as f64;
        }
        x
    }

    /// Move a particle to the cell that contains it: returns the new cell (wrapped on
    /// periodic axes) and offset, or `None` when it has left a non-periodic domain.
    #[inline]
    pub fn rekey(&self, c: [i32; 4], off: [f32; 4]) -> Option<([i32; 4], [f32; 4])> {
        let mut c2 = c;
        let mut o2 = off;
        for a in 0..self.dim {
            let cs = self.cell[a] as f32;
            let k = (off[a] / cs).round();
            if !k.is_finite() {
                return None;
            }
            let mut ca = c[a] as i64 + k as i64;
            o2[a] = off[a] - k * cs;
            if self.periodic[a] {
                ca = ca.rem_euclid(self.n[a] as i64);
            } else if ca < 0 || ca >= self.n[a] as i64 {
                return None;
            }
            c2[a] = ca as i32;
        }
        Some((c2, o2))
    }

    /// The neighbour cell `c + d` with its displacement in cells, or `None` outside a
    /// non-periodic grid. On periodic axes the cell wraps and the displacement stays `d`.
    #[inline(always)]
    pub fn neighbour(&self, c: [i32; 4], d: [i32; 3]) -> Option<[i32; 3]> {
        let mut out = [0i32; 3];
        for a in 0..3 {
            let mut k = c[a] + d[a];
            if k < 0 || k >= self.n[a] {
                if !self.periodic[a] {
                    return None;
                }
                k = k.rem_euclid(self.n[a]);
            }
            out[a] = k;
        }
        let l = out[self.order[0]];
        if l < self.window.0 || l >= self.window.1 {
            return None;
        }
        Some(out)
    }

    /// Stencil offsets: (2 reach + 1)² in 2D, (2 reach + 1)³ in 3D, in a fixed order
    /// (determinism depends on it).
    pub fn stencil(&self) -> Vec<[i32; 3]> {
        let r = self.reach;
        let zr = if self.dim == 3 { -r..=r } else { 0..=0 };
        let mut s = Vec::new();
        for dz in zr {
            for dy in -r..=r {
                for dx in -r..=r {
                    s.push([dx, dy, dz]);
                }
            }
        }
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> Grid {
        let case = Case::from_str(
            "dp = 0.1\n[domain]\nmin = [0.0, 0.0]\nmax = [3.0, 1.0]\n[physics]\nbody_force = [0.0, -9.81]\n[time]\nend = 1.0\n\
             [[fluid]]\nmin = [0.0, 0.0]\nmax = [3.0, 0.5]\n",
            &[],
        )
        .unwrap();
        Grid::new(&case, 0).unwrap()
    }

    #[test]
    fn a_linear_index_gives_back_its_cell() {
        let g = grid();
        let top = g.n[1] - 1;
        for c in [[0, 0, 0, 0], [g.n[0] - 1, top, 0, 0], [7, top, 0, 0], [3, 1, 0, 0]] {
            assert_eq!(g.cell_of(g.linear([c[0], c[1], c[2]])), c);
        }
        // In a window: indices count from its first layer.
        let w = g.windowed(5, 12);
        assert_eq!(w.cell_of(w.linear([7, top, 0])), [7, top, 0, 0]);
    }

    #[test]
    fn a_window_keys_its_layers_from_zero_and_hides_the_others() {
        let g = grid();
        assert_eq!(g.split_axis(), 0);
        let n = g.layers();
        assert_eq!(g.window, (0, n));
        let w = g.windowed(3, 7);
        assert_eq!(w.cell_count(), 4 * w.layer_cells());
        assert_eq!(w.whole(), g);
        // Linear indices count from the window's first layer, split axis slowest.
        assert_eq!(w.linear([3, 0, 0]), 0);
        assert_eq!(w.linear([4, 1, 0]), w.layer_cells() + 1);
        assert_eq!(w.layer_start(3), 0);
        assert_eq!(w.layer_start(7), w.cell_count());
        assert_eq!(w.layer_start(99), w.cell_count(), "clamped to the window");
        assert!(w.in_window([6, 0, 0, 0]) && !w.in_window([7, 0, 0, 0]) && !w.in_window([2, 0, 0, 0]));
        // Neighbours outside the window are not neighbours; inside, as in the whole grid.
        assert_eq!(w.neighbour([3, 1, 0, 0], [-1, 0, 0]), None);
        assert_eq!(g.neighbour([3, 1, 0, 0], [-1, 0, 0]), Some([2, 1, 0]));
        assert_eq!(w.neighbour([6, 1, 0, 0], [0, 1, 0]), Some([6, 2, 0]));
        assert_eq!(w.neighbour([6, 1, 0, 0], [1, 0, 0]), None);
        // Clamped to the grid.
        assert_eq!(g.windowed(-2, n + 5).window, (0, n));
    }
}
