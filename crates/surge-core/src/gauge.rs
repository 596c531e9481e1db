//! Gauge evaluation on top of what a backend can interpolate and sum.

use crate::case::{Case, Gauge};
use crate::geometry::solid_ids;
use std::ops::Range;

/// The force of the fluid on one boundary particle ([`Interpolate::boundary_loads`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct ParticleLoad {
    /// Global id.
    pub id: u32,
    /// Absolute position.
    pub pos: [f64; 3],
    /// Force of the fluid on the particle (N; N per metre of depth in 2D).
    pub force: [f32; 3],
}

/// What a backend provides so gauges can be evaluated where the particles live.
/// Points come in one batch so a device answers them in one launch.
pub trait Interpolate {
    /// Kernel sums over fluid particles j within the support of each point x:
    /// `(sum W_j V_j, sum p_j W_j V_j)` with `V_j = m_j / rho_j`, one pair per point.
    fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String>;
    /// Largest coordinate along `axis` of fluid whose vertical coordinate is below `below`;
    /// `None` when no fluid qualifies.
    fn fluid_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String>;
    /// The force of the fluid on every boundary particle held as owned (copies excluded)
    /// whose id lies in one of `ids`, for those where it is not zero, in any order: minus
    /// the momentum terms (pressure and viscosity) the particle gives each fluid neighbour
    /// in the force pass, times that neighbour's mass
    /// ([`crate::physics::pair::Physics::load_pair`]), so action is minus reaction pair by
    /// pair. Pressures come from the densities now (not from the last force pass). Each
    /// particle's sum runs over its neighbours in stencil, then storage order, like the
    /// force pass, so its value does not depend on the decomposition.
    fn boundary_loads(&mut self, ids: &[Range<u32>], out: &mut Vec<ParticleLoad>) -> Result<(), String>;
}

/// Vertical samples of a water-height gauge: n + 1 points from the domain bottom to its top,
/// n the intervals of at most dp/2 that span it.
fn height_samples(case: &Case, at: [f64; 3]) -> impl Iterator<Item = [f64; 3]> + '_ {
    let vert = case.dim - 1;
    let (lo, hi) = (case.domain.min[vert], case.domain.max[vert]);
    let n = height_intervals(case);
    (0..=n).map(move |k| {
        let mut x = at;
        x[vert] = if k == n { hi } else { lo + (hi - lo) * k as f64 / n as f64 };
        x
    })
}

/// The intervals of a water-height gauge's samples (one more sample than intervals).
pub fn height_intervals(case: &Case) -> usize {
    let vert = case.dim - 1;
    (((case.domain.max[vert] - case.domain.min[vert]) / (0.5 * case.dp)).ceil() as usize).max(1)
}

/// The columns of `gauges.csv` after `time`: every gauge's [`Gauge::columns`], in order.
pub fn columns(case: &Case) -> Vec<String> {
    case.gauges.iter().flat_map(|g| g.columns(case.dim)).collect()
}

