//! The force pass's inner loops over eight AVX2 lanes (issue 17), chosen at run time when the
//! processor has AVX2 ([`avx2`]); the scalar loops of `forces.rs` are the fallback and the
//! reference.
//!
//! Bitwise the same as the scalar loops: every lane does the float32 operations of
//! `surge_core::physics` for one pair, in the same order (IEEE 754 rounds each operation
//! alike in a lane or in a scalar register, `a - b` is `a + (-b)`, and nothing is fused),
//! and the sums are kept by lane as the scalar loops keep them: the neighbour of rank k (in
//! the search's order, neighbours inside the support only) is added to the sums of lane
//! k mod 8, and the eight lanes' sums are added up in one fixed order at the end
//! (`forces::lane_total`). The order depends on the neighbours alone, not on the threads,
//! the workers or which candidates a Verlet list holds.

use crate::forces::{NearList, NeighbourSearch, Stencil, StencilCell, LANES};
use crate::verlet::VerletList;
use std::arch::x86_64::*;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::SmoothingKernel;
use surge_core::physics::options::{BoundaryModel, DiffusionModel, ShiftingModel, ViscosityModel};
use surge_core::physics::pair::{Accum, Physics};
use surge_core::V3;

/// Whether this processor runs the AVX2 loops (AVX2 and POPCNT; detected once, the answer is
/// cached by std).
pub(crate) fn avx2() -> bool {
    is_x86_feature_detected!("avx2") && is_x86_feature_detected!("popcnt")
}

/// For each mask of eight lanes: the lanes set in it, in order, then (`misses`) the others,
/// in order, or zeros.
const fn pack_table(misses: bool) -> [[u32; 8]; 256] {
    let mut t = [[0u32; 8]; 256];
    let mut m = 0;
    while m < 256 {
        let mut n = 0;
        let mut pass = 0;
        while pass < 1 + misses as usize {
            let mut k = 0;
            while k < 8 {
                if (m >> k) & 1 == (pass == 0) as usize {
                    t[m][n] = k as u32;
                    n += 1;
                }
                k += 1;
            }
            pass += 1;
        }
        m += 1;
    }
    t
}

/// `COMPRESS[mask]`: the lanes set in `mask`, in order, then zeros: the permutation that
/// packs the hits of eight candidates to the front of a vector.
static COMPRESS: [[u32; 8]; 256] = pack_table(false);

/// `PACK[mask]`: the lanes set in `mask`, in order, then the others, in order: the
/// permutation that packs the hits of eight candidates to the front of a vector and the
/// misses after them.
static PACK: [[u32; 8]; 256] = pack_table(true);

/// `forces::gather_near` over AVX2 lanes: the same list, in the same order, with the same
/// bits (`r_ij` and `r²` are the same operations); the hits of eight candidates are packed
/// by a permutation and stored at once.
///
/// # Safety
/// The processor must have AVX2 and POPCNT ([`avx2`]); `search` must be refreshed from the positions
/// the stencil's cells index (its axes hold [`LANES`] entries past the last particle).
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn gather_near<const ZERO: bool>(
    stencil: &Stencil,
    search: &NeighbourSearch,
    oi: V3,
    fluid_only: bool,
    support2: f32,
    near: &mut NearList,
) -> usize {
    let x = &search.axes[0];
    let (s2, zero) = (_mm256_set1_ps(support2), _mm256_setzero_ps());
    let step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let boundary = _mm256_set1_epi32(NearList::BOUNDARY as i32);
    let eight = _mm256_set1_epi32(LANES as i32);
    let mut n = 0;
    for &StencilCell { k, shift, s, mid, e, .. } in if fluid_only { &stencil.fluid } else { &stencil.cells } {
        let e = if fluid_only { mid } else { e };
        let base = oi - shift;
        if s == e || search.least_r2(k, base) >= support2 {
            continue;
        }
        // Each group of eight stores eight lanes at the end of the list.
        near.reserve(n + (e - s) + LANES);
        let (bx, by, bz) = (_mm256_set1_ps(base.x), _mm256_set1_ps(base.y), _mm256_set1_ps(base.z));
        let last_fluid = _mm256_set1_epi32(mid as i32 - 1);
        let mut j = _mm256_add_epi32(_mm256_set1_epi32(s as i32), step);
        // Test the eight candidates from `first` (those of them below `e` only: `lanes` set)
        // and append the hits.
        macro_rules! group {
            ($first:expr, $lanes:expr) => {{
                let first = $first;
                debug_assert!(first + LANES <= x.len());
                // SAFETY: first < e <= the particle count, and the axes hold LANES more entries.
                let xs = unsafe { axes8(&search.axes, first) };
                let [rx, ry, rz, r2] = offsets(bx, by, bz, xs);
                let below = _mm256_cmp_ps::<_CMP_LT_OQ>(r2, s2);
                let inside = if ZERO { below } else { _mm256_and_ps(below, _mm256_cmp_ps::<_CMP_GT_OQ>(r2, zero)) };
                let hits = _mm256_movemask_ps(inside) as u32 & $lanes;
                // SAFETY: COMPRESS rows are 32 bytes; the list holds at least
                // n + (e - s) + LANES entries and n + (first - s) + LANES <= that.
                unsafe {
                    let perm = _mm256_loadu_si256(COMPRESS[hits as usize].as_ptr() as *const __m256i);
                    _mm256_storeu_ps(near.x.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(rx, perm));
                    _mm256_storeu_ps(near.y.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(ry, perm));
                    _mm256_storeu_ps(near.z.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(rz, perm));
                    _mm256_storeu_ps(near.r2.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(r2, perm));
                    let jb = _mm256_or_si256(j, _mm256_and_si256(_mm256_cmpgt_epi32(j, last_fluid), boundary));
                    _mm256_storeu_si256(
                        near.j.as_mut_ptr().add(n) as *mut __m256i,
                        _mm256_permutevar8x32_epi32(jb, perm),
                    );
                }
                n += hits.count_ones() as usize;
                j = _mm256_add_epi32(j, eight);
            }};
        }
        let full = s + (e - s) / LANES * LANES;
        for first in (s..full).step_by(LANES) {
            group!(first, 0xff);
        }
        if full < e {
            // Lanes past the cell's end (the next cell's particles, or the padding) are off.
            group!(full, (1u32 << (e - full)) - 1);
        }
    }
    n
}

