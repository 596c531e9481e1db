//! Time integration of every particle for each update of the step plan.

use rayon::prelude::*;
use surge_core::backend::{BadParticle, Update, UpdateStats};
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::grid::Grid;
use surge_core::motion::{Damping, SolidMove};
use surge_core::V3;

/// Particles per task of the update.
const CHUNK: usize = 512;

/// What one particle's update produced: displacement, speed, and its id when not finite.
type Moved = (f32, f32, Option<u32>);

/// What moves besides the fluid in an update (issue 14).
pub(crate) struct Motions<'a> {
    /// The rigid moves of this update, one per moving solid.
    pub moves: &'a [SolidMove],
    /// Damping zones.
    pub damping: &'a [Damping],
}

/// Apply `which` with time step dt. Fluid particles move with their accelerations; boundary
/// particles keep their (constant) velocity and only integrate density, never below rho0
/// (dynamic boundaries must not attract fluid). `shift` is `(A h, surface threshold)` when
/// shifting is on: full updates move fluid by `-A h |v| dt grad C` away from the free surface.
/// With `mdbc` boundary particles keep the density their last mDBC pass gave them (the
/// stored state is then that of the last force pass, for output and loads; the next pass
/// sets it anew whatever it is). The buffer particles of open boundaries always do, and
/// move with the velocity their pass gave them (issue 15).
///
/// `moves` (issue 14) puts the boundary particles of each moving solid where its pose at the
/// update's end puts them, with that pose's velocity, and turns their wall normals.
/// `damping` relaxes the velocity of fluid in damping zones at each
/// full update (not the predictor), by the factor at the particle's position before it.
#[allow(clippy::too_many_arguments)]
pub(crate) fn update(
    grid: &Grid,
    a: &mut ParticleArrays,
    which: Update,
    dt: f64,
    shift: Option<(f32, f32)>,
    mdbc: bool,
    motions: &Motions,
) -> Result<UpdateStats, BadParticle> {
    let dt = dt as f32;
    let half = 0.5 * dt;
    let ParticleArrays { pos, vel, vel_prev, pos_prev, force, info, shift: grad_c, cell, .. } = a;
    let (grad_c, cell): (&[[f32; 4]], &[[i32; 4]]) = (grad_c, cell);
    let damping = motions.damping;
    let full = which != Update::Predictor;
    let moves = motions.moves;
    // A moving solid's particle (None for fluid and fixed solids): where its pose at the
    // update's end puts the particle that was at `base` (cell-relative) at the step start,
    // and its velocity there.
    let solid_at = |i: usize, base: [f32; 4]| -> Option<(V3, V3)> {
        if info[i][1] == Kind::Fluid as u32 {
            return None;
        }
        let mv = moves.iter().find(|mv| mv.holds(info[i][0]))?;
        let (o, u) = mv.apply(cell[i], base);
        Some((V3::new(o[0], o[1], o[2]), V3::new(u[0], u[1], u[2])))
    };
    // Store the new state, shifted when due, and report on it.
    let finish = |i: usize, fluid: bool, pos: &mut [f32; 4], vel: &mut [f32; 4], x1: V3, v1: V3, d1: f32| -> Moved {
        let v1 = if fluid && full && !damping.is_empty() {
            let x = grid.absolute(cell[i], *pos);
            v1 * damping.iter().fold(1.0f32, |f, z| f * z.factor(x[z.axis], dt as f64) as f32)
        } else {
            v1
        };
        let d1 = if fluid {
            d1
        } else if mdbc || info[i][1] == Kind::Buffer as u32 {
            vel[3]
        } else {
            d1.max(0.0)
        };
        let x1 = match shift {
            Some((ah, threshold)) if fluid && which != Update::Predictor && grad_c[i][3] >= threshold => {
                x1 - V3::from4(grad_c[i]) * (ah * v1.norm2().sqrt() * dt)
            }
            _ => x1,
        };
        let ok = x1.norm2().is_finite() && v1.norm2().is_finite() && d1.is_finite();
        let disp = (x1 - V3::from4(*pos)).norm2().sqrt();
        *pos = x1.with_w(pos[3]);
        *vel = v1.with_w(d1);
        (disp, v1.norm2().sqrt(), if ok { None } else { Some(info[i][0]) })
    };
    // A task per chunk of particles, each a plain loop (rayon's plumbing per particle, with
    // five zipped slices, cost more than the update itself); the merge is order-free.
    let moved = match which {
        Update::Predictor | Update::Corrector => (
            pos.par_chunks_mut(CHUNK),
            vel.par_chunks_mut(CHUNK),
            vel_prev.par_chunks_mut(CHUNK),
            pos_prev.par_chunks_mut(CHUNK),
        )
            .into_par_iter()
            .zip(force.par_chunks(CHUNK))
            .enumerate()
            .map(|(c, ((pos, vel, vel_prev, pos_prev), force))| {
                let mut moved = (0.0, 0.0, None);
                for (k, (((pos, vel), (vel_prev, pos_prev)), f)) in pos
                    .iter_mut()
                    .zip(vel.iter_mut())
                    .zip(vel_prev.iter_mut().zip(pos_prev.iter_mut()))
                    .zip(force)
                    .enumerate()
                {
                    let i = c * CHUNK + k;
                    let fluid = info[i][1] == Kind::Fluid as u32;
                    let (acc, dd) = (V3::from4(*f), f[3]);
                    let m = if which == Update::Predictor {
                        *pos_prev = *pos;
                        *vel_prev = *vel;
                        let (x, v, d) = (V3::from4(*pos), V3::from4(*vel), vel[3]);
                        let v1 = if fluid { v + acc * half } else { v };
                        let (x1, v1) = solid_at(i, *pos).unwrap_or((x + v * half, v1));
                        finish(i, fluid, pos, vel, x1, v1, d + dd * half)
                    } else {
                        let (x0, v0, d0) = (V3::from4(*pos_prev), V3::from4(*vel_prev), vel_prev[3]);
                        let v1 = if fluid { v0 + acc * dt } else { v0 };
                        let (x1, v1) = solid_at(i, *pos_prev).unwrap_or((x0 + (v0 + v1) * half, v1));
                        finish(i, fluid, pos, vel, x1, v1, d0 + dd * dt)
                    };
                    moved = merge(moved, m);
                }
                moved
            })
            .reduce(|| (0.0, 0.0, None), merge),
        Update::Verlet | Update::VerletEuler => {
            (pos.par_chunks_mut(CHUNK), vel.par_chunks_mut(CHUNK), vel_prev.par_chunks_mut(CHUNK))
                .into_par_iter()
                .zip(force.par_chunks(CHUNK))
                .enumerate()
                .map(|(c, ((pos, vel, vel_prev), force))| {
                    let mut moved = (0.0, 0.0, None);
                    for (k, (((pos, vel), vel_prev), f)) in
                        pos.iter_mut().zip(vel.iter_mut()).zip(vel_prev.iter_mut()).zip(force).enumerate()
                    {
                        let i = c * CHUNK + k;
                        let fluid = info[i][1] == Kind::Fluid as u32;
                        let (x, v, d) = (V3::from4(*pos), V3::from4(*vel), vel[3]);
                        let (acc, dd) = (V3::from4(*f), f[3]);
                        // Verlet steps from one step back over 2 dt; the Euler step from now over dt.
                        let (vb, db, k) = if which == Update::Verlet {
                            (V3::from4(*vel_prev), vel_prev[3], 2.0 * dt)
                        } else {
                            (v, d, dt)
                        };
                        *vel_prev = *vel;
                        let m = if fluid {
                            finish(i, fluid, pos, vel, x + v * dt + acc * (half * dt), vb + acc * k, db + dd * k)
                        } else {
                            let (x1, v1) = solid_at(i, *pos).unwrap_or((x + v * dt, v));
                            finish(i, fluid, pos, vel, x1, v1, db + dd * k)
                        };
                        moved = merge(moved, m);
                    }
                    moved
                })
                .reduce(|| (0.0, 0.0, None), merge)
        }
    };
    let (disp_max, vel_max, bad) = moved;
    match bad {
        None => {
            if !motions.moves.is_empty() && !a.wall.is_empty() {
                turn_solids(a, motions.moves);
            }
            Ok(UpdateStats { disp_max, vel_max })
        }
        Some(id) => {
            let i = a.info.iter().position(|x| x[0] == id).expect("bad id exists");
            Err(BadParticle {
                id,
                pos: grid.absolute(a.cell[i], a.pos[i]),
                reason: "has a non-finite velocity, position or density",
                solid: None,
            })
        }
    }
}

/// After an update with moving solids: the wall normals of their boundary particles turn
/// with them. (Their mDBC velocity needs nothing here: the CPU's mDBC pass sets it for every
/// boundary particle before each force pass, those without a ghost node to their own
/// velocity; CUDA's pass lists only those with one, so its update refreshes the others.)
fn turn_solids(a: &mut ParticleArrays, moves: &[SolidMove]) {
    let ParticleArrays { info, wall, .. } = a;
    let info: &[[u32; 2]] = info;
    wall.par_iter_mut().enumerate().for_each(|(i, w)| {
        if info[i][1] != Kind::Fluid as u32 {
            if let Some(mv) = moves.iter().find(|mv| mv.holds(info[i][0])) {
                *w = mv.turn(*w);
            }
        }
    });
}

fn merge(x: Moved, y: Moved) -> Moved {
    let bad = match (x.2, y.2) {
        (Some(p), Some(q)) => Some(p.min(q)),
        (p, q) => p.or(q),
    };
    (x.0.max(y.0), x.1.max(y.1), bad)
}
