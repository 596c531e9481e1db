//! Choosing the execution role: CPU cores, GPUs, or the best available; and how many.

use crate::cluster::{Cluster, Single};
use crate::simulation::Simulation;
use crate::team::Loader;
use std::sync::Arc;
use surge_core::backend::Backend;
use surge_core::decomp::SliceMap;
use surge_core::geometry::{census, counts, fill, fill_slab, Census, Filled, Layers, Slab};
use surge_core::grid::Grid;
use surge_core::Case;
use surge_cpu::CpuBackend;
use surge_cuda::CudaBackend;

/// Which backend to run on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BackendChoice {
    /// A GPU when one is usable (driver, GPU and NVRTC found), else the CPU.
    Auto,
    /// CPU cores.
    Cpu,
    /// An NVIDIA GPU.
    Cuda,
}

/// Which GPUs to use.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Gpus {
    /// GPU 0; under MPI, this rank's share of its node's GPUs.
    Auto,
    /// These ordinals, one device each.
    List(Vec<usize>),
    /// Every visible GPU.
    All,
}

/// Where to run and with how much.
#[derive(Debug, Clone)]
pub struct DeviceRequest {
    /// Backend.
    pub backend: BackendChoice,
    /// CPU threads in all (0: all cores), shared evenly by the CPU workers.
    pub threads: usize,
    /// CPU workers (devices on the CPU), each a slice with its share of the threads.
    pub workers: usize,
    /// GPUs (with a GPU backend).
    pub gpus: Gpus,
    /// Whether the process copies its particles to the host for frames and checkpoints (a
    /// run does, `surge bench` does not): counted in the host memory a case needs.
    pub writes: bool,
}

impl DeviceRequest {
    /// One device of `backend` with `threads` threads (0: all cores), GPU 0.
    pub fn one(backend: BackendChoice, threads: usize) -> DeviceRequest {
        DeviceRequest { backend, threads, workers: 1, gpus: Gpus::Auto, writes: true }
    }
    /// `workers` CPU workers sharing `threads` threads (0: all cores).
    pub fn cpu_workers(workers: usize, threads: usize) -> DeviceRequest {
        DeviceRequest { backend: BackendChoice::Cpu, threads, workers, gpus: Gpus::Auto, writes: true }
    }

    /// This rank's GPUs when none are named: its share of the node's visible GPUs by its
    /// node-local rank (several ranks share one GPU when there are more ranks than GPUs).
    fn for_rank(&self, cluster: &dyn Cluster) -> DeviceRequest {
        if self.gpus != Gpus::Auto || cluster.size() == 1 || self.backend == BackendChoice::Cpu {
            return self.clone();
        }
        let g = surge_cuda::gpus().map_or(0, |g| g.len());
        let (lr, ls) = cluster.node_local();
        let list = if g == 0 {
            vec![0]
        } else if g >= ls {
            let k = g / ls;
            (lr * k..(lr + 1) * k).collect()
        } else {
            vec![lr % g]
        };
        DeviceRequest { gpus: Gpus::List(list), ..self.clone() }
    }
}

/// A backend loaded with the case's particles, and why it was chosen (for the log).
pub struct Chosen {
    /// The backend.
    pub backend: Box<dyn Backend>,
    /// One line: what runs where, and for `auto` why.
    pub note: String,
    /// CPU threads used (1 for a GPU's driving thread).
    pub threads: usize,
}

/// Why no GPU can be used here, or `None` when one can.
pub fn cuda_unavailable(gpu: usize) -> Option<String> {
    if let Err(e) = surge_cuda::nvrtc_version() {
        return Some(e);
    }
    match surge_cuda::gpus() {
        Err(e) => Some(e),
        Ok(g) if gpu >= g.len() => Some(format!("there is no GPU {gpu}: {} visible", g.len())),
        Ok(_) => None,
    }
}

/// The backend kind a request resolves to, with the GPU ordinals, and the note for `auto`.
enum Resolved {
    Cpu,
    Cuda(Vec<usize>),
}