/// The Verlet list's build over AVX2 lanes: `forces::gather_near::<true>` then
/// `verlet::append_entries`, in one loop. The entries of the particles j ≠ i of the stencil
/// (fluid ones when `fluid_only`) with `r_ij² < r2` (the same operations), each j with
/// [`NearList::BOUNDARY`] and its stencil cell's bits, are appended to `entries` in stencil
/// order then storage order: eight candidates tested at once, the hits packed by a
/// permutation and stored at once.
///
/// # Safety
/// As [`gather_near`].
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn list_candidates(
    stencil: &Stencil,
    search: &NeighbourSearch,
    i: usize,
    oi: V3,
    fluid_only: bool,
    r2: f32,
    entries: &mut Vec<u32>,
) {
    let x = &search.axes[0];
    let s2 = _mm256_set1_ps(r2);
    let step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let boundary = _mm256_set1_epi32(NearList::BOUNDARY as i32);
    let eight = _mm256_set1_epi32(LANES as i32);
    let me = _mm256_set1_epi32(i as i32);
    for &StencilCell { k, shift, code, s, mid, e } in if fluid_only { &stencil.fluid } else { &stencil.cells } {
        let e = if fluid_only { mid } else { e };
        let base = oi - shift;
        if s == e || search.least_r2(k, base) >= r2 {
            continue;
        }
        // Each group of eight stores eight lanes at the end of the entries.
        entries.reserve((e - s) + LANES);
        let mut n = entries.len();
        let (bx, by, bz) = (_mm256_set1_ps(base.x), _mm256_set1_ps(base.y), _mm256_set1_ps(base.z));
        let last_fluid = _mm256_set1_epi32(mid as i32 - 1);
        let code = _mm256_set1_epi32(code as i32);
        let mut j = _mm256_add_epi32(_mm256_set1_epi32(s as i32), step);
        macro_rules! group {
            ($first:expr, $lanes:expr) => {{
                let first = $first;
                debug_assert!(first + LANES <= x.len());
                // SAFETY: first < e <= the particle count, and the axes hold LANES more entries.
                let xs = unsafe { axes8(&search.axes, first) };
                let [.., d2] = offsets(bx, by, bz, xs);
                let below = _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(d2, s2)) as u32;
                let not_i = !(_mm256_movemask_ps(_mm256_castsi256_ps(_mm256_cmpeq_epi32(j, me))) as u32);
                let hits = below & not_i & $lanes;
                // SAFETY: COMPRESS rows are 32 bytes; the entries' capacity holds the
                // len at the cell's start + (e - s) + LANES, and n + LANES <= that.
                unsafe {
                    let perm = _mm256_loadu_si256(COMPRESS[hits as usize].as_ptr() as *const __m256i);
                    let jb = _mm256_or_si256(j, _mm256_and_si256(_mm256_cmpgt_epi32(j, last_fluid), boundary));
                    _mm256_storeu_si256(
                        entries.as_mut_ptr().add(n) as *mut __m256i,
                        _mm256_permutevar8x32_epi32(_mm256_or_si256(jb, code), perm),
                    );
                }
                n += hits.count_ones() as usize;
                j = _mm256_add_epi32(j, eight);
            }};
        }
        let full = s + (e - s) / LANES * LANES;
        for first in (s..full).step_by(LANES) {
            group!(first, 0xff);
        }
        if full < e {
            // Lanes past the cell's end (the next cell's particles, or the padding) are off.
            group!(full, (1u32 << (e - full)) - 1);
        }
        // SAFETY: the first n entries are written (the hits, packed), n <= the capacity.
        unsafe { entries.set_len(n) };
    }
}

/// `(d as f32) * c` for the two bits d + 1 of a Verlet list entry's axis (as
/// `verlet::filter_near`), twice: the shift of a stencil cell along one axis, found by a
/// permutation of this table.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn shift_table(c: f32) -> __m256 {
    let v = |d: i32| d as f32 * c;
    _mm256_setr_ps(v(-1), v(0), v(1), v(2), v(-1), v(0), v(1), v(2))
}

/// `verlet::filter_near` over AVX2 lanes: the same list, in the same order, with the same
/// bits. `entries` are the particle's entries and `verlet::PAD` more after them. Each lane
/// finds its stencil cell's shift from the entry's bits by a permutation of a table of the
/// three shifts (`d * cell` for d = -1, 0, 1), loads its candidate's position, and the hits
/// are packed by a permutation and stored at once, as in [`gather_near`].
///
/// # Safety
/// The processor must have AVX2 and POPCNT ([`avx2`]); every entry's index (those of the
/// padding too) indexes `pos`.
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn filter_near(
    entries: &[u32],
    pos: &[[f32; 4]],
    oi: V3,
    cell: [f32; 3],
    support2: f32,
    near: &mut NearList,
) -> usize {
    let count = entries.len() - crate::verlet::PAD;
    near.reserve(count + LANES);
    let (s2, zero) = (_mm256_set1_ps(support2), _mm256_setzero_ps());
    let (tx, ty, tz) = (shift_table(cell[0]), shift_table(cell[1]), shift_table(cell[2]));
    let (ox, oy, oz) = (_mm256_set1_ps(oi.x), _mm256_set1_ps(oi.y), _mm256_set1_ps(oi.z));
    let keep = _mm256_set1_epi32((VerletList::INDEX | NearList::BOUNDARY) as i32);
    let ep = entries.as_ptr();
    let mut n = 0;
    let mut b = 0;
    while b < count {
        // SAFETY: b < count, and PAD >= LANES entries follow the last one; their indices
        // index `pos` (the caller's guarantee).
        unsafe {
            let e = _mm256_loadu_si256(ep.add(b) as *const __m256i);
            let bits = VerletList::INDEX_BITS as i32;
            let sx = _mm256_permutevar8x32_ps(tx, _mm256_srl_epi32(e, _mm_cvtsi32_si128(bits)));
            let sy = _mm256_permutevar8x32_ps(ty, _mm256_srl_epi32(e, _mm_cvtsi32_si128(bits + 2)));
            let sz = _mm256_permutevar8x32_ps(tz, _mm256_srl_epi32(e, _mm_cvtsi32_si128(bits + 4)));
            let (bx, by, bz) = (_mm256_sub_ps(ox, sx), _mm256_sub_ps(oy, sy), _mm256_sub_ps(oz, sz));
            macro_rules! p {
                ($k:expr) => {
                    _mm_loadu_ps(pos.get_unchecked((*ep.add(b + $k) & VerletList::INDEX) as usize).as_ptr())
                };
            }
            // Positions (x, y, z, m) of eight candidates, by component.
            let [xj, yj, zj, _] = columns([p!(0), p!(1), p!(2), p!(3), p!(4), p!(5), p!(6), p!(7)]);
            let [rx, ry, rz, r2] = offsets(bx, by, bz, [xj, yj, zj]);
            let inside = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(r2, s2), _mm256_cmp_ps::<_CMP_GT_OQ>(r2, zero));
            let mut hits = _mm256_movemask_ps(inside) as u32;
            if count - b < LANES {
                // Lanes past the particle's entries (the next particle's, or the padding) are off.
                hits &= (1u32 << (count - b)) - 1;
            }
            // The list holds at least count + LANES entries and n <= b.
            let perm = _mm256_loadu_si256(COMPRESS[hits as usize].as_ptr() as *const __m256i);
            _mm256_storeu_ps(near.x.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(rx, perm));
            _mm256_storeu_ps(near.y.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(ry, perm));
            _mm256_storeu_ps(near.z.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(rz, perm));
            _mm256_storeu_ps(near.r2.as_mut_ptr().add(n), _mm256_permutevar8x32_ps(r2, perm));
            _mm256_storeu_si256(
                near.j.as_mut_ptr().add(n) as *mut __m256i,
                _mm256_permutevar8x32_epi32(_mm256_and_si256(e, keep), perm),
            );
            n += hits.count_ones() as usize;
        }
        b += LANES;
    }
    n
}

