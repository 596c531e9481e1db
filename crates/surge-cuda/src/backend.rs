//! `CudaBackend`: the particles of one device on one GPU.

use crate::compile::{arch_for, compile, defines};
use cudarc::driver::{
    CudaContext, CudaFunction, CudaSlice, CudaStream, DevicePtr, LaunchConfig, PinnedHostSlice, PushKernelArg,
};
use std::sync::Arc;
use surge_core::backend::{Backend, BadParticle, Failure, ForceStats, Snapshot, Update, UpdateStats};
use surge_core::buffers::{BufferId, BufferSet, ParticleState};
use surge_core::case::{Case, Gauge};
use surge_core::gauge::Interpolate;
use surge_core::geometry::Filled;
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;

/// The GPU's skin as a fraction of the kernel support: a rebuild costs less than a force
/// pass there, so the cells are tighter than on the CPU (fewer candidate neighbours).
/// `SURGE_CUDA_SKIN` overrides it for tuning.
pub const CUDA_SKIN_FRACTION: f64 = 0.02;

/// The GPU's cells are half the support (plus skin) and its stencil reaches two cells each
/// side: 125 small cells in 3D hold about 40 % fewer candidate neighbours than 27 large ones,
/// and checking candidates is half the force pass.
pub const STENCIL_REACH: i32 = 2;

pub(crate) fn skin_fraction() -> f64 {
    std::env::var("SURGE_CUDA_SKIN")
        .ok()
        .and_then(|s| s.parse().ok())
        .filter(|&x: &f64| x > 0.0 && x < 1.0)
        .unwrap_or(CUDA_SKIN_FRACTION)
}

/// Threads per block of the particle kernels.
const BLOCK: u32 = 256;
/// Elements per block of the scan kernels (SCAN_BLOCK in step.cu).
const SCAN_BLOCK: usize = 1024;
/// Initial value of the stats words: maxima 0, failed id "none".
const STATS_INIT: [u32; 8] = [0, 0, 0, 0, u32::MAX, 0, 0, 0];

struct Kernels {
    rekey: CudaFunction,
    histogram: CudaFunction,
    scan_block: CudaFunction,
    scan_add: CudaFunction,
    scatter: CudaFunction,
    order_bins: CudaFunction,
    gather16: CudaFunction,
    gather8: CudaFunction,
    forces: CudaFunction,
    update: CudaFunction,
    gauge_sums: CudaFunction,
    front: CudaFunction,
}

/// One level of the multi-level scan. Level 0 scans the cell table in place; level
/// l > 0 scans the block sums of level l - 1 into its own `out`, which then holds the
/// offsets that level l - 1 adds back to its blocks.
struct ScanLevel {
    /// Values scanned at this level.
    len: usize,
    /// Output of levels above 0 (`len` values).
    out: Option<CudaSlice<u32>>,
    /// Block totals (`len / SCAN_BLOCK` rounded up).
    sums: CudaSlice<u32>,
}

/// Particles of one device on one GPU. Device buffers hold raw 32-bit words (float4 as four
/// words), so the force buffer serves as the target of every gather of the sort.
pub struct CudaBackend {
    /// Shared so gauge evaluation can hold it while it borrows the backend.
    case: Arc<Case>,
    pass: ForceStats,
    grid: Grid,
    name: String,
    compile_note: String,
    stream: Arc<CudaStream>,
    k: Kernels,
    n: usize,
    bins: usize,
    buffers: BufferSet,
    pos: CudaSlice<u32>,
    vel: CudaSlice<u32>,
    cell: CudaSlice<u32>,
    info: CudaSlice<u32>,
    vel_prev: CudaSlice<u32>,
    pos_prev: Option<CudaSlice<u32>>,
    wall: Option<CudaSlice<u32>>,
    shift: Option<CudaSlice<u32>>,
    /// Forces; also the target of the sort's gathers (every force pass rewrites it).
    force: CudaSlice<u32>,
    key: CudaSlice<u32>,
    perm: CudaSlice<u32>,
    /// Start of each bin (2 per cell), `bins + 2` values: built in place by the sort.
    cell_start: CudaSlice<u32>,
    scan: Vec<ScanLevel>,
    stats: CudaSlice<u32>,
    /// Stand in for buffers a case does not use (never touched by its kernels): one for
    /// inputs, one for outputs, so both can appear in one launch.
    dummy: CudaSlice<u32>,
    dummy_out: CudaSlice<u32>,
    host_pos: PinnedHostSlice<u32>,
    host_vel: PinnedHostSlice<u32>,
    host_cell: PinnedHostSlice<u32>,
    host_info: PinnedHostSlice<u32>,
    gauge_cell: CudaSlice<u32>,
    gauge_off: CudaSlice<u32>,
    gauge_out: CudaSlice<f64>,
    front_out: CudaSlice<u64>,
}