fn resolve(req: &DeviceRequest) -> Result<(Resolved, String), String> {
    let ordinals = || -> Result<Vec<usize>, String> {
        match &req.gpus {
            Gpus::List(l) => {
                let mut seen = std::collections::HashSet::new();
                if let Some(d) = l.iter().find(|&&d| !seen.insert(d)) {
                    // Allowed (tests run several slices on one GPU), never faster.
                    tracing::warn!("--devices names GPU {d} more than once: its slices share it");
                }
                Ok(l.clone())
            }
            Gpus::All => surge_cuda::gpus().map(|g| (0..g.len()).collect()),
            Gpus::Auto => Ok(vec![0]),
        }
    };
    let usable = |ords: &[usize]| -> Option<String> {
        if ords.is_empty() {
            return Some("no GPU is visible".into());
        }
        ords.iter().find_map(|&d| cuda_unavailable(d))
    };
    match req.backend {
        BackendChoice::Cpu => Ok((Resolved::Cpu, String::new())),
        BackendChoice::Cuda => {
            let ords = ordinals().map_err(|e| format!("--backend cuda: {e}"))?;
            match usable(&ords) {
                Some(why) => Err(format!("--backend cuda: {why}")),
                None => Ok((Resolved::Cuda(ords), String::new())),
            }
        }
        BackendChoice::Auto => match ordinals().ok().and_then(|o| usable(&o).is_none().then_some(o)) {
            Some(ords) => Ok((Resolved::Cuda(ords), "backend auto: ".into())),
            None => {
                let why = ordinals().map_or_else(|e| e, |o| usable(&o).unwrap_or_default());
                Ok((Resolved::Cpu, format!("backend auto: no usable GPU ({why}); running on ")))
            }
        },
    }
}

/// CPU threads per worker: `threads` (0: all cores) shared evenly, at least one each.
fn threads_each(threads: usize, workers: usize) -> usize {
    let all = if threads == 0 { std::thread::available_parallelism().map_or(1, |n| n.get()) } else { threads };
    (all / workers.max(1)).max(1)
}

/// Load the filled case on one device of the requested backend (the first GPU listed).
pub fn load(case: &Case, filled: &Filled, req: &DeviceRequest) -> Result<Chosen, String> {
    let (resolved, note) = resolve(req)?;
    match resolved {
        Resolved::Cpu => {
            let b = CpuBackend::new(case, filled, req.threads)?;
            let threads = b.threads();
            Ok(Chosen { note: format!("{note}cpu ({threads} threads)"), backend: Box::new(b), threads })
        }
        Resolved::Cuda(ords) => {
            let b = CudaBackend::new(case, filled, ords[0])?;
            let note = format!("{note}{}; {}", b.name(), b.compile_note());
            Ok(Chosen { backend: Box::new(b), note, threads: 1 })
        }
    }
}

/// A case loaded on its devices.
pub struct Loaded {
    /// The simulation, at t = 0.
    pub sim: Simulation,
    /// One line for the log: what runs where, and for `auto` why.
    pub note: String,
    /// CPU threads per device (1 for a GPU's driving thread).
    pub threads: usize,
    /// Fluid particles.
    pub fluid: usize,
}

/// Fill a case and load it on the requested devices: one device runs on the calling
/// thread; several are cut into slices along the split axis (balanced by the census'
/// weights), each filled and loaded by its own worker thread.
pub fn simulation(case: &Case, req: &DeviceRequest) -> Result<Loaded, String> {
    simulation_on(case, req, Arc::new(Single))
}

