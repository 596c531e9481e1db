//! Open boundaries (issue 15): inlets and outlets with buffer layers, after Tafuni, Domínguez,
//! Vacondio & Crespo (CMAME 2018), as DualSPHysics 5 does them.
//!
//! An open boundary is an axis-aligned box of buffer particles (kind [`Kind::Buffer`]) beside
//! a plane of the domain, `layers` particle spacings thick (at least the kernel support, so
//! the fluid next to the plane sees a full support). The flow crosses the plane along
//! `direction`: into the fluid at an inlet (the box lies upstream of its plane), out of it at
//! an outlet (the box lies downstream). With `xi = sign (x_axis - plane)` the signed distance
//! downstream of the plane, an inlet's box is `-T <= xi <= 0` and an outlet's `0 <= xi <= T`
//! (`T = layers dp`).
//!
//! **Each step** (before the force pass, [`OpenZone::state`]) a buffer particle takes its
//! velocity and density: prescribed ones from the zone (a uniform or parabolic velocity, a
//! pressure or a hydrostatic level), the others extrapolated from the fluid at its ghost node,
//! its mirror image across the plane, by the mDBC interpolation
//! ([`crate::physics::mdbc::ghost_values`], first order, fluid particles only): the density
//! to first order back to the particle, the velocity the ghost's, also to first order (zero
//! normal gradient; mDBC walls take the ghost's velocity at zeroth order). It
//! then moves with that velocity; the force pass gives it no acceleration.
//!
//! **At each rebuild** ([`action`], before the particles are re-keyed):
//! - an inlet's buffer particle that crossed the plane (`xi >= 0`) becomes fluid, and a new
//!   buffer particle takes its place `layers dp` upstream ([`Action::Spawn`]), with id
//!   `id + columns * layers`: inlet particles are numbered `first + column + columns *
//!   generation` (every inlet's columns numbered together, [`Case::open_columns`]), so each
//!   id follows from the particle it replaces, on any decomposition and across restarts,
//!   never from a counter;
//! - a fluid particle that enters an outlet's box becomes a buffer particle, and one that
//!   goes back across the plane fluid again;
//! - a buffer particle past the far end of its box (`|xi| > T`) is removed and counted as
//!   outflow, and so is fluid within the opening behind an inlet's plane (it flowed back)
//!   or past an outlet's buffer.
//!
//! Conversion at rebuilds, not at each step: a particle is at most half a skin past the
//! plane when it changes kind (the runtime rebuilds before any particle moved half the skin),
//! which shifts the plane by less than that, and it lets creation and removal ride on the
//! rebuild's exchange (DESIGN: "removal and creation happen at rebuilds").
//!
//! [`Case::open_columns`]: crate::Case::open_columns

use crate::buffers::Kind;
use crate::physics::constants::Constants;
use crate::physics::mdbc::{ghost_values, GhostSums, GhostVelocity};
use crate::V3;

/// The velocity a zone gives its buffer particles.
#[derive(Debug, Clone, PartialEq)]
pub enum OpenVelocity {
    /// The mean normal speed (m/s, along the zone's direction), piecewise linear in time
    /// through `(t, u)` points (one point: constant), held beyond the last.
    Prescribed(Vec<[f64; 2]>),
    /// Extrapolated from the fluid (zero normal gradient).
    Extrapolated,
}

/// How the speed varies across the opening.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Profile {
    /// The same everywhere.
    #[default]
    Uniform,
    /// A parabola across each tangential axis of the box (`6 s (1 - s)`, mean 1): laminar
    /// flow between plates (2D) or its product across a duct (3D).
    Parabolic,
}

/// The pressure (density) a zone gives its buffer particles.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum OpenPressure {
    /// Extrapolated from the fluid (first order).
    Extrapolated,
    /// A fixed pressure (Pa).
    Fixed(f64),
    /// Hydrostatic below a free-surface level (along the last axis): `rho0 |g| (level - z)`,
    /// zero above it.
    Hydrostatic(f64),
}

/// One inlet or outlet.
#[derive(Debug, Clone, PartialEq)]
pub struct OpenZone {
    /// Name for the log and `surge check`.
    pub name: String,
    /// An inlet (else an outlet).
    pub inlet: bool,
    /// The axis the flow crosses the plane along.
    pub axis: usize,
    /// +1 or -1: the flow's direction along the axis.
    pub sign: f64,
    /// The plane's coordinate along the axis.
    pub plane: f64,
    /// Buffer layers; the box is `layers dp` thick.
    pub layers: u32,
    /// The box (the normal extent is the buffer; the others bound the opening).
    pub min: [f64; 3],
    /// Upper corner.
    pub max: [f64; 3],
    /// The buffer's velocity.
    pub velocity: OpenVelocity,
    /// Across the opening.
    pub profile: Profile,
    /// The buffer's pressure.
    pub pressure: OpenPressure,
    /// Inlets: particles fill the opening only below this level (last axis); None: all of it.
    pub level: Option<f64>,
    /// Inlets: the number of the first column of this inlet among every inlet's
    /// ([`OpenZone::columns`]).
    pub first_column: u32,
    /// The profile's factor is divided by its mean over the columns, so that the columns
    /// carry the mean speed times the opening's area exactly (1 for a uniform profile).
    pub profile_mean: f64,
}