/// The constants of the pair formulas that the lanes implement: Wendland C2, Monaghan
/// artificial viscosity, no diffusion or Molteni–Colagrossi, any shifting, dynamic boundary
/// particles. Other formula sets take the scalar loop.
#[derive(Debug, Clone, Copy)]
pub(crate) struct LanePhysics {
    inv_h: f32,
    a_f: f32,
    h: f32,
    eta2: f32,
    /// `-alpha c0` (the scalar formula's first product, the same for every fluid pair).
    neg_alpha_c0: f32,
    /// The same of a boundary neighbour (`alpha_wall`: `physics.viscosity.boundary_factor`),
    /// where it differs.
    neg_alpha_c0_wall: Option<f32>,
    /// `delta h c0 2` (likewise).
    delta_h_c0_2: f32,
    /// Density diffusion: [`NO_DIFFUSION`], [`MOLTENI`] or [`FOURTAKAS`].
    diffusion: u8,
    /// Fourtakas' constants: rho0, the body force, 1 / B, 1 / gamma.
    rho0: f32,
    g: [f32; 3],
    inv_b: f32,
    inv_gamma: f32,
    /// Shifting sums on.
    shifting: bool,
    /// Three dimensions (in two, the pairs' z terms are +0 and the fused loop leaves them out).
    three_d: bool,
    /// mDBC walls: a boundary neighbour's viscous term takes its mDBC velocity.
    mdbc: bool,
}

/// [`LanePhysics::diffusion`]: none, Molteni–Colagrossi, Fourtakas (the pair loops' `DIFF`).
const NO_DIFFUSION: u8 = 0;
const MOLTENI: u8 = 1;
const FOURTAKAS: u8 = 2;

impl LanePhysics {
    /// The lanes' constants for this formula set, or `None` when the lanes do not implement
    /// it. The models are recognised by name; `lanes_equal_the_pair_formulas` (below) holds
    /// the lanes to the formulas bit for bit.
    pub(crate) fn of<
        K: SmoothingKernel,
        V: ViscosityModel,
        D: DiffusionModel,
        S: ShiftingModel,
        B: BoundaryModel,
        const DIM: usize,
    >(
        ph: &Physics<K, V, D, S, B, DIM>,
        c: &Constants,
    ) -> Option<LanePhysics> {
        let supported = K::NAME == "wendland_c2"
            && V::NAME == "artificial"
            && !V::MIRROR_WALL
            && matches!(D::NAME, "none" | "molteni_colagrossi" | "fourtakas")
            && matches!(S::NAME, "none" | "lind")
            && ph.wall_nu == 0.0;
        let [inv_h, _, a_f] = ph.kernel.constants();
        supported.then_some(LanePhysics {
            inv_h,
            a_f,
            h: ph.h,
            eta2: ph.eta2,
            neg_alpha_c0: -c.alpha * c.c0,
            neg_alpha_c0_wall: (c.alpha_wall != c.alpha).then_some(-c.alpha_wall * c.c0),
            delta_h_c0_2: c.delta_h_c0 * 2.0,
            diffusion: match D::NAME {
                "molteni_colagrossi" => MOLTENI,
                "fourtakas" => FOURTAKAS,
                _ => NO_DIFFUSION,
            },
            rho0: c.rho0,
            g: [c.g.x, c.g.y, c.g.z],
            inv_b: c.inv_b,
            inv_gamma: c.inv_gamma,
            shifting: S::ON,
            three_d: DIM == 3,
            mdbc: B::MDBC,
        })
    }
}

/// What the pairs read of particle i.
#[derive(Debug, Clone, Copy)]
pub(crate) struct PairI {
    pub vel: V3,
    pub rho: f32,
    pub p: f32,
}

/// The particle arrays the pairs read of neighbour j.
#[derive(Clone, Copy)]
pub(crate) struct PairJ<'a> {
    pub pos: &'a [[f32; 4]],
    pub vel: &'a [[f32; 4]],
    pub press: &'a [f32],
    pub rho0: f32,
    /// mDBC: the velocity a boundary particle's viscous term sees (xyz); empty without.
    pub mdbc: &'a [[f32; 4]],
}

/// The neighbours' data of one group of eight lanes.
struct Lanes {
    rx: __m256,
    ry: __m256,
    rz: __m256,
    r2: __m256,
    /// The gradient of the kernel, `r f(|r|)`.
    gx: __m256,
    gy: __m256,
    gz: __m256,
    /// `v_i - v_j`.
    vx: __m256,
    vy: __m256,
    vz: __m256,
    /// What the viscous term takes: with mDBC walls `v_i - mdbc_j` for a boundary j, else
    /// (and for a fluid j) `v_i - v_j`.
    wx: __m256,
    wy: __m256,
    wz: __m256,
    rho: __m256,
    p: __m256,
    m: __m256,
    /// All bits set where j is a fluid particle.
    fluid: __m256,
}

/// Load the group of neighbours `b..b + 8` of the list (entries past its end are padding
/// with j = `pad`) and compute the pair geometry.
///
/// # Safety
/// AVX2 and POPCNT ([`avx2`]); the list holds `b + 8` entries; every listed j indexes `pj`'s arrays.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn load(lp: &LanePhysics, pi: &PairI, near: &NearList, b: usize, pj: PairJ) -> Lanes {
    // SAFETY: the caller guarantees b + 8 entries and valid indices.
    unsafe {
        let rx = _mm256_loadu_ps(near.x.as_ptr().add(b));
        let ry = _mm256_loadu_ps(near.y.as_ptr().add(b));
        let rz = _mm256_loadu_ps(near.z.as_ptr().add(b));
        let r2 = _mm256_loadu_ps(near.r2.as_ptr().add(b));
        let jb = _mm256_loadu_si256(near.j.as_ptr().add(b) as *const __m256i);
        let idx = _mm256_andnot_si256(_mm256_set1_epi32(NearList::BOUNDARY as i32), jb);
        let fluid = _mm256_castsi256_ps(_mm256_cmpeq_epi32(idx, jb));
        let m = _mm256_i32gather_ps::<4>((pj.pos.as_ptr() as *const f32).add(3), _mm256_slli_epi32::<2>(idx));
        let j = |k: usize| (*near.j.get_unchecked(b + k) & !NearList::BOUNDARY) as usize;
        lanes_of(lp, pi, [rx, ry, rz, r2], idx, fluid, m, j, pj)
    }
}

