//! Floating rigid bodies (issue 15): solids of boundary particles that the fluid's force and
//! moment and gravity move as six-degree-of-freedom rigid bodies.
//!
//! A body is filled like an obstacle (its particles are one range of global ids, after the
//! obstacles of the case file). Its mass properties come from its particles as DualSPHysics
//! computes them: mass `density × particles × dp^dim` (or given), centre of mass the
//! particles' centroid (or given), inertia tensor about it from the particles as small cubes
//! (point masses plus each cube's own `m dp²/6`, so a box filled on the lattice has the
//! exact inertia of the box), or given.
//!
//! Each force pass, every device sums the fluid's force on the body's particles it owns
//! ([`crate::gauge::Interpolate::boundary_loads`]: minus the momentum terms each particle
//! gives its fluid neighbours) and their moment about the centre of mass, each particle's
//! contribution rounded to a fixed-point integer ([`LoadScale`]). Integer sums do not depend
//! on the order of the terms, so the totals over the devices and ranks are the same bits on
//! any decomposition, and every device integrates the same motion in float64
//! ([`BodyState::advance`]) with the same time scheme as the fluid:
//!
//! - Verlet: velocity Verlet, its second half kick given with the next step's forces:
//!   `v(n+1/2) = v(n-1/2) + (dt(n-1) + dt(n))/2 a(n)`, `c' = c + dt v(n+1/2)`, the
//!   orientation turned by `dt w(n+1/2)` (symplectic, exact under a constant force);
//! - symplectic: the predictor takes half a step with the forces of the step start, the
//!   corrector the whole step from the step start with the forces of the half step,
//!   `c' = c + dt (v + v')/2`, the orientation turned by `dt (w + w')/2`.
//!
//! `a = F/m + g` and `alpha = I⁻¹ (M - w × I w)` with the world-frame inertia
//! `I = R I0 Rᵀ`; components of fixed degrees of freedom are zero. The move of the body's
//! particles over an update is then a [`crate::motion::SolidMove`] like a prescribed
//! motion's: positions and velocities exact to rounding from the pose, no drift.
//!
//! A body touches other solids (walls, obstacles, bodies) through its particles: a pair
//! closer than dp pushes apart with a spring and a damper ([`contact_force`]), added to the
//! particle's load, so the contact is summed like the fluid's force.

use crate::backend::Update;
use crate::case::Solid;
use crate::mesh::{add, cross, dot, norm, scale, sub};
use crate::motion::{mul, mulv, transpose, Mat3, Pose, I3};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// How a body's mass is given.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum MassSpec {
    /// Density (kg/m³): mass is density × particles × dp^dim.
    Density(f64),
    /// Mass (kg; kg per metre of depth in 2D).
    Mass(f64),
}

/// A floating body as the case file gives it (`[[body]]`).
#[derive(Debug, Clone, PartialEq)]
pub struct BodySpec {
    /// Column prefix in `bodies.csv` (its `name`, or `body.N`).
    pub name: String,
    /// The obstacle that holds its particles.
    pub solid: Solid,
    /// Mass or density.
    pub mass: MassSpec,
    /// Centre of mass; None: the particles' centroid.
    pub centre: Option<[f64; 3]>,
    /// Inertia tensor about the centre of mass; None: from the particles.
    pub inertia: Option<Mat3>,
    /// Initial velocity of the centre of mass.
    pub velocity: [f64; 3],
    /// Initial angular velocity (world frame, rad/s).
    pub omega: [f64; 3],
    /// Free degrees of freedom: translations x, y, z, then rotations about x, y, z (2D: x,
    /// y and the rotation about z only).
    pub free: [bool; 6],
    /// Mooring lines.
    pub moorings: Vec<Mooring>,
    /// A hinge: the body turns about a fixed axis, and does nothing else.
    pub hinge: Option<Hinge>,
}

/// A hinge: a fixed axis through `point` along the unit vector `axis` (z in 2D) about which
/// the body turns; its centre of mass moves on a circle about the axis. The fluid's,
/// gravity's and the mooring lines' moment about the axis turns it; the hinge takes the
/// rest (its reaction is not reported).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Hinge {
    /// A point of the axis.
    pub point: [f64; 3],
    /// Its unit direction.
    pub axis: [f64; 3],
}