/// A CUDA failure, naming what was running.
fn fail(what: &str, e: impl std::fmt::Debug) -> String {
    format!("CUDA error in {what}: {e:?}")
}

fn cfg(threads: usize) -> LaunchConfig {
    LaunchConfig {
        grid_dim: ((threads as u32).div_ceil(BLOCK).max(1), 1, 1),
        block_dim: (BLOCK, 1, 1),
        shared_mem_bytes: 0,
    }
}

/// Device bytes per particle for a case's buffer set: the set (no pressure buffer: the GPU
/// computes pressure where it is used) and the cell table (two bins per cell).
pub fn bytes_per_particle(set: BufferSet, particles: usize, cells: usize) -> usize {
    let on_gpu = BufferSet(set.0 & !BufferId::Press.bit());
    on_gpu.bytes_per_particle() + 4 * (2 * cells + 2) / particles.max(1)
}

/// Whether `need` bytes fit in `free` (keeping 5 % spare); if not, the largest dp that would
/// fit, from particle counts scaling as dp^-dim.
pub fn fits(need: usize, free: usize, dp: f64, dim: usize) -> Result<(), String> {
    if need as f64 <= 0.95 * free as f64 {
        return Ok(());
    }
    let dp_fit = dp * (need as f64 / (0.9 * free as f64)).powf(1.0 / dim as f64);
    Err(format!(
        "the case needs {:.2} GB of GPU memory and {:.2} GB are free: the largest dp that fits is about {dp_fit:.4e} m (now {dp} m)",
        need as f64 / 1e9,
        free as f64 / 1e9
    ))
}

