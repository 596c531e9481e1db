//! The mDBC pass (before each force pass): every boundary particle of a range takes its
//! density, and the velocity the viscous term sees, from its ghost node
//! ([`surge_core::physics::mdbc`]).

use crate::forces::{lane_total, Stencil, StencilCell};
use rayon::prelude::*;
use std::ops::Range;
use std::sync::atomic::{AtomicU64, Ordering};
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::case::{Boundary, Case, Slip, Solid};
use surge_core::config::KernelKind;
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::{CubicSpline, SmoothingKernel, WendlandC2};
use surge_core::physics::mdbc::{ghost_offset, mdbc_state, GhostSums};
use surge_core::V3;

/// Set the mDBC values (`Mdbc` buffer) and the relative density of the boundary particles
/// `range`, from the fluid held. Every ghost node's stencil must lie in the grid's window
/// (the halo of [`surge_core::decomp::halo`] sees to it for the owned particles and the
/// copies within the stencil reach of them), so the sums are those of one device. With
/// `simd` (the processor has AVX2) a ghost's neighbours are summed eight at a time: the same
/// sums, bit for bit ([`ghost_sums`]).
pub(crate) fn mdbc(
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    a: &mut ParticleArrays,
    range: Range<usize>,
    simd: bool,
) {
    let Boundary::Mdbc { slip } = case.boundary else { return };
    let (h, dim) = (case.h, case.dim);
    let at = Ghosts { consts, grid, cell_start, simd, pass: new_pass() };
    let slip = Slips { case: slip, other: &case.mdbc_other_slip };
    match (case.kernel, dim) {
        (KernelKind::WendlandC2, 2) => pass::<_, 2>(WendlandC2::new(h, dim), slip, &at, a, range),
        (KernelKind::WendlandC2, _) => pass::<_, 3>(WendlandC2::new(h, dim), slip, &at, a, range),
        (KernelKind::CubicSpline, 2) => pass::<_, 2>(CubicSpline::new(h, dim), slip, &at, a, range),
        (KernelKind::CubicSpline, _) => pass::<_, 3>(CubicSpline::new(h, dim), slip, &at, a, range),
    }
}

/// mDBC's slip: the case's, and the solids that take the other, with their ids.
#[derive(Clone, Copy)]
struct Slips<'a> {
    case: Slip,
    other: &'a [(Solid, Range<u32>)],
}

impl Slips<'_> {
    /// The slip of the particle `id`.
    fn of(self, id: u32) -> Slip {
        if self.other.iter().any(|(_, r)| r.contains(&id)) {
            self.case.other()
        } else {
            self.case
        }
    }
}

/// What a ghost node's sums read besides the particles: the constants, the grid and its cell
/// table, and whether to sum by AVX2 lanes.
pub(crate) struct Ghosts<'a> {
    pub(crate) consts: &'a Constants,
    pub(crate) grid: &'a Grid,
    pub(crate) cell_start: &'a [u32],
    pub(crate) simd: bool,
    /// This pass's number ([`new_pass`]).
    pub(crate) pass: u64,
}

/// A ghost's neighbours inside the support, in order (index, r by axis, r²).
#[derive(Default)]
struct Hits {
    j: Vec<u32>,
    r: [Vec<f32>; 3],
    r2: Vec<f32>,
}

/// Each thread's stencil of the last ghost's cell (ghosts of one wall share cells), valid in
/// the pass numbered `.0` only: the cell table changes between passes.
#[derive(Default)]
struct Scratch(u64, Stencil, Hits);

thread_local! {
    /// Kept from ghost to ghost: no allocation per ghost.
    static SCRATCH: std::cell::RefCell<Scratch> = std::cell::RefCell::default();
}

/// Passes over ghosts begun in this process ([`Scratch`]'s stencil is of one of them).
static PASSES: AtomicU64 = AtomicU64::new(0);

/// A new number for a pass over ghosts.
pub(crate) fn new_pass() -> u64 {
    PASSES.fetch_add(1, Ordering::Relaxed) + 1
}