/// A mooring line: a linear spring from a fixed anchor to a point of the body (its
/// fairlead), taut only (a slack line pulls nothing), massless.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Mooring {
    /// The fixed end.
    pub anchor: [f64; 3],
    /// The body's end where the geometry puts the body.
    pub fairlead: [f64; 3],
    /// Stiffness (N/m; N/m per metre of depth in 2D).
    pub stiffness: f64,
    /// Unstretched length.
    pub length: f64,
}

impl Mooring {
    /// The line's pull on the body whose fairlead is at `x`.
    pub fn pull(&self, x: [f64; 3]) -> [f64; 3] {
        let d = sub(self.anchor, x);
        let l = norm(d);
        if l <= self.length {
            return [0.0; 3];
        }
        scale(d, self.stiffness * (l - self.length) / l)
    }
}

/// A body's constant properties, resolved from its particles.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyFrame {
    /// Its particles' global ids.
    pub ids: Range<u32>,
    /// Mass (kg; per metre of depth in 2D).
    pub mass: f64,
    /// Centre of mass at the start.
    pub centre0: [f64; 3],
    /// Inertia tensor about the centre of mass at the start (world axes).
    pub inertia0: Mat3,
    /// Free degrees of freedom (as [`BodySpec::free`]).
    pub free: [bool; 6],
    /// Fixed-point steps of its load sums.
    pub scale: LoadScale,
    /// Contact with other solids: spring (N/m) and damper (N s/m) of one particle pair.
    pub contact: [f64; 2],
    /// Mooring lines, with their fairleads relative to the centre of mass at the start.
    pub moorings: Vec<Mooring>,
    /// A hinge ([`BodySpec::hinge`]).
    pub hinge: Option<Hinge>,
}

/// The fixed-point steps in which one body's loads are summed: each particle's force
/// component is rounded to a multiple of `force` N, its moment component to one of `moment`
/// N m; both powers of two, `force` 2⁻⁴⁰ of the body's weight (at least 1 m/s² of it), so a
/// load up to 2²³ times the weight is summed without overflow, 12 decimal digits below it.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct LoadScale {
    /// Force step (N).
    pub force: f64,
    /// Moment step (N m).
    pub moment: f64,
}

impl LoadScale {
    /// The steps for a body of `mass` under gravity `g` (m/s²) whose particles lie within
    /// `radius` of its centre.
    pub fn new(mass: f64, g: f64, radius: f64) -> LoadScale {
        let weight = mass * g.max(1.0);
        let force = 2f64.powi(weight.log2().floor() as i32 - 40);
        let moment = force * 2f64.powi(radius.max(1e-6).log2().ceil() as i32);
        LoadScale { force, moment }
    }
}

/// A value rounded to a multiple of `step` (a power of two), as an integer: the same bits on
/// every backend (round half to even; CUDA's `__double2ll_rn`).
#[inline]
pub fn to_fixed(x: f64, step: f64) -> i64 {
    (x / step).round_ties_even() as i64
}

/// Number of fixed-point sums per body: force xyz, moment xyz.
pub const LOAD_LEN: usize = 6;

/// What a backend needs to sum one body's loads: its particles, the point moments are taken
/// about (its centre of mass now) and the fixed-point steps.
#[derive(Debug, Clone, PartialEq)]
pub struct BodyLoad {
    /// The body's particles' global ids.
    pub ids: Range<u32>,
    /// The centre of mass at the particles' positions.
    pub centre: [f64; 3],
    /// Fixed-point steps.
    pub scale: LoadScale,
    /// Contact spring and damper of one particle pair ([`BodyFrame::contact`]).
    pub contact: [f64; 2],
}

/// The contact force on a body's particle from a particle of another solid closer than the
/// spacing `dp` (solids that touch have their outer particles dp apart): a spring
/// `k (dp - r)` along the line of centres and a damper `c` on the approach speed, repulsive
/// only. `r = x_i - x_j` (float32, as the neighbour loop gives it), `v = v_i - v_j`; `k`,
/// `c` the lower of the two bodies' (a wall's are the body's). The CPU twin of the contact
/// loop of `body_loads_kernel`.
#[inline]
pub fn contact_force(r: [f32; 3], r2: f32, v: [f32; 3], dp: f32, k: f32, c: f32) -> [f32; 3] {
    let d = r2.sqrt();
    let n = [r[0] / d, r[1] / d, r[2] / d];
    let vn = v[0] * n[0] + v[1] * n[1] + v[2] * n[2];
    let f = (k * (dp - d) - c * vn).max(0.0);
    [n[0] * f, n[1] * f, n[2] * f]
}

