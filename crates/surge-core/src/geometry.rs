//! Fill the case's boxes with particles on the dp lattice.

use crate::buffers::Kind;
use crate::case::{Aabb, Case, Initial};
use crate::physics::eos::tait_density;
use std::f64::consts::PI;

/// Particles of a freshly filled case, in id order: fluid boxes, then walls, then obstacles.
#[derive(Debug, Clone, Default)]
pub struct Filled {
    /// Absolute positions.
    pub pos: Vec<[f64; 3]>,
    /// Velocities.
    pub vel: Vec<[f64; 3]>,
    /// Relative densities `rho/rho0 - 1`.
    pub rel_density: Vec<f32>,
    /// Kinds.
    pub kind: Vec<Kind>,
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
    fn push(&mut self, x: [f64; 3], v: [f64; 3], d: f32, k: Kind) {
        self.pos.push(x);
        self.vel.push(v);
        self.rel_density.push(d);
        self.kind.push(k);
    }
}

/// Lattice coordinates along one axis: `min + (i + 1/2) dp` for the particles that fit.
fn lattice(min: f64, max: f64, dp: f64) -> impl Iterator<Item = f64> {
    let n = ((max - min) / dp + 1e-6).floor().max(1.0) as usize;
    (0..n).map(move |i| min + (i as f64 + 0.5) * dp)
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

/// Fill every box of the case.
pub fn fill(case: &Case) -> Filled {
    let mut out = Filled::default();
    let dp = case.dp;
    let dim = case.dim;
    for b in &case.fluid {
        for_each_point(b, dim, dp, |x| {
            let (v, d) = initial_state(case, x);
            out.push(x, v, d, Kind::Fluid);
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
                        out.push([x, y, z], w.velocity, 0.0, Kind::Boundary);
                    }
                }
            }
        }
    }
    for b in &case.obstacles {
        for_each_point(b, dim, dp, |x| out.push(x, [0.0; 3], 0.0, Kind::Boundary));
    }
    out
}

/// Initial velocity and relative density of a fluid particle at x.
fn initial_state(case: &Case, x: [f64; 3]) -> ([f64; 3], f32) {
    match case.initial {
        Initial::Constant(v) => (v, 0.0),
        Initial::TaylorGreen { u0 } => {
            let l = case.domain.max[0] - case.domain.min[0];
            let k = 2.0 * PI / l;
            let (px, py) = (x[0] - case.domain.min[0], x[1] - case.domain.min[1]);
            let v = [-u0 * (k * px).cos() * (k * py).sin(), u0 * (k * px).sin() * (k * py).cos(), 0.0];
            let p = -case.rho0 * u0 * u0 / 4.0 * ((2.0 * k * px).cos() + (2.0 * k * py).cos());
            let pb = case.background_pressure as f32;
            (v, tait_density(p as f32 + pb, case.tait_b as f32, case.gamma as f32, pb))
        }
    }
}
