//! Host memory a case needs, estimated before any particle is built, so a case too large for
//! the machine is refused with one line instead of being killed by the system.
//!
//! On the CPU a process builds its particles on the host ([`surge_core::geometry::fill`],
//! 73 bytes a particle: id, position, velocity, density, kind, wall normal; with several
//! devices or MPI ranks each device's worker fills only its own share,
//! [`surge_core::geometry::fill_slab`]) and loads each device:
//! every buffer, the sort's second copy of the conserved ones and the cell table
//! ([`surge_cpu::bytes_per_particle`]) and the Verlet neighbour list
//! ([`surge_cpu::list_bytes_per_particle`]). Measured peak resident memory of `surge run
//! --backend cpu` on the 3D dam break (0.08 to 0.73 M particles): 230 bytes a particle over a
//! fixed 16 MB, against 245 + 16 MB estimated.
//!
//! A GPU holds its particles itself and takes them in slabs: one GPU alone its case
//! ([`crate::device::stream_to_gpu`], about [`crate::SLAB_PARTICLES`] filled on the host at
//! a time), each GPU of several its slice's layers (slabs of that size or an eighth of its
//! share, whichever is larger). Uploads and snapshots go through host
//! buffers of [`surge_cuda::HOST_CHUNK`] particles. A run then holds, while it writes, a
//! frame's snapshot and a checkpoint's state ([`OUTPUT_BYTES`] and the conserved buffers);
//! `surge bench` writes neither. The peak is the larger of the load and the run.

use surge_core::buffers::BufferSet;
use surge_core::geometry::counts;
use surge_core::grid::Grid;
use surge_core::Case;

/// Bytes a particle of [`surge_core::geometry::Filled`] takes.
const FILL_BYTES: u64 = 4 + 24 + 24 + 4 + 1 + 16;
/// Memory of the process besides the particles (binary, thread stacks, allocator).
const BASE_BYTES: u64 = 16 << 20;

/// What a case needs of the host, and what the host has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HostMemory {
    /// Particles of the whole case.
    pub particles: u64,
    /// Estimated peak bytes of this process.
    pub needed: u64,
    /// Bytes available to this process (`MemAvailable`, and the cgroup's limit where one is
    /// set); None where the system does not tell.
    pub available: Option<u64>,
}

impl HostMemory {
    /// True when the case fits (or the available memory is unknown).
    pub fn fits(&self) -> bool {
        self.available.is_none_or(|a| self.needed <= a)
    }
}

/// Bytes a particle takes on the host in a frame being written: the snapshot (id 4, kind 1,
/// position 24, velocity 12, density 4, pressure 4) and the frame's order (8).
const OUTPUT_BYTES: u64 = 57;

/// Estimated peak host memory of a process that builds `case` and drives `devices` devices
/// of its share (`share` of the particles: 1 for one process) on the CPU (`gpu` false) or on
/// GPUs; `writes`: whether it copies its particles to the host for frames and checkpoints
/// (a run does, `surge bench` does not).
pub fn host_needed(case: &Case, gpu: bool, devices: usize, share: f64, writes: bool) -> Result<u64, String> {
    let n = counts(case).total();
    let set = BufferSet::for_case(case);
    // A rank of several fills its share only (about `share`: the first cut balances work,
    // not particles); one process fills the whole case (its devices their shares, at once).
    let built = if share < 1.0 { (n as f64 * share) as u64 } else { n };
    if !gpu {
        let grid = Grid::new(case, case.split_axis())?;
        let per = surge_cpu::bytes_per_particle(set, n as usize, grid.cell_count())
            + surge_cpu::list_bytes_per_particle(case, &grid, counts(case).fluid, n);
        return Ok(BASE_BYTES + built * FILL_BYTES + (n as f64 * share * per as f64) as u64);
    }
    // Each GPU streams its fill in slabs, its devices at once: one alone slabs of
    // SLAB_PARTICLES, one of several slabs of its layers, of an eighth of its share at least
    // (a slab may exceed its nominal size by a layer, or by the census' weights alone: twice
    // it is allowed for).
    let slabs = (2 * crate::SLAB_PARTICLES * devices.max(1) as u64).max(if devices > 1 { built / 4 } else { 0 });
    let filled = built.min(slabs);
    // Per device: the upload's images (at most the host state's bytes a particle: 72, 88
    // with wall normals) and the pinned snapshot buffers (40), of one chunk each (at most the
    // device's particles).
    let state = set.and(BufferSet::conserved()).bytes_per_particle() as u64;
    let each = ((n as f64 * share) as u64).div_ceil(devices.max(1) as u64);
    let chunk = devices as u64 * each.min(surge_cuda::HOST_CHUNK as u64) * (state + 40);
    let load = filled * FILL_BYTES + chunk;
    let run = if writes { (n as f64 * share) as u64 * (OUTPUT_BYTES + state) } else { 0 } + chunk;
    Ok(BASE_BYTES + load.max(run))
}

/// [`host_needed`] with the host's available memory./// [`host_needed`] with the host's available memory.
pub fn host_memory(case: &Case, gpu: bool, devices: usize, share: f64, writes: bool) -> Result<HostMemory, String> {
    Ok(HostMemory {
        particles: counts(case).total(),
        needed: host_needed(case, gpu, devices, share, writes)?,
        available: available_bytes(),
    })
}

