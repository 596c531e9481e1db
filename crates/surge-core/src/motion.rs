//! Prescribed motion of walls and obstacles (issue 14): laws of time, their composition into
//! a rigid pose, and the per-update rigid move every backend applies to a moving solid's
//! boundary particles.
//!
//! A solid's pose at time t maps where the geometry put a point, X, to where it is:
//! `x = R(t) X + p(t)`, and a point of the solid moves at `v(x) = p'(t) + w(t) × (x - p(t))`.
//! Each law is such a pose (a translation along a direction, a rotation about an axis
//! through a centre, a path of displacements from a table, a wave paddle); a solid's laws
//! compose in the order given. Every law is at rest at t = 0 (the geometry is where the solid
//! starts).
//!
//! A backend moves a solid's particles from the pose of the step start, t, to the pose of
//! the update's end (t + dt/2 for the symplectic predictor, t + dt otherwise) as one rigid
//! move, `x_b = M (x_a - p_a) + p_b` with `M = R_b R_aᵀ`, in float64, and gives them the
//! velocity of the pose at the end: positions and velocities are exact to rounding at every
//! update, with no drift from integrating velocities. Wall normals (mDBC, Morris) turn with
//! the solid. [`SolidMove`] is that move as the 36 float64 the CUDA kernel reads.

use crate::case::Solid;
use crate::mesh::{add, cross, scale, sub};
use crate::shape::Placement;
use crate::waves::{IrregularWave, RegularWave};
use std::ops::Range;

/// Rows of a 3×3 matrix.
pub type Mat3 = [[f64; 3]; 3];

pub(crate) const I3: Mat3 = [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]];

pub(crate) fn mul(a: &Mat3, b: &Mat3) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| (0..3).map(|k| a[i][k] * b[k][j]).sum()))
}
pub(crate) fn mulv(a: &Mat3, v: [f64; 3]) -> [f64; 3] {
    std::array::from_fn(|i| a[i][0] * v[0] + a[i][1] * v[1] + a[i][2] * v[2])
}
pub(crate) fn transpose(a: &Mat3) -> Mat3 {
    std::array::from_fn(|i| std::array::from_fn(|j| a[j][i]))
}
/// A rigid pose and its rate: `x = rot X + pos`, `v(x) = vel + omega × (x - pos)`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Pose {
    /// Rotation.
    pub rot: Mat3,
    /// Translation.
    pub pos: [f64; 3],
    /// Angular velocity (world frame).
    pub omega: [f64; 3],
    /// Rate of `pos`.
    pub vel: [f64; 3],
}

impl Pose {
    /// At rest where the geometry put it.
    pub const IDENTITY: Pose = Pose { rot: I3, pos: [0.0; 3], omega: [0.0; 3], vel: [0.0; 3] };

    /// A translation by `d` at rate `v`.
    pub fn translation(d: [f64; 3], v: [f64; 3]) -> Pose {
        Pose { rot: I3, pos: d, omega: [0.0; 3], vel: v }
    }

    /// A rotation by `angle` (radians) about the unit `axis` through `centre`, turning at
    /// `rate` (rad/s): `x = R (X - c) + c`.
    pub fn rotation(axis: [f64; 3], centre: [f64; 3], angle: f64, rate: f64) -> Pose {
        let rot = Placement::rotation(axis, angle.to_degrees());
        let omega = scale(axis, rate);
        let pos = sub(centre, mulv(&rot, centre));
        // p' = -w × (R c), so that v(x) = w × (x - c).
        Pose { rot, pos, omega, vel: scale(cross(omega, mulv(&rot, centre)), -1.0) }
    }

    /// This pose followed by `outer`: `x = outer(self(X))`.
    pub fn then(&self, outer: &Pose) -> Pose {
        let r2p1 = mulv(&outer.rot, self.pos);
        Pose {
            rot: mul(&outer.rot, &self.rot),
            pos: add(r2p1, outer.pos),
            omega: add(outer.omega, mulv(&outer.rot, self.omega)),
            vel: add(add(cross(outer.omega, r2p1), mulv(&outer.rot, self.vel)), outer.vel),
        }
    }

