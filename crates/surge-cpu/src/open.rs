//! Open boundaries on the CPU (issue 15, [`surge_core::open`]): the buffer particles' pass
//! before each force pass, and what a rebuild does at the planes.

use crate::mdbc::{ghost_sums, Ghosts};
use rayon::prelude::*;
use std::ops::Range;
use surge_core::backend::Failure;
use surge_core::buffers::{BufferSet, Kind, ParticleArrays};
use surge_core::case::Case;
use surge_core::config::KernelKind;
use surge_core::grid::Grid;
use surge_core::open::{action, spawn_id, zone_of, Action};
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::{CubicSpline, SmoothingKernel, WendlandC2};
use surge_core::V3;

/// Set the velocity and relative density of the buffer particles of `range` at time t
/// ([`surge_core::open::OpenZone::state`]), from the fluid held (its ghost nodes' stencils
/// lie in the window: [`surge_core::decomp::halo`]).
#[allow(clippy::too_many_arguments)]
pub(crate) fn pass(
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    a: &mut ParticleArrays,
    range: Range<usize>,
    t: f64,
) {
    let (h, dim) = (case.h, case.dim);
    match (case.kernel, dim) {
        (KernelKind::WendlandC2, 2) => {
            run::<_, 2>(WendlandC2::new(h, dim), case, consts, grid, cell_start, a, range, t)
        }
        (KernelKind::WendlandC2, _) => {
            run::<_, 3>(WendlandC2::new(h, dim), case, consts, grid, cell_start, a, range, t)
        }
        (KernelKind::CubicSpline, 2) => {
            run::<_, 2>(CubicSpline::new(h, dim), case, consts, grid, cell_start, a, range, t)
        }
        (KernelKind::CubicSpline, _) => {
            run::<_, 3>(CubicSpline::new(h, dim), case, consts, grid, cell_start, a, range, t)
        }
    }
}

#[allow(clippy::too_many_arguments)]
fn run<K: SmoothingKernel, const DIM: usize>(
    kernel: K,
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    a: &mut ParticleArrays,
    range: Range<usize>,
    t: f64,
) {
    let ParticleArrays { pos, vel, cell, info, .. } = a;
    let (pos, cell, info) = (&*pos, &*cell, &*info);
    // The scalar sums (a pass over the few buffer particles).
    let at = Ghosts { consts, grid, cell_start, simd: false, pass: crate::mdbc::new_pass() };
    let g = case.body_force.iter().map(|x| x * x).sum::<f64>().sqrt();
    let speeds: Vec<Option<f64>> = case.open.iter().map(|z| z.speed(t)).collect();
    // The new values, computed from the old ones of every particle, then stored.
    let new: Vec<(usize, [f32; 4])> = range
        .into_par_iter()
        .filter(|&i| info[i][1] == Kind::Buffer as u32)
        .filter_map(|i| {
            let x = grid.absolute(cell[i], pos[i]);
            let k = zone_of(&case.open, x, DIM, case.dp)?;
            let z = &case.open[k];
            // The ghost node: the particle's mirror image across the plane.
            let mut og = [pos[i][0], pos[i][1], pos[i][2]];
            og[z.axis] += z.ghost_shift(x) as f32;
            let vel: &[[f32; 4]] = vel;
            let og = V3::new(og[0], og[1], og[2]);
            let fluid = |j: usize| info[j][1] == Kind::Fluid as u32;
            let sums = ghost_sums::<K, DIM, true>(&kernel, &at, pos, vel, cell[i], og, fluid);
            let d = z.density_at(x, DIM, consts, g);
            Some((i, z.state::<DIM>(x, speeds[k], d, &sums, vel[i])))
        })
        .collect();
    for (i, v) in new {
        vel[i] = v;
    }
}

/// What the open boundaries did to a device's particles at a rebuild.
#[derive(Debug, Default)]
pub(crate) struct Changes {
    /// Owned particles to drop (outflow), ascending.
    pub removed: Vec<u32>,
    /// Particles spawned by the inlets, appended after the held ones (not yet re-keyed).
    pub spawned: usize,
}

/// Before a rebuild's re-key: turn the owned particles `own` that crossed a plane into
/// fluid or buffer particles, list those that flowed out, and append a new buffer particle
/// for each inlet particle that entered the fluid ([`surge_core::open::action`]).
pub(crate) fn rebuild(
    case: &Case,
    grid: &Grid,
    a: &mut ParticleArrays,
    own: Range<usize>,
    conserved: BufferSet,
) -> Result<Changes, Failure> {
    let (dim, dp) = (case.dim, case.dp);
    let acts: Vec<(u32, Action)> = own
        .into_par_iter()
        .filter_map(|i| {
            let kind = a.info[i][1];
            if kind == Kind::Boundary as u32 {
                return None;
            }
            let x = grid.absolute(a.cell[i], a.pos[i]);
            match action(&case.open, kind, x, dim, dp) {
                Action::Keep => None,
                act => Some((i as u32, act)),
            }
        })
        .collect();
    let mut out = Changes::default();
    let mut spawn = Vec::new();
    for &(i, act) in &acts {
        let i = i as usize;
        match act {
            Action::Keep => {}
            Action::ToFluid => a.info[i][1] = Kind::Fluid as u32,
            Action::ToBuffer => a.info[i][1] = Kind::Buffer as u32,
            Action::Remove => out.removed.push(i as u32),
            Action::Spawn(k) => {
                a.info[i][1] = Kind::Fluid as u32;
                spawn.push((i as u32, k));
            }
        }
    }
    if spawn.is_empty() {
        return Ok(out);
    }
    let idx: Vec<u32> = spawn.iter().map(|s| s.0).collect();
    let mut new = a.gather(&idx, conserved);
    for (n, &(i, k)) in spawn.iter().enumerate() {
        let z = &case.open[k as usize];
        let id = a.info[i as usize][0];
        let Some(new_id) = spawn_id(id, case.open_columns, z.layers) else {
            return Err(Failure::Device(format!(
                "{}: particle {id} would make a new particle with an id past 2^32; the run has outgrown the ids \
                 (fewer columns or a shorter run)",
                z.name
            )));
        };
        let off = z.spawn_offset(dp);
        new.info[n] = [new_id, Kind::Buffer as u32];
        for ax in 0..dim {
            new.pos[n][ax] += off[ax] as f32;
        }
    }
    out.spawned = new.len();
    a.append(&mut new);
    Ok(out)
}
