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
use surge_core::physics::wall_function::{wall_shear, WallSums};
use surge_core::V3;

use crate::verlet::{Lists, VerletList};

/// Call `f(k, shift, d, s, mid, e)` for every cell k (linear index) in the stencil of `ci`
/// (`grid.reach` cells each side), in stencil order: its particles are `s..e`, the fluid
/// ones `s..mid` (`e = mid` when `fluid_only`), and `r_ij = (o_i - shift) - o_j` for each
/// of them, `o` being offsets from the centres of the particles' cells, `shift = d * cell
/// size` (`d` the cell's displacement from `ci`, unwrapped).
#[inline(always)]
fn for_each_stencil_cell<const DIM: usize>(
    grid: &Grid,
    cell_start: &[u32],
    ci: [i32; 4],
    fluid_only: bool,
    mut f: impl FnMut(usize, V3, [i32; 3], usize, usize, usize),
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
                let shift = V3::new(dx as f32 * cs[0], dy as f32 * cs[1], dz as f32 * cs[2]);
                f(k, shift, [dx, dy, dz], s, mid, e);
            }
        }
    }
}

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
    for_each_stencil_cell::<DIM>(grid, cell_start, ci, fluid_only, |_, shift, _, s, mid, e| {
        let base = oi - shift;
        for (j, pj) in pos.iter().enumerate().take(e).skip(s) {
            let r = base - V3::from4(*pj);
            f(j, r, r.norm2(), j < mid);
        }
    });
}

/// The particles j within the support of particle i, as the neighbour list keeps them: by
/// field (a structure of arrays), so that the AVX2 loops load eight neighbours' fields at
/// once. Only the first entries (the count that [`gather_near`] returns) are meaningful.
#[derive(Debug, Default)]
pub(crate) struct NearList {
    /// Index of j, with [`NearList::BOUNDARY`] set when j is a boundary particle.
    pub(crate) j: Vec<u32>,
    /// `r_ij = x_i - x_j` by axis.
    pub(crate) x: Vec<f32>,
    pub(crate) y: Vec<f32>,
    pub(crate) z: Vec<f32>,
    /// `|r_ij|²`.
    pub(crate) r2: Vec<f32>,
}

impl NearList {
    /// The bit of `j` that marks a boundary neighbour.
    pub(crate) const BOUNDARY: u32 = 1 << 31;

    /// Grow to at least `n` entries.
    #[inline(always)]
    pub(crate) fn reserve(&mut self, n: usize) {
        if self.j.len() < n {
            let n = n.next_power_of_two();
            self.j.resize(n, 0);
            for v in [&mut self.x, &mut self.y, &mut self.z, &mut self.r2] {
                v.resize(n, 0.0);
            }
        }
    }
}

/// Candidates tested at once by [`gather_near`].
pub(crate) const LANES: usize = 8;

/// What the neighbour search of a force pass reads besides the cell table, refreshed from
/// the positions at the start of each pass; the buffers are kept from pass to pass (no
/// allocation per step).
#[derive(Debug, Default)]
pub(crate) struct NeighbourSearch {
    /// The particles' offsets from their cells' centres by axis (a structure of arrays,
    /// with [`LANES`] zeros after the last particle), so that [`gather_near`] tests
    /// [`LANES`] candidates with a few vector instructions.
    pub(crate) axes: [Vec<f32>; 3],
    /// The smallest box holding the offsets of each cell's particles (low and high corner;
    /// an empty cell's box is empty), so that [`gather_near`] skips a cell of the stencil
    /// that lies wholly outside the support.
    boxes: Vec<[V3; 2]>,
    /// Take the scalar loops even where the AVX2 ones run (for tests).
    pub(crate) scalar: bool,
    /// The Verlet list kept between rebuilds; the offsets and boxes above are then those of
    /// its build.
    pub(crate) list: VerletList,
}

impl NeighbourSearch {
    /// Whether the AVX2 loops run: the processor has them ([`crate::lanes::avx2`]) and the
    /// scalar ones are not asked for.
    pub(crate) fn avx2(&self) -> bool {
        #[cfg(target_arch = "x86_64")]
        return !self.scalar && crate::lanes::avx2();
        #[cfg(not(target_arch = "x86_64"))]
        false
    }

    /// Memory per particle (the boxes, a few bytes per cell, are left out).
    pub(crate) const BYTES_PER_PARTICLE: usize = 12;