    /// Where the point the geometry put at `x0` is.
    pub fn apply(&self, x0: [f64; 3]) -> [f64; 3] {
        add(mulv(&self.rot, x0), self.pos)
    }

    /// The velocity of the solid's point now at `x`.
    pub fn velocity_at(&self, x: [f64; 3]) -> [f64; 3] {
        add(self.vel, cross(self.omega, sub(x, self.pos)))
    }
}

/// A scalar function of time with its exact derivative, at rest at t = 0.
#[derive(Debug, Clone, PartialEq)]
pub enum Signal {
    /// `a (sin(w t + phase) - sin(phase))`.
    Sinusoid {
        /// Amplitude.
        amplitude: f64,
        /// Angular frequency (rad/s).
        omega: f64,
        /// Phase (rad).
        phase: f64,
    },
    /// `rate t`.
    Rate(f64),
    /// Linear interpolation in a table of (time, value); held at the ends.
    Table {
        /// Strictly increasing times.
        t: Vec<f64>,
        /// Values, one per time.
        v: Vec<f64>,
    },
    /// A regular-wave paddle's displacement at the still-water level.
    Regular(Box<RegularWave>),
    /// An irregular-wave paddle's displacement at the still-water level.
    Irregular(Box<IrregularWave>),
}

impl Signal {
    /// Value and derivative at `t`.
    pub fn eval(&self, t: f64) -> (f64, f64) {
        match self {
            Signal::Sinusoid { amplitude, omega, phase } => {
                let (s, c) = (omega * t + phase).sin_cos();
                (amplitude * (s - phase.sin()), amplitude * omega * c)
            }
            Signal::Rate(r) => (r * t, *r),
            Signal::Table { t: ts, v } => table_eval(ts, v, t),
            Signal::Regular(w) => w.state(t),
            Signal::Irregular(w) => w.state(t),
        }
    }

    /// An upper bound of |derivative|.
    pub fn max_rate(&self) -> f64 {
        match self {
            Signal::Sinusoid { amplitude, omega, .. } => (amplitude * omega).abs(),
            Signal::Rate(r) => r.abs(),
            Signal::Table { t, v } => {
                t.windows(2).zip(v.windows(2)).map(|(t, v)| ((v[1] - v[0]) / (t[1] - t[0])).abs()).fold(0.0, f64::max)
            }
            Signal::Regular(w) => w.max_speed(),
            Signal::Irregular(w) => w.max_speed(),
        }
    }
}

/// Where `x` falls in the strictly increasing times `t`: `Ok(k)`, the segment between rows k
/// and k + 1, or `Err(row)` outside the table, the nearer end's row (held there).
fn segment(t: &[f64], x: f64) -> Result<usize, usize> {
    if x <= t[0] {
        return Err(0);
    }
    if x >= t[t.len() - 1] {
        return Err(t.len() - 1);
    }
    Ok(t.partition_point(|&s| s <= x) - 1)
}

/// Linear interpolation and its slope; held (slope 0) outside the table.
fn table_eval(t: &[f64], v: &[f64], x: f64) -> (f64, f64) {
    match segment(t, x) {
        Err(end) => (v[end], 0.0),
        Ok(k) => {
            let slope = (v[k + 1] - v[k]) / (t[k + 1] - t[k]);
            (v[k] + slope * (x - t[k]), slope)
        }
    }
}

