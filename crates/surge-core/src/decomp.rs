//! The decomposition: which device owns which cell layers of the split axis, how the first
//! boundaries are placed, and how the load balancer moves them.
//!
//! Devices are numbered globally (rank-major, then local device). Device `d` owns the cell
//! layers `bounds[d]..bounds[d + 1]` of the split axis and holds copies of the `halo` layers
//! beside its slice on each side (its *window*). Every slice is at least `2 halo + 1` layers
//! thick, so a device's band of copies comes from its direct neighbour alone, its two edges
//! (the layers a neighbour copies) never overlap, and a particle never travels past a
//! neighbour's slice between two rebuilds, even when a boundary moves.

use serde::{Deserialize, Serialize};

/// Ownership of the cell layers along the split axis.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct SliceMap {
    /// Device `d` owns layers `bounds[d]..bounds[d + 1]`; `bounds[0] = 0` and the last is the
    /// number of layers.
    pub bounds: Vec<i32>,
    /// Width, in layers, of the band of copies on each side of a slice (the stencil reach).
    pub halo: i32,
}

/// Left (towards lower layers) or right.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Side {
    /// The neighbour owning lower layers.
    Left = 0,
    /// The neighbour owning higher layers.
    Right = 1,
}

impl Side {
    /// Both sides, left first.
    pub const BOTH: [Side; 2] = [Side::Left, Side::Right];
    /// The other side.
    pub fn opposite(self) -> Side {
        match self {
            Side::Left => Side::Right,
            Side::Right => Side::Left,
        }
    }
}

/// The most cell layers a boundary moves at one balancing decision.
pub const MAX_MOVE: i32 = 4;

/// A boundary move made by the load balancer.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Move {
    /// Boundary index: between devices `boundary - 1` and `boundary`.
    pub boundary: usize,
    /// Layer before and after.
    pub from: i32,
    /// Layer after.
    pub to: i32,
}

/// Weight of a particle of kind `kind` (a [`crate::buffers::Kind`] code) in the first cut:
/// a boundary particle sums over fluid neighbours only, about a quarter of a fluid
/// particle's work in a dam break's walls; the load balancer corrects the rest.
pub fn cost_weight(kind: u32) -> u64 {
    if kind == crate::buffers::Kind::Fluid as u32 {
        4
    } else {
        1
    }
}

/// The weight of each of `layers` cell layers for a first cut: [`cost_weight`] summed over
/// the particles, given as (layer, kind).
pub fn layer_weights(layers: i32, particles: impl IntoIterator<Item = (i32, u32)>) -> Vec<u64> {
    let mut w = vec![0u64; layers as usize];
    for (l, kind) in particles {
        w[l as usize] += cost_weight(kind);
    }
    w
}

/// The halo (layers of copies on each side of a slice, and of edge on each side of a
/// neighbour) a case needs on a grid: the stencil reach, so that every owned particle sees
/// all its neighbours; with mDBC also room for the ghost nodes, computed where they are used.
///
/// With mDBC every device computes the boundary values of its owned particles and of the
/// copies within the stencil reach of them (those its force pass reads: no exchange before
/// the force pass). A ghost node lies up to `2 · 2h` from its boundary particle along the wall
/// normal (boundary particles 2h or deeper are not updated), which may point along the split
/// axis (an obstacle's faces), and its stencil reaches `reach` cells beyond its own cell. So a
/// window holds `reach` (copies read) `+ ghost` (ghost cells) `+ reach` (their stencil)
/// layers on each side, and the sums of every ghost are those of one device: bitwise the
/// same. Copies further out are not computed (nothing on this device reads them).
///
/// Open boundaries (issue 15) are the same with their own ghost nodes, the buffer particles'
/// mirror images across the plane: up to `2 (T + skin/2)` away for a buffer `T` thick
/// ([`open_ghost_layers`]), along the split axis when the flow crosses it.
pub fn halo(case: &crate::Case, grid: &crate::grid::Grid) -> i32 {
    let ghost = if case.boundary.is_mdbc() { ghost_layers(grid) } else { 0 };
    let ghost = ghost.max(open_ghost_layers(case, grid));
    if ghost > 0 {
        2 * grid.reach + ghost
    } else {
        grid.reach
    }
}