impl CudaBackend {
    /// Compile the case's kernels for GPU `ordinal`, allocate every buffer once, upload the
    /// particles and sort them.
    pub fn new(case: &Case, filled: &Filled, ordinal: usize) -> Result<CudaBackend, String> {
        let gpus = crate::probe::gpus()?;
        let gpu = gpus.get(ordinal).ok_or_else(|| format!("there is no GPU {ordinal}: {} visible", gpus.len()))?;
        crate::probe::nvrtc_version()?;
        let grid = Grid::with_skin(case, case.split_axis(), skin_fraction(), STENCIL_REACH)?;
        let n = filled.len();
        let bins = 2 * grid.cell_count();
        let buffers = BufferSet::for_case(case);
        let ctx = CudaContext::new(ordinal).map_err(|e| fail("creating the context", e))?;
        let (free, _) = ctx.mem_get_info().map_err(|e| fail("reading free memory", e))?;
        let need = bytes_per_particle(buffers, n, grid.cell_count()) * n + (1 << 20);
        fits(need, free, case.dp, case.dim).map_err(|e| format!("GPU {ordinal} ({}): {e}", gpu.name))?;
        let t0 = std::time::Instant::now();
        let compiled = compile(&defines(case, &grid), arch_for(gpu.compute_capability))?;
        let compile_note = format!(
            "kernels for {} {} in {:.2} s",
            arch_for(gpu.compute_capability),
            if compiled.cached { "loaded from the cache" } else { "compiled by NVRTC" },
            t0.elapsed().as_secs_f64()
        );
        let module = ctx.load_module(compiled.ptx.into()).map_err(|e| fail("loading the kernels", e))?;
        let f = |name: &str| module.load_function(name).map_err(|e| fail(&format!("loading {name}"), e));
        let k = Kernels {
            rekey: f("rekey_kernel")?,
            histogram: f("histogram_kernel")?,
            scan_block: f("scan_block_kernel")?,
            scan_add: f("scan_add_kernel")?,
            scatter: f("scatter_kernel")?,
            order_bins: f("order_bins_kernel")?,
            gather16: f("gather16_kernel")?,
            gather8: f("gather8_kernel")?,
            forces: f("forces_kernel")?,
            update: f("update_kernel")?,
            gauge_sums: f("gauge_sums_kernel")?,
            front: f("front_kernel")?,
        };
        let stream = ctx.default_stream();

        // Host images of the conserved buffers, as the CPU backend builds them.
        let mut pos = vec![0u32; 4 * n];
        let mut vel = vec![0u32; 4 * n];
        let mut cell = vec![0u32; 4 * n];
        let mut info = vec![0u32; 2 * n];
        let mut wall = vec![0u32; 4 * n];
        for i in 0..n {
            let (c, off) = grid.locate(filled.pos[i]);
            let v = filled.vel[i];
            let p4 = [off[0], off[1], off[2], case.mass as f32];
            let v4 = [v[0] as f32, v[1] as f32, v[2] as f32, filled.rel_density[i]];
            pos[4 * i..4 * i + 4].copy_from_slice(bytemuck::cast_slice(&p4));
            vel[4 * i..4 * i + 4].copy_from_slice(bytemuck::cast_slice(&v4));
            cell[4 * i..4 * i + 4].copy_from_slice(bytemuck::cast_slice(&[c[0], c[1], c[2], 0]));
            info[2 * i..2 * i + 2].copy_from_slice(&[filled.id[i], filled.kind[i] as u32]);
            wall[4 * i..4 * i + 4].copy_from_slice(bytemuck::cast_slice(&filled.wall[i]));
        }
        let up = |h: &[u32], what: &str| stream.clone_htod(h).map_err(|e| fail(&format!("uploading {what}"), e));
        let zeros =
            |len: usize, what: &str| stream.alloc_zeros::<u32>(len).map_err(|e| fail(&format!("allocating {what}"), e));
        let optional = |id: BufferId, what: &str| -> Result<Option<CudaSlice<u32>>, String> {
            if buffers.contains(id) {
                zeros(4 * n, what).map(Some)
            } else {
                Ok(None)
            }
        };
        let mut scan = Vec::new();
        let mut len = bins + 2;
        loop {
            let blocks = len.div_ceil(SCAN_BLOCK);
            let out = if scan.is_empty() { None } else { Some(zeros(len, "scan levels")?) };
            scan.push(ScanLevel { len, out, sums: zeros(blocks, "scan sums")? });
            if blocks == 1 {
                break;
            }
            len = blocks;
        }
        let max_points = case
            .gauges
            .iter()
            .map(|g| match g {
                Gauge::Pressure { .. } => 1,
                Gauge::WaterHeight { .. } => {
                    let v = case.dim - 1;
                    ((case.domain.max[v] - case.domain.min[v]) / (0.5 * case.dp)).ceil() as usize + 1
                }
                Gauge::Front { .. } => 0,
            })
            .sum::<usize>()
            .max(1);
        // Host buffers that the host reads: page-locked without write-combining (cudarc's
        // default), which would make every host read uncached.
        let pinned = |len: usize| -> Result<PinnedHostSlice<u32>, String> {
            // SAFETY: the contents are only read after a device-to-host copy fills them.
            unsafe { ctx.alloc_pinned_with_flags::<u32>(len, 0) }.map_err(|e| fail("allocating pinned host memory", e))
        };
        let mut be = CudaBackend {
            name: format!("cuda:{ordinal} ({})", gpu.name),
            compile_note,
            n,
            bins,
            buffers,
            pos: up(&pos, "positions")?,
            vel: up(&vel, "velocities")?,
            cell: up(&cell, "cells")?,
            info: up(&info, "ids")?,
            vel_prev: up(&vel, "velocities")?,
            pos_prev: optional(BufferId::PosPrev, "step-start positions")?,
            wall: if buffers.contains(BufferId::Wall) { Some(up(&wall, "wall normals")?) } else { None },
            shift: optional(BufferId::Shift, "shifting sums")?,
            force: zeros(4 * n, "forces")?,
            key: zeros(n.max(1), "keys")?,
            perm: zeros(n.max(1), "permutation")?,
            cell_start: zeros(bins + 2, "cell starts")?,
            scan,
            stats: up(&STATS_INIT, "stats")?,
            dummy: zeros(4, "placeholder")?,
            dummy_out: zeros(4, "placeholder")?,
            host_pos: pinned(4 * n)?,
            host_vel: pinned(4 * n)?,
            host_cell: pinned(4 * n)?,
            host_info: pinned(2 * n)?,
            gauge_cell: zeros(4 * max_points, "gauge points")?,
            gauge_off: zeros(4 * max_points, "gauge points")?,
            gauge_out: stream.alloc_zeros::<f64>(2 * max_points).map_err(|e| fail("allocating gauge sums", e))?,
            front_out: stream.alloc_zeros::<u64>(1).map_err(|e| fail("allocating the front", e))?,
            case: Arc::new(case.clone()),
            pass: ForceStats::default(),
            grid,
            stream,
            k,
        };
        be.try_rebuild(true)?.map_or(Ok(()), |b| Err(format!("particle {} at {:?} {}", b.id, b.pos, b.reason)))?;
        Ok(be)
    }