/// The pair geometry of eight neighbours j (`j(k)` for lane k, `idx` the same by lane):
/// `r` and `r²` (`r[3]`), the mask of fluid ones, their masses `m`.
///
/// # Safety
/// AVX2 and POPCNT ([`avx2`]); every j indexes `pj`'s arrays.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn lanes_of(
    lp: &LanePhysics,
    pi: &PairI,
    r: [__m256; 4],
    idx: __m256i,
    fluid: __m256,
    m: __m256,
    j: impl Fn(usize) -> usize,
    pj: PairJ,
) -> Lanes {
    let [rx, ry, rz, r2] = r;
    // SAFETY: the caller guarantees valid indices.
    unsafe {
        macro_rules! v {
            ($k:expr) => {
                _mm_loadu_ps(pj.vel.get_unchecked(j($k)).as_ptr())
            };
        }
        // Velocities and densities (x, y, z, d) of eight particles, by component.
        let [vjx, vjy, vjz, dj] = columns([v!(0), v!(1), v!(2), v!(3), v!(4), v!(5), v!(6), v!(7)]);
        let p = _mm256_i32gather_ps::<4>(pj.press.as_ptr(), idx);
        // rho = rho0 (1 + d).
        let rho = _mm256_mul_ps(_mm256_set1_ps(pj.rho0), _mm256_add_ps(_mm256_set1_ps(1.0), dj));
        let Wendland { f, .. } = wendland(r2, lp.inv_h, lp.a_f);
        let vi = [_mm256_set1_ps(pi.vel.x), _mm256_set1_ps(pi.vel.y), _mm256_set1_ps(pi.vel.z)];
        let (vx, vy, vz) = (_mm256_sub_ps(vi[0], vjx), _mm256_sub_ps(vi[1], vjy), _mm256_sub_ps(vi[2], vjz));
        let (wx, wy, wz) = if lp.mdbc {
            macro_rules! w {
                ($k:expr) => {
                    _mm_loadu_ps(pj.mdbc.get_unchecked(j($k)).as_ptr())
                };
            }
            let [wjx, wjy, wjz, _] = columns([w!(0), w!(1), w!(2), w!(3), w!(4), w!(5), w!(6), w!(7)]);
            let w = |v: __m256, vi: __m256, wj: __m256| _mm256_blendv_ps(_mm256_sub_ps(vi, wj), v, fluid);
            (w(vx, vi[0], wjx), w(vy, vi[1], wjy), w(vz, vi[2], wjz))
        } else {
            (vx, vy, vz)
        };
        Lanes {
            rx,
            ry,
            rz,
            r2,
            gx: _mm256_mul_ps(rx, f),
            gy: _mm256_mul_ps(ry, f),
            gz: _mm256_mul_ps(rz, f),
            vx,
            vy,
            vz,
            wx,
            wy,
            wz,
            rho,
            p,
            m,
            fluid,
        }
    }
}

/// Wendland C2 on eight lanes at `r²` (twin of `surge_core::physics::kernel`'s
/// `wendland_c2_w` and `wendland_c2_f`, the same float operations lane by lane): `q = |r| / h`,
/// `t = 1 - q/2`, the lanes with `q >= 2` (outside the support), and the gradient factor
/// `f = a_f t³`, 0 outside. The force pass's pairs and the mDBC ghost sums share it.
pub(crate) struct Wendland {
    pub(crate) q: __m256,
    pub(crate) t: __m256,
    pub(crate) beyond: __m256,
    pub(crate) f: __m256,
}

#[target_feature(enable = "avx2,popcnt")]
#[inline]
pub(crate) fn wendland(r2: __m256, inv_h: f32, a_f: f32) -> Wendland {
    let q = _mm256_mul_ps(_mm256_sqrt_ps(r2), _mm256_set1_ps(inv_h));
    let t = _mm256_sub_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(_mm256_set1_ps(0.5), q));
    let f = _mm256_mul_ps(_mm256_mul_ps(_mm256_mul_ps(_mm256_set1_ps(a_f), t), t), t);
    let beyond = _mm256_cmp_ps::<_CMP_GE_OQ>(q, _mm256_set1_ps(2.0));
    Wendland { q, t, beyond, f: _mm256_andnot_ps(beyond, f) }
}

/// `(a.x b.x + a.y b.y) + a.z b.z`, as `V3::dot`.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn dot(ax: __m256, ay: __m256, az: __m256, bx: __m256, by: __m256, bz: __m256) -> __m256 {
    _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(ax, bx), _mm256_mul_ps(ay, by)), _mm256_mul_ps(az, bz))
}

/// [`dot`] with `Z`, else `a.x b.x + a.y b.y`: in two dimensions, where every z is +0, the
/// two differ only in the sign of a zero (`-0 + 0` is `+0`), which no sum or test of the pair
/// loops sees (the sums start at +0 and adding ±0 to them changes no bit; `v.r < 0`, `|mu|`
/// and the products of a zero are the same for either zero).
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn dot_z<const Z: bool>(ax: __m256, ay: __m256, az: __m256, bx: __m256, by: __m256, bz: __m256) -> __m256 {
    if Z {
        dot(ax, ay, az, bx, by, bz)
    } else {
        _mm256_add_ps(_mm256_mul_ps(ax, bx), _mm256_mul_ps(ay, by))
    }
}

/// `surge_core::physics::diffusion::pow_pos` of eight values, its operations lane by lane.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn pow_pos(x: __m256, p: f32) -> __m256 {
    use surge_core::physics::diffusion::{POW_EXP, POW_LN};
    let f = _mm256_set1_ps;
    let (add, sub, mul) = (_mm256_add_ps, _mm256_sub_ps, _mm256_mul_ps);
    let normal = _mm256_cmp_ps::<_CMP_GE_OQ>(x, f(f32::MIN_POSITIVE));
    let bits = _mm256_castps_si256(x);
    let e = _mm256_sub_epi32(_mm256_srli_epi32::<23>(bits), _mm256_set1_epi32(127));
    let m = _mm256_or_si256(_mm256_and_si256(bits, _mm256_set1_epi32(0x007f_ffff)), _mm256_set1_epi32(0x3f80_0000));
    let m = _mm256_castsi256_ps(m);
    let big = _mm256_cmp_ps::<_CMP_GT_OQ>(m, f(std::f32::consts::SQRT_2));
    let m = _mm256_blendv_ps(m, mul(m, f(0.5)), big);
    // The mask is -1 where m was halved: e + 1 there.
    let e = _mm256_sub_epi32(e, _mm256_castps_si256(big));
    let t = _mm256_div_ps(sub(m, f(1.0)), add(m, f(1.0)));
    let t2 = mul(t, t);
    let c = POW_LN.map(|v| f(v));
    let ln_m = mul(t, add(f(2.0), mul(t2, add(c[0], mul(t2, add(c[1], mul(t2, add(c[2], mul(t2, c[3])))))))));
    let ef = _mm256_cvtepi32_ps(e);
    let p_hi = f32::from_bits(p.to_bits() & 0xffff_f000);
    let head = mul(f(p_hi), ef);
    let n0 = _mm256_floor_ps(add(head, f(0.5)));
    let g = add(sub(head, n0), add(mul(f(p - p_hi), ef), mul(f(p), mul(ln_m, f(std::f32::consts::LOG2_E)))));
    let n1 = _mm256_floor_ps(add(g, f(0.5)));
    let u = mul(sub(g, n1), f(std::f32::consts::LN_2));
    let c = POW_EXP.map(|v| f(v));
    let q = mul(u, add(c[3], mul(u, c[4])));
    let q = mul(u, add(c[2], q));
    let q = mul(u, add(c[1], q));
    let q = mul(u, add(c[0], q));
    let q = mul(u, add(f(0.5), q));
    let q = add(f(1.0), mul(u, add(f(1.0), q)));
    let n = _mm256_min_ps(_mm256_max_ps(add(n0, n1), f(-126.0)), f(127.0));
    let scale = _mm256_slli_epi32::<23>(_mm256_add_epi32(_mm256_cvttps_epi32(n), _mm256_set1_epi32(127)));
    _mm256_and_ps(mul(q, _mm256_castsi256_ps(scale)), normal)
}