/// [`ghost_layers`] for the buffer particles of the open boundaries whose flow crosses the
/// split axis (0 when none does).
pub fn open_ghost_layers(case: &crate::Case, grid: &crate::grid::Grid) -> i32 {
    let axis = grid.split_axis();
    let cell = grid.cell[axis];
    case.open
        .iter()
        .filter(|z| z.axis == axis)
        .map(|z| (1.0 + (1.5 * grid.skin + 2.0 * z.thickness(case.dp)) / cell + 1e-4).floor() as i32)
        .max()
        .unwrap_or(0)
}

/// The most cells, along the split axis, between a boundary particle's cell and the cell of
/// its ghost node: `round((o + 2 dist n) / cell)` with the particle's offset `|o| <= cell/2 +
/// skin/2` (it moves less than half the skin between rebuilds) and `2 dist < 2 · support`.
pub fn ghost_layers(grid: &crate::grid::Grid) -> i32 {
    let cell = grid.cell[grid.split_axis()];
    // round(x) <= floor(x + 1/2); a little margin for float32 rounding of the offset.
    (1.0 + (0.5 * grid.skin + 2.0 * grid.support) / cell + 1e-4).floor() as i32
}

/// The thinnest slice allowed for a halo width.
pub fn min_width(halo: i32) -> i32 {
    2 * halo + 1
}

impl SliceMap {
    /// One device owning all `layers`.
    pub fn single(layers: i32, halo: i32) -> SliceMap {
        SliceMap { bounds: vec![0, layers], halo }
    }

    /// The thinnest slice allowed.
    pub fn min_width(&self) -> i32 {
        min_width(self.halo)
    }

    /// `devices` slices of `weights.len()` layers, each as close as it can be to an equal
    /// share of the total weight (particles per layer) and at least `2 halo + 1` layers thick.
    pub fn balanced(weights: &[u64], devices: usize, halo: i32) -> Result<SliceMap, String> {
        let layers = weights.len() as i32;
        let min = min_width(halo);
        if devices == 0 {
            return Err("no device to run on".into());
        }
        if (devices as i32) * min > layers {
            return Err(format!(
                "{devices} devices need at least {} cell layers along the split axis ({min} each), the grid has {layers}; \
                 use at most {} devices or a finer dp",
                devices as i32 * min,
                (layers / min).max(1)
            ));
        }
        let total: u64 = weights.iter().sum();
        let mut bounds = vec![0i32];
        let mut cum = 0u64;
        let mut l = 0i32;
        for d in 1..devices {
            // The first layer at which the running weight reaches d / devices of the total,
            // kept where the slices before and after it can still be min layers thick.
            let target = (total as u128 * d as u128 / devices as u128) as u64;
            let lo = bounds[d - 1] + min;
            let hi = layers - (devices - d) as i32 * min;
            while l < layers && (cum < target || l < lo) && l < hi {
                cum += weights[l as usize];
                l += 1;
            }
            bounds.push(l.clamp(lo, hi));
        }
        bounds.push(layers);
        Ok(SliceMap { bounds, halo })
    }

    /// Number of devices.
    pub fn devices(&self) -> usize {
        self.bounds.len() - 1
    }

    /// Number of layers.
    pub fn layers(&self) -> i32 {
        *self.bounds.last().expect("bounds")
    }

    /// The layers device `d` owns.
    pub fn owned(&self, d: usize) -> (i32, i32) {
        (self.bounds[d], self.bounds[d + 1])
    }

    /// The layers device `d` holds: its slice and the bands of copies beside it.
    pub fn window(&self, d: usize) -> (i32, i32) {
        let (lo, hi) = self.owned(d);
        ((lo - self.halo).max(0), (hi + self.halo).min(self.layers()))
    }