    /// How the kernels were obtained (NVRTC or cache) and how long it took.
    pub fn compile_note(&self) -> &str {
        &self.compile_note
    }

    fn reset_stats(&mut self) -> Result<(), String> {
        self.stream.memcpy_htod(&STATS_INIT, &mut self.stats).map_err(|e| fail("resetting the stats", e))
    }

    fn read_stats(&mut self, after: &str) -> Result<[u32; 8], String> {
        let mut s = [0u32; 8];
        self.stream.memcpy_dtoh(&self.stats, &mut s).map_err(|e| fail(after, e))?;
        self.stream.synchronize().map_err(|e| fail(after, e))?;
        Ok(s)
    }

    /// The particle with global id `id`, for a failure message.
    fn bad_particle(&mut self, id: u32, reason: &'static str) -> Result<BadParticle, String> {
        let mut snap = Snapshot::default();
        self.try_snapshot(&mut snap)?;
        let i = snap.id.iter().position(|&x| x == id).ok_or_else(|| format!("failed particle {id} not found"))?;
        Ok(BadParticle { id, pos: snap.pos[i], reason })
    }

    /// Exclusive scan of the cell table (bins + 2 values) in place: block scans down the
    /// levels, then each level's scanned block totals added back to the level below.
    fn scan_counts(&mut self) -> Result<(), String> {
        let cfg_scan = |len: usize| LaunchConfig {
            grid_dim: (len.div_ceil(SCAN_BLOCK) as u32, 1, 1),
            block_dim: (SCAN_BLOCK as u32, 1, 1),
            shared_mem_bytes: 0,
        };
        let CudaBackend { stream, k, cell_start, scan, .. } = self;
        for l in 0..scan.len() {
            let (below, rest) = scan.split_at_mut(l);
            let lvl = &mut rest[0];
            let len = lvl.len as i32;
            let mut b = stream.launch_builder(&k.scan_block);
            // Level 0 scans the cell table in place: the same device address twice.
            let table = cell_start.device_ptr(stream).0;
            match below.last() {
                None => b.arg(&len).arg(&table).arg(&table),
                Some(prev) => b.arg(&len).arg(&prev.sums).arg(lvl.out.as_mut().expect("levels above 0 have an output")),
            };
            b.arg(&mut lvl.sums);
            // SAFETY: argument types match scan_block_kernel; `len` values in and out, and the
            // kernel allows them to alias.
            unsafe { b.launch(cfg_scan(lvl.len)) }.map_err(|e| fail("scan_block_kernel", e))?;
        }
        for l in (0..scan.len() - 1).rev() {
            let (lo, hi) = scan.split_at_mut(l + 1);
            let offsets = hi[0].out.as_ref().expect("levels above 0 have an output");
            let len = lo[l].len as i32;
            let target =
                if l == 0 { &mut *cell_start } else { lo[l].out.as_mut().expect("levels above 0 have an output") };
            let mut b = stream.launch_builder(&k.scan_add);
            b.arg(&len).arg(target).arg(offsets);
            // SAFETY: argument types match scan_add_kernel.
            unsafe { b.launch(cfg_scan(lo[l].len)) }.map_err(|e| fail("scan_add_kernel", e))?;
        }
        Ok(())
    }

