//! Rebuild: re-key every particle to the cell holding it, counting sort by key (stable,
//! sequential, so the order never depends on the thread count), cell ranges.

use rayon::prelude::*;
use surge_core::backend::BadParticle;
use surge_core::buffers::ParticleArrays;
use surge_core::grid::Grid;

/// Re-key, sort and rebuild `cell_start` (length `2 * cells + 1`; see `CpuBackend`).
pub(crate) fn rebuild(
    grid: &Grid,
    a: &mut ParticleArrays,
    scratch: &mut ParticleArrays,
    cell_start: &mut [u32],
) -> Result<(), BadParticle> {
    let bad = (a.cell.par_iter_mut(), a.pos.par_iter_mut(), a.info.par_iter(), a.key.par_iter_mut())
        .into_par_iter()
        .filter_map(|(cell, pos, info, key)| match grid.rekey(*cell, *pos) {
            Some((c, o)) => {
                *cell = c;
                *pos = o;
                *key = 2 * grid.linear([c[0], c[1], c[2]]) as u32 + info[1];
                None
            }
            None => Some(info[0]),
        })
        .min();
    if let Some(id) = bad {
        let i = a.info.iter().position(|x| x[0] == id).expect("bad id exists");
        let pos = grid.absolute(a.cell[i], a.pos[i]);
        let finite = pos.iter().all(|x| x.is_finite());
        return Err(BadParticle {
            id,
            pos,
            reason: if finite { "left the domain" } else { "has a non-finite position" },
        });
    }
    sort_by_key(a, scratch, cell_start);
    Ok(())
}

/// Key every particle by the cell it holds now, without moving it to another cell, sort and
/// rebuild `cell_start`: how an imported state gets its cell table back. Particles already
/// in key order keep their order. Precondition: every cell lies inside the grid.
pub(crate) fn sort_by_stored_cells(
    grid: &Grid,
    a: &mut ParticleArrays,
    scratch: &mut ParticleArrays,
    cell_start: &mut [u32],
) {
    (a.cell.par_iter(), a.info.par_iter(), a.key.par_iter_mut()).into_par_iter().for_each(|(c, info, key)| {
        *key = 2 * grid.linear([c[0], c[1], c[2]]) as u32 + info[1];
    });
    sort_by_key(a, scratch, cell_start);
}

/// Counting sort by `a.key`: counts, inclusive prefix sums (bin ends), then a reverse
/// scatter that leaves the bin starts behind in `cell_start` and keeps equal keys in their
/// previous order.
fn sort_by_key(a: &mut ParticleArrays, scratch: &mut ParticleArrays, cell_start: &mut [u32]) {
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
    let perm = std::mem::take(&mut a.perm);
    a.permute_conserved(&perm, scratch);
    a.perm = perm;
}
