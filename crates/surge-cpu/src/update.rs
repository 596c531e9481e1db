//! Time integration of every particle for each update of the step plan.

use rayon::prelude::*;
use surge_core::backend::{BadParticle, Update, UpdateStats};
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::grid::Grid;
use surge_core::V3;

/// Apply `which` with time step dt. Fluid particles move with their accelerations; boundary
/// particles keep their (constant) velocity and only integrate density, never below rho0
/// (dynamic boundaries must not attract fluid). `shift` is `(A h, surface threshold)` when
/// shifting is on: full updates move fluid by `-A h |v| dt grad C` away from the free surface.
pub(crate) fn update(
    grid: &Grid,
    a: &mut ParticleArrays,
    which: Update,
    dt: f64,
    shift: Option<(f32, f32)>,
) -> UpdateStats {
    let dt = dt as f32;
    let half = 0.5 * dt;
    let ParticleArrays { pos, vel, vel_prev, pos_prev, force, info, cell, shift: grad_c, .. } = a;
    pos_prev.resize(pos.len(), [0.0; 4]);
    let no_shift = [0.0f32; 4];
    let (disp, vmax, bad) = (pos.par_iter_mut(), vel.par_iter_mut(), vel_prev.par_iter_mut(), pos_prev.par_iter_mut())
        .into_par_iter()
        .zip((force.par_iter(), info.par_iter()))
        .enumerate()
        .map(|(i, ((pos, vel, vel_prev, pos_prev), (f, info)))| {
            let fluid = info[1] == Kind::Fluid as u32;
            let (x, v, d) = (V3::from4(*pos), V3::from4(*vel), vel[3]);
            let (acc, dd) = (V3::from4(*f), f[3]);
            let (x1, v1, d1) = match which {
                Update::Predictor => {
                    *pos_prev = *pos;
                    *vel_prev = *vel;
                    let v1 = if fluid { v + acc * half } else { v };
                    (x + v * half, v1, d + dd * half)
                }
                Update::Corrector => {
                    let (x0, v0, d0) = (V3::from4(*pos_prev), V3::from4(*vel_prev), vel_prev[3]);
                    let v1 = if fluid { v0 + acc * dt } else { v0 };
                    (x0 + (v0 + v1) * half, v1, d0 + dd * dt)
                }
                Update::Verlet | Update::VerletEuler => {
                    let (vb, db, k) = if which == Update::Verlet {
                        (V3::from4(*vel_prev), vel_prev[3], 2.0 * dt)
                    } else {
                        (v, d, dt)
                    };
                    *vel_prev = *vel;
                    if fluid {
                        (x + v * dt + acc * (half * dt), vb + acc * k, db + dd * k)
                    } else {
                        (x + v * dt, v, db + dd * k)
                    }
                }
            };
            let d1 = if fluid { d1 } else { d1.max(0.0) };
            let x1 = match shift {
                Some((ah, threshold)) if fluid && which != Update::Predictor => {
                    let sh = grad_c.get(i).unwrap_or(&no_shift);
                    if sh[3] >= threshold {
                        x1 - V3::from4(*sh) * (ah * v1.norm2().sqrt() * dt)
                    } else {
                        x1
                    }
                }
                _ => x1,
            };
            let ok = x1.norm2().is_finite() && v1.norm2().is_finite() && d1.is_finite();
            let disp = (x1 - x).norm2().sqrt();
            *pos = x1.with_w(pos[3]);
            *vel = v1.with_w(d1);
            (disp, v1.norm2().sqrt(), if ok { None } else { Some(info[0]) })
        })
        .reduce(
            || (0.0f32, 0.0f32, None),
            |x, y| {
                let bad = match (x.2, y.2) {
                    (Some(p), Some(q)) => Some(p.min(q)),
                    (p, q) => p.or(q),
                };
                (x.0.max(y.0), x.1.max(y.1), bad)
            },
        );
    let bad = bad.map(|id| {
        let i = info.iter().position(|x| x[0] == id).expect("bad id exists");
        BadParticle {
            id,
            pos: grid.absolute(cell[i], pos[i]),
            reason: "has a non-finite velocity, position or density",
        }
    });
    UpdateStats { disp_max: disp, vel_max: vmax, bad }
}