/// One law of a solid's motion.
#[derive(Debug, Clone, PartialEq)]
pub enum Law {
    /// A translation along the unit `dir` by the signal (a sinusoid, a piston paddle).
    Translate {
        /// Unit direction.
        dir: [f64; 3],
        /// Displacement along it.
        s: Signal,
    },
    /// A translation along a path of displacements from a table: (time, displacement),
    /// linear between rows, held after the last.
    Path {
        /// Strictly increasing times.
        t: Vec<f64>,
        /// Displacements, one per time.
        d: Vec<[f64; 3]>,
    },
    /// A rotation about the unit `axis` through `centre` by the signal's angle (radians).
    Rotate {
        /// Unit axis.
        axis: [f64; 3],
        /// A point of the axis.
        centre: [f64; 3],
        /// Angle (radians).
        s: Signal,
    },
    /// A flap paddle hinged at `hinge` about the unit `axis`, whose displacement at the
    /// still-water level, `lever` above the hinge, is the signal: angle `atan(X / lever)`.
    Flap {
        /// Unit axis (the hinge line, oriented so a positive angle moves the flap's top
        /// along the wave direction).
        axis: [f64; 3],
        /// A point of the hinge line.
        hinge: [f64; 3],
        /// Height of the still-water level above the hinge.
        lever: f64,
        /// Displacement at the still-water level.
        s: Signal,
    },
}

impl Law {
    /// The pose at time t.
    pub fn pose(&self, t: f64) -> Pose {
        match self {
            Law::Translate { dir, s } => {
                let (x, v) = s.eval(t);
                Pose::translation(scale(*dir, x), scale(*dir, v))
            }
            Law::Path { t: ts, d } => match segment(ts, t) {
                Err(end) => Pose::translation(d[end], [0.0; 3]),
                Ok(k) => {
                    let span = ts[k + 1] - ts[k];
                    let v: [f64; 3] = std::array::from_fn(|a| (d[k + 1][a] - d[k][a]) / span);
                    Pose::translation(std::array::from_fn(|a| d[k][a] + v[a] * (t - ts[k])), v)
                }
            },
            Law::Rotate { axis, centre, s } => {
                let (a, w) = s.eval(t);
                Pose::rotation(*axis, *centre, a, w)
            }
            Law::Flap { axis, hinge, lever, s } => {
                let (x, v) = s.eval(t);
                // d/dt atan(x / l) = l x' / (l² + x²).
                Pose::rotation(*axis, *hinge, (x / lever).atan(), lever * v / (lever * lever + x * x))
            }
        }
    }

    /// An upper bound of the speed of the solid's points within `reach` of the axis (for
    /// rotations; translations ignore it).
    pub fn max_speed(&self, reach: f64) -> f64 {
        match self {
            Law::Translate { s, .. } => s.max_rate(),
            Law::Path { t, d } => t
                .windows(2)
                .zip(d.windows(2))
                .map(|(t, d)| crate::mesh::norm(sub(d[1], d[0])) / (t[1] - t[0]))
                .fold(0.0, f64::max),
            Law::Rotate { s, .. } => s.max_rate() * reach,
            Law::Flap { s, lever, .. } => s.max_rate() / lever * reach,
        }
    }

    /// What the law is, for `surge check`.
    pub fn name(&self) -> &'static str {
        match self {
            Law::Translate { s: Signal::Regular(_) | Signal::Irregular(_), .. } => "piston paddle",
            Law::Translate { .. } => "sinusoidal translation",
            Law::Path { .. } => "table of displacements",
            Law::Rotate { .. } => "rotation",
            Law::Flap { .. } => "flap paddle",
        }
    }

    /// True when the law turns the solid.
    pub fn rotates(&self) -> bool {
        matches!(self, Law::Rotate { .. } | Law::Flap { .. })
    }
}

/// The laws of one solid, composed in order.
#[derive(Debug, Clone, PartialEq)]
pub struct Motion {
    /// Which solid moves.
    pub solid: Solid,
    /// Its laws, applied in order (the first to the geometry).
    pub laws: Vec<Law>,
    /// The half-diagonal-plus-distance bound of the solid's points from any rotation
    /// centre, for [`Motion::max_speed`].
    pub reach: f64,
}

