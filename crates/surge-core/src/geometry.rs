//! Fill the case's boxes with particles on the dp lattice.

use crate::buffers::Kind;
use crate::case::{Aabb, Case, Initial, Solid};
use crate::decomp::SliceMap;
use crate::grid::Grid;
use crate::physics::constants::Constants;
use std::f64::consts::PI;
use std::ops::Range;

/// Particles of a freshly filled case, in id order: fluid boxes, then walls, then obstacles.
#[derive(Debug, Clone, Default)]
pub struct Filled {
    /// Global ids (the index in the whole fill; a [`Filled::subset`] keeps them).
    pub id: Vec<u32>,
    /// Absolute positions.
    pub pos: Vec<[f64; 3]>,
    /// Velocities.
    pub vel: Vec<[f64; 3]>,
    /// Relative densities `rho/rho0 - 1`.
    pub rel_density: Vec<f32>,
    /// Kinds.
    pub kind: Vec<Kind>,
    /// Boundary particles: inward unit normal of the nearest wall surface and the distance
    /// to it; zero for fluid.
    pub wall: Vec<[f32; 4]>,
}

impl Filled {
    /// Number of particles.
    pub fn len(&self) -> usize {
        self.pos.len()
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.pos.is_empty()
    }
    /// Number of fluid particles.
    pub fn fluid_count(&self) -> usize {
        self.kind.iter().filter(|k| **k == Kind::Fluid).count()
    }
    /// The cell layer along `grid`'s split axis that holds each particle (clamped into the
    /// grid): what the slices of a decomposition are cut by.
    pub fn layers(&self, grid: &Grid) -> Vec<i32> {
        let (axis, last) = (grid.split_axis(), grid.layers() - 1);
        self.pos.iter().map(|&x| grid.locate(x).0[axis].clamp(0, last)).collect()
    }

    /// The weight of each layer for the first cut ([`crate::decomp::cost_weight`] summed
    /// over its particles); `layers` from [`Filled::layers`].
    pub fn layer_weights(&self, layers: &[i32], grid: &Grid) -> Vec<u64> {
        crate::decomp::layer_weights(grid.layers(), layers.iter().zip(&self.kind).map(|(&l, &k)| (l, k as u32)))
    }

    /// The particles device `d` of `map` owns (`layers` from [`Filled::layers`]).
    pub fn owned_by(&self, layers: &[i32], map: &SliceMap, d: usize) -> Filled {
        self.subset(|i| map.owner(layers[i]) == d)
    }

    /// The particles for which `keep(index)` holds, with their global ids.
    pub fn subset(&self, keep: impl Fn(usize) -> bool) -> Filled {
        let mut out = Filled::default();
        for i in (0..self.len()).filter(|&i| keep(i)) {
            out.id.push(self.id[i]);
            out.pos.push(self.pos[i]);
            out.vel.push(self.vel[i]);
            out.rel_density.push(self.rel_density[i]);
            out.kind.push(self.kind[i]);
            out.wall.push(self.wall[i]);
        }
        out
    }
    fn push(&mut self, x: [f64; 3], v: [f64; 3], d: f32, k: Kind, wall: [f32; 4]) {
        self.id.push(self.pos.len() as u32);
        self.pos.push(x);
        self.vel.push(v);
        self.rel_density.push(d);
        self.kind.push(k);
        self.wall.push(wall);
    }
}

/// Lattice coordinates along one axis: `min + (i + 1/2) dp` for the particles that fit.
fn lattice(min: f64, max: f64, dp: f64) -> impl Iterator<Item = f64> {
    let n = ((max - min) / dp + 1e-6).floor().max(1.0) as usize;
    (0..n).map(move |i| min + (i as f64 + 0.5) * dp)
}

/// The global ids of a solid's particles as [`fill`] numbers them (fluid boxes, then each
/// wall, then each obstacle, in case order; [`counts`]): each solid is one range, found
/// without filling.
pub fn solid_ids(case: &Case, solid: Solid) -> Range<u32> {
    let c = counts(case);
    let walls: u64 = c.walls.iter().sum();
    let (start, len) = match solid {
        Solid::Wall(k) => (c.fluid + c.walls[..k].iter().sum::<u64>(), c.walls[k]),
        Solid::Obstacle(k) => (c.fluid + walls + c.obstacles[..k].iter().sum::<u64>(), c.obstacles[k]),
    };
    start as u32..(start + len) as u32
}