    /// Copy the offsets of `pos` and bound each cell's (`cell_start` as in [`gather_near`]).
    pub(crate) fn refresh(&mut self, pos: &[[f32; 4]], cell_start: &[u32]) {
        let n = pos.len();
        for (a, v) in self.axes.iter_mut().enumerate() {
            v.resize(n + LANES, 0.0);
            v[..n].par_iter_mut().zip(pos.par_iter()).for_each(|(x, p)| *x = p[a]);
        }
        let empty = [
            V3::new(f32::INFINITY, f32::INFINITY, f32::INFINITY),
            V3::new(-f32::INFINITY, -f32::INFINITY, -f32::INFINITY),
        ];
        self.boxes.resize(cell_start.len() / 2, empty);
        self.boxes.par_iter_mut().enumerate().with_min_len(64).for_each(|(k, b)| {
            *b = pos[cell_start[2 * k] as usize..cell_start[2 * k + 2] as usize].iter().fold(empty, |[lo, hi], p| {
                [
                    V3::new(lo.x.min(p[0]), lo.y.min(p[1]), lo.z.min(p[2])),
                    V3::new(hi.x.max(p[0]), hi.y.max(p[1]), hi.z.max(p[2])),
                ]
            })
        });
    }

    /// A lower bound of `r²` for every particle of cell k seen from `base` (`r = base - o_j`),
    /// computed with the same float operations: each rounding is monotonic, so
    /// `|fl(base - o_j)|` is at least the gap to the box along each axis, and the sum of
    /// squares at least the one of the gaps.
    #[inline(always)]
    pub(crate) fn least_r2(&self, k: usize, base: V3) -> f32 {
        let [lo, hi] = self.boxes[k];
        let gap = |b: f32, lo: f32, hi: f32| (lo - b).max(b - hi).max(0.0);
        V3::new(gap(base.x, lo.x, hi.x), gap(base.y, lo.y, hi.y), gap(base.z, lo.z, hi.z)).norm2()
    }
}

/// Bit k set when `0 < r2[k] < support2` (`r2[k] < support2` when `ZERO`; false for NaN).
#[cfg(target_arch = "x86_64")]
#[inline(always)]
fn inside_mask<const ZERO: bool>(r2: &[f32; LANES], support2: f32) -> u32 {
    use std::arch::x86_64::*;
    // LLVM builds this mask from the portable loop below with a dozen shuffles instead of
    // two compares and a move mask per 4 lanes.
    // SAFETY: SSE and SSE2 are part of x86-64, so every x86-64 processor has them.
    unsafe {
        let (s, zero) = (_mm_set1_ps(support2), _mm_setzero_ps());
        let four = |k: usize| {
            let v = _mm_set_ps(r2[k + 3], r2[k + 2], r2[k + 1], r2[k]);
            let below = _mm_cmplt_ps(v, s);
            _mm_movemask_ps(if ZERO { below } else { _mm_and_ps(below, _mm_cmpgt_ps(v, zero)) }) as u32
        };
        four(0) | four(4) << 4
    }
}

/// Bit k set when `0 < r2[k] < support2` (`r2[k] < support2` when `ZERO`; false for NaN).
#[cfg(not(target_arch = "x86_64"))]
#[inline(always)]
fn inside_mask<const ZERO: bool>(r2: &[f32; LANES], support2: f32) -> u32 {
    let mut hits = 0u32;
    for (k, &r2) in r2.iter().enumerate() {
        hits |= ((r2 < support2) as u32 & (ZERO || r2 > 0.0) as u32) << k;
    }
    hits
}

/// A cell of a [`Stencil`].
#[derive(Debug, Clone, Copy)]
pub(crate) struct StencilCell {
    /// Linear index.
    pub(crate) k: usize,
    /// Displacement from the centre cell, `d * cell size`: `r_ij = (o_i - shift) - o_j`.
    pub(crate) shift: V3,
    /// The displacement's bits in a [`VerletList`] entry.
    pub(crate) code: u32,
    /// First particle.
    pub(crate) s: usize,
    /// First boundary particle.
    pub(crate) mid: usize,
    /// End of the particles.
    pub(crate) e: usize,
}

/// The non-empty cells of the stencil of one cell, in stencil order: what every particle of
/// that cell walks, found once for all of them (particles of a cell are consecutive).
#[derive(Debug, Default)]
pub(crate) struct Stencil {
    /// The centre cell, `None` until the first [`Stencil::around`] of a chunk.
    pub(crate) centre: Option<[i32; 4]>,
    pub(crate) cells: Vec<StencilCell>,
    /// Those of `cells` with fluid particles, what a boundary particle walks (empty far from
    /// the fluid: a dry wall particle lists no neighbour without looking at a cell).
    pub(crate) fluid: Vec<StencilCell>,
}

impl Stencil {
    /// Make this the stencil of cell `ci` unless it is already.
    #[inline(always)]
    pub(crate) fn around<const DIM: usize>(&mut self, grid: &Grid, cell_start: &[u32], ci: [i32; 4]) {
        if self.centre == Some(ci) {
            return;
        }
        self.centre = Some(ci);
        self.cells.clear();
        self.fluid.clear();
        for_each_stencil_cell::<DIM>(grid, cell_start, ci, false, |k, shift, d, s, mid, e| {
            let code = VerletList::code(d);
            if s < e {
                self.cells.push(StencilCell { k, shift, code, s, mid, e });
            }
            if s < mid {
                self.fluid.push(StencilCell { k, shift, code, s, mid, e });
            }
        });
    }
}