/// What a rebuild does with a particle ([`action`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Action {
    /// Nothing.
    Keep,
    /// It becomes fluid (an outlet's buffer particle back across the plane).
    ToFluid,
    /// It becomes a buffer particle (fluid in an outlet's box).
    ToBuffer,
    /// It is removed and counted as outflow.
    Remove,
    /// It becomes fluid and a new buffer particle of inlet `zone` takes its place upstream
    /// ([`OpenZone::spawn_offset`], id [`spawn_id`]).
    Spawn(u32),
}

impl OpenZone {
    /// Thickness of the buffer.
    pub fn thickness(&self, dp: f64) -> f64 {
        self.layers as f64 * dp
    }

    /// Signed distance of x downstream of the plane.
    #[inline]
    pub fn xi(&self, x: [f64; 3]) -> f64 {
        self.sign * (x[self.axis] - self.plane)
    }

    /// True when x lies within the opening (the box's extent on the other axes).
    #[inline]
    pub fn across(&self, x: [f64; 3], dim: usize) -> bool {
        (0..dim).filter(|&b| b != self.axis).all(|b| x[b] >= self.min[b] && x[b] <= self.max[b])
    }

    /// True when a buffer particle at x belongs to this zone: within the opening and at most
    /// one buffer thickness beyond the box along the axis (a particle moves far less than
    /// that between rebuilds).
    #[inline]
    pub fn holds(&self, x: [f64; 3], dim: usize, dp: f64) -> bool {
        let (xi, t) = (self.xi(x), self.thickness(dp));
        let (lo, hi) = if self.inlet { (-2.0 * t, t) } else { (-t, 2.0 * t) };
        self.across(x, dim) && xi >= lo && xi <= hi
    }

    /// The lattice points of the opening (one per column of an inlet), in the order their
    /// columns are numbered: the box's lattice on the other axes, last axis outermost, below
    /// `level` when one is given.
    pub fn columns(&self, dim: usize, dp: f64) -> Vec<[f64; 3]> {
        let axes: Vec<usize> = (0..dim).filter(|&b| b != self.axis).collect();
        let along = |b: usize| -> Vec<f64> {
            let n = ((self.max[b] - self.min[b]) / dp + 1e-6).floor().max(1.0) as usize;
            (0..n).map(|i| self.min[b] + (i as f64 + 0.5) * dp).collect()
        };
        let mut out = vec![[0.0; 3]];
        for &b in &axes {
            let coords = along(b);
            out = coords
                .iter()
                .flat_map(|&c| {
                    out.iter().map(move |p| {
                        let mut q = *p;
                        q[b] = c;
                        q
                    })
                })
                .collect();
        }
        if let Some(level) = self.level {
            out.retain(|p| p[dim - 1] < level);
        }
        out
    }

    /// The prescribed mean speed at time t, if any.
    pub fn speed(&self, t: f64) -> Option<f64> {
        match &self.velocity {
            OpenVelocity::Extrapolated => None,
            OpenVelocity::Prescribed(s) => Some(interpolate(s, t)),
        }
    }

    /// The profile factor at x: mean 1 over the columns ([`OpenZone::profile_mean`]).
    #[inline]
    pub fn profile_at(&self, x: [f64; 3], dim: usize) -> f64 {
        self.shape_at(x, dim) / self.profile_mean
    }

    /// The profile's shape at x, `6 s (1 - s)` per tangential axis (mean 1 over the box).
    #[inline]
    pub fn shape_at(&self, x: [f64; 3], dim: usize) -> f64 {
        match self.profile {
            Profile::Uniform => 1.0,
            Profile::Parabolic => (0..dim).filter(|&b| b != self.axis).fold(1.0, |f, b| {
                let s = ((x[b] - self.min[b]) / (self.max[b] - self.min[b])).clamp(0.0, 1.0);
                f * 6.0 * s * (1.0 - s)
            }),
        }
    }

    /// The mean of [`OpenZone::shape_at`] over the columns (1 for an outlet).
    pub fn columns_mean(&self, dim: usize, dp: f64) -> f64 {
        let cols = self.columns(dim, dp);
        if !self.inlet || cols.is_empty() {
            return 1.0;
        }
        cols.iter().map(|&x| self.shape_at(x, dim)).sum::<f64>() / cols.len() as f64
    }

