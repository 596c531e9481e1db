//! Loads on solids at sample times: a loop over owned boundary particles of chosen id
//! ranges, reading their fluid neighbours through the cell table. Never part of a step.

use crate::forces::for_each_neighbour_of;
use rayon::prelude::*;
use std::ops::Range;
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::case::Case;
use surge_core::gauge::ParticleLoad;
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::SmoothingKernel;
use surge_core::physics::options::{DiffusionModel, ShiftingModel, ViscosityModel};
use surge_core::physics::pair::{dispatch, PairParticle, Physics, WithPhysics};
use surge_core::V3;

struct Loads<'a> {
    consts: &'a Constants,
    grid: &'a Grid,
    whole: &'a Grid,
    cell_start: &'a [u32],
    a: &'a ParticleArrays,
    own: Range<usize>,
    ids: &'a [Range<u32>],
}

/// The fluid's force on each owned boundary particle (`own`) whose id lies in one of `ids`,
/// where it is not zero, in storage order ([`surge_core::gauge::Interpolate::boundary_loads`]).
/// `grid` is the device's window (cell table), `whole` the whole grid (absolute positions).
#[allow(clippy::too_many_arguments)]
pub(crate) fn boundary_loads(
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    whole: &Grid,
    cell_start: &[u32],
    a: &ParticleArrays,
    own: Range<usize>,
    ids: &[Range<u32>],
) -> Vec<ParticleLoad> {
    dispatch(case, consts, Loads { consts, grid, whole, cell_start, a, own, ids })
}

impl WithPhysics for Loads<'_> {
    type Output = Vec<ParticleLoad>;

    fn call<K: SmoothingKernel, V: ViscosityModel, D: DiffusionModel, S: ShiftingModel, const DIM: usize>(
        self,
        ph: Physics<K, V, D, S, DIM>,
    ) -> Vec<ParticleLoad> {
        let Loads { consts: eos, grid, whole, cell_start, a, own, ids } = self;
        let ParticleArrays { pos, vel, cell, info, wall, .. } = a;
        let particle = |j: usize| PairParticle {
            vel: V3::from4(vel[j]),
            rho: eos.density(vel[j][3]),
            p: eos.pressure(vel[j][3]),
            m: pos[j][3],
            wall: if V::MIRROR_WALL { wall[j] } else { [0.0; 4] },
        };
        own.into_par_iter()
            .filter(|&i| info[i][1] == Kind::Boundary as u32 && ids.iter().any(|r| r.contains(&info[i][0])))
            .filter_map(|i| {
                let pb = particle(i);
                let mut f = V3::default();
                for_each_neighbour_of::<DIM>(grid, cell_start, pos, cell[i], V3::from4(pos[i]), true, |j, r, r2, _| {
                    if r2 < ph.support2 && r2 > 0.0 {
                        ph.load_pair(r, r2, &pb, &particle(j), &mut f);
                    }
                });
                let force = [f.x, f.y, f.z];
                (force != [0.0; 3]).then(|| ParticleLoad {
                    id: info[i][0],
                    pos: whole.absolute(cell[i], pos[i]),
                    force,
                })
            })
            .collect()
    }
}