    /// Re-key (unless `move_particles` is false: a restart keeps the stored cells), counting
    /// sort (histogram, scan, scatter, per-bin order by id), gather.
    /// `Ok(Some(_))`: a particle left the domain or is not finite.
    fn try_rebuild(&mut self, move_particles: bool) -> Result<Option<BadParticle>, String> {
        let n = self.n as i32;
        let mv = i32::from(move_particles);
        self.reset_stats()?;
        {
            let mut b = self.stream.launch_builder(&self.k.rekey);
            b.arg(&n)
                .arg(&mv)
                .arg(&mut self.cell)
                .arg(&mut self.pos)
                .arg(&self.info)
                .arg(&mut self.key)
                .arg(&mut self.stats);
            // SAFETY: argument types match rekey_kernel; every buffer holds n elements.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("rekey_kernel", e))?;
        }
        let s = self.read_stats("rekey_kernel")?;
        if s[4] != u32::MAX {
            return self.bad_particle(s[4], "left the domain or has a non-finite position").map(Some);
        }
        self.stream.memset_zeros(&mut self.cell_start).map_err(|e| fail("clearing the cell table", e))?;
        {
            let mut b = self.stream.launch_builder(&self.k.histogram);
            b.arg(&n).arg(&self.key).arg(&mut self.cell_start);
            // SAFETY: argument types match histogram_kernel; keys are below bins.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("histogram_kernel", e))?;
        }
        self.scan_counts()?;
        {
            let mut b = self.stream.launch_builder(&self.k.scatter);
            b.arg(&n).arg(&self.key).arg(&mut self.cell_start).arg(&mut self.perm);
            // SAFETY: argument types match scatter_kernel.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("scatter_kernel", e))?;
            let bins = self.bins as i32;
            let mut b = self.stream.launch_builder(&self.k.order_bins);
            b.arg(&bins).arg(&self.cell_start).arg(&mut self.perm).arg(&self.info);
            // SAFETY: argument types match order_bins_kernel; cell_start has bins + 1 values.
            unsafe { b.launch(cfg(self.bins)) }.map_err(|e| fail("order_bins_kernel", e))?;
        }
        // Gather each conserved 16-byte buffer into the force buffer and swap the two.
        let CudaBackend { stream, k, perm, force: scratch, pos, vel, cell, vel_prev, wall, info, .. } = self;
        let mut sixteen: Vec<&mut CudaSlice<u32>> = vec![pos, vel, cell, vel_prev];
        if let Some(w) = wall.as_mut() {
            sixteen.push(w);
        }
        for buf in sixteen {
            let mut b = stream.launch_builder(&k.gather16);
            b.arg(&n).arg(&*perm).arg(&*buf).arg(&mut *scratch);
            // SAFETY: argument types match gather16_kernel; both buffers hold 4n words.
            unsafe { b.launch(cfg(n as usize)) }.map_err(|e| fail("gather16_kernel", e))?;
            std::mem::swap(buf, scratch);
        }
        {
            let mut b = stream.launch_builder(&k.gather8);
            b.arg(&n).arg(&*perm).arg(&*info).arg(&mut *scratch);
            // SAFETY: argument types match gather8_kernel.
            unsafe { b.launch(cfg(n as usize)) }.map_err(|e| fail("gather8_kernel", e))?;
            let src = scratch.slice(0..2 * n as usize);
            stream.memcpy_dtod(&src, info).map_err(|e| fail("copying ids", e))?;
        }
        Ok(None)
    }

    fn try_forces(&mut self) -> Result<ForceStats, String> {
        self.reset_stats()?;
        let n = self.n as i32;
        {
            let CudaBackend {
                stream,
                k,
                pos,
                vel,
                cell,
                info,
                wall,
                cell_start,
                force,
                shift,
                stats,
                dummy,
                dummy_out,
                ..
            } = self;
            let mut b = stream.launch_builder(&k.forces);
            b.arg(&n).arg(&*pos).arg(&*vel).arg(&*cell).arg(&*info).arg(wall.as_ref().unwrap_or(dummy));
            b.arg(&*cell_start).arg(force);
            match shift.as_mut() {
                Some(s) => b.arg(s),
                None => b.arg(dummy_out),
            };
            b.arg(stats);
            // SAFETY: argument types match forces_kernel; optional buffers are read only
            // when their option is compiled in.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("forces_kernel", e))?;
        }
        let s = self.read_stats("forces_kernel")?;
        Ok(ForceStats { acc_max: f32::from_bits(s[0]), visc_max: f32::from_bits(s[1]) })
    }