fn for_each_point(b: &Aabb, dim: usize, dp: f64, mut f: impl FnMut([f64; 3])) {
    let zs: Vec<f64> = if dim == 3 { lattice(b.min[2], b.max[2], dp).collect() } else { vec![0.0] };
    let ys: Vec<f64> = lattice(b.min[1], b.max[1], dp).collect();
    for &z in &zs {
        for &y in &ys {
            for x in lattice(b.min[0], b.max[0], dp) {
                f([x, y, z]);
            }
        }
    }
}

/// Particles that [`fill`] makes, counted without making them (a case's size before it is
/// built: memory checks, the share of fluid that left). Ids follow this order too: fluid
/// boxes, then each wall, then each obstacle.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Counts {
    /// Fluid particles.
    pub fluid: u64,
    /// Boundary particles of each wall.
    pub walls: Vec<u64>,
    /// Boundary particles of each obstacle.
    pub obstacles: Vec<u64>,
}

impl Counts {
    /// Every particle.
    pub fn total(&self) -> u64 {
        self.fluid + self.walls.iter().sum::<u64>() + self.obstacles.iter().sum::<u64>()
    }
}

/// Lattice points of a box (the count [`for_each_point`] visits).
fn box_count(b: &Aabb, dim: usize, dp: f64) -> u64 {
    (0..dim).map(|a| lattice(b.min[a], b.max[a], dp).count() as u64).product()
}

/// Count what [`fill`] would make: a wall is the lattice of its outer box less that of its
/// enclosed box, axis by axis as the fill walks them.
pub fn counts(case: &Case) -> Counts {
    let (dim, dp) = (case.dim, case.dp);
    let walls = case
        .walls
        .iter()
        .map(|w| {
            let inner: Vec<u64> =
                (0..dim).map(|a| lattice(w.inner.min[a], w.inner.max[a], dp).count() as u64).collect();
            let outer: u64 =
                (0..dim).map(|a| inner[a] + w.layers as u64 * (w.faces[a][0] as u64 + w.faces[a][1] as u64)).product();
            outer - inner.iter().product::<u64>()
        })
        .collect();
    Counts {
        fluid: case.fluid.iter().map(|b| box_count(b, dim, dp)).sum(),
        walls,
        obstacles: case.obstacles.iter().map(|b| box_count(b, dim, dp)).collect(),
    }
}

/// Fill every box of the case.
pub fn fill(case: &Case) -> Filled {
    let mut out = Filled::default();
    let consts = Constants::of(case);
    let dp = case.dp;
    let dim = case.dim;
    for b in &case.fluid {
        for_each_point(b, dim, dp, |x| {
            let (v, d) = initial_state(case, &consts, b, x);
            out.push(x, v, d, Kind::Fluid, [0.0; 4]);
        });
    }
    for w in &case.walls {
        // Per axis: layer coordinates outside the low face, the lattice inside, layers outside
        // the high face; a point belongs to the wall when any coordinate is outside.
        let axes: Vec<Vec<(f64, bool)>> = (0..3)
            .map(|a| {
                if a >= dim {
                    return vec![(0.0, false)];
                }
                let mut v: Vec<(f64, bool)> = Vec::new();
                if w.faces[a][0] {
                    v.extend((0..w.layers).rev().map(|k| (w.inner.min[a] - (k as f64 + 0.5) * dp, true)));
                }
                v.extend(lattice(w.inner.min[a], w.inner.max[a], dp).map(|x| (x, false)));
                if w.faces[a][1] {
                    v.extend((0..w.layers).map(|k| (w.inner.max[a] + (k as f64 + 0.5) * dp, true)));
                }
                v
            })
            .collect();
        for &(z, oz) in &axes[2] {
            for &(y, oy) in &axes[1] {
                for &(x, ox) in &axes[0] {
                    if ox || oy || oz {
                        // The nearest point of the enclosed box is the wall surface point.
                        let p = [x, y, z];
                        let q: [f64; 3] = std::array::from_fn(|a| p[a].clamp(w.inner.min[a], w.inner.max[a]));
                        out.push(p, w.velocity, 0.0, Kind::Boundary, normal_to(p, q));
                    }
                }
            }
        }
    }
    for b in &case.obstacles {
        for_each_point(b, dim, dp, |x| {
            // The nearest face of the box, seen from inside.
            let (a, hi) = (0..dim)
                .flat_map(|a| [(a, false), (a, true)])
                .min_by(|p, q| face_distance(b, x, *p).total_cmp(&face_distance(b, x, *q)))
                .expect("at least one axis");
            let mut q = x;
            q[a] = if hi { b.max[a] } else { b.min[a] };
            out.push(x, [0.0; 3], 0.0, Kind::Boundary, normal_to(x, q));
        });
    }
    if case.hydrostatic_start {
        let first_boundary = out.fluid_count();
        for i in first_boundary..out.len() {
            out.rel_density[i] = boundary_hydrostatic(case, &consts, out.pos[i]);
        }
    }
    out
}