    /// The fastest prescribed speed: the series' largest, times the profile's peak over the
    /// columns (0 when extrapolated).
    pub fn max_speed(&self, dim: usize, dp: f64) -> f64 {
        let OpenVelocity::Prescribed(s) = &self.velocity else { return 0.0 };
        let u = s.iter().map(|p| p[1].abs()).fold(0.0, f64::max);
        let peak = self.columns(dim, dp).iter().map(|&x| self.profile_at(x, dim)).fold(0.0, f64::max);
        u * peak
    }

    /// The prescribed relative density at x, if any.
    pub fn density_at(&self, x: [f64; 3], dim: usize, consts: &Constants, g: f64) -> Option<f32> {
        match self.pressure {
            OpenPressure::Extrapolated => None,
            OpenPressure::Fixed(p) => Some(consts.rel_density(p as f32)),
            OpenPressure::Hydrostatic(level) => {
                Some(consts.rel_density((consts.rho0 as f64 * g * (level - x[dim - 1]).max(0.0)) as f32))
            }
        }
    }

    /// Where a spawned particle goes relative to the one that crossed: `layers dp` upstream.
    pub fn spawn_offset(&self, dp: f64) -> [f64; 3] {
        let mut d = [0.0; 3];
        d[self.axis] = -self.sign * self.thickness(dp);
        d
    }

    /// The velocity and density of a buffer particle at x (cell offset `off`, for the ghost
    /// sums) at time t, given its current ones: the prescribed values, the rest from
    /// `ghost` (the sums of [`GhostSums`] over the fluid around the ghost node, at
    /// [`OpenZone::ghost_shift`] from the particle). A ghost without fluid leaves the
    /// extrapolated values as they are.
    #[allow(clippy::too_many_arguments)]
    pub fn state<const DIM: usize>(
        &self,
        x: [f64; 3],
        speed: Option<f64>,
        prescribed_d: Option<f32>,
        ghost: &GhostSums,
        current: [f32; 4],
    ) -> [f32; 4] {
        let g = ghost_values::<DIM>(ghost, GhostVelocity::FirstOrder);
        let v = match speed {
            Some(u) => {
                let mut v = [0.0f32; 3];
                v[self.axis] = (self.sign * u * self.profile_at(x, DIM)) as f32;
                V3::new(v[0], v[1], v[2])
            }
            None => g.map_or(V3::from4(current), |g| g.vel),
        };
        let d = match prescribed_d {
            Some(d) => d,
            None => g.map_or(current[3], |g| {
                // Back from the ghost to the particle: minus the shift.
                let s = self.ghost_shift(x) as f32;
                let mut to_b = [0.0f32; 3];
                to_b[self.axis] = -s;
                g.d + g.grad.dot(V3::new(to_b[0], to_b[1], to_b[2]))
            }),
        };
        v.with_w(d)
    }

    /// The ghost node's displacement from the particle along the axis: its mirror image
    /// across the plane, `2 (plane - x)`.
    #[inline]
    pub fn ghost_shift(&self, x: [f64; 3]) -> f64 {
        2.0 * (self.plane - x[self.axis])
    }
}

/// Piecewise linear through `(t, u)` points sorted by t, held beyond the ends.
pub fn interpolate(s: &[[f64; 2]], t: f64) -> f64 {
    match s.iter().position(|p| p[0] > t) {
        None => s.last().map_or(0.0, |p| p[1]),
        Some(0) => s[0][1],
        Some(k) => {
            let ([t0, u0], [t1, u1]) = (s[k - 1], s[k]);
            u0 + (u1 - u0) * (t - t0) / (t1 - t0)
        }
    }
}

/// The zone a buffer particle at x belongs to.
#[inline]
pub fn zone_of(zones: &[OpenZone], x: [f64; 3], dim: usize, dp: f64) -> Option<usize> {
    zones.iter().position(|z| z.holds(x, dim, dp))
}