    fn try_update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure> {
        self.reset_stats()?;
        let n = self.n as i32;
        let code: i32 = match which {
            Update::Predictor => 0,
            Update::Corrector => 1,
            Update::Verlet => 2,
            Update::VerletEuler => 3,
        };
        let dt = dt as f32;
        {
            let CudaBackend {
                stream,
                k,
                pos,
                vel,
                vel_prev,
                pos_prev,
                force,
                info,
                shift,
                stats,
                dummy,
                dummy_out,
                ..
            } = self;
            let mut b = stream.launch_builder(&k.update);
            b.arg(&n).arg(&code).arg(&dt).arg(pos).arg(vel).arg(vel_prev);
            match pos_prev.as_mut() {
                Some(p) => b.arg(p),
                None => b.arg(dummy_out),
            };
            b.arg(&*force).arg(&*info).arg(shift.as_ref().unwrap_or(dummy)).arg(stats);
            // SAFETY: argument types match update_kernel; pos_prev is used only by the
            // symplectic updates, which allocate it.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail("update_kernel", e))?;
        }
        let s = self.read_stats("update_kernel")?;
        if s[4] != u32::MAX {
            return Err(Failure::Particle(self.bad_particle(s[4], "has a non-finite velocity, position or density")?));
        }
        Ok(UpdateStats { disp_max: f32::from_bits(s[2]), vel_max: f32::from_bits(s[3]) })
    }

    fn try_snapshot(&mut self, out: &mut Snapshot) -> Result<(), String> {
        let what = "copying particles to the host";
        self.stream.memcpy_dtoh(&self.pos, &mut self.host_pos).map_err(|e| fail(what, e))?;
        self.stream.memcpy_dtoh(&self.vel, &mut self.host_vel).map_err(|e| fail(what, e))?;
        self.stream.memcpy_dtoh(&self.cell, &mut self.host_cell).map_err(|e| fail(what, e))?;
        let info_words = self.info.slice(0..2 * self.n);
        self.stream.memcpy_dtoh(&info_words, &mut self.host_info).map_err(|e| fail(what, e))?;
        self.stream.synchronize().map_err(|e| fail(what, e))?;
        let pos: &[[f32; 4]] = bytemuck::cast_slice(self.host_pos.as_slice().map_err(|e| fail(what, e))?);
        let vel: &[[f32; 4]] = bytemuck::cast_slice(self.host_vel.as_slice().map_err(|e| fail(what, e))?);
        let cell: &[[i32; 4]] = bytemuck::cast_slice(self.host_cell.as_slice().map_err(|e| fail(what, e))?);
        let info: &[[u32; 2]] = bytemuck::cast_slice(self.host_info.as_slice().map_err(|e| fail(what, e))?);
        let c = Constants::of(&self.case);
        out.id = info.iter().map(|i| i[0]).collect();
        out.kind = info.iter().map(|i| i[1] as u8).collect();
        out.pos = cell.iter().zip(pos).map(|(c, p)| self.grid.absolute(*c, *p)).collect();
        out.vel = vel.iter().map(|v| [v[0], v[1], v[2]]).collect();
        out.rho = vel.iter().map(|v| c.density(v[3])).collect();
        out.p = vel.iter().map(|v| c.pressure(v[3])).collect();
        Ok(())
    }