/// The particles j with `0 < r_ij² < support2` in the stencil (fluid only when
/// `fluid_only`) of particle i at offset `oi`, in stencil order then storage order (the
/// summation order), into the first entries of `near`, which grows when it is too short;
/// returns their number. `lanes::gather_near` is the same over AVX2 lanes.
///
/// Two passes instead of one loop that calls the pair function on each candidate: most
/// candidates of the stencil lie outside the support (about 9 in 10 in 3D). A cell whose
/// box lies outside is skipped; the others are tested [`LANES`] candidates at a time from
/// the offsets by axis, without a branch, and only the hits are listed. `r_ij` and `r²`
/// are the same operations as in [`for_each_neighbour_of`], so the list holds the same
/// bits. With `ZERO` the test is `r_ij² < support2` (the Verlet list's build: a particle
/// at i's very position now may move).
#[inline(always)]
fn gather_near<const ZERO: bool>(
    stencil: &Stencil,
    search: &NeighbourSearch,
    oi: V3,
    fluid_only: bool,
    support2: f32,
    near: &mut NearList,
) -> usize {
    let [x, y, z] = &search.axes;
    let mut n = 0;
    for &StencilCell { k, shift, s, mid, e, .. } in if fluid_only { &stencil.fluid } else { &stencil.cells } {
        let e = if fluid_only { mid } else { e };
        let base = oi - shift;
        if s == e || search.least_r2(k, base) >= support2 {
            continue;
        }
        near.reserve(n + (e - s));
        for first in (s..e).step_by(LANES) {
            let (xs, ys, zs) = (&x[first..first + LANES], &y[first..first + LANES], &z[first..first + LANES]);
            let mut r2 = [0.0f32; LANES];
            for k in 0..LANES {
                r2[k] = V3::new(base.x - xs[k], base.y - ys[k], base.z - zs[k]).norm2();
            }
            let hits = inside_mask::<ZERO>(&r2, support2);
            // Lanes past the cell's end (the next cell's particles, or the padding) are off.
            let mut hits = hits & u32::MAX >> (32 - (e - first).min(LANES));
            while hits != 0 {
                let k = hits.trailing_zeros() as usize;
                hits &= hits - 1;
                let j = first + k;
                let r = V3::new(base.x - xs[k], base.y - ys[k], base.z - zs[k]);
                near.j[n] = j as u32 | if j < mid { 0 } else { NearList::BOUNDARY };
                (near.x[n], near.y[n], near.z[n], near.r2[n]) = (r.x, r.y, r.z, r.norm2());
                n += 1;
            }
        }
    }
    n
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

/// Particles per task of the force pass: enough to pay for the task, few enough that the
/// threads stay busy to the end of the pass.
const CHUNK: usize = 64;

/// Particles per task of the pressures (a `powf` each).
const CHUNK_POINTWISE: usize = 512;

thread_local! {
    /// Each thread's stencil and neighbour list, kept from pass to pass (no allocation per
    /// step).
    static SCRATCH: std::cell::RefCell<(Stencil, NearList)> = std::cell::RefCell::default();
}

/// Call `f` with this thread's stencil (forgotten: the cell table may have changed since
/// this thread's last use) and neighbour list.
pub(crate) fn with_scratch<T>(f: impl FnOnce(&mut Stencil, &mut NearList) -> T) -> T {
    SCRATCH.with_borrow_mut(|(stencil, near)| {
        stencil.centre = None;
        f(stencil, near)
    })
}

struct Pass<'a> {
    consts: &'a Constants,
    grid: &'a Grid,
    cell_start: &'a [u32],
    a: &'a mut ParticleArrays,
    search: &'a mut NeighbourSearch,
    range: Range<usize>,
    listed: Range<usize>,
    pressures: bool,
}

/// The order in which a particle's sums of eight lanes are added up:
/// `((l0 + l4) + (l1 + l5)) + ((l2 + l6) + (l3 + l7))` (the AVX2 loops' horizontal adds).
#[inline]
pub(crate) fn lane_total(l: [f32; LANES]) -> f32 {
    ((l[0] + l[4]) + (l[1] + l[5])) + ((l[2] + l[6]) + (l[3] + l[7]))
}