/// About the largest dp at which `case` needs at most `budget` bytes (rounded up to three
/// significant digits, so it fits); the geometry, h/dp and everything else kept.
pub fn largest_dp(case: &Case, gpu: bool, devices: usize, share: f64, writes: bool, budget: u64) -> Option<f64> {
    let at = |dp: f64| {
        let mut c = case.clone();
        c.h *= dp / c.dp;
        c.dp = dp;
        host_needed(&c, gpu, devices, share, writes).ok()
    };
    let fits = |dp: f64| at(dp).is_some_and(|b| b <= budget);
    // Particles grow as dp^-dim: start from that guess and bisect between a fitting and a
    // non-fitting dp.
    let (mut lo, mut hi) = (case.dp, case.dp);
    for _ in 0..60 {
        if fits(hi) {
            break;
        }
        lo = hi;
        hi *= 1.5;
    }
    if !fits(hi) {
        return None;
    }
    for _ in 0..50 {
        let mid = 0.5 * (lo + hi);
        if fits(mid) {
            hi = mid;
        } else {
            lo = mid;
        }
    }
    // Round up to three significant digits: the smallest such dp at or above the limit.
    let mag = 10f64.powf(hi.log10().floor() - 2.0);
    Some((hi / mag).ceil() * mag)
}

/// `x` written with the decimals of its third significant digit (`largest_dp` rounds to
/// that): 0.00414, not the binary float's 0.0041400000000000005.
fn three_digits(x: f64) -> String {
    let decimals = (2.0 - x.log10().floor()).max(0.0) as usize;
    format!("{x:.decimals$}")
}

/// The memory this process may still take: `MemAvailable` of /proc/meminfo, lowered to the
/// room left under the cgroup's limit when one is set (a Slurm job's allocation). None where
/// neither is readable.
pub fn available_bytes() -> Option<u64> {
    let meminfo = std::fs::read_to_string("/proc/meminfo").ok().and_then(|s| {
        s.lines()
            .find(|l| l.starts_with("MemAvailable:"))
            .and_then(|l| l.split_whitespace().nth(1)?.parse::<u64>().ok())
            .map(|kb| kb * 1024)
    });
    let read = |p: &str| std::fs::read_to_string(p).ok().and_then(|s| s.trim().parse::<u64>().ok());
    let cgroup = match (read("/sys/fs/cgroup/memory.max"), read("/sys/fs/cgroup/memory.current")) {
        (Some(max), Some(cur)) => Some(max.saturating_sub(cur)),
        _ => None,
    };
    match (meminfo, cgroup) {
        (Some(a), Some(b)) => Some(a.min(b)),
        (a, b) => a.or(b),
    }
}

/// One line refusing a case too large for the host, or None when it fits: `m` is
/// [`host_memory`] of a process that drives `devices` devices holding `share` of the
/// particles.
pub fn refusal(m: &HostMemory, case: &Case, gpu: bool, devices: usize, share: f64, writes: bool) -> Option<String> {
    let avail = m.available.filter(|_| !m.fits())?;
    let gb = |b: u64| b as f64 / 1e9;
    let dp = match largest_dp(case, gpu, devices, share, writes, avail) {
        Some(dp) => format!("the largest dp that fits is about {} m", three_digits(dp)),
        None => "no dp makes it fit".into(),
    };
    Some(format!(
        "the case does not fit in this host's memory: {} particles need about {:.1} GB on the host, {:.1} GB are \
         available; {dp} (or run it over several MPI ranks on several nodes)",
        m.particles,
        gb(m.needed),
        gb(avail)
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    const CASE: &str = r#"
        dp = 0.02
        time = { end = 1.0 }
        physics = { body_force = [0.0, 0.0, -9.81] }
        fluid = [{ min = [0.0, 0.0, 0.0], max = [1.0, 1.0, 0.5] }]
        wall = [{ min = [0.0, 0.0, 0.0], max = [2.0, 1.0, 1.0], faces = ["x-", "x+", "y-", "y+", "z-"] }]
    "#;

    #[test]
    fn the_largest_dp_fits_and_a_finer_one_does_not() {
        let case = Case::from_str(CASE, &[]).unwrap();
        let need = host_needed(&case, false, 1, 1.0, true).unwrap();
        // A fifth of the particles' memory, besides the fixed part.
        let budget = BASE_BYTES + (need - BASE_BYTES) / 5;
        let dp = largest_dp(&case, false, 1, 1.0, true, budget).unwrap();
        assert!(dp > case.dp, "a smaller budget needs a coarser dp: {dp}");
        let at = |dp: f64| {
            let mut c = case.clone();
            c.h *= dp / c.dp;
            c.dp = dp;
            host_needed(&c, false, 1, 1.0, true).unwrap()
        };
        assert!(at(dp) <= budget, "dp {dp} needs {} > {budget}", at(dp));
        assert!(at(dp * 0.97) > budget, "dp {} would fit too", dp * 0.97);
        // Fluid goes as dp^-3 and wall layers as dp^-2: a fifth of the memory is between
        // 5^(1/3) = 1.71 and 5^(1/2) = 2.24 times the dp.
        let r = dp / case.dp;
        assert!((1.70..2.25).contains(&r), "{dp}");
    }

    #[test]
    fn a_dp_is_written_to_its_three_digits() {
        assert_eq!(three_digits(0.0041400000000000005), "0.00414");
        assert_eq!(three_digits(0.0125), "0.0125");
        assert_eq!(three_digits(0.1), "0.100");
        assert_eq!(three_digits(2.5), "2.50");
        assert_eq!(three_digits(123.0), "123");
    }

    #[test]
    fn memory_grows_with_the_particles() {
        let case = Case::from_str(CASE, &[]).unwrap();
        let fine = Case::from_str(CASE, &["dp=0.01".into()]).unwrap();
        let (a, b) = (host_needed(&case, true, 1, 1.0, true).unwrap(), host_needed(&fine, true, 1, 1.0, true).unwrap());
        assert!(b > 6 * (a - BASE_BYTES), "{a} -> {b}");
    }
}