impl Motion {
    /// The solid's pose at time t.
    pub fn pose(&self, t: f64) -> Pose {
        self.laws.iter().fold(Pose::IDENTITY, |p, l| p.then(&l.pose(t)))
    }
    /// An upper bound of the speed of the solid's points (for the speed of sound).
    pub fn max_speed(&self) -> f64 {
        self.laws.iter().map(|l| l.max_speed(self.reach)).sum()
    }
    /// True when one of the laws turns the solid.
    pub fn rotates(&self) -> bool {
        self.laws.iter().any(Law::rotates)
    }
}

/// Number of float64 in a [`SolidMove`].
pub const MOVE_LEN: usize = 36;

/// One moving solid's rigid move over one update, as the backends apply it to each of its
/// boundary particles (global id in `ids`), whose position is its cell `c` and the float32
/// offset `o` from that cell's centre:
///
/// ```text
/// q  = q0 + c * cell          (the cell centre less the pose's translation at the start)
/// r  = M (q + o)              (the particle at the end, less the end pose's translation)
/// o' = r - q + shift          (its new offset, same cell)
/// v' = vel + omega × r
/// n' = N n                    (the wall normal, from the normal's pose to the end pose)
/// ```
///
/// all in float64. The layout (float64 indices) is what `kernels/step.cu` reads.
#[derive(Debug, Clone, Copy, PartialEq, bytemuck::Pod, bytemuck::Zeroable)]
#[repr(C)]
pub struct SolidMove {
    /// First global id and one past the last (0..2).
    pub ids: [f64; 2],
    /// Origin of the grid plus half a cell, less the start pose's translation (2..5).
    pub q0: [f64; 3],
    /// The grid's cell size (5..8).
    pub cell: [f64; 3],
    /// `R_end R_startᵀ`, rows (8..17).
    pub m: [f64; 9],
    /// `p_end - p_start` (17..20).
    pub shift: [f64; 3],
    /// The end pose's `vel` (20..23).
    pub vel: [f64; 3],
    /// The end pose's `omega` (23..26).
    pub omega: [f64; 3],
    /// `R_end R_normalᵀ`, rows (26..35).
    pub n: [f64; 9],
    /// Padding to 36 (35).
    pub pad: f64,
}

const _: () = assert!(std::mem::size_of::<SolidMove>() == MOVE_LEN * 8);

impl SolidMove {
    /// The move of `ids` from pose `a` (the positions' time) to pose `b`, with the normals
    /// at pose `n`, on a grid of `origin` and cell size `cell`.
    pub fn new(ids: &Range<u32>, a: &Pose, b: &Pose, n: &Pose, origin: [f64; 3], cell: [f64; 3]) -> SolidMove {
        let flat = |m: Mat3| -> [f64; 9] { std::array::from_fn(|k| m[k / 3][k % 3]) };
        SolidMove {
            ids: [ids.start as f64, ids.end as f64],
            q0: std::array::from_fn(|k| origin[k] + 0.5 * cell[k] - a.pos[k]),
            cell,
            m: flat(mul(&b.rot, &transpose(&a.rot))),
            shift: sub(b.pos, a.pos),
            vel: b.vel,
            omega: b.omega,
            n: flat(mul(&b.rot, &transpose(&n.rot))),
            pad: 0.0,
        }
    }

    /// True when particle `id` belongs to the solid.
    #[inline]
    pub fn holds(&self, id: u32) -> bool {
        let id = id as f64;
        id >= self.ids[0] && id < self.ids[1]
    }

    /// The particle at cell `c`, offset `o` (from the start), moved: its new offset (same
    /// cell) and velocity.
    #[inline]
    pub fn apply(&self, c: [i32; 4], o: [f32; 4]) -> ([f32; 3], [f32; 3]) {
        let mut out = ([0.0f32; 3], [0.0f32; 3]);
        let q: [f64; 3] = std::array::from_fn(|k| self.q0[k] + c[k] as f64 * self.cell[k]);
        let s: [f64; 3] = std::array::from_fn(|k| q[k] + o[k] as f64);
        let r: [f64; 3] =
            std::array::from_fn(|k| self.m[3 * k] * s[0] + self.m[3 * k + 1] * s[1] + self.m[3 * k + 2] * s[2]);
        let w = self.omega;
        let v = add(self.vel, cross(w, r));
        for k in 0..3 {
            out.0[k] = (r[k] - q[k] + self.shift[k]) as f32;
            out.1[k] = v[k] as f32;
        }
        out
    }

