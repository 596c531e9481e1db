//! A Verlet neighbour list kept between rebuilds (issue 17): for each particle, the
//! candidates j of its cell stencil that lay within `support + margin` of it when the list was
//! built, in the order the force pass sums them (stencil order, then storage order). Each
//! force pass then tests only those (about 1.2 to 1.5 candidates per neighbour instead of
//! about 10 over the stencil's cells) with the very float operations of the stencil search,
//! so it finds the same neighbours in the same order: the sums keep their bits.
//!
//! The list stays complete while no particle has moved `margin / 2` from where it was at the
//! build (checked at the start of every pass against the positions the build copied, with a
//! slack for rounding): a pair closer than the support now was closer than `support +
//! margin` then. It is built again when that fails, and dropped whenever the particles move
//! in storage or the cell table changes ([`VerletList::invalidate`]: every rebuild, which
//! sorts, exchanges with other workers, removes and spawns particles, and a restart).
//!
//! An entry is a `u32`: j in the low [`VerletList::INDEX_BITS`] bits, the displacement of
//! j's stencil cell from i's (2 bits an axis, `d + 1`) above them, and
//! [`NearList::BOUNDARY`] (bit 31) when j is a boundary particle. Backends holding
//! `2^INDEX_BITS` particles or more, or a stencil reaching more than one cell, take the
//! stencil search every pass.

use crate::forces::{NearList, NeighbourSearch, Stencil, StencilCell};
use rayon::prelude::*;
use std::ops::Range;
use surge_core::V3;

/// Particles a block of the list holds (its entries in one vector, built by one task).
pub(crate) const BLOCK: usize = 64;

/// Entries read past a particle's last one by the 8-lane filter (padding at each block's end).
pub(crate) const PAD: usize = 8;

/// What a particle lists: its kind of neighbours.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Lists {
    /// Nothing (its pass does not walk neighbours).
    Nothing,
    /// Fluid neighbours only.
    Fluid,
    /// Every neighbour.
    All,
}

/// The list (see the module's documentation).
#[derive(Debug, Default)]
pub(crate) struct VerletList {
    /// The entries of the particles of block b (`b * BLOCK..`), then [`PAD`] zeros.
    blocks: Vec<Vec<u32>>,
    /// The end of each particle's entries in its block (its start is the end of the one
    /// before it in the block, or 0).
    end: Vec<u32>,
    /// The particles listed (the others have no list), and the particle count at the build.
    listed: Range<usize>,
    len: usize,
    built: bool,
    /// The largest displacement from the build's positions that keeps the list complete.
    allowed: f64,
    /// Take the stencil search every pass (for tests).
    pub(crate) off: bool,
    /// Builds since the start (for tests and figures).
    pub(crate) builds: u64,
}

impl VerletList {
    /// Bits of an entry holding j.
    pub(crate) const INDEX_BITS: u32 = 25;
    /// Those bits.
    pub(crate) const INDEX: u32 = (1 << Self::INDEX_BITS) - 1;
    /// The margin over the support, as a fraction of the grid's skin: the runtime rebuilds
    /// before any particle moved half the skin, so a margin of the whole skin lasts until
    /// then; a thinner one lists fewer candidates but is built again between rebuilds.
    pub(crate) const MARGIN: f64 = 0.5;

    /// The bits of an entry for a stencil cell displaced by `d` (each in -1..=1).
    #[inline(always)]
    pub(crate) fn code(d: [i32; 3]) -> u32 {
        let bits = |x: i32| (x + 1).clamp(0, 3) as u32;
        (bits(d[0]) | bits(d[1]) << 2 | bits(d[2]) << 4) << Self::INDEX_BITS
    }

    /// `d` of an entry's stencil cell, by axis.
    #[inline(always)]
    fn d(entry: u32, axis: u32) -> i32 {
        ((entry >> (Self::INDEX_BITS + 2 * axis)) & 3) as i32 - 1
    }