    fn try_fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
        out.clear();
        if xs.is_empty() {
            return Ok(());
        }
        let mut cells = Vec::with_capacity(4 * xs.len());
        let mut offs = Vec::with_capacity(4 * xs.len());
        for &x in xs {
            let (c, o) = self.grid.locate(x);
            cells.extend_from_slice(&[c[0] as u32, c[1] as u32, c[2] as u32, 0]);
            offs.extend_from_slice(&[o[0].to_bits(), o[1].to_bits(), o[2].to_bits(), 0]);
        }
        let what = "gauge_sums_kernel";
        let points = xs.len() as i32;
        let mut cv = self.gauge_cell.slice_mut(0..cells.len());
        self.stream.memcpy_htod(&cells, &mut cv).map_err(|e| fail(what, e))?;
        let mut ov = self.gauge_off.slice_mut(0..offs.len());
        self.stream.memcpy_htod(&offs, &mut ov).map_err(|e| fail(what, e))?;
        {
            let mut b = self.stream.launch_builder(&self.k.gauge_sums);
            b.arg(&points).arg(&self.gauge_cell).arg(&self.gauge_off).arg(&self.pos).arg(&self.vel);
            b.arg(&self.cell_start).arg(&mut self.gauge_out);
            // SAFETY: argument types match gauge_sums_kernel; `points` fits the gauge buffers
            // (sized at construction for every gauge sample of the case).
            unsafe { b.launch(cfg(xs.len())) }.map_err(|e| fail(what, e))?;
        }
        let mut sums = vec![0.0f64; 2 * xs.len()];
        let view = self.gauge_out.slice(0..2 * xs.len());
        self.stream.memcpy_dtoh(&view, &mut sums).map_err(|e| fail(what, e))?;
        self.stream.synchronize().map_err(|e| fail(what, e))?;
        out.extend(sums.chunks(2).map(|c| (c[0], c[1])));
        Ok(())
    }

    fn try_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String> {
        let what = "front_kernel";
        self.stream.memset_zeros(&mut self.front_out).map_err(|e| fail(what, e))?;
        let vert = self.case.dim - 1;
        let (n, ax, below_rel) = (self.n as i32, axis as i32, below - self.grid.origin[vert]);
        {
            let mut b = self.stream.launch_builder(&self.k.front);
            b.arg(&n).arg(&ax).arg(&below_rel).arg(&self.pos).arg(&self.cell).arg(&self.info).arg(&mut self.front_out);
            // SAFETY: argument types match front_kernel.
            unsafe { b.launch(cfg(self.n)) }.map_err(|e| fail(what, e))?;
        }
        let mut v = [0u64; 1];
        self.stream.memcpy_dtoh(&self.front_out, &mut v).map_err(|e| fail(what, e))?;
        self.stream.synchronize().map_err(|e| fail(what, e))?;
        Ok((v[0] != 0).then(|| f64::from_bits(v[0]) - self.grid.cell[axis] + self.grid.origin[axis]))
    }
}

impl Backend for CudaBackend {
    fn name(&self) -> String {
        self.name.clone()
    }
    fn len(&self) -> usize {
        self.n
    }
    fn bytes_per_particle(&self) -> usize {
        bytes_per_particle(self.buffers, self.n, self.grid.cell_count())
    }
    fn grid(&self) -> &Grid {
        &self.grid
    }
    // One device only until the slices land here (see the runtime's team).
    fn rebuild_begin(
        &mut self,
        map: &surge_core::decomp::SliceMap,
        _me: usize,
        rekey: bool,
        _out: &mut [ParticleState; 2],
    ) -> Result<(), Failure> {
        if map.devices() > 1 {
            return Err(Failure::Device("the CUDA backend runs one device per process for now".into()));
        }
        match self.try_rebuild(rekey)? {
            Some(b) => Err(Failure::Particle(b)),
            None => Ok(()),
        }
    }
    fn rebuild_end(&mut self, _incoming: [ParticleState; 2]) -> Result<(), Failure> {
        Ok(())
    }
    fn forces(&mut self, part: surge_core::backend::Part) -> Result<(), Failure> {
        if part == surge_core::backend::Part::Inner {
            self.pass = self.try_forces()?;
        }
        Ok(())
    }
    fn force_stats(&mut self) -> Result<ForceStats, Failure> {
        Ok(self.pass)
    }
    fn edge_forces(&mut self, _: surge_core::decomp::Side, _: &mut Vec<[f32; 4]>) -> Result<(), Failure> {
        Err(Failure::Device("the CUDA backend runs one device per process for now".into()))
    }
    fn set_copy_forces(&mut self, _: surge_core::decomp::Side, _: &[[f32; 4]]) -> Result<(), Failure> {
        Err(Failure::Device("the CUDA backend runs one device per process for now".into()))
    }
    fn update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure> {
        self.try_update(which, dt)
    }
    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), Failure> {
        Ok(self.try_snapshot(out)?)
    }
    fn export_state(&mut self, out: &mut ParticleState) -> Result<(), Failure> {
        Ok(self.try_export(out)?)
    }
    fn import_state(&mut self, state: ParticleState) -> Result<(), String> {
        self.try_import(state)
    }
}