/// The census of `case` over `grid`'s cell layers along its split axis ([`census`]: every
/// lattice row's count, no particle kept) and the first cut of those layers into `n`
/// slices: what every rank of several computes alike, and `surge check --fill --slab`.
pub fn census_cut(case: &Case, grid: &Grid, n: usize) -> Result<(Census, SliceMap), String> {
    let of = |x: f64| grid.layer_of(x) as usize;
    let c = census(case, Some(&Layers { axis: grid.split_axis(), count: grid.layers() as usize, of: &of }));
    let map = SliceMap::balanced(&c.weights, n, surge_core::decomp::halo(case, grid))?;
    Ok((c, map))
}

/// The particles of device `d` of a GPU team cut by `map` from the census `c`, and the
/// fullest cell layer in or next to its slice (within the layers its buffers keep room for,
/// [`surge_cuda::headroom_layers`]): what sizes its buffers' headroom.
pub fn gpu_share(c: &Census, map: &SliceMap, d: usize) -> (usize, usize) {
    let (lo, hi) = map.owned(d);
    let count = |l: i32| c.counts.get(l as usize).copied().unwrap_or(0);
    let n = (lo..hi).map(count).sum::<u64>() as usize;
    let reach = surge_cuda::headroom_layers(map.halo.max(0) as usize) as i32;
    let layer = (lo - reach..hi + reach).map(count).max().unwrap_or(0) as usize;
    (n, layer)
}

/// The layers `layers` cut into consecutive runs of about `slab` particles each (`counts`:
/// the particles of each layer; a layer of more is a run alone).
fn slabs_of(counts: &[u64], layers: std::ops::Range<i32>, slab: u64) -> Vec<std::ops::Range<i32>> {
    let mut out = Vec::new();
    let (mut from, mut acc) = (layers.start, 0u64);
    for l in layers.clone() {
        let n = counts.get(l as usize).copied().unwrap_or(0);
        if acc > 0 && acc + n > slab {
            out.push(from..l);
            (from, acc) = (l, 0);
        }
        acc += n;
    }
    if from < layers.end {
        out.push(from..layers.end);
    }
    out
}

/// Particles of one slab of a fill streamed to a GPU (about: the slabs are cut by the census'
/// cost weights), 73 bytes each on the host while it is uploaded.
pub const SLAB_PARTICLES: u64 = 1 << 24;

/// `SURGE_SLAB_PARTICLES` where set: the slabs' size instead of [`SLAB_PARTICLES`] (tuning
/// and tests: small slabs make a small case stream in many).
fn slab_override() -> Option<u64> {
    std::env::var("SURGE_SLAB_PARTICLES").ok().and_then(|v| v.parse().ok()).filter(|&v| v > 0)
}

/// Fill `case` slab by slab, handing each slab to `put` in turn (then dropped): a census
/// (no particle kept) gives each lattice row's count and the weights of `grid`'s cell layers
/// along the axis across the fill's rows (z in 3D, y in 2D: a slab skips whole rows), cut
/// into consecutive slabs of about `slab` particles' weight, each filled by [`fill_slab`]
/// with the whole fill's ids. Returns the census (its total and fluid counts) and the slabs
/// made.
pub fn fill_in_slabs(
    case: &Case,
    grid: &Grid,
    slab: u64,
    put: &mut dyn FnMut(&Filled) -> Result<(), String>,
) -> Result<(Census, usize), String> {
    let axis = if case.dim == 2 || grid.n[1] > grid.n[2] { 1 } else { 2 };
    let count = grid.n[axis].max(1) as usize;
    let of = |x: f64| (((x - grid.origin[axis]) / grid.cell[axis]).floor().max(0.0) as usize).min(count - 1);
    let c = census(case, Some(&Layers { axis, count, of: &of }));
    let slabs = c.total.div_ceil(slab.max(1)).max(1);
    let (sum, mut acc, mut cuts) = (c.weights.iter().sum::<u64>().max(1), 0u64, vec![0usize]);
    for (l, w) in c.weights.iter().enumerate() {
        acc += w;
        if acc * slabs >= sum * cuts.len() as u64 && l + 1 < count && (cuts.len() as u64) < slabs {
            cuts.push(l + 1);
        }
    }
    cuts.push(count);
    cuts.dedup();
    for w in cuts.windows(2) {
        let (lo, hi) = (w[0], w[1]);
        let keep = |x: f64| (lo..hi).contains(&of(x));
        put(&fill_slab(case, &c, &Slab { axis, keep: &keep }))?;
    }
    Ok((c, cuts.len() - 1))
}