/// The positions along x, y and z of the eight particles from `first` of the stencil
/// search's axes.
///
/// # Safety
/// `first + LANES` must not pass the axes' length.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
unsafe fn axes8(axes: &[Vec<f32>; 3], first: usize) -> [__m256; 3] {
    // SAFETY: the caller's promise.
    unsafe { axes.each_ref().map(|a| _mm256_loadu_ps(a.as_ptr().add(first))) }
}

/// `r = b - x_j` by axis and `r²` over eight candidates, by the scalar search's operations
/// in its order (`(rx² + ry²) + rz²`): what every test of a candidate against the support
/// starts from.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn offsets(bx: __m256, by: __m256, bz: __m256, [xj, yj, zj]: [__m256; 3]) -> [__m256; 4] {
    let (rx, ry, rz) = (_mm256_sub_ps(bx, xj), _mm256_sub_ps(by, yj), _mm256_sub_ps(bz, zj));
    let r2 = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(rx, rx), _mm256_mul_ps(ry, ry)), _mm256_mul_ps(rz, rz));
    [rx, ry, rz, r2]
}

/// Eight lanes of four values to eight (x, y, z, w) vectors: `out[k]` (low half) is lane k,
/// its high half lane k + 4.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn transpose(x: __m256, y: __m256, z: __m256, w: __m256) -> [__m256; 4] {
    let (t0, t1) = (_mm256_unpacklo_ps(x, y), _mm256_unpackhi_ps(x, y));
    let (t2, t3) = (_mm256_unpacklo_ps(z, w), _mm256_unpackhi_ps(z, w));
    [
        _mm256_shuffle_ps::<0x44>(t0, t2),
        _mm256_shuffle_ps::<0xEE>(t0, t2),
        _mm256_shuffle_ps::<0x44>(t1, t3),
        _mm256_shuffle_ps::<0xEE>(t1, t3),
    ]
}

/// Eight (x, y, z, w) rows to four vectors of eight lanes, one a component (the inverse of
/// [`transpose`] and [`pick`]): rows k and k + 4 share a 256-bit register, then
/// [`transpose`].
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn columns(r: [__m128; 8]) -> [__m256; 4] {
    let a0 = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(r[0]), r[4]);
    let a1 = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(r[1]), r[5]);
    let a2 = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(r[2]), r[6]);
    let a3 = _mm256_insertf128_ps::<1>(_mm256_castps128_ps256(r[3]), r[7]);
    transpose(a0, a1, a2, a3)
}

/// Pad the list after its first `n` entries to the next multiple of eight: entries with
/// j = `pad` (a particle) and `r = 0`.
#[target_feature(enable = "avx2,popcnt")]
fn pad(near: &mut NearList, n: usize, pad: u32) {
    near.reserve(n + LANES);
    let zero = _mm256_setzero_ps();
    // SAFETY: the list holds n + LANES entries.
    unsafe {
        _mm256_storeu_si256(near.j.as_mut_ptr().add(n) as *mut __m256i, _mm256_set1_epi32(pad as i32));
        for v in [&mut near.x, &mut near.y, &mut near.z, &mut near.r2] {
            _mm256_storeu_ps(v.as_mut_ptr().add(n), zero);
        }
    }
}

/// The terms of eight fluid pairs, by component (x, y, z, w), lane by lane: `-a` (minus the
/// pressure acceleration, the continuity term), `b` (the viscous acceleration, the
/// diffusion term), the shifting sums (`gc`, when shifting is on) and `|mu|`.
struct Terms {
    minus_a: [__m256; 4],
    plus_b: [__m256; 4],
    gc: [__m256; 4],
    mu: __m256,
}

impl Terms {
    /// The terms with lane L taken from lane `perm[L]` (`|mu|` as it is: its maximum does not
    /// depend on the lanes).
    #[target_feature(enable = "avx2,popcnt")]
    #[inline]
    fn permuted(&self, perm: __m256i, shifting: bool) -> Terms {
        let q = |v: [__m256; 4]| v.map(|x| _mm256_permutevar8x32_ps(x, perm));
        Terms {
            minus_a: q(self.minus_a),
            plus_b: q(self.plus_b),
            gc: if shifting { q(self.gc) } else { self.gc },
            mu: self.mu,
        }
    }
}

