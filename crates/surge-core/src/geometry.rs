//! Fill the case's boxes and shapes with particles on the dp lattice.
//!
//! An axis-aligned box is filled at `min + (i + 1/2) dp`, as it always was; any other shape
//! ([`crate::shape`]) on the lattice anchored the same way at its bounding box's lower
//! corner, so a box given as a mesh fills exactly like the box. A shape's wall is the
//! lattice points within `layers * dp` of its surface on one side (outside by default), each
//! with the unit vector to its nearest surface point (towards the fluid) and the distance.
//! Fluid is cut where it would overlap a shaped solid: a fluid particle stays only on the
//! fluid side of the surface and at least dp/2 from it (the gap a box-aligned fill has).
//! Every walk runs in a fixed order (regions in case order, then z, y, x), so the particles
//! and their ids are the same on every run and every decomposition. The walks are parallel
//! (rayon) over blocks of lattice rows: each block makes its rows' particles in walk order and
//! the blocks are joined in row order, so the result is that of the serial walk, bit for bit,
//! on any number of threads.

use crate::buffers::Kind;
use crate::case::{Aabb, Case, Initial, Solid, Wall};
use crate::decomp::SliceMap;
use crate::grid::Grid;
use crate::physics::constants::Constants;
use crate::shape::{Primitive, Shape};
use rayon::prelude::*;
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
    /// Append the particles of `part` (a block of rows filled on its own), numbering them on
    /// from this one's.
    fn append(&mut self, part: Filled) {
        let base = self.len() as u32;
        self.id.extend((0..part.len() as u32).map(|i| base + i));
        self.pos.extend_from_slice(&part.pos);
        self.vel.extend_from_slice(&part.vel);
        self.rel_density.extend_from_slice(&part.rel_density);
        self.kind.extend_from_slice(&part.kind);
        self.wall.extend_from_slice(&part.wall);
    }
    fn reserve(&mut self, n: usize) {
        self.id.reserve(n);
        self.pos.reserve(n);
        self.vel.reserve(n);
        self.rel_density.reserve(n);
        self.kind.reserve(n);
        self.wall.reserve(n);
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

/// Lattice coordinates along x, y and z (a single 0 along z in 2D), walked in z, y, x order.
type Axes = [Vec<f64>; 3];

/// The lattice of a box: [`lattice`] along each axis.
fn box_axes(b: &Aabb, dim: usize, dp: f64) -> Axes {
    std::array::from_fn(|a| if a < dim { lattice(b.min[a], b.max[a], dp).collect() } else { vec![0.0] })
}

/// Rows along x of a lattice: one for each (y, z), z outer.
fn row_count<T>(axes: &[Vec<T>; 3]) -> usize {
    axes[1].len() * axes[2].len()
}

/// Row `r` of a lattice: its (y, z) coordinates.
fn row<T: Copy>(axes: &[Vec<T>; 3], r: usize) -> (T, T) {
    let ny = axes[1].len();
    (axes[1][r % ny], axes[2][r / ny])
}

/// `block` run on consecutive blocks of the rows `0..rows`, in parallel on the current rayon
/// pool; the results in row order. How the rows are cut changes nothing but the speed, as
/// long as each block walks its rows in order.
fn par_rows<T: Send>(rows: usize, block: impl Fn(Range<usize>) -> T + Sync) -> Vec<T> {
    // Several blocks a thread: rows through a shape's surface cost more than the others.
    let blocks = (rayon::current_num_threads() * 16).clamp(1, rows.max(1));
    (0..blocks).into_par_iter().map(|b| block(b * rows / blocks..(b + 1) * rows / blocks)).collect()
}

/// The points that `visit` yields on the rows `0..rows`, counted in parallel.
fn count_rows(rows: usize, visit: impl Fn(Range<usize>, &mut dyn FnMut()) + Sync) -> u64 {
    par_rows(rows, |r| {
        let mut n = 0u64;
        visit(r, &mut || n += 1);
        n
    })
    .into_iter()
    .sum()
}

/// The particles that `make` pushes on the rows `0..rows`, made in parallel and appended to
/// `out` in row order (a block's own ids are replaced by their place in `out`); on one
/// thread pushed straight into `out`, as the serial walk did (no block to copy).
fn fill_rows(out: &mut Filled, rows: usize, make: impl Fn(Range<usize>, &mut Filled) + Sync) {
    if rayon::current_num_threads() == 1 {
        make(0..rows, out);
        return;
    }
    let parts = par_rows(rows, |r| {
        let mut part = Filled::default();
        make(r, &mut part);
        part
    });
    for part in parts {
        out.append(part);
    }
}

/// The points of rows `rows` of `axes`, in walk order.
fn for_each_point(axes: &Axes, rows: Range<usize>, mut f: impl FnMut([f64; 3])) {
    for r in rows {
        let (y, z) = row(axes, r);
        for &x in &axes[0] {
            f([x, y, z]);
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
    /// The inlets' buffer particles at the start.
    pub open: u64,
}

impl Counts {
    /// Every particle.
    pub fn total(&self) -> u64 {
        self.fluid + self.walls.iter().sum::<u64>() + self.obstacles.iter().sum::<u64>() + self.open
    }
}

/// A shaped solid that fluid keeps away from: its surface, which side is solid, and how
/// thick the solid is on that side (a wall's layers; an obstacle is solid all through).
struct Cutter {
    shape: std::sync::Arc<Shape>,
    solid_inside: bool,
    thickness: f64,
    reach: Aabb,
}

impl Cutter {
    fn new(shape: std::sync::Arc<Shape>, solid_inside: bool, thickness: f64, dp: f64) -> Cutter {
        let g = if solid_inside { dp } else { thickness + dp };
        let b = shape.bbox;
        let reach = Aabb { min: b.min.map(|x| x - g), max: b.max.map(|x| x + g) };
        Cutter { shape, solid_inside, thickness, reach }
    }

    /// True when a fluid particle at `p` would overlap the solid: on its solid side within
    /// its thickness plus dp/2, or on the fluid side closer than dp/2 to the surface.
    fn cuts(&self, p: [f64; 3], dim: usize, dp: f64) -> bool {
        if !(0..dim).all(|a| self.reach.min[a] <= p[a] && p[a] <= self.reach.max[a]) {
            return false;
        }
        let tol = 1e-9 * dp;
        if self.thickness.is_finite() {
            // A wall: most fluid lies farther from its surface than its thickness, which the
            // nearest-point query tells without the (costlier) inside test.
            let Some(q) = self.shape.nearest(p) else { return false };
            let d = distance(p, q);
            if d >= self.thickness + 0.5 * dp - tol {
                return false;
            }
            let solid_side = self.shape.inside(p) == self.solid_inside;
            return d < if solid_side { self.thickness + 0.5 * dp } else { 0.5 * dp } - tol;
        }
        let solid_side = self.shape.inside(p) == self.solid_inside;
        if solid_side {
            return true;
        }
        match self.shape.nearest(p) {
            Some(q) => distance(p, q) < 0.5 * dp - tol,
            None => false,
        }
    }
}

fn distance(p: [f64; 3], q: [f64; 3]) -> f64 {
    ((p[0] - q[0]).powi(2) + (p[1] - q[1]).powi(2) + (p[2] - q[2]).powi(2)).sqrt()
}

/// The solids that cut fluid region `k`: every shaped wall and obstacle, and for a shaped
/// fluid region the box obstacles too (two boxes that overlap are refused when the case is
/// checked, so a box fluid is never cut by a box).
fn cutters(case: &Case, k: usize) -> Vec<Cutter> {
    let dp = case.dp;
    let mut out = Vec::new();
    for w in &case.walls {
        if let Some(s) = &w.shape {
            out.push(Cutter::new(s.clone(), w.inside, w.layers as f64 * dp, dp));
        }
    }
    for (b, s) in case.obstacles.iter().zip(&case.obstacle_shapes) {
        match s {
            Some(s) => out.push(Cutter::new(s.clone(), true, f64::INFINITY, dp)),
            None if case.fluid_shapes[k].is_some() => {
                let s = Shape::new(
                    "box",
                    Primitive::Box { min: b.min, max: b.max },
                    crate::shape::Placement::IDENTITY,
                    case.dim,
                );
                out.push(Cutter::new(std::sync::Arc::new(s), true, f64::INFINITY, dp));
            }
            None => {}
        }
    }
    out
}

/// Visit the lattice points of rows `rows` of `axes[2] x axes[1] x axes[0]` (z, y, x order)
/// with whether each is inside `shape`; a mesh is asked once per row along x.
fn for_each_lattice_point(shape: &Shape, axes: &Axes, rows: Range<usize>, mut f: impl FnMut([f64; 3], bool)) {
    for r in rows {
        let (y, z) = row(axes, r);
        match &shape.prim {
            Primitive::Mesh(m) => {
                let crossings = m.crossings(y, z);
                for &x in &axes[0] {
                    f([x, y, z], crate::mesh::winding_before(&crossings, x) != 0);
                }
            }
            _ => {
                for &x in &axes[0] {
                    let p = [x, y, z];
                    f(p, shape.inside(p));
                }
            }
        }
    }
}

/// The lattice of a shape's bounding box, grown by `extra` layers on each side.
fn shape_axes(b: &Aabb, dim: usize, dp: f64, extra: i64) -> Axes {
    std::array::from_fn(|a| {
        if a >= dim {
            return vec![0.0];
        }
        let n = ((b.max[a] - b.min[a]) / dp + 1e-6).floor().max(1.0) as i64;
        (-extra..n + extra).map(|i| b.min[a] + (i as f64 + 0.5) * dp).collect()
    })
}

/// The walk over fluid region `k`'s lattice, with the solids and earlier regions that cut it.
struct FluidWalk<'a> {
    dim: usize,
    dp: f64,
    cut: Vec<Cutter>,
    earlier: Vec<(Aabb, Option<&'a Shape>)>,
    shape: Option<&'a Shape>,
    axes: Axes,
}

impl<'a> FluidWalk<'a> {
    fn new(case: &'a Case, k: usize) -> FluidWalk<'a> {
        let (dim, dp) = (case.dim, case.dp);
        let shape = case.fluid_shapes[k].as_deref();
        let axes = match shape {
            None => box_axes(&case.fluid[k], dim, dp),
            Some(s) => shape_axes(&s.bbox, dim, dp, 0),
        };
        let earlier = (0..k)
            .filter(|&j| case.fluid_shapes[j].is_some() || shape.is_some())
            .map(|j| (case.fluid[j], case.fluid_shapes[j].as_deref()))
            .collect();
        FluidWalk { dim, dp, cut: cutters(case, k), earlier, shape, axes }
    }

    fn rows(&self) -> usize {
        row_count(&self.axes)
    }

    /// The fluid particles of rows `rows` in fill order (after cuts by solids and by earlier
    /// shaped fluid regions).
    fn points(&self, rows: Range<usize>, mut f: impl FnMut([f64; 3])) {
        let (dim, dp) = (self.dim, self.dp);
        let keep = |p: [f64; 3]| {
            !self.cut.iter().any(|c| c.cuts(p, dim, dp))
                && !self.earlier.iter().any(|(b, s)| match s {
                    Some(s) => s.inside(p),
                    None => (0..dim).all(|a| b.min[a] <= p[a] && p[a] <= b.max[a]),
                })
        };
        match self.shape {
            None => for_each_point(&self.axes, rows, |p| {
                if keep(p) {
                    f(p)
                }
            }),
            Some(s) => for_each_lattice_point(s, &self.axes, rows, |p, inside| {
                if inside && keep(p) {
                    f(p)
                }
            }),
        }
    }
}

/// The lattice a shaped wall is walked on: its shape's, grown by the layers outside.
fn wall_axes(case: &Case, w: &Wall, s: &Shape) -> Axes {
    let extra = if w.inside { 0 } else { w.layers as i64 + 1 };
    shape_axes(&s.bbox, case.dim, case.dp, extra)
}

/// The particles of rows `rows` of a shaped wall (`axes` from [`wall_axes`]): lattice points
/// on its side of the surface, closer to it than `layers * dp`, with the unit vector to the
/// nearest surface point and the distance.
fn wall_points(
    case: &Case,
    w: &Wall,
    s: &Shape,
    axes: &Axes,
    rows: Range<usize>,
    mut f: impl FnMut([f64; 3], [f32; 4]),
) {
    let thickness = w.layers as f64 * case.dp;
    for_each_lattice_point(s, axes, rows, |p, inside| {
        if inside != w.inside {
            return;
        }
        if let Some(q) = s.nearest(p) {
            let d = distance(p, q);
            if d > 0.0 && d < thickness {
                f(p, normal_to(p, q));
            }
        }
    });
}

/// The particles of rows `rows` of a shaped obstacle (`axes`: its shape's lattice): the
/// lattice points inside, each with the unit vector to its nearest surface point; a point
/// deeper than a mesh's reach (beyond the kernel support: no fluid sees it) gets a zero normal
/// and that reach as its distance.
fn obstacle_points(s: &Shape, axes: &Axes, rows: Range<usize>, mut f: impl FnMut([f64; 3], [f32; 4])) {
    let deep = match &s.prim {
        Primitive::Mesh(m) => m.reach() as f32,
        _ => 0.0,
    };
    for_each_lattice_point(s, axes, rows, |p, inside| {
        if inside {
            let wall = match s.nearest(p) {
                Some(q) if distance(p, q) > 0.0 => normal_to(p, q),
                Some(_) => [0.0; 4],
                None => [0.0, 0.0, 0.0, deep],
            };
            f(p, wall)
        }
    });
}

/// Fluid particles of each fluid region, counted without making them (by a counting pass
/// over the lattice where shapes are involved).
pub fn fluid_counts(case: &Case) -> Vec<u64> {
    if let Some(c) = &case.counted {
        return c.0.clone();
    }
    let plain = case.fluid_shapes.iter().all(Option::is_none)
        && case.walls.iter().all(|w| w.shape.is_none())
        && case.obstacle_shapes.iter().all(Option::is_none);
    (0..case.fluid.len())
        .map(|k| {
            if plain {
                box_count(&case.fluid[k], case.dim, case.dp)
            } else {
                let walk = FluidWalk::new(case, k);
                count_rows(walk.rows(), |r, n| walk.points(r, |_| n()))
            }
        })
        .collect()
}

/// Lattice points of a box (the count [`box_axes`] holds).
fn box_count(b: &Aabb, dim: usize, dp: f64) -> u64 {
    (0..dim).map(|a| lattice(b.min[a], b.max[a], dp).count() as u64).product()
}

/// Count what [`fill`] would make: a box wall is the lattice of its outer box less that of
/// its enclosed box, axis by axis as the fill walks them; shapes are counted exactly by a
/// pass over their lattice that makes no particle (as long as the surface queries take,
/// without the memory).
pub fn counts(case: &Case) -> Counts {
    match &case.counted {
        Some(c) => c.1.clone(),
        None => count_with(case, &fluid_counts(case)),
    }
}

/// [`counts`] given the particles of each fluid region ([`fluid_counts`]).
pub fn count_with(case: &Case, fluid: &[u64]) -> Counts {
    let (dim, dp) = (case.dim, case.dp);
    let walls = case
        .walls
        .iter()
        .map(|w| {
            if let Some(s) = &w.shape {
                let axes = wall_axes(case, w, s);
                return count_rows(row_count(&axes), |r, n| wall_points(case, w, s, &axes, r, |_, _| n()));
            }
            let inner: Vec<u64> =
                (0..dim).map(|a| lattice(w.inner.min[a], w.inner.max[a], dp).count() as u64).collect();
            let outer: u64 =
                (0..dim).map(|a| inner[a] + w.layers as u64 * (w.faces[a][0] as u64 + w.faces[a][1] as u64)).product();
            outer - inner.iter().product::<u64>()
        })
        .collect();
    let obstacles = case
        .obstacles
        .iter()
        .zip(&case.obstacle_shapes)
        .map(|(b, s)| match s {
            None => box_count(b, dim, dp),
            Some(s) => {
                let axes = shape_axes(&s.bbox, dim, dp, 0);
                count_rows(row_count(&axes), |r, n| obstacle_points(s, &axes, r, |_, _| n()))
            }
        })
        .collect();
    let open = case.open.iter().filter(|z| z.inlet).map(|z| z.columns(dim, dp).len() as u64 * z.layers as u64).sum();
    Counts { fluid: fluid.iter().sum(), walls, obstacles, open }
}

/// Fill obstacle `k` of the case into `out`.
fn fill_obstacle(case: &Case, k: usize, out: &mut Filled) {
    let (dim, dp) = (case.dim, case.dp);
    let b = &case.obstacles[k];
    if let Some(s) = &case.obstacle_shapes[k] {
        let axes = shape_axes(&s.bbox, dim, dp, 0);
        fill_rows(out, row_count(&axes), |r, part| {
            obstacle_points(s, &axes, r, |p, n| part.push(p, [0.0; 3], 0.0, Kind::Boundary, n))
        });
        return;
    }
    let axes = box_axes(b, dim, dp);
    fill_rows(out, row_count(&axes), |r, part| {
        for_each_point(&axes, r, |x| {
            // The nearest face of the box, seen from inside.
            let (a, hi) = (0..dim)
                .flat_map(|a| [(a, false), (a, true)])
                .min_by(|p, q| face_distance(b, x, *p).total_cmp(&face_distance(b, x, *q)))
                .expect("at least one axis");
            let mut q = x;
            q[a] = if hi { b.max[a] } else { b.min[a] };
            part.push(x, [0.0; 3], 0.0, Kind::Boundary, normal_to(x, q));
        })
    });
}

/// The positions of obstacle `k`'s particles, in id order (what [`fill`] gives it).
pub fn obstacle_positions(case: &Case, k: usize) -> Vec<[f64; 3]> {
    let mut out = Filled::default();
    fill_obstacle(case, k, &mut out);
    out.pos
}

/// The constant properties of the case's floating bodies, from their particles.
pub fn body_frames(case: &Case) -> Vec<crate::bodies::BodyFrame> {
    let g = case.body_force.iter().map(|x| x * x).sum::<f64>().sqrt();
    case.bodies
        .iter()
        .map(|b| {
            let Solid::Obstacle(k) = b.solid else { unreachable!("a body is an obstacle") };
            let points = obstacle_positions(case, k);
            crate::bodies::frame_of(b, solid_ids(case, b.solid), &points, case.dp, case.dim, g)
        })
        .collect()
}

/// Fill every box and shape of the case: each region's lattice in parallel over blocks of
/// rows, joined in row order (the particles and ids of a serial walk on any thread count).
pub fn fill(case: &Case) -> Filled {
    let mut out = Filled::default();
    let consts = Constants::of(case);
    let dp = case.dp;
    let dim = case.dim;
    // The exact size where it is known without a pass over the shapes: no array grows (and
    // is copied) while the blocks are appended.
    let shaped = case.fluid_shapes.iter().chain(&case.obstacle_shapes).any(Option::is_some)
        || case.walls.iter().any(|w| w.shape.is_some());
    if case.counted.is_some() || !shaped {
        out.reserve(counts(case).total() as usize);
    }
    for (k, b) in case.fluid.iter().enumerate() {
        let walk = FluidWalk::new(case, k);
        fill_rows(&mut out, walk.rows(), |r, part| {
            walk.points(r, |x| {
                let (v, d) = initial_state(case, &consts, b, x);
                part.push(x, v, d, Kind::Fluid, [0.0; 4]);
            })
        });
    }
    for w in &case.walls {
        if let Some(s) = &w.shape {
            let axes = wall_axes(case, w, s);
            fill_rows(&mut out, row_count(&axes), |r, part| {
                wall_points(case, w, s, &axes, r, |p, n| part.push(p, w.velocity, 0.0, Kind::Boundary, n))
            });
            continue;
        }
        // Per axis: layer coordinates outside the low face, the lattice inside, layers outside
        // the high face; a point belongs to the wall when any coordinate is outside.
        let axes: [Vec<(f64, bool)>; 3] = std::array::from_fn(|a| {
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
        });
        fill_rows(&mut out, row_count(&axes), |rows, part| {
            for r in rows {
                let ((y, oy), (z, oz)) = row(&axes, r);
                for &(x, ox) in &axes[0] {
                    if ox || oy || oz {
                        // The nearest point of the enclosed box is the wall surface point.
                        let p = [x, y, z];
                        let q: [f64; 3] = std::array::from_fn(|a| p[a].clamp(w.inner.min[a], w.inner.max[a]));
                        part.push(p, w.velocity, 0.0, Kind::Boundary, normal_to(p, q));
                    }
                }
            }
        });
    }
    for k in 0..case.obstacles.len() {
        fill_obstacle(case, k, &mut out);
    }
    fill_inlets(case, &mut out);
    if case.hydrostatic_start {
        let first_boundary = out.fluid_count();
        out.rel_density[first_boundary..]
            .par_iter_mut()
            .zip(&out.pos[first_boundary..])
            .for_each(|(d, &x)| *d = boundary_hydrostatic(case, &consts, x));
    }
    out
}

/// The inlets' buffer particles, last: layer g (0 next to the plane) of every inlet's
/// columns, g outermost, so that particle `first + column + open_columns g` has that id
/// ([`crate::open`]). Each moves at the inlet's speed at t = 0 (rest where extrapolated).
fn fill_inlets(case: &Case, out: &mut Filled) {
    let (dim, dp) = (case.dim, case.dp);
    let inlets: Vec<_> = case.open.iter().filter(|z| z.inlet).map(|z| (z, z.columns(dim, dp))).collect();
    let layers = inlets.iter().map(|(z, _)| z.layers).max().unwrap_or(0);
    let (first, columns) = (out.len() as u32, case.open_columns);
    for g in 0..layers {
        for (z, cols) in &inlets {
            for (k, &c) in cols.iter().enumerate() {
                let mut x = c;
                x[z.axis] = z.plane - z.sign * (g as f64 + 0.5) * dp;
                let mut v = [0.0; 3];
                v[z.axis] = z.sign * z.speed(0.0).unwrap_or(0.0) * z.profile_at(x, dim);
                // A thinner inlet leaves its deeper layers' ids unused.
                if g < z.layers {
                    out.push(x, v, 0.0, Kind::Buffer, [0.0; 4]);
                    *out.id.last_mut().expect("pushed") = first + z.first_column + k as u32 + columns * g;
                }
            }
        }
    }
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