/// Load `case` on GPU `ord` without holding it whole on the host: filled slab by slab
/// ([`fill_in_slabs`], slabs of about `slab` particles: [`SLAB_PARTICLES`] for a run), each
/// uploaded and dropped. The GPU's first sort makes it bitwise what one whole fill gives.
/// Returns the particle and fluid counts and the backend.
pub fn stream_to_gpu(case: &Case, ord: usize, slab: u64) -> Result<(usize, usize, surge_cuda::CudaBackend), String> {
    let grid = surge_cuda::grid_for(case)?;
    let n = counts(case).total() as usize;
    let mut counted = None;
    let backend = surge_cuda::CudaBackend::streamed(case, ord, n, |put| {
        counted = Some(fill_in_slabs(case, &grid, slab, put)?);
        Ok(())
    })?;
    let (c, slabs) = counted.expect("the backend fills");
    tracing::debug!("{} particles streamed to GPU {ord} in {slabs} slab(s)", c.total);
    Ok((c.total as usize, c.fluid as usize, backend))
}

/// The particles of the cell layers `layers` of `grid` along its split axis, with the ids
/// of the whole fill ([`fill_slab`] from the case's `census`): a rank's share.
pub fn fill_layers(case: &Case, grid: &Grid, census: &Census, layers: std::ops::Range<i32>) -> Filled {
    let keep = |x: f64| layers.contains(&grid.layer_of(x));
    fill_slab(case, census, &Slab { axis: grid.split_axis(), keep: &keep })
}