/// `Physics::fluid_pair`'s terms of the eight pairs `l` of particle i (density `rho_i`,
/// pressure `p_i`), the float32 operations of the scalar formulas lane by lane. With `MASKED`,
/// the terms of the lanes not in `keep` are -0 (adding -0 leaves any sum's bits as they are);
/// `|mu|` is 0 there either way.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn pair_terms<const MASKED: bool, const DIFF: u8, const SHIFT: bool, const Z: bool>(
    lp: &LanePhysics,
    rho_i: __m256,
    p_i: __m256,
    l: &Lanes,
    keep: __m256,
) -> Terms {
    let neg0 = _mm256_set1_ps(-0.0);
    let (h, eta2) = (_mm256_set1_ps(lp.h), _mm256_set1_ps(lp.eta2));
    let vr = dot_z::<Z>(l.vx, l.vy, l.vz, l.rx, l.ry, l.rz);
    // Pressure: acc -= gw (m_j (p_i + p_j) / (rho_i rho_j)).
    let p_term = _mm256_div_ps(_mm256_add_ps(p_i, l.p), _mm256_mul_ps(rho_i, l.rho));
    let s = _mm256_mul_ps(l.m, p_term);
    let (ax, ay) = (_mm256_mul_ps(l.gx, s), _mm256_mul_ps(l.gy, s));
    // Monaghan: mu = h v.r / (r² + eta²), pi = -alpha c0 mu / rho_mean, gw (-m_j pi)
    // when v.r < 0, else +0; with mDBC, v = v_i - mdbc_j for a boundary j (the time step's
    // |mu| keeps v_i - v_j).
    let r2_eta2 = _mm256_add_ps(l.r2, eta2);
    let mu_dt = _mm256_div_ps(_mm256_mul_ps(h, vr), r2_eta2);
    let (vr, mu) = if lp.mdbc {
        let vr = dot_z::<Z>(l.wx, l.wy, l.wz, l.rx, l.ry, l.rz);
        (vr, _mm256_div_ps(_mm256_mul_ps(h, vr), r2_eta2))
    } else {
        (vr, mu_dt)
    };
    let rho_mean = _mm256_mul_ps(_mm256_set1_ps(0.5), _mm256_add_ps(rho_i, l.rho));
    let neg_alpha_c0 = match lp.neg_alpha_c0_wall {
        Some(w) => _mm256_blendv_ps(_mm256_set1_ps(w), _mm256_set1_ps(lp.neg_alpha_c0), l.fluid),
        None => _mm256_set1_ps(lp.neg_alpha_c0),
    };
    let pi_ab = _mm256_div_ps(_mm256_mul_ps(neg_alpha_c0, mu), rho_mean);
    let coef = _mm256_mul_ps(_mm256_xor_ps(l.m, neg0), pi_ab);
    // Not `v.r >= 0` (true for NaN, as in the scalar formula).
    let approaching = _mm256_cmp_ps::<_CMP_NGE_UQ>(vr, _mm256_setzero_ps());
    let coef_x = _mm256_mul_ps(l.gx, coef);
    let coef_y = _mm256_mul_ps(l.gy, coef);
    let (bx, by) = (_mm256_and_ps(coef_x, approaching), _mm256_and_ps(coef_y, approaching));
    // Continuity: m_j v.gw.
    let cont = _mm256_mul_ps(l.m, dot_z::<Z>(l.vx, l.vy, l.vz, l.gx, l.gy, l.gz));
    // Diffusion between fluid particles: ((((dhc0 2) (rho_j - rho_i)) (-r).gw) /
    // (r² + eta²)) vol_j; -0 (adds nothing) for a boundary j. Fourtakas: (rho_j - rho_i) -
    // rho_h, rho_h = rho0 (pow_pos(max(1 + (rho0 g.(-r)) / B, 0), 1 / gamma) - 1).
    let diff = if DIFF != NO_DIFFUSION {
        let nr = (_mm256_xor_ps(l.rx, neg0), _mm256_xor_ps(l.ry, neg0), _mm256_xor_ps(l.rz, neg0));
        let mut drho = _mm256_sub_ps(l.rho, rho_i);
        if DIFF == FOURTAKAS {
            let rho0 = _mm256_set1_ps(lp.rho0);
            let [gx, gy, gz] = lp.g.map(|v| _mm256_set1_ps(v));
            let gr = dot_z::<Z>(gx, gy, gz, nr.0, nr.1, nr.2);
            let arg =
                _mm256_add_ps(_mm256_set1_ps(1.0), _mm256_mul_ps(_mm256_mul_ps(rho0, gr), _mm256_set1_ps(lp.inv_b)));
            let pow = pow_pos(_mm256_max_ps(arg, _mm256_setzero_ps()), lp.inv_gamma);
            drho = _mm256_sub_ps(drho, _mm256_mul_ps(rho0, _mm256_sub_ps(pow, _mm256_set1_ps(1.0))));
        }
        let d = _mm256_mul_ps(_mm256_set1_ps(lp.delta_h_c0_2), drho);
        let d = _mm256_div_ps(_mm256_mul_ps(d, dot_z::<Z>(nr.0, nr.1, nr.2, l.gx, l.gy, l.gz)), r2_eta2);
        let d = _mm256_mul_ps(d, _mm256_div_ps(l.m, l.rho));
        _mm256_blendv_ps(neg0, d, l.fluid)
    } else {
        neg0
    };
    let off = |v: __m256| if MASKED { _mm256_blendv_ps(neg0, v, keep) } else { v };
    // The z terms: -0 (nothing) in two dimensions.
    let z = |v: &dyn Fn() -> __m256| if Z { off(v()) } else { neg0 };
    let minus_a = [
        off(_mm256_xor_ps(ax, neg0)),
        off(_mm256_xor_ps(ay, neg0)),
        z(&|| _mm256_xor_ps(_mm256_mul_ps(l.gz, s), neg0)),
        off(cont),
    ];
    let plus_b = [
        off(bx),
        off(by),
        z(&|| _mm256_and_ps(_mm256_mul_ps(l.gz, coef), approaching)),
        if DIFF != NO_DIFFUSION { off(diff) } else { neg0 },
    ];
    let gc = if SHIFT {
        let vol = _mm256_div_ps(l.m, l.rho);
        let div = _mm256_mul_ps(vol, dot_z::<Z>(l.rx, l.ry, l.rz, l.gx, l.gy, l.gz));
        [
            off(_mm256_mul_ps(l.gx, vol)),
            off(_mm256_mul_ps(l.gy, vol)),
            z(&|| _mm256_mul_ps(l.gz, vol)),
            off(_mm256_xor_ps(div, neg0)),
        ]
    } else {
        [neg0; 4]
    };
    Terms { minus_a, plus_b, gc, mu: _mm256_and_ps(_mm256_andnot_ps(neg0, mu_dt), keep) }
}

/// A fluid particle's sums by lane: lane L holds the sums of its neighbours of rank L, L + 8,
/// L + 16, ... (ranks in the search's order, counting the neighbours inside the support
/// only), each added as `Physics::fluid_pair` adds to an `Accum`: `acc += -a` then `acc += b`
/// (x, y, z, w = the density rate), `shift += gc`, `visc_max = max(|mu|, visc_max)`. The
/// eight lanes are independent chains; [`total`] adds them in a fixed order at the end.
struct Sums {
    acc: [__m256; 4],
    shift: [__m256; 4],
    visc_max: __m256,
}

impl Sums {
    #[target_feature(enable = "avx2,popcnt")]
    #[inline]
    fn new() -> Sums {
        let zero = _mm256_setzero_ps();
        Sums { acc: [zero; 4], shift: [zero; 4], visc_max: zero }
    }

    /// Add eight pairs' terms, lane by lane.
    #[target_feature(enable = "avx2,popcnt")]
    #[inline]
    fn add(&mut self, t: &Terms, shifting: bool) {
        for c in 0..4 {
            self.acc[c] = _mm256_add_ps(_mm256_add_ps(self.acc[c], t.minus_a[c]), t.plus_b[c]);
        }
        if shifting {
            for c in 0..4 {
                self.shift[c] = _mm256_add_ps(self.shift[c], t.gc[c]);
            }
        }
        // max(new, old) keeps old where new is NaN, as f32::max(old, new) does.
        self.visc_max = _mm256_max_ps(t.mu, self.visc_max);
    }