    /// Forget the list (the particles moved in storage, or the cell table changed).
    pub(crate) fn invalidate(&mut self) {
        self.built = false;
    }

    /// Whether the list is built (not invalidated since).
    #[cfg(test)]
    pub(crate) fn is_built(&self) -> bool {
        self.built
    }

    /// Whether two lists hold the same entries for the same particles.
    #[cfg(test)]
    pub(crate) fn same_entries(&self, other: &VerletList) -> bool {
        (self.built, self.len, &self.listed, &self.end, &self.blocks)
            == (other.built, other.len, &other.listed, &other.end, &other.blocks)
    }

    /// Whether a list can serve a backend of `n` particles on a stencil reaching `reach`
    /// cells with this skin.
    pub(crate) fn usable(&self, n: usize, reach: i32, skin: f64, support: f64) -> bool {
        !self.off && n < (1 << Self::INDEX_BITS) && reach == 1 && Self::MARGIN * skin > 1e-3 * support
    }

    /// Whether the list is built for these `n` particles and covers `listed` (`search`
    /// holding the build's positions): then [`VerletList::complete`] tells whether it still
    /// serves.
    pub(crate) fn covers(&self, n: usize, listed: &Range<usize>, search: &NeighbourSearch) -> bool {
        self.built
            && self.len == n
            && listed.start >= self.listed.start
            && listed.end <= self.listed.end
            && search.axes[0].len() >= n
    }

    /// The square of particle i's displacement at offset `p` from where the build saw it.
    #[inline(always)]
    pub(crate) fn moved2(i: usize, p: &[f32; 4], search: &NeighbourSearch) -> f64 {
        let [x, y, z] = &search.axes;
        let d = [p[0] as f64 - x[i] as f64, p[1] as f64 - y[i] as f64, p[2] as f64 - z[i] as f64];
        d[0] * d[0] + d[1] * d[1] + d[2] * d[2]
    }

    /// Whether a list that [`VerletList::covers`] the particles is still complete when the
    /// largest of their [`VerletList::moved2`] is `moved2`.
    pub(crate) fn complete(&self, moved2: f64) -> bool {
        // False for NaN: built again, the stencil's way.
        moved2 <= self.allowed * self.allowed
    }

    /// Memory of the list now (bytes).
    pub(crate) fn bytes(&self) -> usize {
        4 * (self.blocks.iter().map(|b| b.capacity()).sum::<usize>() + self.end.capacity())
    }

    /// Build the list of the particles `listed` of the `n` held, `what(i)` telling what i
    /// lists. `candidates(i, fluid_only, r2, stencil, near, entries)` makes `stencil` the
    /// stencil of i's cell and appends to `entries` the entries of the particles j ≠ i of its
    /// cells (fluid ones when `fluid_only`) with `r_ij² < r2`, in stencil order then storage
    /// order (`near` is scratch space): [`append_entries`] after the stencil search, or
    /// `lanes::list_candidates`. Candidates: `r² < (support + margin)²` and j ≠ i (the pass's
    /// test is `0 < r² < support²`).
    pub(crate) fn build(
        &mut self,
        n: usize,
        listed: Range<usize>,
        support: f64,
        skin: f64,
        what: impl Fn(usize) -> Lists + Sync,
        candidates: impl Fn(usize, bool, f32, &mut Stencil, &mut NearList, &mut Vec<u32>) + Sync,
    ) {
        let margin = Self::MARGIN * skin;
        let r2 = ((support + margin) * (support + margin)) as f32;
        // Rounding of the offsets, of r² and of r2 itself: far below a thousandth of the support.
        self.allowed = 0.5 * (margin - 1e-3 * support);
        self.len = n;
        self.listed = listed.clone();
        self.builds += 1;
        let blocks = n.div_ceil(BLOCK);
        self.blocks.resize_with(blocks, Vec::new);
        self.blocks.truncate(blocks);
        self.end.resize(n, 0);
        self.blocks.par_iter_mut().zip(self.end.par_chunks_mut(BLOCK)).enumerate().for_each(|(b, (entries, ends))| {
            entries.clear();
            crate::forces::with_scratch(|stencil, near| {
                for (k, end) in ends.iter_mut().enumerate() {
                    let i = b * BLOCK + k;
                    let what = if listed.contains(&i) { what(i) } else { Lists::Nothing };
                    if what != Lists::Nothing {
                        candidates(i, what == Lists::Fluid, r2, stencil, near, entries);
                    }
                    *end = entries.len() as u32;
                }
            });
            entries.extend([0; PAD]);
        });
        self.built = true;
    }