    /// A wall normal turned with the solid.
    #[inline]
    pub fn turn(&self, n: [f32; 4]) -> [f32; 4] {
        let x = [n[0] as f64, n[1] as f64, n[2] as f64];
        let m = &self.n;
        [
            (m[0] * x[0] + m[1] * x[1] + m[2] * x[2]) as f32,
            (m[3] * x[0] + m[4] * x[1] + m[5] * x[2]) as f32,
            (m[6] * x[0] + m[7] * x[1] + m[8] * x[2]) as f32,
            n[3],
        ]
    }
}

/// The times of one update of a step that starts at `t` with step `dt`: the positions' pose
/// (the step start: every update moves from the state at the step start), the end pose and
/// the normals' pose (the time the previous update of this step left them at).
pub fn update_times(which: crate::backend::Update, t: f64, dt: f64) -> (f64, f64, f64) {
    use crate::backend::Update;
    match which {
        Update::Predictor => (t, t + 0.5 * dt, t),
        Update::Corrector => (t, t + dt, t + 0.5 * dt),
        Update::Verlet | Update::VerletEuler => (t, t + dt, t),
    }
}

/// The moves of every moving solid for one update (`ids[k]` the particles of `motions[k]`),
/// into `out` (cleared): empty when nothing moves.
pub fn moves(
    motions: &[Motion],
    ids: &[Range<u32>],
    grid: &crate::grid::Grid,
    which: crate::backend::Update,
    t: f64,
    dt: f64,
    out: &mut Vec<SolidMove>,
) {
    out.clear();
    let (ta, tb, tn) = update_times(which, t, dt);
    for (m, ids) in motions.iter().zip(ids) {
        let (a, b) = (m.pose(ta), m.pose(tb));
        let n = if tn == ta { a } else { m.pose(tn) };
        out.push(SolidMove::new(ids, &a, &b, &n, grid.origin, grid.cell));
    }
}

/// A damping zone (`[[damping]]`): each full update multiplies the velocity of the fluid in
/// it by `max(0, 1 - dt strength s²)`, with s the position in the zone from 0 at `start` to
/// 1 at `end` (and beyond), as DualSPHysics' damping zones relax velocities to absorb waves.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Damping {
    /// Axis index.
    pub axis: usize,
    /// Where it starts.
    pub start: f64,
    /// Where it is full (may be below `start`).
    pub end: f64,
    /// Largest relaxation rate (1/s).
    pub strength: f64,
}