/// The contact spring and damper of a pair: the lower of the body's and, when `j` is a
/// particle of another body, that body's.
#[inline]
pub fn pair_contact(own: &BodyLoad, bodies: &[BodyLoad], j: u32) -> [f64; 2] {
    bodies
        .iter()
        .find(|b| b.ids.contains(&j))
        .map_or(own.contact, |b| [own.contact[0].min(b.contact[0]), own.contact[1].min(b.contact[1])])
}

/// Add the load of one particle at `x` with force `f` to a body's fixed-point sums `out`
/// ([`LOAD_LEN`] of them): the CPU twin of `body_loads_kernel`.
#[inline]
pub fn add_particle_load(b: &BodyLoad, x: [f64; 3], f: [f32; 3], out: &mut [i64]) {
    let f = f.map(f64::from);
    let d = sub(x, b.centre);
    let m = cross(d, f);
    for a in 0..3 {
        out[a] = out[a].wrapping_add(to_fixed(f[a], b.scale.force));
        out[3 + a] = out[3 + a].wrapping_add(to_fixed(m[a], b.scale.moment));
    }
}

/// A body's force and moment (about its centre of mass) from its fixed-point sums.
pub fn from_fixed(sums: &[i64], scale: &LoadScale) -> ([f64; 3], [f64; 3]) {
    (std::array::from_fn(|a| sums[a] as f64 * scale.force), std::array::from_fn(|a| sums[3 + a] as f64 * scale.moment))
}

/// The state of a body: what a checkpoint keeps.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct BodyState {
    /// Centre of mass.
    pub centre: [f64; 3],
    /// Orientation: world = rot × (start orientation).
    pub rot: Mat3,
    /// Velocity of the centre of mass.
    pub vel: [f64; 3],
    /// Angular velocity (world frame).
    pub omega: [f64; 3],
    /// The summed load (fluid and contacts) of the last force pass.
    pub force: [f64; 3],
    /// Its moment about the centre of mass.
    pub moment: [f64; 3],
    /// Verlet: the velocity and angular velocity at the middle of the last step, and half
    /// its dt (the kick still to give them with the next step's forces; 0 at the start and
    /// after a symplectic step).
    pub vel_half: [f64; 3],
    /// See `vel_half`.
    pub omega_half: [f64; 3],
    /// See `vel_half`.
    pub pending: f64,
}

/// The rotation by the vector `phi` (axis times angle), by Rodrigues' formula.
fn rotation_by(phi: [f64; 3]) -> Mat3 {
    let angle = norm(phi);
    if angle == 0.0 {
        return I3;
    }
    crate::shape::Placement::rotation(scale(phi, 1.0 / angle), angle.to_degrees())
}

/// The inverse of a 3 × 3 matrix, by the mDBC solver's adjugate.
fn inverse(m: &Mat3) -> Mat3 {
    let a: [[f64; 4]; 4] = std::array::from_fn(|i| std::array::from_fn(|j| if i < 3 && j < 3 { m[i][j] } else { 0.0 }));
    let (det, adj) = crate::physics::mdbc::adjugate(&a, 3);
    std::array::from_fn(|i| std::array::from_fn(|j| adj[i][j] / det))
}

impl BodyState {
    /// At rest at the start, with the spec's initial velocities.
    pub fn start(spec: &BodySpec, frame: &BodyFrame) -> BodyState {
        let keep = |v: [f64; 3], off: usize| std::array::from_fn(|a| if frame.free[off + a] { v[a] } else { 0.0 });
        let (mut vel, mut omega) = (keep(spec.velocity, 0), keep(spec.omega, 3));
        if let Some(h) = frame.hinge {
            omega = scale(h.axis, dot(spec.omega, h.axis));
            vel = cross(omega, sub(frame.centre0, h.point));
        }
        BodyState {
            centre: frame.centre0,
            rot: I3,
            vel,
            omega,
            force: [0.0; 3],
            moment: [0.0; 3],
            vel_half: vel,
            omega_half: omega,
            pending: 0.0,
        }
    }