    /// The neighbour of device `d` on a side, if there is one.
    pub fn neighbour(&self, d: usize, side: Side) -> Option<usize> {
        match side {
            Side::Left => d.checked_sub(1),
            Side::Right => (d + 1 < self.devices()).then_some(d + 1),
        }
    }

    /// The device owning `layer` (layers outside the grid belong to the first or last).
    pub fn owner(&self, layer: i32) -> usize {
        let n = self.devices();
        self.bounds[1..n].partition_point(|&b| b <= layer)
    }

    /// Move boundaries by the measured work times `times[d]` of the devices (seconds each
    /// spent computing, waiting excluded). Where two neighbours' times differ by more than
    /// `threshold` of the larger, their boundary moves toward the slower device (which gives
    /// up layers): by as many layers as halve the difference, at least one and at most
    /// [`MAX_MOVE`], and only when the difference exceeds one layer's work (else one layer
    /// would overshoot and the boundary would swing back and forth). One layer's work `c` is
    /// the larger of the two slices' time per layer (a move of `k` layers shifts about `k c`
    /// from one to the other): the dearer estimate, since a wide slice of mostly empty or
    /// dry layers next to a narrow one full of water says little about the layers at their
    /// boundary, and underestimating them makes the boundary swing. No slice becomes
    /// thinner than [`SliceMap::min_width`]. Deterministic in `times`, so every device that
    /// sees the same times makes the same moves.
    pub fn rebalance(&mut self, times: &[f64], threshold: f64) -> Vec<Move> {
        let old = self.bounds.clone();
        let min = self.min_width();
        let mut moves = Vec::new();
        for b in 1..self.devices() {
            let (tl, tr) = (times[b - 1], times[b]);
            let (slow, diff) = (tl.max(tr), (tl - tr).abs());
            let per_layer = (tl / (old[b] - old[b - 1]).max(1) as f64).max(tr / (old[b + 1] - old[b]).max(1) as f64);
            if !slow.is_finite() || slow <= 0.0 || diff <= threshold * slow || diff <= per_layer {
                continue;
            }
            let want = ((diff / (2.0 * per_layer)).round() as i32).clamp(1, MAX_MOVE);
            // Widths with the moves so far (left) and the old boundary to the right.
            let room = if tl > tr { old[b] - self.bounds[b - 1] - min } else { old[b + 1] - old[b] - min };
            let k = want.min(room);
            if k > 0 {
                let to = if tl > tr { old[b] - k } else { old[b] + k };
                self.bounds[b] = to;
                moves.push(Move { boundary: b, from: old[b], to });
            }
        }
        moves
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_mdbc_halo_holds_the_ghosts_of_the_copies_read() {
        let text = "dp = 0.02\ntime = { end = 1.0 }\nphysics = { body_force = [0.0, -9.81] }\n\
                    [[fluid]]\nmin = [0.0, 0.0]\nmax = [1.0, 1.0]\n";
        let dbc = crate::Case::from_str(text, &[]).unwrap();
        let mdbc = crate::Case::from_str(text, &[r#"physics.boundary={kind="mdbc"}"#.into()]).unwrap();
        // CPU: cells of 2h (1 + 0.15), reach 1: a ghost lies up to 2 cells away.
        let cpu = crate::grid::Grid::new(&dbc, 0).unwrap();
        assert_eq!((halo(&dbc, &cpu), ghost_layers(&cpu), halo(&mdbc, &cpu)), (1, 2, 4));
        // GPU: cells of h (1 + 0.02), reach 2: up to 4 cells away.
        let gpu = crate::grid::Grid::with_skin(&dbc, 0, 0.02, 2).unwrap();
        assert_eq!((halo(&dbc, &gpu), ghost_layers(&gpu), halo(&mdbc, &gpu)), (2, 4, 8));
    }

    #[test]
    fn balanced_slices_split_the_weight_and_respect_the_minimum_width() {
        let m = SliceMap::balanced(&[10; 40], 4, 1).unwrap();
        assert_eq!(m.bounds, vec![0, 10, 20, 30, 40]);
        // All weight in the first layers: slices stay 2 halo thick.
        let mut w = vec![0; 20];
        w[0] = 100;
        let m = SliceMap::balanced(&w, 3, 2).unwrap();
        assert_eq!(m.bounds, vec![0, 5, 10, 20]);
        assert_eq!(m.window(1), (3, 12));
        assert_eq!(m.window(0), (0, 7));
        assert_eq!((m.owner(0), m.owner(4), m.owner(5), m.owner(19), m.owner(99)), (0, 0, 1, 2, 2));
        assert_eq!(
            (m.neighbour(0, Side::Left), m.neighbour(0, Side::Right), m.neighbour(2, Side::Right)),
            (None, Some(1), None)
        );
        let e = SliceMap::balanced(&[1; 11], 4, 1).unwrap_err();
        assert!(e.contains("at least 12 cell layers") && e.contains("at most 3 devices"), "{e}");
        // Heavier right half: more, thinner slices there.
        let w: Vec<u64> = (0..30).map(|l| if l < 15 { 1 } else { 3 }).collect();
        let m = SliceMap::balanced(&w, 2, 1).unwrap();
        assert_eq!(m.bounds, vec![0, 20, 30]);
    }

    #[test]
    fn rebalance_moves_toward_the_slower_device_by_the_layers_that_halve_the_difference() {
        let mut m = SliceMap { bounds: vec![0, 10, 20, 30], halo: 1 };
        // Device 0 slower by 0.2 s, 0.1 s a layer: one layer moves to device 1.
        let moves = m.rebalance(&[1.0, 0.8, 0.8], 0.05);
        assert_eq!(moves, vec![Move { boundary: 1, from: 10, to: 9 }]);
        assert_eq!(m.bounds, vec![0, 9, 20, 30]);
        // Device 2 slower by 1 s, 0.2 s a layer: 2.5 layers halve the difference, so three.
        let moves = m.rebalance(&[1.0, 1.0, 2.0], 0.05);
        assert_eq!(moves, vec![Move { boundary: 2, from: 20, to: 23 }]);
        // Far apart: at most MAX_MOVE layers at once.
        let mut m = SliceMap { bounds: vec![0, 20, 40], halo: 1 };
        assert_eq!(m.rebalance(&[1.0, 8.0], 0.05), vec![Move { boundary: 1, from: 20, to: 20 + MAX_MOVE }]);
        // A difference below one layer's work (0.1 s) or below the threshold moves nothing.
        let mut m = SliceMap { bounds: vec![0, 10, 20], halo: 1 };
        assert!(m.rebalance(&[1.0, 0.92], 0.05).is_empty());
        let mut m = SliceMap { bounds: vec![0, 100, 200], halo: 1 };
        assert!(m.rebalance(&[1.0, 0.97], 0.05).is_empty());
        assert_eq!(m.rebalance(&[1.0, 0.97], 0.01), vec![Move { boundary: 1, from: 100, to: 98 }]);
        // A wide slice (mostly dry layers) a little slower than a narrow full one: one layer
        // of the narrow one's (0.02 s) exceeds the difference, so nothing moves.
        let mut m = SliceMap { bounds: vec![0, 400, 450], halo: 1 };
        assert!(m.rebalance(&[1.015, 1.0], 0.01).is_empty());
        // Never thinner than 2 halo + 1.
        let mut m = SliceMap { bounds: vec![0, 3, 6], halo: 1 };
        assert!(m.rebalance(&[5.0, 1.0], 0.05).is_empty());
        assert!(m.rebalance(&[0.0, 0.0], 0.05).is_empty());
        let mut m = SliceMap { bounds: vec![0, 5, 20], halo: 1 };
        assert_eq!(m.rebalance(&[5.0, 1.0], 0.05), vec![Move { boundary: 1, from: 5, to: 3 }]);
    }
}