/// The sums of a ghost node at offset `og` from the centre of cell `c` (any length: it is
/// re-centred on the cell that holds it, as a rekey would) over the particles of the fluid
/// bins of its stencil that `take` accepts, within the support, in stencil then storage
/// order (the open boundaries' pass shares it, taking fluid particles only). The neighbour
/// of rank k goes to the sums of lane k mod 8, the lanes added up at the end
/// ([`ghost_total`]); with `at.simd` and the Wendland kernel the eight lanes are
/// summed at once (AVX2), the same float operations lane by lane. The velocity's gradient
/// rows only with `VEL_FIRST` (open boundaries; `GhostSums::add`).
#[inline(always)]
pub(crate) fn ghost_sums<K: SmoothingKernel, const DIM: usize, const VEL_FIRST: bool>(
    kernel: &K,
    at: &Ghosts,
    pos: &[[f32; 4]],
    vel: &[[f32; 4]],
    c: [i32; 4],
    og: V3,
    take: impl Fn(usize) -> bool,
) -> GhostSums {
    let (consts, grid, cell_start) = (at.consts, at.grid, at.cell_start);
    let cs = [grid.cell[0] as f32, grid.cell[1] as f32, grid.cell[2] as f32];
    let mut cg = c;
    let mut o = [og.x, og.y, og.z];
    for ax in 0..DIM {
        let k = (o[ax] / cs[ax]).round();
        cg[ax] += k as i32;
        o[ax] -= k * cs[ax];
    }
    let og = V3::new(o[0], o[1], o[2]);
    SCRATCH.with_borrow_mut(|Scratch(pass, stencil, hits)| {
        if *pass != at.pass {
            (*pass, stencil.centre) = (at.pass, None);
        }
        stencil.around::<DIM>(grid, cell_start, cg);
        #[cfg(target_arch = "x86_64")]
        if at.simd && K::NAME == "wendland_c2" {
            hits.j.clear();
            hits.r.iter_mut().chain([&mut hits.r2]).for_each(|v| v.clear());
            fluid_within(stencil, pos, og, consts.support2, &take, |j, r, r2| {
                hits.j.push(j as u32);
                hits.r[0].push(r.x);
                hits.r[1].push(r.y);
                hits.r[2].push(r.z);
                hits.r2.push(r2);
            });
            let [inv_h, a_w, a_f] = kernel.constants();
            // SAFETY: AVX2 (`at.simd`); the hits index the particle arrays.
            let lanes = unsafe { simd::sums::<DIM, VEL_FIRST>(hits, pos, vel, [inv_h, a_w, a_f], consts.rho0) };
            return ghost_total(&lanes);
        }
        let mut lanes = [GhostSums::default(); 8];
        let mut k = 0;
        fluid_within(stencil, pos, og, consts.support2, &take, |j, r, r2| {
            let q = r2.sqrt();
            let dj = vel[j][3];
            let vol = pos[j][3] / consts.density(dj);
            lanes[k % 8].add::<DIM, VEL_FIRST>(r, kernel.w(q), r * kernel.f(q), vol, dj, V3::from4(vel[j]));
            k += 1;
        });
        ghost_total(&lanes)
    })
}

/// The sums of a ghost's eight lanes (its neighbour of rank k in lane k mod 8) added up
/// entry by entry in the force pass's fixed order ([`lane_total`]).
fn ghost_total(l: &[GhostSums; 8]) -> GhostSums {
    let mut out = GhostSums::default();
    for r in 0..4 {
        for c in 0..4 {
            out.a[r][c] = lane_total(l.map(|s| s.a[r][c]));
            out.b[r][c] = lane_total(l.map(|s| s.b[r][c]));
        }
    }
    out
}

/// `hit(j, r, r²)` for the fluid particles j of the stencil's cells with `r² < support2`
/// that `take` accepts, `r = (o_g - shift) - o_j`, in stencil then storage order (a cell
/// without fluid adds nothing): the operations of `forces::for_each_neighbour_of`.
#[inline(always)]
fn fluid_within(
    stencil: &Stencil,
    pos: &[[f32; 4]],
    og: V3,
    support2: f32,
    take: &impl Fn(usize) -> bool,
    mut hit: impl FnMut(usize, V3, f32),
) {
    for &StencilCell { shift, s, mid, .. } in &stencil.fluid {
        let base = og - shift;
        for (j, pj) in pos.iter().enumerate().take(mid).skip(s) {
            let r = base - V3::from4(*pj);
            let r2 = r.norm2();
            if r2 < support2 && take(j) {
                hit(j, r, r2);
            }
        }
    }
}

#[cfg(target_arch = "x86_64")]
mod simd {
    use super::Hits;
    use crate::lanes::{wendland, Wendland};
    use std::arch::x86_64::*;
    use surge_core::physics::mdbc::GhostSums;