/// Height of x along the body force (`g . x`) and of the top of fluid box b.
fn depth_terms(case: &Case, b: &Aabb, x: [f64; 3]) -> (f64, f64) {
    let g = case.body_force;
    let down = |p: [f64; 3]| g[0] * p[0] + g[1] * p[1] + g[2] * p[2];
    let top = (0..8)
        .map(|k| down(std::array::from_fn(|a| if k >> a & 1 == 0 { b.min[a] } else { b.max[a] })))
        .fold(f64::INFINITY, f64::min);
    (down(x), top)
}

/// A boundary particle under (or beside, within the kernel support) a fluid box starts at
/// that column's hydrostatic pressure, so the fluid does not sink into the wall at start.
fn boundary_hydrostatic(case: &Case, c: &Constants, x: [f64; 3]) -> f32 {
    let g = case.body_force;
    let g2 = g.iter().map(|c| c * c).sum::<f64>();
    let mut p = 0.0f64;
    for b in &case.fluid {
        let d: [f64; 3] = std::array::from_fn(|a| x[a] - x[a].clamp(b.min[a], b.max[a]));
        let along = (d[0] * g[0] + d[1] * g[1] + d[2] * g[2]) / g2;
        let perp2: f64 = (0..3).map(|a| (d[a] - along * g[a]).powi(2)).sum();
        if perp2 <= (2.0 * case.h).powi(2) {
            let (here, top) = depth_terms(case, b, x);
            p = p.max(case.rho0 * (here - top));
        }
    }
    c.rel_density(p as f32 + c.pb)
}

fn face_distance(b: &Aabb, x: [f64; 3], (a, hi): (usize, bool)) -> f64 {
    if hi {
        b.max[a] - x[a]
    } else {
        x[a] - b.min[a]
    }
}

/// Unit vector from p towards the surface point q, and the distance.
fn normal_to(p: [f64; 3], q: [f64; 3]) -> [f32; 4] {
    let d: [f64; 3] = std::array::from_fn(|a| q[a] - p[a]);
    let len = (d[0] * d[0] + d[1] * d[1] + d[2] * d[2]).sqrt();
    [(d[0] / len) as f32, (d[1] / len) as f32, (d[2] / len) as f32, len as f32]
}