impl CudaBackend {
    /// The device buffer of a conserved buffer id (None when the case has no such buffer).
    fn conserved_mut(&mut self, id: BufferId) -> Option<&mut CudaSlice<u32>> {
        match id {
            BufferId::Pos => Some(&mut self.pos),
            BufferId::Vel => Some(&mut self.vel),
            BufferId::Cell => Some(&mut self.cell),
            BufferId::Info => Some(&mut self.info),
            BufferId::VelPrev => Some(&mut self.vel_prev),
            BufferId::Wall => self.wall.as_mut(),
            _ => None,
        }
    }

    fn try_export(&mut self, out: &mut ParticleState) -> Result<(), String> {
        let want = self.buffers.and(BufferSet::conserved());
        if out.len() != self.n || out.buffers() != want {
            *out = ParticleState::zeroed(self.n, want);
        }
        let stream = self.stream.clone();
        for &id in BufferId::ALL.iter().filter(|b| want.contains(**b)) {
            let words = out.bytes(id).len() / 4;
            let dst: &mut [u32] = bytemuck::cast_slice_mut(out.bytes_mut(id));
            let src = self.conserved_mut(id).ok_or_else(|| format!("no device buffer for {}", id.name()))?;
            let view = src.slice(0..words);
            stream.memcpy_dtoh(&view, dst).map_err(|e| fail("copying the particle state", e))?;
        }
        out.set_grid(&self.grid);
        stream.synchronize().map_err(|e| fail("copying the particle state", e))
    }

    fn try_import(&mut self, mut state: ParticleState) -> Result<(), String> {
        let want = self.buffers.and(BufferSet::conserved());
        if state.buffers() != want || state.len() != self.n {
            return Err(format!(
                "the particle state holds {} particles with buffers {:#x}; this device holds {} with {:#x}",
                state.len(),
                state.buffers().0,
                self.n,
                want.0
            ));
        }
        // A state from another grid (the CPU's cells are larger) moves to this one's cells.
        state.relocate(&self.grid)?;
        state.validate(&self.grid)?;
        let stream = self.stream.clone();
        for &id in BufferId::ALL.iter().filter(|b| want.contains(**b)) {
            let src: &[u32] = bytemuck::cast_slice(state.bytes(id));
            let dst = self.conserved_mut(id).ok_or_else(|| format!("no device buffer for {}", id.name()))?;
            let mut view = dst.slice_mut(0..src.len());
            stream.memcpy_htod(src, &mut view).map_err(|e| fail("loading the particle state", e))?;
        }
        match self.try_rebuild(false)? {
            Some(b) => Err(format!("particle {} of the state {}", b.id, b.reason)),
            None => Ok(()),
        }
    }
}

impl Interpolate for CudaBackend {
    fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
        self.try_fluid_sums(xs, out)
    }
    fn fluid_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String> {
        self.try_front(axis, below)
    }
}

#[cfg(test)]
mod tests {
    use super::fits;

    #[test]
    fn a_case_too_big_for_the_gpu_names_the_largest_dp_that_fits() {
        assert!(fits(10, 100, 0.01, 3).is_ok());
        // Eight times the memory in 3D: twice the spacing, with the 10 % margin.
        let e = fits(8_000_000_000, 1_000_000_000, 0.01, 3).unwrap_err();
        assert!(e.contains("needs 8.00 GB") && e.contains("1.00 GB are free"), "{e}");
        let dp: f64 = e.split("about ").nth(1).unwrap().split(' ').next().unwrap().parse().unwrap();
        assert!((dp - 0.01 * (8.0f64 / 0.9).cbrt()).abs() < 1e-6, "{dp}");
    }
}