    /// The pose that takes the particles from where the geometry put them to this state.
    pub fn pose(&self, frame: &BodyFrame) -> Pose {
        let arm = mulv(&self.rot, frame.centre0);
        Pose {
            rot: self.rot,
            pos: sub(self.centre, arm),
            omega: self.omega,
            vel: sub(self.vel, cross(self.omega, arm)),
        }
    }

    /// Linear and angular accelerations under this state's load (`force`, `moment`), the
    /// mooring lines and gravity `g`, fixed degrees of freedom held.
    fn accelerations(&self, frame: &BodyFrame, g: [f64; 3]) -> ([f64; 3], [f64; 3]) {
        let (mut force, mut moment) = (self.force, self.moment);
        for m in &frame.moorings {
            let arm = mulv(&self.rot, m.fairlead);
            let pull = m.pull(add(self.centre, arm));
            force = add(force, pull);
            moment = add(moment, cross(arm, pull));
        }
        let a = add(scale(force, 1.0 / frame.mass), g);
        let inertia = mul(&mul(&self.rot, &frame.inertia0), &transpose(&self.rot));
        if let Some(h) = frame.hinge {
            // About the axis: the moment of every load (gravity's too) about the hinge over
            // the moment of inertia about the axis.
            let r = sub(self.centre, h.point);
            let total = add(moment, cross(r, scale(a, frame.mass)));
            let off = sub(r, scale(h.axis, dot(r, h.axis)));
            let i_axis = dot(h.axis, mulv(&inertia, h.axis)) + frame.mass * dot(off, off);
            return (a, scale(h.axis, dot(total, h.axis) / i_axis));
        }
        let gyro = cross(self.omega, mulv(&inertia, self.omega));
        let alpha = mulv(&inverse(&inertia), sub(moment, gyro));
        let hold = |v: [f64; 3], off: usize| std::array::from_fn(|k| if frame.free[off + k] { v[k] } else { 0.0 });
        (hold(a, 0), hold(alpha, 3))
    }

    /// The state at the end of update `which` of a step of `dt` that starts at `self`, under
    /// the load of the force pass before the update, which `now` carries (`now` is where the
    /// particles were for that pass: `self` with its new load, or for the corrector the
    /// predictor's state), and gravity `g`.
    pub fn advance(&self, frame: &BodyFrame, which: Update, dt: f64, g: [f64; 3], now: &BodyState) -> BodyState {
        let (a, alpha) = now.accelerations(frame, g);
        let step = |x: [f64; 3], rate: [f64; 3], t: f64| add(x, scale(rate, t));
        // Centre, rotation vector, velocity, angular velocity, and the Verlet half-step
        // velocities with their pending half kick.
        let (centre, turn, vel, omega, (vel_half, omega_half, pending)) = match which {
            Update::Verlet | Update::VerletEuler => {
                // Velocity Verlet: the last step's second half kick, with these forces, then
                // this step's first; the body drifts with the mid-step velocities and shows
                // (and gives its particles) the velocities one more half kick on.
                let vh = step(self.vel_half, a, self.pending + 0.5 * dt);
                let wh = step(self.omega_half, alpha, self.pending + 0.5 * dt);
                let (vel, omega) = (step(vh, a, 0.5 * dt), step(wh, alpha, 0.5 * dt));
                (step(self.centre, vh, dt), scale(wh, dt), vel, omega, (vh, wh, 0.5 * dt))
            }
            Update::Predictor => {
                let (vel, omega) = (step(self.vel, a, 0.5 * dt), step(self.omega, alpha, 0.5 * dt));
                (step(self.centre, self.vel, 0.5 * dt), scale(self.omega, 0.5 * dt), vel, omega, (vel, omega, 0.0))
            }
            Update::Corrector => {
                let (vel, omega) = (step(self.vel, a, dt), step(self.omega, alpha, dt));
                let centre = step(self.centre, add(self.vel, vel), 0.5 * dt);
                (centre, scale(add(self.omega, omega), 0.5 * dt), vel, omega, (vel, omega, 0.0))
            }
        };
        let turned = rotation_by(turn);
        // On a hinge the centre goes where the turn about the axis takes it.
        let (centre, vel, vel_half) = match frame.hinge {
            Some(h) => {
                let c = add(h.point, mulv(&turned, sub(self.centre, h.point)));
                (c, cross(omega, sub(c, h.point)), cross(omega_half, sub(c, h.point)))
            }
            None => (centre, vel, vel_half),
        };
        BodyState {
            centre,
            rot: mul(&turned, &self.rot),
            vel,
            omega,
            force: now.force,
            moment: now.moment,
            vel_half,
            omega_half,
            pending,
        }
    }
}