/// [`simulation`] as one rank of an MPI run: every rank has the same number of devices
/// (`k`), the slices are cut for all `ranks x k` devices (rank-major), and this rank loads
/// its own. With several devices the first cut comes from a census of the case
/// ([`surge_core::geometry::census`], no particle kept) and each device's worker fills only
/// its layers ([`surge_core::geometry::fill_slab`]) as it loads them: a rank never builds the
/// whole case, nor a process of several devices a copy of it to cut. One GPU alone takes its
/// case in slabs ([`stream_to_gpu`]); one CPU device fills it whole. Rank 0 logs the rank ->
/// host -> device map.
pub fn simulation_on(case: &Case, req: &DeviceRequest, cluster: Arc<dyn Cluster>) -> Result<Loaded, String> {
    crate::worker::links_mode()?;
    let req = &req.for_rank(cluster.as_ref());
    let (resolved, note) = resolve(req)?;
    let k = match &resolved {
        Resolved::Cpu => req.workers.max(1),
        Resolved::Cuda(o) => o.len(),
    };
    let ranks = cluster.size();
    // Before any particle is built: a case too large for the host is refused, not killed.
    let gpu = matches!(resolved, Resolved::Cuda(_));
    let share = 1.0 / ranks as f64;
    let host = crate::memory::host_memory(case, gpu, k, share, req.writes)?;
    if let Some(line) = crate::memory::refusal(&host, case, gpu, k, share, req.writes) {
        return Err(line);
    }
    if ranks > 1 {
        let ks = cluster.all_gather(&[k as f64]);
        if ks.iter().any(|&x| x as usize != k) {
            return Err(format!("every rank must drive as many devices; the ranks have {ks:?}"));
        }
        let what = match &resolved {
            Resolved::Cpu => format!("{k} cpu worker(s)"),
            Resolved::Cuda(o) => format!("GPU(s) {o:?}"),
        };
        let line = format!(
            "rank {} on {}: {what}, devices {}..{}",
            cluster.rank(),
            cluster.host(),
            cluster.rank() * k,
            (cluster.rank() + 1) * k
        );
        if let Some(all) = cluster.gather_bytes(line.into_bytes()) {
            tracing::info!("{} MPI ranks ({})", ranks, cluster.threading());
            for l in all {
                tracing::info!("{}", String::from_utf8_lossy(&l));
            }
        }
    }
    let n = k * ranks;
    if n == 1 && gpu {
        // One GPU: the case streamed to it in slabs, never whole on the host.
        let ord = ords_of(&resolved)[0];
        let (_, fluid, backend) = stream_to_gpu(case, ord, slab_override().unwrap_or(SLAB_PARTICLES))?;
        let note = format!("{note}{}; {}", backend.name(), backend.compile_note());
        return Ok(Loaded { sim: Simulation::new(case.clone(), Box::new(backend)), note, threads: 1, fluid });
    }
    if n == 1 {
        let filled = fill(case);
        let one = DeviceRequest { gpus: Gpus::List(ords_of(&resolved)), ..req.clone() };
        let chosen = load(case, &filled, &one)?;
        let fluid = filled.fluid_count();
        return Ok(Loaded {
            sim: Simulation::new(case.clone(), chosen.backend),
            note: chosen.note,
            threads: chosen.threads,
            fluid,
        });
    }
    if !case.divisible() {
        return Err(format!(
            "{n} devices: the case is periodic along every axis, so it cannot be cut into slices; run it on one device"
        ));
    }
    let grid = match &resolved {
        Resolved::Cpu => Grid::new(case, case.split_axis())?,
        Resolved::Cuda(_) => surge_cuda::grid_for(case)?,
    };
    let axis = grid.split_axis();
    let first = cluster.rank() * k;
    // A census of the whole case (a pass that keeps no particle) gives the first cut and
    // each lattice row's count; then each device's worker fills only the layers it owns,
    // with the ids of the whole fill, as it loads them (the host holds the devices' shares
    // once, never the whole case and its cut). Every rank counts the same, so every rank
    // cuts the same map.
    let (c, map) = census_cut(case, &grid, n)?;
    let fluid = c.fluid as usize;
    let c = Arc::new(c);
    let threads = threads_each(req.threads, k);
    let loaders: Vec<Loader> = (first..first + k)
        .map(|d| {
            let (case, grid, c) = (case.clone(), grid.clone(), c.clone());
            let (lo, hi) = map.owned(d);
            match &resolved {
                Resolved::Cpu => Box::new(move || {
                    let part = fill_layers(&case, &grid, &c, lo..hi);
                    CpuBackend::new(&case, &part, threads).map(|b| Box::new(b) as Box<dyn Backend>)
                }) as Loader,
                Resolved::Cuda(o) => {
                    let (ord, map) = (o[d - first], map.clone());
                    Box::new(move || {
                        // The device's layers in slabs (each filled, uploaded and dropped:
                        // the host holds a slab a device, never a device's whole share); the
                        // census' counts give its particles and its fullest layer, in or
                        // next to its slice, for its buffers' headroom.
                        let (n, layer) = gpu_share(&c, &map, d);
                        // An eighth of the share at least: a slab of layers along the split
                        // axis walks the fill's rows along it up to its end, so fewer slabs
                        // walk less (the host holds 2 bytes a particle of the share more).
                        let slab = slab_override().unwrap_or(SLAB_PARTICLES.max(n as u64 / 8));
                        let slabs = slabs_of(&c.counts, lo..hi, slab);
                        CudaBackend::streamed_in_team(&case, ord, n, c.total, layer, &map, d, |put| {
                            slabs.into_iter().try_for_each(|r| put(&fill_layers(&case, &grid, &c, r)))
                        })
                        .map(|b| Box::new(b) as Box<dyn Backend>)
                    }) as Loader
                }
            }
        })
        .collect();
    let sim = Simulation::ranks(case.clone(), map.clone(), grid, loaders, cluster.clone())?;
    let names = sim.backend_names();
    let what = match &resolved {
        Resolved::Cpu => format!("{n} cpu workers ({threads} threads each)"),
        Resolved::Cuda(_) => {
            format!("{n} GPUs{}", if ranks == 1 { format!(": {}", names.join(", ")) } else { String::new() })
        }
    };
    let ranks_note = if ranks > 1 { format!(" over {ranks} MPI ranks") } else { String::new() };
    if cluster.rank() == 0 {
        for d in 0..n {
            let (lo, hi) = map.owned(d);
            tracing::info!("device {d}: cell layers {lo}..{hi} of {} along {}", map.layers(), ["x", "y", "z"][axis]);
        }
    }
    let note = format!("{note}{what}{ranks_note}, split along {}", ["x", "y", "z"][axis]);
    let threads = if matches!(resolved, Resolved::Cpu) { threads } else { 1 };
    Ok(Loaded { sim, note, threads, fluid })
}