    /// The lanes' sums added up ([`total`]) as an `Accum`: `forces::sum_lanes`'s operations.
    #[target_feature(enable = "avx2,popcnt")]
    #[inline]
    fn accum(&self) -> Accum {
        let (mut a, mut s, mut v) = ([0.0f32; 4], [0.0f32; 4], [0.0f32; 8]);
        // SAFETY: 4, 4 and 8 floats.
        unsafe {
            _mm_storeu_ps(a.as_mut_ptr(), total(self.acc));
            _mm_storeu_ps(s.as_mut_ptr(), total(self.shift));
            _mm256_storeu_ps(v.as_mut_ptr(), self.visc_max);
        }
        Accum {
            acc: V3::new(a[0], a[1], a[2]),
            drho: a[3],
            visc_max: v.iter().fold(0.0f32, |m, &x| m.max(x)),
            grad_c: V3::new(s[0], s[1], s[2]),
            div_r: s[3],
            // The lanes take no wall function (LanePhysics::of).
            wall: Default::default(),
        }
    }
}

/// The eight lanes of four vectors (x, y, z, w) added up, each as `forces::lane_total`:
/// `((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7))`.
#[target_feature(enable = "avx2,popcnt")]
#[inline]
fn total(v: [__m256; 4]) -> __m128 {
    // (l0 + l4, l1 + l5, l2 + l6, l3 + l7) of each.
    let s = v.map(|x| _mm_add_ps(_mm256_castps256_ps128(x), _mm256_extractf128_ps::<1>(x)));
    // hadd(a, b) = (a0 + a1, a2 + a3, b0 + b1, b2 + b3).
    _mm_hadd_ps(_mm_hadd_ps(s[0], s[1]), _mm_hadd_ps(s[2], s[3]))
}

/// [`fluid_pairs_with`] with the formula set's switches as constants.
///
/// # Safety
/// As [`fluid_pairs_with`].
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn fluid_pairs(
    lp: &LanePhysics,
    i: usize,
    pi: &PairI,
    near: &mut NearList,
    n: usize,
    pj: PairJ,
) -> Accum {
    // SAFETY: the caller's promise.
    unsafe {
        match (lp.diffusion, lp.shifting) {
            (NO_DIFFUSION, false) => fluid_pairs_with::<NO_DIFFUSION, false>(lp, i, pi, near, n, pj),
            (MOLTENI, false) => fluid_pairs_with::<MOLTENI, false>(lp, i, pi, near, n, pj),
            (_, false) => fluid_pairs_with::<FOURTAKAS, false>(lp, i, pi, near, n, pj),
            (NO_DIFFUSION, true) => fluid_pairs_with::<NO_DIFFUSION, true>(lp, i, pi, near, n, pj),
            (MOLTENI, true) => fluid_pairs_with::<MOLTENI, true>(lp, i, pi, near, n, pj),
            (_, true) => fluid_pairs_with::<FOURTAKAS, true>(lp, i, pi, near, n, pj),
        }
    }
}

/// `Physics::fluid_pair` of fluid particle i (index `i`) with the first `n` neighbours of
/// the list, summed by lanes (neighbour k in lane k mod 8, [`Sums`]): the scalar loop's sums
/// (`forces::sum_lanes`), bit for bit.
///
/// # Safety
/// AVX2 and POPCNT ([`avx2`]); every listed j indexes `pj`'s arrays, and so does `i`.
#[target_feature(enable = "avx2,popcnt")]
unsafe fn fluid_pairs_with<const DIFF: u8, const SHIFT: bool>(
    lp: &LanePhysics,
    i: usize,
    pi: &PairI,
    near: &mut NearList,
    n: usize,
    pj: PairJ,
) -> Accum {
    pad(near, n, i as u32);
    let near = &*near;
    let (rho_i, p_i) = (_mm256_set1_ps(pi.rho), _mm256_set1_ps(pi.p));
    let step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let all = _mm256_castsi256_ps(_mm256_set1_epi32(-1));
    let mut sums = Sums::new();
    let mut b = 0;
    while b < n {
        // SAFETY: the list is padded to a multiple of 8 with valid indices.
        let l = unsafe { load(lp, pi, near, b, pj) };
        let t = if n - b >= LANES {
            pair_terms::<false, DIFF, SHIFT, true>(lp, rho_i, p_i, &l, all)
        } else {
            // Lanes past the list's end (the padding) add -0.
            let valid = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((n - b) as i32), step));
            pair_terms::<true, DIFF, SHIFT, true>(lp, rho_i, p_i, &l, valid)
        };
        sums.add(&t, SHIFT);
        b += LANES;
    }
    sums.accum()
}

/// [`fluid_pairs_listed_with`] with the formula set's switches as constants.
///
/// # Safety
/// As [`fluid_pairs_listed_with`].
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn fluid_pairs_listed(
    lp: &LanePhysics,
    pi: &PairI,
    entries: &[u32],
    oi: V3,
    cell: [f32; 3],
    support2: f32,
    pj: PairJ,
) -> Accum {
    // SAFETY: the caller's promise.
    unsafe {
        macro_rules! with {
            ($d:ident, $s:literal, $z:literal) => {
                fluid_pairs_listed_with::<$d, $s, $z>(lp, pi, entries, oi, cell, support2, pj)
            };
        }
        // Every switch a constant of the loop: 3 x 2 x 2 versions.
        macro_rules! switches {
            ($d:ident) => {
                match (lp.shifting, lp.three_d) {
                    (false, false) => with!($d, false, false),
                    (false, true) => with!($d, false, true),
                    (true, false) => with!($d, true, false),
                    (true, true) => with!($d, true, true),
                }
            };
        }
        match lp.diffusion {
            NO_DIFFUSION => switches!(NO_DIFFUSION),
            MOLTENI => switches!(MOLTENI),
            _ => switches!(FOURTAKAS),
        }
    }
}