/// A fluid particle's sums from those of its eight lanes (lane L: the neighbours of rank L,
/// L + 8, ... in the search's order), each field by [`lane_total`]; `visc_max` the largest.
/// The scalar twin of the AVX2 loops' sums: the same bits.
pub(crate) fn sum_lanes(parts: &[Accum; LANES]) -> Accum {
    let t = |f: fn(&Accum) -> f32| lane_total(std::array::from_fn(|l| f(&parts[l])));
    Accum {
        acc: V3::new(t(|a| a.acc.x), t(|a| a.acc.y), t(|a| a.acc.z)),
        drho: t(|a| a.drho),
        visc_max: parts.iter().fold(0.0f32, |m, a| m.max(a.visc_max)),
        grad_c: V3::new(t(|a| a.grad_c.x), t(|a| a.grad_c.y), t(|a| a.grad_c.z)),
        div_r: t(|a| a.div_r),
        wall: WallSums {
            s: t(|a| a.wall.s),
            n: V3::new(t(|a| a.wall.n.x), t(|a| a.wall.n.y), t(|a| a.wall.n.z)),
            y: t(|a| a.wall.y),
            v: V3::new(t(|a| a.wall.v.x), t(|a| a.wall.v.y), t(|a| a.wall.v.z)),
        },
    }
}