/// The `bodies.csv` columns of the case's bodies (after `time`): per body `NAME.x`, `.y`
/// [`.z`], the orientation (`.angle` about z in 2D, radians; the unit quaternion `.qw`,
/// `.qx`, `.qy`, `.qz` in 3D), the velocity of the centre of mass, the angular velocity
/// (`.wz` in 2D), and the force and moment about the centre of mass of the fluid and the
/// contacts (the summed load; gravity and mooring lines left out).
pub fn columns(specs: &[BodySpec], dim: usize) -> Vec<String> {
    let parts: &[&str] = if dim == 3 {
        &["x", "y", "z", "qw", "qx", "qy", "qz", "vx", "vy", "vz", "wx", "wy", "wz", "fx", "fy", "fz", "mx", "my", "mz"]
    } else {
        &["x", "y", "angle", "vx", "vy", "wz", "fx", "fy", "mz"]
    };
    specs.iter().flat_map(|b| parts.iter().map(move |p| format!("{}.{p}", b.name))).collect()
}

/// The values of [`columns`] for the bodies' `states`.
pub fn values(states: &[BodyState], dim: usize, out: &mut Vec<f64>) {
    out.clear();
    for s in states {
        let [x, y, z] = s.centre;
        if dim == 3 {
            out.extend([x, y, z]);
            out.extend(quaternion(&s.rot));
            out.extend(s.vel.into_iter().chain(s.omega).chain(s.force).chain(s.moment));
        } else {
            out.extend([x, y, s.rot[1][0].atan2(s.rot[0][0]), s.vel[0], s.vel[1], s.omega[2]]);
            out.extend([s.force[0], s.force[1], s.moment[2]]);
        }
    }
}

/// The unit quaternion `(w, x, y, z)` of a rotation matrix, w >= 0.
pub fn quaternion(r: &Mat3) -> [f64; 4] {
    let t = r[0][0] + r[1][1] + r[2][2];
    let q = if t > 0.0 {
        let s = 2.0 * (1.0 + t).sqrt();
        [0.25 * s, (r[2][1] - r[1][2]) / s, (r[0][2] - r[2][0]) / s, (r[1][0] - r[0][1]) / s]
    } else if r[0][0] > r[1][1] && r[0][0] > r[2][2] {
        let s = 2.0 * (1.0 + r[0][0] - r[1][1] - r[2][2]).sqrt();
        [(r[2][1] - r[1][2]) / s, 0.25 * s, (r[0][1] + r[1][0]) / s, (r[0][2] + r[2][0]) / s]
    } else if r[1][1] > r[2][2] {
        let s = 2.0 * (1.0 + r[1][1] - r[0][0] - r[2][2]).sqrt();
        [(r[0][2] - r[2][0]) / s, (r[0][1] + r[1][0]) / s, 0.25 * s, (r[1][2] + r[2][1]) / s]
    } else {
        let s = 2.0 * (1.0 + r[2][2] - r[0][0] - r[1][1]).sqrt();
        [(r[1][0] - r[0][1]) / s, (r[0][2] + r[2][0]) / s, (r[1][2] + r[2][1]) / s, 0.25 * s]
    };
    if q[0] < 0.0 {
        q.map(|x| -x)
    } else {
        q
    }
}

