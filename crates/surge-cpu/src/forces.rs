//! The force pass: pressures, then every particle's neighbour loop over the cell stencil.

use rayon::prelude::*;
use std::ops::Range;
use surge_core::backend::ForceStats;
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::case::Case;
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::SmoothingKernel;
use surge_core::physics::options::{BoundaryModel, DiffusionModel, ShiftingModel, ViscosityModel};
use surge_core::physics::pair::{dispatch, Accum, PairParticle, Physics, WithPhysics};
use surge_core::V3;

/// Call `f(j, r_ij, r², j_is_fluid)` for every particle j in the stencil of cells around
/// `ci` (`grid.reach` cells each side; fluid only when `fluid_only`), in stencil order, then
/// storage order. `oi` is the offset of the centre from the centre of its cell;
/// `r_ij = x_i - x_j`.
#[inline(always)]
pub(crate) fn for_each_neighbour_of<const DIM: usize>(
    grid: &Grid,
    cell_start: &[u32],
    pos: &[[f32; 4]],
    ci: [i32; 4],
    oi: V3,
    fluid_only: bool,
    mut f: impl FnMut(usize, V3, f32, bool),
) {
    let cs = [grid.cell[0] as f32, grid.cell[1] as f32, grid.cell[2] as f32];
    let r = grid.reach;
    let zr = if DIM == 3 { -r..=r } else { 0..=0 };
    for dz in zr {
        for dy in -r..=r {
            for dx in -r..=r {
                let Some(nc) = grid.neighbour(ci, [dx, dy, dz]) else { continue };
                let k = grid.linear(nc);
                let (s, mid) = (cell_start[2 * k] as usize, cell_start[2 * k + 1] as usize);
                let e = if fluid_only { mid } else { cell_start[2 * k + 2] as usize };
                // x_i - x_j = (c_i - c_j) cs + o_i - o_j with c_j = c_i + d (unwrapped).
                let base = oi - V3::new(dx as f32 * cs[0], dy as f32 * cs[1], dz as f32 * cs[2]);
                for (j, pj) in pos.iter().enumerate().take(e).skip(s) {
                    let r = base - V3::from4(*pj);
                    f(j, r, r.norm2(), j < mid);
                }
            }
        }
    }
}

/// [`for_each_neighbour_of`] for particle i of the arrays, choosing the dimension at run time.
pub(crate) fn for_each_neighbour(
    grid: &Grid,
    cell_start: &[u32],
    a: &ParticleArrays,
    i: usize,
    all: bool,
    f: impl FnMut(usize, V3, f32, bool),
) {
    let oi = V3::from4(a.pos[i]);
    if grid.dim == 3 {
        for_each_neighbour_of::<3>(grid, cell_start, &a.pos, a.cell[i], oi, !all, f)
    } else {
        for_each_neighbour_of::<2>(grid, cell_start, &a.pos, a.cell[i], oi, !all, f)
    }
}

struct Pass<'a> {
    consts: &'a Constants,
    grid: &'a Grid,
    cell_start: &'a [u32],
    a: &'a mut ParticleArrays,
    range: Range<usize>,
    pressures: bool,
}

/// Forces of the particles `range`, after computing every particle's pressure when
/// `pressures` (the first part of a pass); returns the largest values for the time step.
pub(crate) fn forces(
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    a: &mut ParticleArrays,
    range: Range<usize>,
    pressures: bool,
) -> ForceStats {
    dispatch(case, consts, Pass { consts, grid, cell_start, a, range, pressures })
}

impl WithPhysics for Pass<'_> {
    type Output = ForceStats;

    fn call<
        K: SmoothingKernel,
        V: ViscosityModel,
        D: DiffusionModel,
        S: ShiftingModel,
        B: BoundaryModel,
        const DIM: usize,
    >(
        self,
        ph: Physics<K, V, D, S, B, DIM>,
    ) -> ForceStats {
        let Pass { consts: eos, grid, cell_start, a, range, pressures } = self;
        let g = eos.g;
        if pressures {
            a.press.par_iter_mut().zip(a.vel.par_iter()).for_each(|(p, v)| *p = eos.pressure(v[3]));
        }
        let first = range.start;
        let ParticleArrays { pos, vel, cell, info, press, force, wall, shift, mdbc, .. } = a;
        let (pos, vel, cell, info, press, wall, mdbc) = (&*pos, &*vel, &*cell, &*info, &*press, &*wall, &*mdbc);
        let particle = |j: usize| PairParticle {
            vel: V3::from4(vel[j]),
            rho: eos.density(vel[j][3]),
            p: press[j],
            m: pos[j][3],
            wall: if V::MIRROR_WALL && !B::MDBC { wall[j] } else { [0.0; 4] },
            mdbc: if B::MDBC { mdbc[j] } else { [0.0; 4] },
        };
        let inv_rho0 = 1.0 / eos.rho0;
        // Particle i: its force value, its sums, and |a_i| (0 for boundary particles).
        let interact = |i: usize| -> ([f32; 4], Accum, f32) {
            let pi = particle(i);
            let oi = V3::from4(pos[i]);
            let mut acc = Accum::default();
            if info[i][1] == Kind::Fluid as u32 {
                for_each_neighbour_of::<DIM>(grid, cell_start, pos, cell[i], oi, false, |j, r, r2, jf| {
                    if r2 < ph.support2 && r2 > 0.0 {
                        ph.fluid_pair(r, r2, &pi, &particle(j), jf, &mut acc);
                    }
                });
                let a_i = acc.acc + g;
                (a_i.with_w(acc.drho * inv_rho0), acc, a_i.norm2().sqrt())
            } else if B::MDBC {
                // The mDBC pass has set the density; nothing changes it until the next one.
                ([0.0; 4], acc, 0.0)
            } else {
                for_each_neighbour_of::<DIM>(grid, cell_start, pos, cell[i], oi, true, |j, r, r2, _| {
                    if r2 < ph.support2 && r2 > 0.0 {
                        ph.boundary_pair(r, r2, &pi, &particle(j), &mut acc);
                    }
                });
                ([0.0, 0.0, 0.0, acc.drho * inv_rho0], Accum { visc_max: 0.0, ..acc }, 0.0)
            }
        };
        let max2 = |x: (f32, f32), y: (f32, f32)| (x.0.max(y.0), x.1.max(y.1));
        let (acc_max, visc_max) = if S::ON {
            (force[range.clone()].par_iter_mut(), shift[range].par_iter_mut())
                .into_par_iter()
                .enumerate()
                .map(|(i, (f, sh))| {
                    let (fv, acc, an) = interact(first + i);
                    *f = fv;
                    *sh = acc.grad_c.with_w(acc.div_r);
                    (an, acc.visc_max)
                })
                .reduce(|| (0.0, 0.0), max2)
        } else {
            force[range]
                .par_iter_mut()
                .enumerate()
                .map(|(i, f)| {
                    let (fv, acc, an) = interact(first + i);
                    *f = fv;
                    (an, acc.visc_max)
                })
                .reduce(|| (0.0, 0.0), max2)
        };
        ForceStats { acc_max, visc_max }
    }
}