/// Forces of the particles `range` (within `listed`, the particles whose forces the pass
/// computes), after computing every particle's pressure and making sure of the neighbour
/// search when `pressures` (the first part of a pass): the Verlet list of `listed` built
/// again unless it is still complete, or else the offsets by axis and the cells' boxes
/// copied. Returns the largest values for the time step.
#[allow(clippy::too_many_arguments)]
pub(crate) fn forces(
    case: &Case,
    consts: &Constants,
    grid: &Grid,
    cell_start: &[u32],
    a: &mut ParticleArrays,
    search: &mut NeighbourSearch,
    range: Range<usize>,
    listed: Range<usize>,
    pressures: bool,
) -> ForceStats {
    dispatch(case, consts, Pass { consts, grid, cell_start, a, search, range, listed, pressures })
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
        let Pass { consts: eos, grid, cell_start, a, search, range, listed, pressures } = self;
        let g = eos.g;
        // What a particle lists: the neighbours its pass below walks.
        let what = |info: &[[u32; 2]], i: usize| {
            if info[i][1] == Kind::Fluid as u32 {
                Lists::All
            } else if B::MDBC || info[i][1] == Kind::Buffer as u32 {
                Lists::Nothing
            } else {
                Lists::Fluid
            }
        };
        let n_all = a.len();
        let use_list = search.list.usable(n_all, grid.reach, grid.skin, grid.support);
        if pressures {
            // The pressures, and the particles' largest displacement since the list's build
            // when it may still serve, in one parallel loop.
            let check = use_list && search.list.covers(n_all, &listed, search);
            let moved2 = {
                let (pos, search) = (&a.pos, &*search);
                a.press
                    .par_chunks_mut(CHUNK_POINTWISE)
                    .zip(a.vel.par_chunks(CHUNK_POINTWISE))
                    .enumerate()
                    .map(|(c, (p, v))| {
                        let mut moved2 = 0.0f64;
                        for (k, (p, v)) in p.iter_mut().zip(v).enumerate() {
                            *p = eos.pressure(v[3]);
                            if check {
                                let i = c * CHUNK_POINTWISE + k;
                                moved2 = moved2.max(VerletList::moved2(i, &pos[i], search));
                            }
                        }
                        moved2
                    })
                    .reduce(|| 0.0, f64::max)
            };
            if !(check && search.list.complete(moved2)) {
                search.refresh(&a.pos, cell_start);
                let mut list = std::mem::take(&mut search.list);
                if use_list {
                    let (pos, cell, info) = (&a.pos, &a.cell, &a.info);
                    let search = &*search;
                    #[cfg(target_arch = "x86_64")]
                    let avx2 = search.avx2();
                    // The entries of particle i's candidates (`r² < r2`, j ≠ i) appended to
                    // `entries`, after making `stencil` the stencil of its cell.
                    let candidates = |i: usize,
                                      fluid_only,
                                      r2,
                                      stencil: &mut Stencil,
                                      near: &mut NearList,
                                      entries: &mut Vec<u32>| {
                        stencil.around::<DIM>(grid, cell_start, cell[i]);
                        let oi = V3::from4(pos[i]);
                        #[cfg(target_arch = "x86_64")]
                        if avx2 {
                            // SAFETY: AVX2 was detected; `search` was refreshed from these positions.
                            return unsafe {
                                crate::lanes::list_candidates(stencil, search, i, oi, fluid_only, r2, entries)
                            };
                        }
                        let hits = gather_near::<true>(stencil, search, oi, fluid_only, r2, near);
                        crate::verlet::append_entries(i, fluid_only, stencil, &near.j[..hits], entries);
                    };
                    list.build(n_all, listed.clone(), grid.support, grid.skin, |i| what(info, i), candidates);
                } else {
                    list.invalidate();
                }
                search.list = list;
            }
        }
        let search = &*search;
        let list = use_list.then_some(&search.list);
        let cs = [grid.cell[0] as f32, grid.cell[1] as f32, grid.cell[2] as f32];
        let first = range.start;
        let ParticleArrays { pos, vel, cell, info, press, force, wall, shift, mdbc, .. } = a;
        let (pos, vel, cell, info, press, wall, mdbc) = (&*pos, &*vel, &*cell, &*info, &*press, &*wall, &*mdbc);
        let (wall_fn, wall_y_min) = (ph.wall_nu > 0.0, eos.wall_y_min);
        let particle = |j: usize| PairParticle {
            vel: V3::from4(vel[j]),
            rho: eos.density(vel[j][3]),
            p: press[j],
            m: pos[j][3],
            wall: if (V::MIRROR_WALL && !B::MDBC) || wall_fn { wall[j] } else { [0.0; 4] },
            mdbc: if B::MDBC { mdbc[j] } else { [0.0; 4] },
        };
        let inv_rho0 = 1.0 / eos.rho0;
        let support2 = ph.support2;
        // The AVX2 loops where the processor has them (the pair formulas on lanes only for
        // the formula sets they implement), else the scalar ones: the same bits either way.
        #[cfg(target_arch = "x86_64")]
        let (avx2, lane_physics) = {
            let avx2 = search.avx2();
            (avx2, if avx2 { crate::lanes::LanePhysics::of(&ph, eos) } else { None })
        };
        #[cfg(target_arch = "x86_64")]
        let pair_j = crate::lanes::PairJ { pos, vel, press, rho0: eos.rho0, mdbc };
        // The neighbours of particle i into `near` (fluid ones only when `fluid_only`).
        let gather = |i: usize, fluid_only: bool, (stencil, near): &mut (Stencil, NearList)| -> usize {
            let oi = V3::from4(pos[i]);
            if let Some(list) = list {
                #[cfg(target_arch = "x86_64")]
                if avx2 {
                    // SAFETY: AVX2 was detected; the list's indices index the positions.
                    let entries = list.padded(i).expect("the Verlet list holds every particle of the pass");
                    return unsafe { crate::lanes::filter_near(entries, pos, oi, cs, support2, near) };
                }
                let entries = list.of(i).expect("the Verlet list holds every particle of the pass");
                return crate::verlet::filter_near(entries, pos, oi, cs, support2, near);
            }
            stencil.around::<DIM>(grid, cell_start, cell[i]);
            #[cfg(target_arch = "x86_64")]
            if avx2 {
                // SAFETY: AVX2 was detected; `search` was refreshed from these positions.
                return unsafe { crate::lanes::gather_near::<false>(stencil, search, oi, fluid_only, support2, near) };
            }
            gather_near::<false>(stencil, search, oi, fluid_only, support2, near)
        };
        // Particle i with its list of neighbours: its force value, its sums, and |a_i| (0 for
        // boundary particles).
        let interact = |i: usize, scratch: &mut (Stencil, NearList)| -> ([f32; 4], Accum, f32) {
            let pi = particle(i);
            if info[i][1] == Kind::Fluid as u32 {
                // With the Verlet list and the lanes, the list's filter and the pairs in one loop.
                #[cfg(target_arch = "x86_64")]
                if let (Some(lp), Some(list)) = (lane_physics, list) {
                    let entries = list.padded(i).expect("the Verlet list holds every particle of the pass");
                    let li = crate::lanes::PairI { vel: pi.vel, rho: pi.rho, p: pi.p };
                    // SAFETY: AVX2 was detected (lane_physics is None otherwise); the list's
                    // indices index the particle arrays.
                    let acc = unsafe {
                        crate::lanes::fluid_pairs_listed(&lp, &li, entries, V3::from4(pos[i]), cs, support2, pair_j)
                    };
                    let a_i = acc.acc + g;
                    return (a_i.with_w(acc.drho * inv_rho0), acc, a_i.norm2().sqrt());
                }
                let n = gather(i, false, scratch);
                let near = &mut scratch.1;
                #[cfg(target_arch = "x86_64")]
                let lanes = lane_physics.map(|lp| {
                    let li = crate::lanes::PairI { vel: pi.vel, rho: pi.rho, p: pi.p };
                    // SAFETY: AVX2 was detected (lane_physics is None otherwise); the list
                    // and i index the particle arrays.
                    unsafe { crate::lanes::fluid_pairs(&lp, i, &li, near, n, pair_j) }
                });
                #[cfg(not(target_arch = "x86_64"))]
                let lanes = None;
                let acc = lanes.unwrap_or_else(|| {
                    // Neighbour k into the sums of lane k mod 8, as the AVX2 loops.
                    let mut parts = [Accum::default(); LANES];
                    for k in 0..n {
                        let (j, r) = (near.j[k], V3::new(near.x[k], near.y[k], near.z[k]));
                        let pj = particle((j & !NearList::BOUNDARY) as usize);
                        ph.fluid_pair(r, near.r2[k], &pi, &pj, j & NearList::BOUNDARY == 0, &mut parts[k % LANES]);
                    }
                    sum_lanes(&parts)
                });
                let mut a_i = acc.acc + g;
                if wall_fn {
                    a_i += wall_shear(pi.vel, &acc.wall, wall_y_min, ph.wall_nu);
                }
                (a_i.with_w(acc.drho * inv_rho0), acc, a_i.norm2().sqrt())
            } else if B::MDBC || info[i][1] == Kind::Buffer as u32 {
                // The mDBC pass has set the density (an open boundary's pass a buffer
                // particle's); nothing changes it until the next one.
                ([0.0; 4], Accum::default(), 0.0)
            } else {
                let n = gather(i, true, scratch);
                let near = &mut scratch.1;
                #[cfg(target_arch = "x86_64")]
                let lanes = lane_physics.map(|lp| {
                    let li = crate::lanes::PairI { vel: pi.vel, rho: pi.rho, p: pi.p };
                    // SAFETY: as for the fluid particles.
                    unsafe { crate::lanes::boundary_pairs(&lp, i, &li, near, n, pair_j) }
                });
                #[cfg(not(target_arch = "x86_64"))]
                let lanes = None;
                let drho = lanes.unwrap_or_else(|| {
                    let mut parts = [Accum::default(); LANES];
                    for k in 0..n {
                        let r = V3::new(near.x[k], near.y[k], near.z[k]);
                        ph.boundary_pair(r, near.r2[k], &pi, &particle(near.j[k] as usize), &mut parts[k % LANES]);
                    }
                    lane_total(parts.map(|a| a.drho))
                });
                ([0.0, 0.0, 0.0, drho * inv_rho0], Accum { drho, ..Accum::default() }, 0.0)
            }
        };
        let max2 = |x: (f32, f32), y: (f32, f32)| (x.0.max(y.0), x.1.max(y.1));
        // One task per chunk of particles, with the neighbour list of its thread.
        let chunk = |c: usize, force: &mut [[f32; 4]], mut shift: Option<&mut [[f32; 4]]>| {
            SCRATCH.with_borrow_mut(|scratch| {
                // The cell table may have changed since this thread's last chunk.
                scratch.0.centre = None;
                let mut stats = (0.0, 0.0);
                for (k, f) in force.iter_mut().enumerate() {
                    let (fv, acc, an) = interact(first + c * CHUNK + k, scratch);
                    *f = fv;
                    if let Some(sh) = shift.as_deref_mut() {
                        sh[k] = acc.grad_c.with_w(acc.div_r);
                    }
                    stats = max2(stats, (an, acc.visc_max));
                }
                stats
            })
        };
        let (acc_max, visc_max) = if S::ON {
            (force[range.clone()].par_chunks_mut(CHUNK), shift[range].par_chunks_mut(CHUNK))
                .into_par_iter()
                .enumerate()
                .map(|(c, (f, sh))| chunk(c, f, Some(sh)))
                .reduce(|| (0.0, 0.0), max2)
        } else {
            force[range].par_chunks_mut(CHUNK).enumerate().map(|(c, f)| chunk(c, f, None)).reduce(|| (0.0, 0.0), max2)
        };
        ForceStats { acc_max, visc_max }
    }
}