    /// The eight lanes' sums of a ghost's neighbours `hits` (rank k in lane k mod 8): per
    /// neighbour `GhostSums::add` of `r`, the Wendland value and gradient of `|r|`
    /// (`wendland_c2_w`, `wendland_c2_f` with `[inv_h, a_w, a_f]`), its volume `m / (rho0 (1 +
    /// d))`, `d` and its velocity, the same float operations in the same order lane by lane.
    ///
    /// # Safety
    /// AVX2 and POPCNT (`crate::lanes::avx2`); every hit's j indexes `pos` and `vel`.
    #[target_feature(enable = "avx2,popcnt")]
    pub(super) unsafe fn sums<const DIM: usize, const VEL_FIRST: bool>(
        hits: &Hits,
        pos: &[[f32; 4]],
        vel: &[[f32; 4]],
        [inv_h, a_w, a_f]: [f32; 3],
        rho0: f32,
    ) -> [GhostSums; 8] {
        let f = _mm256_set1_ps;
        let zero = _mm256_setzero_ps();
        let mut a = [[zero; 4]; 4];
        let mut b = [[zero; 4]; 4];
        let n = hits.j.len();
        let step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
        let mut g = 0;
        while g < n {
            let m = (n - g).min(8);
            // Lanes past the last hit keep their sums (their loads repeat the last hit).
            let on = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32(m as i32), step));
            let at = |k: usize| g + k.min(m - 1);
            let load = |v: &Vec<f32>| {
                _mm256_setr_ps(v[at(0)], v[at(1)], v[at(2)], v[at(3)], v[at(4)], v[at(5)], v[at(6)], v[at(7)])
            };
            let r = [load(&hits.r[0]), load(&hits.r[1]), load(&hits.r[2])];
            let r2 = load(&hits.r2);
            let j = |k: usize| hits.j[at(k)] as usize;
            // SAFETY: the caller's promise.
            let (vj, mj) = unsafe {
                let p = |k: usize| *pos.get_unchecked(j(k));
                let v = |k: usize| *vel.get_unchecked(j(k));
                let (v0, v1, v2, v3, v4, v5, v6, v7) = (v(0), v(1), v(2), v(3), v(4), v(5), v(6), v(7));
                let c = |i: usize| _mm256_setr_ps(v0[i], v1[i], v2[i], v3[i], v4[i], v5[i], v6[i], v7[i]);
                let m = _mm256_setr_ps(p(0)[3], p(1)[3], p(2)[3], p(3)[3], p(4)[3], p(5)[3], p(6)[3], p(7)[3]);
                ([c(0), c(1), c(2), c(3)], m)
            };
            // The gradient factor F (0 from q = 2) as the force pass takes it; and the value
            // w = a_w t² t² (2q + 1), t = 1 - q/2, 0 from q = 2.
            let Wendland { q, t, beyond, f: fk } = wendland(r2, inv_h, a_f);
            let t2 = _mm256_mul_ps(t, t);
            let w = _mm256_mul_ps(
                _mm256_mul_ps(_mm256_mul_ps(f(a_w), t2), t2),
                _mm256_add_ps(_mm256_mul_ps(f(2.0), q), f(1.0)),
            );
            let w = _mm256_andnot_ps(beyond, w);
            // vol = m / (rho0 (1 + d)).
            let d = vj[3];
            let vol = _mm256_div_ps(mj, _mm256_mul_ps(f(rho0), _mm256_add_ps(f(1.0), d)));
            let mut weight = [_mm256_mul_ps(vol, w), zero, zero, zero];
            for k in 0..DIM {
                weight[1 + k] = _mm256_mul_ps(vol, _mm256_mul_ps(r[k], fk));
            }
            let qv = [d, vj[0], vj[1], vj[2]];
            let keep = |old: __m256, new: __m256| _mm256_blendv_ps(old, new, on);
            for row in 0..=DIM {
                a[row][0] = keep(a[row][0], _mm256_add_ps(a[row][0], weight[row]));
                for k in row.saturating_sub(1)..DIM {
                    a[row][1 + k] = keep(a[row][1 + k], _mm256_sub_ps(a[row][1 + k], _mm256_mul_ps(weight[row], r[k])));
                }
                for (c, (bq, v)) in b.iter_mut().zip(qv).enumerate() {
                    if row == 0 || c == 0 || VEL_FIRST {
                        bq[row] = keep(bq[row], _mm256_add_ps(bq[row], _mm256_mul_ps(weight[row], v)));
                    }
                }
            }
            g += 8;
        }
        let mut out = [GhostSums::default(); 8];
        let mut lane = [0f32; 8];
        for row in 0..4 {
            for col in 0..4 {
                // SAFETY: 8 floats.
                unsafe { _mm256_storeu_ps(lane.as_mut_ptr(), a[row][col]) };
                for (o, v) in out.iter_mut().zip(lane) {
                    o.a[row][col] = v;
                }
                unsafe { _mm256_storeu_ps(lane.as_mut_ptr(), b[row][col]) };
                for (o, v) in out.iter_mut().zip(lane) {
                    o.b[row][col] = v;
                }
            }
        }
        out
    }
}

fn pass<K: SmoothingKernel, const DIM: usize>(
    kernel: K,
    slip: Slips,
    at: &Ghosts,
    a: &mut ParticleArrays,
    range: Range<usize>,
) {
    let ParticleArrays { pos, vel, cell, info, wall, mdbc, .. } = a;
    let (pos, cell, info, wall) = (&*pos, &*cell, &*info, &*wall);
    let support = 2.0 * at.consts.h;
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
            let sums = ghost_sums::<K, DIM, false>(&kernel, at, pos, vel, cell[i], og, |_| true);
            *out = mdbc_state::<DIM>(&sums, wall[i], V3::from4(vel[i]), slip.of(info[i][0]));
        });
    }
    vel[range.clone()].par_iter_mut().zip(&mdbc[range]).for_each(|(v, m)| v[3] = m[3]);
}