/// What a rebuild does with a particle of kind `kind` at x ([`Kind`] code).
pub fn action(zones: &[OpenZone], kind: u32, x: [f64; 3], dim: usize, dp: f64) -> Action {
    if kind == Kind::Fluid as u32 {
        for z in zones.iter().filter(|z| z.across(x, dim)) {
            let (xi, t) = (z.xi(x), z.thickness(dp));
            // Fluid behind an inlet's plane flowed back (or was put there): it goes.
            if z.inlet && xi < 0.0 {
                return Action::Remove;
            }
            // Fluid past an outlet's buffer (there from the start, or it jumped) goes too.
            if !z.inlet && xi >= 0.0 {
                return if xi <= t { Action::ToBuffer } else { Action::Remove };
            }
        }
        return Action::Keep;
    }
    if kind != Kind::Buffer as u32 {
        return Action::Keep;
    }
    let Some(k) = zone_of(zones, x, dim, dp) else { return Action::Remove };
    let z = &zones[k];
    let (xi, t) = (z.xi(x), z.thickness(dp));
    match (z.inlet, xi) {
        (true, xi) if xi >= 0.0 => Action::Spawn(k as u32),
        (true, xi) if xi < -t => Action::Remove,
        (false, xi) if xi < 0.0 => Action::ToFluid,
        (false, xi) if xi > t => Action::Remove,
        _ => Action::Keep,
    }
}

/// The id of the particle an inlet spawns in place of particle `id` (`columns` over every
/// inlet, `layers` of its inlet); None past the ids a u32 holds.
#[inline]
pub fn spawn_id(id: u32, columns: u32, layers: u32) -> Option<u32> {
    columns.checked_mul(layers).and_then(|s| id.checked_add(s))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn inlet() -> OpenZone {
        OpenZone {
            name: "in".into(),
            inlet: true,
            axis: 0,
            sign: 1.0,
            plane: 0.0,
            layers: 4,
            min: [-0.04, 0.0, 0.0],
            max: [0.0, 0.1, 0.0],
            velocity: OpenVelocity::Prescribed(vec![[0.0, 0.0], [1.0, 2.0]]),
            profile: Profile::Parabolic,
            pressure: OpenPressure::Extrapolated,
            level: None,
            first_column: 0,
            profile_mean: 1.0,
        }
    }

    #[test]
    fn rebuild_actions_follow_the_plane() {
        let z = inlet();
        let out = OpenZone { inlet: false, plane: 1.0, min: [1.0, 0.0, 0.0], max: [1.04, 0.1, 0.0], ..inlet() };
        let zones = [z, out];
        let (f, b) = (Kind::Fluid as u32, Kind::Buffer as u32);
        let dp = 0.01;
        assert_eq!(action(&zones, b, [-0.005, 0.05, 0.0], 2, dp), Action::Keep);
        assert_eq!(action(&zones, b, [0.001, 0.05, 0.0], 2, dp), Action::Spawn(0));
        assert_eq!(action(&zones, b, [-0.0401, 0.05, 0.0], 2, dp), Action::Remove);
        assert_eq!(action(&zones, f, [-0.001, 0.05, 0.0], 2, dp), Action::Remove);
        assert_eq!(action(&zones, f, [0.5, 0.05, 0.0], 2, dp), Action::Keep);
        assert_eq!(action(&zones, f, [1.001, 0.05, 0.0], 2, dp), Action::ToBuffer);
        assert_eq!(action(&zones, b, [0.999, 0.05, 0.0], 2, dp), Action::ToFluid);
        assert_eq!(action(&zones, b, [1.041, 0.05, 0.0], 2, dp), Action::Remove);
        // Outside the opening: nothing to do with the zones.
        assert_eq!(action(&zones, f, [1.001, 0.15, 0.0], 2, dp), Action::Keep);
        // A boundary particle is never touched.
        assert_eq!(action(&zones, Kind::Boundary as u32, [0.001, 0.05, 0.0], 2, dp), Action::Keep);
    }

    #[test]
    fn the_parabolic_profile_has_mean_one_and_the_series_interpolates() {
        let z = inlet();
        let cols = z.columns(2, 0.01);
        assert_eq!(cols.len(), 10);
        // The midpoint rule on n = 10 points: the mean of s² is 1/3 - 1/(12 n²), so that of
        // 6 s (1 - s) is 1 + 1/(2 n²) = 1.005.
        let mean = z.columns_mean(2, 0.01);
        assert!((mean - 1.005).abs() < 1e-12, "mean {mean}");
        let z = OpenZone { profile_mean: mean, ..z };
        let mean = cols.iter().map(|&x| z.profile_at(x, 2)).sum::<f64>() / cols.len() as f64;
        assert!((mean - 1.0).abs() < 1e-12, "mean {mean}");
        assert_eq!(z.speed(0.5), Some(1.0));
        assert_eq!(z.speed(3.0), Some(2.0));
        let lev = OpenZone { level: Some(0.05), ..inlet() };
        assert_eq!(lev.columns(2, 0.01).len(), 5);
    }

    #[test]
    fn spawned_ids_stay_unique_and_refuse_overflow() {
        assert_eq!(spawn_id(100, 10, 4), Some(140));
        assert_eq!(spawn_id(u32::MAX - 5, 10, 4), None);
    }
}