#[cfg(test)]
mod tests {
    use crate::CpuBackend;
    use surge_core::backend::{Backend, ForceStats, Part, Update};
    use surge_core::geometry::fill;
    use surge_core::Case;

    /// Whether the AVX2 pair loops implement the case's formula set.
    #[cfg(target_arch = "x86_64")]
    /// The first particle whose values differ in any bit, with both values.
    fn first_difference(u: &[[f32; 4]], v: &[[f32; 4]]) -> Option<(usize, [f32; 4], [f32; 4])> {
        assert_eq!(u.len(), v.len());
        u.iter().zip(v).position(|(a, b)| a.map(f32::to_bits) != b.map(f32::to_bits)).map(|i| (i, u[i], v[i]))
    }

    /// Asserts that the two backends' last force passes gave the same bits: forces, shifting
    /// sums and the time-step values (returned).
    fn same_force_pass(be: &mut [CpuBackend; 2], what: &str) -> (ForceStats, ForceStats) {
        let (x, y) = (be[0].arrays(), be[1].arrays());
        assert_eq!(first_difference(&x.force, &y.force), None, "{what}: forces");
        assert_eq!(first_difference(&x.shift, &y.shift), None, "{what}: shifting sums");
        let (s, t) = (be[0].force_stats().unwrap(), be[1].force_stats().unwrap());
        assert_eq!((s.acc_max.to_bits(), s.visc_max.to_bits()), (t.acc_max.to_bits(), t.visc_max.to_bits()));
        (s, t)
    }