impl Damping {
    /// The factor on the velocity of a fluid particle at coordinate `x` along the axis.
    #[inline]
    pub fn factor(&self, x: f64, dt: f64) -> f64 {
        let s = ((x - self.start) / (self.end - self.start)).clamp(0.0, 1.0);
        (1.0 - dt * self.strength * s * s).max(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: [f64; 3], b: [f64; 3], tol: f64) -> bool {
        (0..3).all(|k| (a[k] - b[k]).abs() <= tol)
    }

    /// A composed pose's velocity is the time derivative of its positions (central
    /// differences, step 1e-5 s: error O(1e-10) for these smooth laws; 1e-7 allowed).
    #[test]
    fn composed_velocity_is_the_derivative_of_position() {
        let m = Motion {
            solid: Solid::Obstacle(0),
            laws: vec![
                Law::Rotate {
                    axis: [0.0, 0.0, 1.0],
                    centre: [0.3, 0.1, 0.0],
                    s: Signal::Sinusoid { amplitude: 0.4, omega: 2.0, phase: 0.3 },
                },
                Law::Translate { dir: [0.6, 0.8, 0.0], s: Signal::Sinusoid { amplitude: 0.2, omega: 3.0, phase: 0.0 } },
                Law::Rotate { axis: [1.0, 0.0, 0.0], centre: [0.0, 0.5, 0.2], s: Signal::Rate(0.7) },
            ],
            reach: 1.0,
        };
        let x0 = [0.7, -0.2, 0.4];
        for &t in &[0.0, 0.37, 1.9] {
            let e = 1e-5;
            let (p0, p1) = (m.pose(t - e).apply(x0), m.pose(t + e).apply(x0));
            let fd: [f64; 3] = std::array::from_fn(|k| (p1[k] - p0[k]) / (2.0 * e));
            let pose = m.pose(t);
            let v = pose.velocity_at(pose.apply(x0));
            assert!(close(v, fd, 1e-7), "t {t}: {v:?} vs {fd:?}");
        }
        assert!(close(m.pose(0.0).apply(x0), x0, 1e-15), "every law starts at rest where the geometry is");
    }

    /// The rigid move of one update puts a particle where the pose at the update's end puts
    /// it (to float32 rounding of the offset, 1e-7 of the cell) and gives it that pose's
    /// velocity.
    #[test]
    fn a_move_lands_on_the_end_pose() {
        let m = Motion {
            solid: Solid::Wall(0),
            laws: vec![Law::Rotate {
                axis: [0.0, 0.0, 1.0],
                centre: [0.5, 0.5, 0.0],
                s: Signal::Sinusoid { amplitude: 0.3, omega: 4.0, phase: 0.0 },
            }],
            reach: 1.0,
        };
        let (origin, cell) = ([-0.1, -0.2, 0.0], [0.023, 0.023, 0.023]);
        let at = |x: [f64; 3]| -> ([i32; 4], [f32; 4]) {
            let mut c = [0i32; 4];
            let mut o = [0f32; 4];
            for k in 0..2 {
                let i = ((x[k] - origin[k]) / cell[k]).floor();
                c[k] = i as i32;
                o[k] = (x[k] - (origin[k] + (i + 0.5) * cell[k])) as f32;
            }
            (c, o)
        };
        let x0 = [0.9, 0.35, 0.0];
        let (t, dt) = (0.4, 1e-3);
        let (pa, pb) = (m.pose(t), m.pose(t + dt));
        let xa = pa.apply(x0);
        let (c, o) = at(xa);
        let mv = SolidMove::new(&(0..10), &pa, &pb, &pa, origin, cell);
        let (o1, v1) = mv.apply(c, o);
        let xb = pb.apply(x0);
        // 2D: x and y (the third coordinate is not a position).
        let got: [f64; 3] =
            std::array::from_fn(|k| if k < 2 { origin[k] + (c[k] as f64 + 0.5) * cell[k] + o1[k] as f64 } else { 0.0 });
        assert!(close(got, [xb[0], xb[1], 0.0], 1e-7 * cell[0]), "{got:?} vs {xb:?}");
        let v = pb.velocity_at(xb);
        let v1 = v1.map(f64::from);
        assert!(close(v1, v, 1e-6 * (v[0].abs() + v[1].abs())), "{v1:?} vs {v:?}");
        let n = mv.turn([1.0, 0.0, 0.0, 0.5]);
        let want = mulv(&mul(&pb.rot, &transpose(&pa.rot)), [1.0, 0.0, 0.0]);
        assert!(close([n[0] as f64, n[1] as f64, 0.0], [want[0], want[1], 0.0], 1e-7) && n[3] == 0.5);
    }

    #[test]
    fn tables_interpolate_and_hold() {
        let (t, v) = (vec![0.0, 1.0, 3.0], vec![0.0, 2.0, 1.0]);
        assert_eq!(table_eval(&t, &v, 0.5), (1.0, 2.0));
        assert_eq!(table_eval(&t, &v, 2.0), (1.5, -0.5));
        assert_eq!(table_eval(&t, &v, 5.0), (1.0, 0.0));
        assert_eq!(table_eval(&t, &v, -1.0), (0.0, 0.0));
    }
}
