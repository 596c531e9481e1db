//! The mDBC pass (before each force pass): every boundary particle of a range takes its
//! density, and the velocity the viscous term sees, from its ghost node
//! ([`surge_core::physics::mdbc`]).

use crate::forces::for_each_neighbour_of;
use rayon::prelude::*;
use std::ops::Range;
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::case::{Boundary, Case};
use surge_core::config::KernelKind;
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::{CubicSpline, SmoothingKernel, WendlandC2};
use surge_core::physics::mdbc::{ghost_offset, mdbc_state, GhostSums};
use surge_core::V3;

/// Set the mDBC values (`Mdbc` buffer) and the relative density of the boundary particles
/// `range`, from the fluid held. Every ghost node's stencil must lie in the grid's window
/// (the halo of [`surge_core::decomp::halo`] sees to it for the owned particles and the
/// copies within the stencil reach of them), so the sums are those of one device.
pub(crate) fn mdbc(
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    a: &mut ParticleArrays,
    range: Range<usize>,
) {
    let Boundary::Mdbc { slip } = case.boundary else { return };
    let (h, dim) = (case.h, case.dim);
    match (case.kernel, dim) {
        (KernelKind::WendlandC2, 2) => pass::<_, 2>(WendlandC2::new(h, dim), slip, consts, grid, cell_start, a, range),
        (KernelKind::WendlandC2, _) => pass::<_, 3>(WendlandC2::new(h, dim), slip, consts, grid, cell_start, a, range),
        (KernelKind::CubicSpline, 2) => {
            pass::<_, 2>(CubicSpline::new(h, dim), slip, consts, grid, cell_start, a, range)
        }
        (KernelKind::CubicSpline, _) => {
            pass::<_, 3>(CubicSpline::new(h, dim), slip, consts, grid, cell_start, a, range)
        }
    }
}

/// The sums of a ghost node at offset `og` from the centre of cell `c` (any length: it is
/// re-centred on the cell that holds it, as a rekey would) over the particles of the fluid
/// bins of its stencil that `take` accepts, within the support, in stencil then storage
/// order (the open boundaries' pass shares it, taking fluid particles only).
#[allow(clippy::too_many_arguments)]
#[inline(always)]
pub(crate) fn ghost_sums<K: SmoothingKernel, const DIM: usize>(
    kernel: &K,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
    c: [i32; 4],
    og: V3,
    take: impl Fn(usize) -> bool,
) -> GhostSums {
    let cs = [grid.cell[0] as f32, grid.cell[1] as f32, grid.cell[2] as f32];
    let mut cg = c;
    let mut o = [og.x, og.y, og.z];
    for ax in 0..DIM {
        let k = (o[ax] / cs[ax]).round();
        cg[ax] += k as i32;
        o[ax] -= k * cs[ax];
    }
    let mut sums = GhostSums::default();
    let og = V3::new(o[0], o[1], o[2]);
    for_each_neighbour_of::<DIM>(grid, cell_start, pos, cg, og, true, |j, r, r2, _| {
        if r2 < consts.support2 && take(j) {
            let q = r2.sqrt();
            let dj = vel[j][3];
            let vol = pos[j][3] / consts.density(dj);
            sums.add::<DIM>(r, kernel.w(q), r * kernel.f(q), vol, dj, V3::from4(vel[j]));
        }
    });
    sums
}

fn pass<K: SmoothingKernel, const DIM: usize>(
    kernel: K,
    slip: bool,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    a: &mut ParticleArrays,
    range: Range<usize>,
) {
    let ParticleArrays { pos, vel, cell, info, wall, mdbc, .. } = a;
    let (pos, cell, info, wall) = (&*pos, &*cell, &*info, &*wall);
    let support = 2.0 * consts.h;
    {
        let vel: &[[f32; 4]] = vel;
        mdbc[range.clone()].par_iter_mut().enumerate().for_each(|(k, out)| {
            let i = range.start + k;
            let ghost =
                if info[i][1] == Kind::Fluid as u32 { None } else { ghost_offset(V3::from4(pos[i]), wall[i], support) };
            let Some(og) = ghost else {
                // Fluid, or too deep to matter: unchanged.
                *out = vel[i];
                return;
            };
            let sums = ghost_sums::<K, DIM>(&kernel, consts, grid, cell_start, pos, vel, cell[i], og, |_| true);
            *out = mdbc_state::<DIM>(&sums, wall[i], V3::from4(vel[i]), slip);
        });
    }
    vel[range.clone()].par_iter_mut().zip(&mdbc[range]).for_each(|(v, m)| v[3] = m[3]);
}
