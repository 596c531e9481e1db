//! Rebuild: re-key particles to the cell holding them, then a counting sort by cell key
//! with each bin ordered by id, so the order is the same whatever the thread count, the
//! decomposition or the history of the arrays.

use rayon::prelude::*;
use std::ops::Range;
use surge_core::backend::{BadParticle, DENSITY_OUT, LEFT_DOMAIN};
use surge_core::buffers::{Kind, ParticleArrays};
use surge_core::grid::Grid;
use surge_core::Case;

/// Move the particles `range` to the cells that hold them. A fluid particle that left the
/// domain keeps its cell and, when `remove`, is listed (indices, ascending) for the caller
/// to drop; so is one whose relative density lies outside `density`
/// ([`Case::density_bounds`]), counted apart in the second value. Fails with the lowest-id
/// particle that left the domain or its density range and is not removed (a boundary
/// particle, or `remove` off), or is not finite. The particles `gone` lists
/// (indices, ascending: those the open boundaries removed) are neither listed nor failed.
pub(crate) fn rekey(
    grid: &Grid,
    a: &mut ParticleArrays,
    range: Range<usize>,
    remove: bool,
    density: [f32; 2],
    gone: &[u32],
) -> Result<(Vec<u32>, u64), BadParticle> {
    let first = range.start;
    let fluid = Kind::Fluid as u32;
    // Each particle that goes: its index, and whether for its density alone.
    let left: Vec<(u32, bool)> = (
        a.cell[range.clone()].par_iter_mut(),
        a.pos[range.clone()].par_iter_mut(),
        a.info[range.clone()].par_iter(),
        a.vel[range].par_iter(),
    )
        .into_par_iter()
        .enumerate()
        .filter_map(|(k, (cell, pos, info, vel))| match grid.rekey(*cell, *pos) {
            Some((c, o)) => {
                *cell = c;
                *pos = o;
                (info[1] == fluid && Case::density_out(density, vel[3])).then_some(((first + k) as u32, true))
            }
            None => Some(((first + k) as u32, false)),
        })
        .collect();
    let mut bad: Option<(u32, [f64; 3], &'static str)> = None;
    let mut removed = Vec::new();
    let mut for_density = 0;
    for &(i, dense) in left.iter().filter(|(i, _)| gone.binary_search(i).is_err()) {
        let i = i as usize;
        let pos = grid.absolute(a.cell[i], a.pos[i]);
        let finite = pos.iter().all(|x| x.is_finite());
        if remove && finite && a.info[i][1] == fluid {
            removed.push(i as u32);
            for_density += dense as u64;
        } else if bad.is_none_or(|(id, _, _)| a.info[i][0] < id) {
            let reason = match (finite, dense) {
                (false, _) => "has a non-finite position",
                (true, false) => LEFT_DOMAIN,
                (true, true) => DENSITY_OUT,
            };
            bad = Some((a.info[i][0], pos, reason));
        }
    }
    if let Some((id, pos, reason)) = bad {
        return Err(BadParticle { id, pos, reason, solid: None });
    }
    Ok((removed, for_density))
}

/// Key every particle by its stored cell in `grid`'s window (`2 * linear + kind`), sort by
/// key and, within a bin, by id, and rebuild `cell_start` (length `2 * cells + 1`). Fails
/// with the id of a particle whose cell lies outside the window.
pub(crate) fn sort(
    grid: &Grid,
    a: &mut ParticleArrays,
    scratch: &mut ParticleArrays,
    cell_start: &mut [u32],
) -> Result<(), u32> {
    let outside = (a.cell.par_iter(), a.info.par_iter(), a.key.par_iter_mut())
        .into_par_iter()
        .filter_map(|(c, info, key)| {
            if grid.in_window(*c) {
                *key = 2 * grid.linear([c[0], c[1], c[2]]) as u32 + Kind::bin(info[1]);
                None
            } else {
                Some(info[0])
            }
        })
        .min();
    if let Some(id) = outside {
        return Err(id);
    }
    let n = a.len();
    cell_start.fill(0);
    for &k in &a.key {
        cell_start[k as usize] += 1;
    }
    let mut sum = 0u32;
    for c in cell_start.iter_mut() {
        sum += *c;
        *c = sum;
    }
    for i in (0..n).rev() {
        let k = a.key[i] as usize;
        cell_start[k] -= 1;
        a.perm[cell_start[k] as usize] = i as u32;
    }
    // Each bin by id (bins hold tens of particles, mostly in order already).
    let info = &a.info;
    let bins = cell_start.len() - 1;
    for b in 0..bins {
        let bin = &mut a.perm[cell_start[b] as usize..cell_start[b + 1] as usize];
        if !bin.is_sorted_by_key(|&p| info[p as usize][0]) {
            bin.sort_unstable_by_key(|&p| info[p as usize][0]);
        }
    }
    let perm = std::mem::take(&mut a.perm);
    a.permute_conserved(&perm, scratch);
    a.perm = perm;
    Ok(())
}