fn ords_of(r: &Resolved) -> Vec<usize> {
    match r {
        Resolved::Cpu => vec![0],
        Resolved::Cuda(o) => o.clone(),
    }
}

#[cfg(test)]
mod tests {

    #[test]
    fn a_share_is_cut_into_slabs_of_its_layers() {
        use super::slabs_of;
        let counts = [5, 5, 5, 5, 20, 1, 1, 0];
        // Runs of at most 10 particles, a layer of more alone; the share's layers only.
        assert_eq!(slabs_of(&counts, 0..8, 10), vec![0..2, 2..4, 4..5, 5..8]);
        assert_eq!(slabs_of(&counts, 3..6, 10), vec![3..4, 4..5, 5..6]);
        assert_eq!(slabs_of(&counts, 0..8, 1000), vec![0..8]);
        // Every layer in exactly one slab, in order.
        let all: Vec<i32> = slabs_of(&counts, 1..7, 7).into_iter().flatten().collect();
        assert_eq!(all, (1..7).collect::<Vec<_>>());
    }
    use super::*;

    /// The slabs of [`fill_in_slabs`] together are the whole fill: every particle once, with
    /// every field bit for bit (ordered by id), in many slabs, 2D and 3D, boxes and a shape.
    #[test]
    fn the_slabs_together_are_the_whole_fill() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
        for (file, sets) in [
            ("configs/dam_break_2d.toml", vec![]),
            ("configs/dam_break_3d.toml", vec!["dp=0.04"]),
            ("configs/spheric_test2.toml", vec!["dp=0.05"]),
            ("configs/dam_break_breakwater_3d.toml", vec![]),
        ] {
            let sets: Vec<String> = sets.iter().map(|s| s.to_string()).collect();
            let case = Case::from_file(&root.join(file), &sets).unwrap();
            let grid = surge_cuda::grid_for(&case).unwrap();
            let whole = fill(&case);
            let mut joined = Filled::default();
            let (c, slabs) = fill_in_slabs(&case, &grid, (whole.len() / 7).max(1) as u64, &mut |f| {
                joined.extend(f);
                Ok(())
            })
            .unwrap();
            assert!(slabs >= 4, "{file}: {slabs} slabs");
            assert_eq!(c.total as usize, whole.len(), "{file}");
            assert_eq!(joined.len(), whole.len(), "{file}");
            let mut order: Vec<usize> = (0..joined.len()).collect();
            order.sort_by_key(|&i| joined.id[i]);
            for (k, &i) in order.iter().enumerate() {
                assert_eq!(joined.id[i] as usize, k, "{file}");
                assert_eq!(joined.pos[i], whole.pos[k], "{file}: particle {k}");
                assert_eq!(joined.vel[i], whole.vel[k], "{file}");
                assert_eq!(joined.rel_density[i].to_bits(), whole.rel_density[k].to_bits(), "{file}");
                assert_eq!(joined.kind[i], whole.kind[k], "{file}");
                assert_eq!(joined.wall[i], whole.wall[k], "{file}");
            }
        }
    }
}