/// Initial velocity and relative density of a fluid particle at x in fluid box b.
fn initial_state(case: &Case, c: &Constants, b: &Aabb, x: [f64; 3]) -> ([f64; 3], f32) {
    let p_static = if case.hydrostatic_start {
        // Depth below the box's highest point along the body force.
        let (here, top) = depth_terms(case, b, x);
        case.rho0 * (here - top)
    } else {
        0.0
    };
    match case.initial {
        Initial::Constant(v) => (v, c.rel_density(p_static as f32 + c.pb)),
        Initial::TaylorGreen { u0 } => {
            let l = case.domain.max[0] - case.domain.min[0];
            let k = 2.0 * PI / l;
            let (px, py) = (x[0] - case.domain.min[0], x[1] - case.domain.min[1]);
            let v = [-u0 * (k * px).cos() * (k * py).sin(), u0 * (k * px).sin() * (k * py).cos(), 0.0];
            let p = p_static - case.rho0 * u0 * u0 / 4.0 * ((2.0 * k * px).cos() + (2.0 * k * py).cos());
            (v, c.rel_density(p as f32 + c.pb))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::buffers::Kind;

    /// The counts agree with the fill, object by object, for walls with some faces open.
    #[test]
    fn counts_match_the_fill() {
        for text in [
            r#"dp = 0.1
               time = { end = 1.0 }
               physics = { body_force = [0.0, -9.81] }
               fluid = [{ min = [0.0, 0.0], max = [1.0, 0.55] }]
               wall = [{ min = [0.0, 0.0], max = [2.0, 1.3], faces = ["x-", "x+", "y-"] }]
               obstacle = [{ min = [1.5, 0.0], max = [1.7, 0.33] }]"#,
            r#"dp = 0.05
               time = { end = 1.0 }
               physics = { body_force = [0.0, 0.0, -9.81] }
               fluid = [{ min = [0.0, 0.0, 0.0], max = [0.5, 0.3, 0.2] }]
               wall = [{ min = [0.0, 0.0, 0.0], max = [1.0, 0.3, 0.4], faces = ["x-", "x+", "y-", "y+", "z-"] },
                       { min = [0.2, 0.1, 0.3], max = [0.3, 0.2, 0.35], layers = 1 }]
               obstacle = [{ min = [0.7, 0.1, 0.0], max = [0.8, 0.2, 0.1] }]"#,
        ] {
            let case = Case::from_str(text, &[]).unwrap_or_else(|e| panic!("{e}"));
            let f = fill(&case);
            let c = counts(&case);
            assert_eq!(c.fluid as usize, f.fluid_count());
            assert_eq!(c.total() as usize, f.len());
            let boundary = f.kind.iter().filter(|&&k| k == Kind::Boundary).count() as u64;
            assert_eq!(c.walls.iter().sum::<u64>() + c.obstacles.iter().sum::<u64>(), boundary);
            assert_eq!(c.obstacles.len(), case.obstacles.len());
        }
    }

    /// Every solid's id range, counted without filling, holds exactly that solid's particles.
    #[test]
    fn solid_ids_match_the_fill() {
        for (case, dim) in [
            (
                r#"dp = 0.1
                time = { end = 1.0 }
                physics = { body_force = [0.0, -9.81] }
                fluid = [{ min = [0.0, 0.0], max = [0.4, 0.5] }, { min = [0.7, 0.0], max = [1.0, 0.3] }]
                wall = [{ min = [0.0, 0.0], max = [1.0, 1.0], faces = ["x-", "y-"] },
                        { min = [0.0, -0.3], max = [1.0, 1.0], faces = ["x+"], layers = 2 }]
                obstacle = [{ min = [0.4, 0.0], max = [0.7, 0.2] }, { min = [0.5, 0.5], max = [0.6, 0.8] }]"#,
                2,
            ),
            (
                r#"dp = 0.1
                time = { end = 1.0 }
                physics = { body_force = [0.0, 0.0, -9.81] }
                fluid = [{ min = [0.0, 0.0, 0.0], max = [0.4, 0.5, 0.3] }]
                wall = [{ min = [0.0, 0.0, 0.0], max = [1.0, 0.5, 1.0] }]
                obstacle = [{ min = [0.6, 0.1, 0.0], max = [0.8, 0.3, 0.2] }]"#,
                3,
            ),
        ] {
            let case = Case::from_str(case, &[]).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(case.dim, dim);
            let filled = fill(&case);
            let solids = (0..case.walls.len()).map(Solid::Wall).chain((0..case.obstacles.len()).map(Solid::Obstacle));
            let mut next = filled.fluid_count() as u32;
            for s in solids {
                let r = solid_ids(&case, s);
                assert_eq!(r.start, next, "{s:?}");
                assert!(r.end > r.start, "{s:?}");
                let inside = |b: &Aabb, x: [f64; 3]| (0..dim).all(|a| b.min[a] < x[a] && x[a] < b.max[a]);
                for i in r.clone() {
                    let x = filled.pos[i as usize];
                    let ok = match s {
                        Solid::Wall(k) => inside(&case.walls[k].outer(case.dp), x) && !inside(&case.walls[k].inner, x),
                        Solid::Obstacle(k) => inside(&case.obstacles[k], x),
                    };
                    assert!(ok, "particle {i} at {x:?} is not in {s:?}");
                }
                next = r.end;
            }
            assert_eq!(next as usize, filled.len());
        }
    }
}