/// Evaluate every gauge of the case, in order, into `out`: one value per column of
/// [`columns`].
///
/// - pressure: Shepard interpolation `sum p_j W_j V_j / sum W_j V_j` over fluid (0 when no
///   fluid is within the support);
/// - water height: the integral of the fluid fraction `sum W_j V_j` along the vertical line
///   from the domain bottom to its top (trapezoid rule, samples dp/2 apart at most), as a
///   wire gauge reads it: a dry line reads 0, and a sheet of spray above the water adds its
///   own thickness instead of moving the surface up to it;
/// - front: the largest fluid coordinate along the axis, fluid below `below` only;
/// - force: the loads of [`Interpolate::boundary_loads`] on the solid's particles, summed in
///   id order in f64 (force, then moment `(x - about) x F`), so the sum does not depend on
///   which device held which particle.
pub fn evaluate(case: &Case, src: &mut dyn Interpolate, out: &mut Vec<f64>) -> Result<(), String> {
    let vert = case.dim - 1;
    let mut points = Vec::new();
    let mut ranges = Vec::new();
    for g in &case.gauges {
        match g {
            Gauge::Pressure { point, .. } => points.push(*point),
            Gauge::WaterHeight { at, .. } => points.extend(height_samples(case, *at)),
            Gauge::Front { .. } => {}
            Gauge::Force { solid, .. } => ranges.push(solid_ids(case, *solid)),
        }
    }
    let mut sums = Vec::with_capacity(points.len());
    src.fluid_sums(&points, &mut sums)?;
    let mut loads = Vec::new();
    if !ranges.is_empty() {
        src.boundary_loads(&ranges, &mut loads)?;
        loads.sort_unstable_by_key(|l| l.id);
    }
    let mut next = 0;
    out.clear();
    for g in &case.gauges {
        match g {
            Gauge::Pressure { .. } => {
                let (w, pw) = sums[next];
                next += 1;
                out.push(if w > 0.0 { pw / w } else { 0.0 });
            }
            Gauge::WaterHeight { .. } => {
                let n = height_intervals(case);
                let step = (case.domain.max[vert] - case.domain.min[vert]) / n as f64;
                let f = &sums[next..next + n + 1];
                next += n + 1;
                let inner: f64 = f[1..n].iter().map(|s| s.0).sum();
                out.push(step * (inner + 0.5 * (f[0].0 + f[n].0)));
            }
            Gauge::Front { axis, below, .. } => {
                out.push(src.fluid_front(*axis, *below)?.unwrap_or(case.domain.min[*axis]))
            }
            Gauge::Force { solid, about, .. } => {
                let ids = solid_ids(case, *solid);
                let first = loads.partition_point(|l| l.id < ids.start);
                let (mut f, mut m) = ([0.0f64; 3], [0.0f64; 3]);
                for l in loads[first..].iter().take_while(|l| l.id < ids.end) {
                    let fl = l.force.map(f64::from);
                    let d: [f64; 3] = std::array::from_fn(|a| l.pos[a] - about[a]);
                    for a in 0..3 {
                        f[a] += fl[a];
                        m[a] += d[(a + 1) % 3] * fl[(a + 2) % 3] - d[(a + 2) % 3] * fl[(a + 1) % 3];
                    }
                }
                if case.dim == 3 {
                    out.extend(f.into_iter().chain(m));
                } else {
                    out.extend([f[0], f[1], m[2]]);
                }
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::case::Solid;

    /// Fluid fraction 1 in `0 <= z <= depth` with linear ramps 2 dp wide across both ends,
    /// for lines with x < 1 (dry beyond); loads given for a few particles, out of id order.
    struct Fake {
        depth: f64,
        dp: f64,
        loads: Vec<ParticleLoad>,
    }

    impl Interpolate for Fake {
        fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
            let ramp = |s: f64| (s / (2.0 * self.dp) + 0.5).clamp(0.0, 1.0);
            out.clear();
            out.extend(xs.iter().map(|x| {
                let f = if x[0] < 1.0 { ramp(x[1]).min(ramp(self.depth - x[1])) } else { 0.0 };
                (f, 0.0)
            }));
            Ok(())
        }
        fn fluid_front(&mut self, _: usize, _: f64) -> Result<Option<f64>, String> {
            Ok(None)
        }
        fn boundary_loads(&mut self, ids: &[Range<u32>], out: &mut Vec<ParticleLoad>) -> Result<(), String> {
            out.clear();
            out.extend(self.loads.iter().filter(|l| ids.iter().any(|r| r.contains(&l.id))));
            Ok(())
        }
    }

    #[test]
    fn water_height_integrates_the_fluid_fraction_and_forces_sum_their_solid() {
        let text = r#"
            dp = 0.02
            time = { end = 1.0 }
            physics = { body_force = [0.0, -9.81] }
            domain = { min = [-0.2, -0.2], max = [2.2, 1.5] }
            fluid = [{ min = [0.0, 0.0], max = [1.0, 0.6] }]
            wall = [{ min = [0.0, 0.0], max = [2.0, 1.2], faces = ["x-", "x+", "y-"] }]
            obstacle = [{ min = [1.5, 0.0], max = [1.7, 0.2] }]
            gauge = [
                { kind = "water_height", name = "wet", at = [0.5] },
                { kind = "water_height", name = "dry", at = [1.2] },
                { kind = "force", name = "o", on = "obstacle.0", about = [1.6, 0.0] },
            ]
        "#;
        let case = Case::from_str(text, &[]).unwrap_or_else(|e| panic!("{e}"));
        let ids = solid_ids(&case, Solid::Obstacle(0));
        let load = |id: u32, pos: [f64; 3], force: [f32; 3]| ParticleLoad { id, pos, force };
        let loads = vec![
            load(ids.start + 3, [1.61, 0.19, 0.0], [0.0, -2.0, 0.0]),
            load(ids.start - 1, [1.0, 0.0, 0.0], [100.0, 100.0, 0.0]), // the wall's: left out
            load(ids.start, [1.51, 0.01, 0.0], [1.5, 0.5, 0.0]),
        ];
        let mut src = Fake { depth: 0.6, dp: case.dp, loads };
        let mut out = Vec::new();
        evaluate(&case, &mut src, &mut out).unwrap();
        assert_eq!(out.len(), columns(&case).len());
        assert!((out[0] - 0.6).abs() < 1e-3 * case.dp, "wet: {}", out[0]);
        assert_eq!(out[1], 0.0, "dry");
        let fx = 1.5f64;
        let fy = 0.5f64 - 2.0;
        // (x - about) x F, z component: dx fy - dy fx.
        let mz = (1.61f64 - 1.6) * -2.0 + ((1.51 - 1.6) * 0.5 - 0.01 * 1.5);
        for (got, want) in out[2..].iter().zip([fx, fy, mz]) {
            assert!((got - want).abs() < 1e-12, "{:?} against {:?}", &out[2..], [fx, fy, mz]);
        }
    }
}