/// Mass properties of a body from its particles at `points` (spacing `dp`, `dim`-D).
pub fn frame_of(spec: &BodySpec, ids: Range<u32>, points: &[[f64; 3]], dp: f64, dim: usize, g: f64) -> BodyFrame {
    let n = points.len() as f64;
    let mass = match spec.mass {
        MassSpec::Density(rho) => rho * n * dp.powi(dim as i32),
        MassSpec::Mass(m) => m,
    };
    let centroid = {
        let s = points.iter().fold([0.0; 3], |s, p| add(s, *p));
        scale(s, 1.0 / n)
    };
    let centre0 = spec.centre.unwrap_or(centroid);
    let m = mass / n;
    let inertia0 = spec.inertia.unwrap_or_else(|| {
        // Point masses plus each particle's own cube (square in 2D: about z only).
        let own = m * dp * dp / 6.0;
        let mut t = [[0.0; 3]; 3];
        for p in points {
            let d = sub(*p, centre0);
            let d2 = d[0] * d[0] + d[1] * d[1] + d[2] * d[2];
            for i in 0..3 {
                for j in 0..3 {
                    t[i][j] += m * (if i == j { d2 } else { 0.0 } - d[i] * d[j]);
                }
                t[i][i] += own;
            }
        }
        if dim == 2 {
            // Only the rotation about z is free; keep the other axes invertible.
            t[0][0] = t[2][2];
            t[1][1] = t[2][2];
            for (i, j) in [(0, 1), (1, 0), (0, 2), (2, 0), (1, 2), (2, 1)] {
                t[i][j] = 0.0;
            }
        }
        t
    });
    let radius = points.iter().map(|p| norm(sub(*p, centre0))).fold(0.0, f64::max) + dp;
    // Contact: resting on a whole face (about n^((dim-1)/dim) particle pairs), the body's
    // weight presses it a tenth of a spacing in, and the face's damping is half critical.
    let face = n.powf((dim as f64 - 1.0) / dim as f64).max(1.0);
    let k = mass * g.max(1.0) / (0.1 * dp * face);
    let contact = [k, (k * mass / face).sqrt()];
    let free = if dim == 2 { [spec.free[0], spec.free[1], false, false, false, spec.free[5]] } else { spec.free };
    let moorings = spec.moorings.iter().map(|m| Mooring { fairlead: sub(m.fairlead, centre0), ..*m }).collect();
    let scale = LoadScale::new(mass, g, radius);
    BodyFrame { ids, mass, centre0, inertia0, free, scale, contact, moorings, hinge: spec.hinge }
}