    /// The entries of particle i (followed by at least [`PAD`] readable ones), or None when
    /// i is not listed.
    #[inline(always)]
    pub(crate) fn of(&self, i: usize) -> Option<&[u32]> {
        if !self.listed.contains(&i) {
            return None;
        }
        Some(&self.blocks[i / BLOCK][self.start(i)..self.end[i] as usize])
    }

    /// The start of particle i's entries in its block.
    #[inline(always)]
    fn start(&self, i: usize) -> usize {
        if i.is_multiple_of(BLOCK) {
            0
        } else {
            self.end[i - 1] as usize
        }
    }

    /// The entries of particle i and [`PAD`] more after them (those of the next particles or
    /// zeros), or None when i is not listed.
    #[inline(always)]
    pub(crate) fn padded(&self, i: usize) -> Option<&[u32]> {
        if !self.listed.contains(&i) {
            return None;
        }
        Some(&self.blocks[i / BLOCK][self.start(i)..self.end[i] as usize + PAD])
    }
}

/// Append to `entries` the entries of the particles `near` that the stencil search listed for
/// particle i (`stencil` made around its cell; fluid ones when `fluid_only`), i itself left
/// out: each j with its stencil cell's displacement bits.
pub(crate) fn append_entries(i: usize, fluid_only: bool, stencil: &Stencil, near: &[u32], entries: &mut Vec<u32>) {
    let cells = if fluid_only { &stencil.fluid } else { &stencil.cells };
    let mut c = 0;
    for &jb in near {
        let j = (jb & !NearList::BOUNDARY) as usize;
        if j == i {
            continue;
        }
        while {
            let StencilCell { s, mid, e, .. } = cells[c];
            !(s <= j && j < if fluid_only { mid } else { e })
        } {
            c += 1;
        }
        entries.push(jb | cells[c].code);
    }
}

/// The listed candidates j of particle i (at offset `oi`) with `0 < r_ij² < support2`, in the
/// list's order, into the first entries of `near` (which grows when it is too short); returns
/// their number: the list [`crate::forces`]' stencil search makes, bit for bit (`r_ij = (o_i -
/// d cell) - o_j` and `r²` by the same operations). `cell` is the grid's cell size by axis as
/// float32. `lanes::filter_near` is the same over AVX2 lanes.
#[inline(always)]
pub(crate) fn filter_near(
    entries: &[u32],
    pos: &[[f32; 4]],
    oi: V3,
    cell: [f32; 3],
    support2: f32,
    near: &mut NearList,
) -> usize {
    near.reserve(entries.len());
    let mut n = 0;
    for &entry in entries {
        let j = (entry & VerletList::INDEX) as usize;
        let d = |a: u32| VerletList::d(entry, a) as f32;
        let shift = V3::new(d(0) * cell[0], d(1) * cell[1], d(2) * cell[2]);
        let base = oi - shift;
        let pj = &pos[j];
        let r = V3::new(base.x - pj[0], base.y - pj[1], base.z - pj[2]);
        let r2 = r.norm2();
        if r2 < support2 && r2 > 0.0 {
            near.j[n] = entry & (VerletList::INDEX | NearList::BOUNDARY);
            (near.x[n], near.y[n], near.z[n], near.r2[n]) = (r.x, r.y, r.z, r2);
            n += 1;
        }
    }
    n
}