/// [`filter_near`] and [`fluid_pairs`] in one loop, for fluid particle i at offset `oi`
/// with its Verlet list's `entries` (and `verlet::PAD` more after them): each group of eight
/// candidates is tested and its pair terms computed at once, the terms of the candidates
/// outside the support set to -0 (they add nothing); a permutation then moves the terms of
/// the group's neighbours into the lanes of their ranks (the neighbour of rank k to lane
/// k mod 8, as [`fluid_pairs`] sums the filtered list: the hits packed by `PACK` and rotated
/// by the count so far), the other lanes taking a miss's -0. The same sums as
/// [`fluid_pairs`] after [`filter_near`], bit for bit, whichever candidates the list holds,
/// without storing the neighbours and loading them back; the pair formulas run on the
/// candidates outside the support too.
///
/// # Safety
/// AVX2 and POPCNT ([`avx2`]); every entry's index (those of the padding too) indexes `pj`'s
/// arrays.
#[allow(clippy::too_many_arguments)]
#[target_feature(enable = "avx2,popcnt")]
unsafe fn fluid_pairs_listed_with<const DIFF: u8, const SHIFT: bool, const Z: bool>(
    lp: &LanePhysics,
    pi: &PairI,
    entries: &[u32],
    oi: V3,
    cell: [f32; 3],
    support2: f32,
    pj: PairJ,
) -> Accum {
    let count = entries.len() - crate::verlet::PAD;
    let (s2, zero) = (_mm256_set1_ps(support2), _mm256_setzero_ps());
    let (tx, ty, tz) = (shift_table(cell[0]), shift_table(cell[1]), shift_table(cell[2]));
    let (ox, oy, oz) = (_mm256_set1_ps(oi.x), _mm256_set1_ps(oi.y), _mm256_set1_ps(oi.z));
    let index = _mm256_set1_epi32(VerletList::INDEX as i32);
    let boundary = _mm256_set1_epi32(NearList::BOUNDARY as i32);
    let (rho_i, p_i) = (_mm256_set1_ps(pi.rho), _mm256_set1_ps(pi.p));
    let seven = _mm256_set1_epi32(7);
    let ep = entries.as_ptr();
    let mut sums = Sums::new();
    // Lane L of the next group takes the hit at (L - c) mod 8 of its packed hits, c the
    // number of neighbours so far.
    let mut rot = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let bit = _mm256_setr_epi32(1, 2, 4, 8, 16, 32, 64, 128);
    let mut b = 0;
    while b < count {
        // SAFETY: b < count, and PAD >= LANES entries follow the last one; their indices
        // index `pj`'s arrays (the caller's guarantee).
        unsafe {
            let e = _mm256_loadu_si256(ep.add(b) as *const __m256i);
            let bits = VerletList::INDEX_BITS as i32;
            let sx = _mm256_permutevar8x32_ps(tx, _mm256_srl_epi32(e, _mm_cvtsi32_si128(bits)));
            let sy = _mm256_permutevar8x32_ps(ty, _mm256_srl_epi32(e, _mm_cvtsi32_si128(bits + 2)));
            let sz = _mm256_permutevar8x32_ps(tz, _mm256_srl_epi32(e, _mm_cvtsi32_si128(bits + 4)));
            let (bx, by, bz) = (_mm256_sub_ps(ox, sx), _mm256_sub_ps(oy, sy), _mm256_sub_ps(oz, sz));
            macro_rules! p {
                ($k:expr) => {
                    _mm_loadu_ps(pj.pos.get_unchecked((*ep.add(b + $k) & VerletList::INDEX) as usize).as_ptr())
                };
            }
            // Positions (x, y, z, m) of eight candidates, by component.
            let [xj, yj, zj, m] = columns([p!(0), p!(1), p!(2), p!(3), p!(4), p!(5), p!(6), p!(7)]);
            let [rx, ry, rz, r2] = offsets(bx, by, bz, [xj, yj, zj]);
            let inside = _mm256_and_ps(_mm256_cmp_ps::<_CMP_LT_OQ>(r2, s2), _mm256_cmp_ps::<_CMP_GT_OQ>(r2, zero));
            let mut hits = _mm256_movemask_ps(inside) as u32;
            if count - b < LANES {
                // Lanes past the particle's entries (the next particle's, or the padding) are off.
                hits &= (1u32 << (count - b)) - 1;
            }
            if hits != 0 {
                let idx = _mm256_and_si256(e, index);
                let fluid =
                    _mm256_castsi256_ps(_mm256_cmpeq_epi32(_mm256_and_si256(e, boundary), _mm256_setzero_si256()));
                let j = |k: usize| (*ep.add(b + k) & VerletList::INDEX) as usize;
                let l = lanes_of(lp, pi, [rx, ry, rz, r2], idx, fluid, m, j, pj);
                let inside = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
                    _mm256_and_si256(_mm256_set1_epi32(hits as i32), bit),
                    _mm256_setzero_si256(),
                ));
                let t = pair_terms::<true, DIFF, SHIFT, Z>(lp, rho_i, p_i, &l, inside);
                // Lane L takes the hit `rot[L]` of the packed hits, or (from `rot[L] = k` on)
                // a miss, whose terms are -0. PACK rows are 32 bytes.
                let packed = _mm256_loadu_si256(PACK[hits as usize].as_ptr() as *const __m256i);
                let perm = _mm256_permutevar8x32_epi32(packed, rot);
                sums.add(&t.permuted(perm, SHIFT), SHIFT);
                rot = _mm256_and_si256(_mm256_sub_epi32(rot, _mm256_set1_epi32(hits.count_ones() as i32)), seven);
            }
        }
        b += LANES;
    }
    sums.accum()
}

/// `Physics::boundary_pair` of boundary particle i (index `i`) with the first `n` (fluid)
/// neighbours of the list, summed by lanes as [`fluid_pairs`]: the density rate of the
/// scalar loop (`forces::lane_total` of its lanes), bit for bit.
///
/// # Safety
/// AVX2 and POPCNT ([`avx2`]); every listed j indexes `pj`'s arrays, and so does `i`.
#[target_feature(enable = "avx2,popcnt")]
pub(crate) unsafe fn boundary_pairs(
    lp: &LanePhysics,
    i: usize,
    pi: &PairI,
    near: &mut NearList,
    n: usize,
    pj: PairJ,
) -> f32 {
    pad(near, n, i as u32);
    let near = &*near;
    let step = _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7);
    let zero = _mm256_setzero_ps();
    let mut drho = zero;
    let mut b = 0;
    while b < n {
        // SAFETY: the list is padded to a multiple of 8 with valid indices.
        let l = unsafe { load(lp, pi, near, b, pj) };
        let mut cont = _mm256_mul_ps(l.m, dot(l.vx, l.vy, l.vz, l.gx, l.gy, l.gz));
        if n - b < LANES {
            // Lanes past the list's end (the padding) add -0.
            let valid = _mm256_castsi256_ps(_mm256_cmpgt_epi32(_mm256_set1_epi32((n - b) as i32), step));
            cont = _mm256_blendv_ps(_mm256_set1_ps(-0.0), cont, valid);
        }
        drho = _mm256_add_ps(drho, cont);
        b += LANES;
    }
    _mm_cvtss_f32(total([drho, zero, zero, zero]))
}

#[cfg(test)]
mod tests {
    use super::{COMPRESS, PACK};

    /// Each mask's hits in order, then its misses in order (PACK) or zeros (COMPRESS).
    #[test]
    fn the_pack_tables_list_hits_then_misses() {
        for m in 0..256usize {
            let hits: Vec<u32> = (0..8).filter(|k| m >> k & 1 == 1).collect();
            let misses: Vec<u32> = (0..8).filter(|k| m >> k & 1 == 0).collect();
            let pack: Vec<u32> = hits.iter().chain(&misses).copied().collect();
            let compress: Vec<u32> = hits.iter().copied().chain(std::iter::repeat(0)).take(8).collect();
            assert_eq!(PACK[m].to_vec(), pack, "PACK[{m:#010b}]");
            assert_eq!(COMPRESS[m].to_vec(), compress, "COMPRESS[{m:#010b}]");
        }
    }
}