    /// Water thrown at walls and an obstacle (2D) or walls (3D): pressure, approaching and
    /// receding pairs, boundary particles' continuity. The bitwise tests vary it by `--set`.
    const THROWN_2D: &str = r#"
        dp = 0.02
        time = { end = 1.0 }
        physics = { body_force = [0.0, -9.81] }
        initial_velocity = { kind = "constant", value = [2.0, -1.0] }
        fluid = [{ min = [0.0, 0.0], max = [0.6, 0.4] }]
        wall = [{ min = [0.0, 0.0], max = [1.0, 1.0], faces = ["x-", "x+", "y-"] }]
        obstacle = [{ min = [0.7, 0.0], max = [0.8, 0.2] }]
    "#;
    const THROWN_3D: &str = r#"
        dp = 0.04
        time = { end = 1.0 }
        physics = { body_force = [0.0, 0.0, -9.81] }
        initial_velocity = { kind = "constant", value = [2.0, 0.5, -1.0] }
        fluid = [{ min = [0.0, 0.0, 0.0], max = [0.4, 0.4, 0.3] }]
        wall = [{ min = [0.0, 0.0, 0.0], max = [0.8, 0.6, 0.6], faces = ["x-", "x+", "y-", "y+", "z-"] }]
    "#;
    const DIFFUSION: &str = r#"physics.density_diffusion={kind="molteni_colagrossi", delta=0.1}"#;
    const FOURTAKAS: &str = r#"physics.density_diffusion={kind="fourtakas", delta=0.1}"#;
    const MDBC: &str = r#"physics.boundary={kind="mdbc", slip=false}"#;
    const MDBC_SLIP: &str = r#"physics.boundary={kind="mdbc", slip=true}"#;
    const SHIFTING: &str = r#"physics.shifting={kind="lind", coefficient=10.0}"#;
    const LAMINAR: &str = r#"physics.viscosity={kind="laminar", nu=1e-3}"#;
    /// The walls' viscosity a fifth of the fluid's (DualSPHysics' ViscoBoundFactor).
    const WALL_VISC: &str = r#"physics.viscosity={kind="artificial", alpha=0.05, boundary_factor=0.2}"#;