/// The moves of the case's bodies over update `which` (`from` the states at the step start,
/// `to` at the update's end, `normals` where the previous update of the step left the wall
/// normals), appended to `out`.
pub fn moves(
    frames: &[BodyFrame],
    from: &[BodyState],
    to: &[BodyState],
    normals: &[BodyState],
    grid: &crate::grid::Grid,
    out: &mut Vec<crate::motion::SolidMove>,
) {
    for (k, f) in frames.iter().enumerate() {
        let (a, b, n) = (from[k].pose(f), to[k].pose(f), normals[k].pose(f));
        out.push(crate::motion::SolidMove::new(&f.ids, &a, &b, &n, grid.origin, grid.cell));
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(free: [bool; 6]) -> BodySpec {
        BodySpec {
            name: "b".into(),
            solid: Solid::Obstacle(0),
            mass: MassSpec::Density(500.0),
            centre: None,
            inertia: None,
            velocity: [0.0; 3],
            omega: [0.0; 3],
            free,
            moorings: Vec::new(),
            hinge: None,
        }
    }

    fn cube(n: usize, dp: f64) -> Vec<[f64; 3]> {
        let c = |i: usize| (i as f64 + 0.5) * dp;
        (0..n).flat_map(|k| (0..n).flat_map(move |j| (0..n).map(move |i| [c(i), c(j), c(k)]))).collect()
    }

    #[test]
    fn a_lattice_cube_has_the_mass_centre_and_inertia_of_the_cube() {
        let (n, dp) = (10, 0.01);
        let f = frame_of(&spec([true; 6]), 0..1000, &cube(n, dp), dp, 3, 9.81);
        let side = n as f64 * dp;
        assert!((f.mass - 500.0 * side.powi(3)).abs() < 1e-12);
        assert!(f.centre0.iter().all(|&c| (c - side / 2.0).abs() < 1e-15));
        // A cube of side L about its centre: m L² / 6 on the diagonal, nothing off it.
        let want = f.mass * side * side / 6.0;
        for i in 0..3 {
            assert!((f.inertia0[i][i] - want).abs() < 1e-12 * want, "{:?}", f.inertia0);
            for j in 0..3 {
                if i != j {
                    assert!(f.inertia0[i][j].abs() < 1e-12 * want);
                }
            }
        }
    }

    #[test]
    fn free_fall_is_exact_with_both_schemes() {
        let dp = 0.01;
        let f = frame_of(&spec([true; 6]), 0..1000, &cube(10, dp), dp, 3, 9.81);
        let g = [0.0, 0.0, -9.81];
        let dt = 1e-3;
        let s0 = BodyState::start(&spec([true; 6]), &f);
        let (mut v, mut s) = (s0, s0);
        for _ in 0..1000 {
            v = v.advance(&f, Update::Verlet, dt, g, &v);
            let half = s.advance(&f, Update::Predictor, dt, g, &s);
            s = s.advance(&f, Update::Corrector, dt, g, &half);
        }
        let want = f.centre0[2] - 0.5 * 9.81 * 1.0;
        for st in [v, s] {
            assert!((st.centre[2] - want).abs() < 1e-12, "{} vs {want}", st.centre[2]);
            assert!((st.vel[2] + 9.81).abs() < 1e-12);
            assert_eq!(st.rot, I3);
        }
    }

    #[test]
    fn a_torque_spins_a_body_at_the_rate_of_its_inertia_and_fixed_axes_hold() {
        let dp = 0.01;
        let free = [true, true, false, true, true, true];
        let f = frame_of(&spec(free), 0..1000, &cube(10, dp), dp, 3, 9.81);
        let izz = f.inertia0[2][2];
        let s0 = BodyState::start(&spec(free), &f);
        let mut s = s0;
        let dt = 1e-3;
        for _ in 0..100 {
            s.moment = [0.0, 0.0, izz];
            s = s.advance(&f, Update::Verlet, dt, [0.0, 0.0, -9.81], &s);
        }
        // alpha = 1 rad/s² about z for 0.1 s; z is held despite gravity.
        assert!((s.omega[2] - 0.1).abs() < 1e-12);
        assert_eq!(s.centre[2], s0.centre[2]);
        let angle = s.rot[1][0].atan2(s.rot[0][0]);
        assert!((angle - 0.5 * 0.1 * 0.1).abs() < 1e-9, "{angle}");
        // The particle at the centre of mass stays there; the pose moves it with the body.
        let p = s.pose(&f);
        let c = p.apply(f.centre0);
        assert!((0..3).all(|a| (c[a] - s.centre[a]).abs() < 1e-15));
    }

    /// A body hanging from a vertical line in the air, released with the line just taut:
    /// it swings down to twice the stretch m g / k and is back at the top after 4 periods
    /// 2 pi sqrt(m / k) of a mass on a spring, at dt = T/1000 (1e-5 of the stretch: both
    /// schemes are second order, their phase error over 4 periods about 4e-5 rad; the
    /// swing's depth to 1e-4, as the steps sample the bottom of the swing).
    /// A cube hung from a hinge 0.3 m above its centre swings as a physical pendulum:
    /// period `2 pi sqrt(I_P / (m g d))` with `I_P = I_axis + m d²`, times `1 + theta²/16`
    /// for the amplitude theta (0.05 rad here: 1.6e-4), its centre on the circle of radius
    /// d about the hinge, the hinge's axis any direction in the horizontal plane.
    #[test]
    fn a_hinged_body_swings_as_a_physical_pendulum() {
        let dp = 0.01;
        let d = 0.3;
        for axis in [[1.0, 0.0, 0.0], [0.6, 0.8, 0.0]] {
            let mut sp = spec([true; 6]);
            let f0 = frame_of(&sp, 0..1000, &cube(10, dp), dp, 3, 9.81);
            let point = add(f0.centre0, [0.0, 0.0, d]);
            sp.hinge = Some(Hinge { point, axis });
            let f = frame_of(&sp, 0..1000, &cube(10, dp), dp, 3, 9.81);
            let i_p = dot(axis, mulv(&f.inertia0, axis)) + f.mass * d * d;
            let omega_n = (f.mass * 9.81 * d / i_p).sqrt();
            let theta = 0.05;
            sp.omega = scale(axis, theta * omega_n);
            let period = 2.0 * std::f64::consts::PI / omega_n * (1.0 + theta * theta / 16.0);
            let dt = period / 2000.0;
            for which in [Update::Verlet, Update::Predictor] {
                let mut s = BodyState::start(&sp, &f);
                let g = [0.0, 0.0, -9.81];
                // Upward crossings of the angular velocity about the axis, interpolated.
                let (mut t, mut crossings) = (0.0, Vec::new());
                let mut w_prev = dot(s.omega, axis);
                while crossings.len() < 3 {
                    s = if which == Update::Verlet {
                        s.advance(&f, Update::Verlet, dt, g, &s)
                    } else {
                        let half = s.advance(&f, Update::Predictor, dt, g, &s);
                        s.advance(&f, Update::Corrector, dt, g, &half)
                    };
                    t += dt;
                    let w = dot(s.omega, axis);
                    if w_prev < 0.0 && w >= 0.0 {
                        crossings.push(t - dt * w / (w - w_prev));
                    }
                    w_prev = w;
                    let r = norm(sub(s.centre, point));
                    assert!((r - d).abs() < 1e-12, "{which:?}: the centre left the circle: {r}");
                    assert!(dot(sub(s.centre, point), axis).abs() < 1e-12, "{which:?}: the centre left the plane");
                }
                let measured = 0.5 * (crossings[2] - crossings[0]);
                println!("{which:?} about {axis:?}: period {measured:.6} s against {period:.6} s");
                assert!(
                    (measured / period - 1.0).abs() < 1e-4,
                    "{which:?} about {axis:?}: period {measured} against {period}"
                );
            }
        }
    }

    #[test]
    fn a_moored_body_in_the_air_bobs_as_a_mass_on_a_spring() {
        let dp = 0.01;
        let mut sp = spec([true; 6]);
        let top = [0.05, 0.05, 0.1];
        sp.moorings = vec![Mooring { anchor: [0.05, 0.05, 1.1], fairlead: top, stiffness: 500.0, length: 1.0 }];
        let f = frame_of(&sp, 0..1000, &cube(10, dp), dp, 3, 9.81);
        let (m, k) = (f.mass, 500.0);
        let period = 2.0 * std::f64::consts::PI * (m / k).sqrt();
        let dt = period / 1000.0;
        for (which, name) in [(Update::Verlet, "verlet"), (Update::Predictor, "symplectic")] {
            let mut s = BodyState::start(&sp, &f);
            // Released with the line just taut: from 0 stretch, oscillates between 0 and 2 m g / k.
            let mut lowest = f64::MAX;
            let mut t = 0.0;
            while t < 4.0 * period - 1e-12 {
                s = if which == Update::Verlet {
                    s.advance(&f, Update::Verlet, dt, [0.0, 0.0, -9.81], &s)
                } else {
                    let half = s.advance(&f, Update::Predictor, dt, [0.0, 0.0, -9.81], &s);
                    s.advance(&f, Update::Corrector, dt, [0.0, 0.0, -9.81], &half)
                };
                t += dt;
                lowest = lowest.min(s.centre[2]);
            }
            let stretch = m * 9.81 / k;
            // After 4 whole periods it is back at the top of its swing, at rest.
            assert!((s.centre[2] - f.centre0[2]).abs() < 1e-5 * stretch, "{name}: {} vs {}", s.centre[2], f.centre0[2]);
            assert!(
                (f.centre0[2] - lowest - 2.0 * stretch).abs() < 1e-4 * stretch,
                "{name}: swing {}",
                f.centre0[2] - lowest
            );
            // A line through the centre of mass (to the rounding of the particles' centroid)
            // turns and shifts nothing.
            assert!(s.rot[0][1].abs() < 1e-12 && s.vel[0].abs() < 1e-12, "{name}: {:?}", s.rot);
        }
    }

    #[test]
    fn fixed_point_sums_do_not_depend_on_the_order() {
        let b =
            BodyLoad { ids: 0..100, centre: [0.1, 0.2, 0.3], scale: LoadScale::new(2.0, 9.81, 0.3), contact: [0.0; 2] };
        let loads: Vec<([f64; 3], [f32; 3])> = (0..100)
            .map(|i| {
                let x = i as f64 * 0.37;
                let f = [(x * 3.0).sin() * 1e-3, x.cos() * 7.0, -(x * 0.5).sin() * 1e2];
                ([x.sin(), x.cos(), 0.1 * x], f.map(|v| v as f32))
            })
            .collect();
        let sum = |order: &mut dyn Iterator<Item = usize>| {
            let mut out = [0i64; LOAD_LEN];
            for i in order {
                add_particle_load(&b, loads[i].0, loads[i].1, &mut out);
            }
            out
        };
        let forward = sum(&mut (0..100));
        assert_eq!(forward, sum(&mut (0..100).rev()));
        assert_eq!(forward, sum(&mut (0..100).map(|i| (i * 37) % 100)));
        let (f, _) = from_fixed(&forward, &b.scale);
        let exact: f64 = loads.iter().map(|l| l.1[1] as f64).sum();
        assert!((f[1] - exact).abs() < 1e-9 * exact.abs());
    }
}