    fn lanes_apply(case: &Case) -> bool {
        use surge_core::physics::kernel::SmoothingKernel;
        use surge_core::physics::options::*;
        use surge_core::physics::pair::{dispatch, Physics, WithPhysics};
        struct Probe<'a>(&'a surge_core::physics::constants::Constants);
        impl WithPhysics for Probe<'_> {
            type Output = bool;
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
            ) -> bool {
                crate::lanes::LanePhysics::of(&ph, self.0).is_some()
            }
        }
        let c = surge_core::physics::constants::Constants::of(case);
        dispatch(case, &c, Probe(&c))
    }

    /// The Verlet list kept between rebuilds gives the stencil search's forces, shifting
    /// sums, time-step values and states bit for bit, over 200 steps of water thrown at walls
    /// and an obstacle with a rebuild (re-key and sort) every 25 steps and the list built
    /// again between them as particles move: 2D and 3D, with diffusion and shifting, DBC
    /// pairs on lanes and a formula set on scalar pairs. Two threads with the list against
    /// one without, so the list's blocks do not follow the threads.
    #[test]
    fn verlet_list_equals_the_stencil_search() {
        // Faster water, a domain that removes what leaves it, and an obstacle in 3D too.
        let d2 =
            ["initial_velocity.value=[3.0, -1.0]", r#"domain={min=[-0.1, -0.1], max=[1.1, 1.5], on_exit="remove"}"#];
        let d3 = [
            "initial_velocity.value=[3.0, 0.5, -1.0]",
            r#"domain={min=[-0.2, -0.2, -0.2], max=[1.0, 0.8, 1.0], on_exit="remove"}"#,
            "obstacle=[{min=[0.5, 0.2, 0.0], max=[0.6, 0.3, 0.2]}]",
        ];
        let variants: [(&str, &[&str], &[&str]); 7] = [
            (THROWN_2D, &d2, &[DIFFUSION, SHIFTING]),
            (THROWN_2D, &d2, &[LAMINAR]),
            (THROWN_3D, &d3, &[DIFFUSION]),
            (THROWN_3D, &d3, &[SHIFTING]),
            (THROWN_3D, &d3, &[FOURTAKAS]),
            (THROWN_2D, &d2, &[FOURTAKAS, MDBC]),
            (THROWN_3D, &d3, &[MDBC_SLIP, SHIFTING]),
        ];
        for (text, base, sets) in variants {
            let sets: Vec<String> = base.iter().chain(sets).map(|s| s.to_string()).collect();
            let case = Case::from_str(text, &sets).unwrap_or_else(|e| panic!("{e}"));
            let filled = fill(&case);
            let mut be = [CpuBackend::new(&case, &filled, 2).unwrap(), CpuBackend::new(&case, &filled, 1).unwrap()];
            be[1].search.list.off = true;
            for step in 0..200 {
                if step % 25 == 24 {
                    for b in &mut be {
                        let map = b.map.clone();
                        b.solo_rebuild(&map, true).unwrap();
                        // Sorted: the list goes (the displacement check is the second guard).
                        assert!(!b.search.list.is_built());
                    }
                }
                for b in &mut be {
                    b.forces(Part::Edges).unwrap();
                    b.forces(Part::Inner).unwrap();
                }
                same_force_pass(&mut be, &format!("{sets:?}, step {step}"));
                for b in &mut be {
                    b.update(Update::VerletEuler, 2e-4).unwrap();
                }
                let (x, y) = (be[0].arrays(), be[1].arrays());
                assert_eq!(first_difference(&x.pos, &y.pos), None, "{sets:?}: positions after step {step}");
                assert_eq!(first_difference(&x.vel, &y.vel), None, "{sets:?}: velocities after step {step}");
            }
            // Built after each of the 8 rebuilds, and again between them.
            let builds = be[0].search.list.builds;
            assert!(builds > 9, "{sets:?}: {builds} builds");
            assert_eq!(be[1].search.list.builds, 0);
            eprintln!("{sets:?}: {builds} builds of the list, {} bytes a particle", be[0].bytes_per_particle());
        }
    }

    /// The AVX2 loops (neighbour lists and pair formulas) give the scalar loops' forces,
    /// shifting sums, time-step values and, after some steps, states, bit for bit: water
    /// thrown at walls and an obstacle (pressure, approaching and receding pairs, boundary
    /// particles' continuity), in 2D and 3D, with and without diffusion and shifting, with
    /// the walls' viscosity a fifth of the fluid's, and a formula set the lanes do not
    /// implement (laminar viscosity: scalar pairs after the AVX2 neighbour list).
    #[cfg(target_arch = "x86_64")]
    #[test]
    fn lanes_equal_the_scalar_loops() {
        if !crate::lanes::avx2() {
            eprintln!("no AVX2: nothing to compare");
            return;
        }
        let none = r#"physics.density_diffusion={kind="none"}"#;
        let variants: [(&str, &[&str], bool); 13] = [
            (THROWN_2D, &[DIFFUSION], true),
            (THROWN_2D, &[none], true),
            (THROWN_2D, &[DIFFUSION, SHIFTING], true),
            (THROWN_3D, &[DIFFUSION], true),
            (THROWN_3D, &[none, SHIFTING], true),
            (THROWN_2D, &[FOURTAKAS], true),
            (THROWN_3D, &[FOURTAKAS, SHIFTING], true),
            (THROWN_2D, &[MDBC, FOURTAKAS], true),
            (THROWN_3D, &[MDBC_SLIP], true),
            (THROWN_3D, &[MDBC, DIFFUSION, SHIFTING], true),
            (THROWN_2D, &[LAMINAR], false),
            (THROWN_3D, &[WALL_VISC, DIFFUSION], true),
            (THROWN_2D, &[MDBC, WALL_VISC], true),
        ];
        for (text, sets, lanes) in variants {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let case = Case::from_str(text, &sets).unwrap_or_else(|e| panic!("{e}"));
            assert_eq!(lanes_apply(&case), lanes, "{sets:?}: lanes apply");
            let filled = fill(&case);
            let mut be = [CpuBackend::new(&case, &filled, 2).unwrap(), CpuBackend::new(&case, &filled, 1).unwrap()];
            be[1].search.scalar = true;
            for step in 0..30 {
                for b in &mut be {
                    b.forces(Part::Edges).unwrap();
                    b.forces(Part::Inner).unwrap();
                }
                let (s, _) = same_force_pass(&mut be, &format!("{sets:?}, step {step}"));
                assert!(s.visc_max > 0.0 && s.acc_max > 0.0);
                // The AVX2 build of the Verlet list and the scalar one: the same entries.
                assert!(be[0].search.list.same_entries(&be[1].search.list), "{sets:?}: Verlet lists, step {step}");
                for b in &mut be {
                    b.update(Update::VerletEuler, 2e-4).unwrap();
                }
            }
            let (x, y) = (be[0].arrays(), be[1].arrays());
            assert!(
                x.vel.iter().zip(&y.vel).all(|(a, b)| a.map(f32::to_bits) == b.map(f32::to_bits)),
                "{sets:?}: states"
            );
            assert!(
                x.pos.iter().zip(&y.pos).all(|(a, b)| a.map(f32::to_bits) == b.map(f32::to_bits)),
                "{sets:?}: states"
            );
        }
    }
}
