//! surge-cpu: the CPU execution role, on a rayon pool of its own. It is the reference for
//! every other backend: each particle sums its neighbours in a fixed order (stencil order,
//! then sorted order within a cell), so results do not depend on the number of threads.
#![warn(missing_docs)]

mod forces;
mod sort;
mod update;

use rayon::prelude::*;
use std::sync::Arc;
use surge_core::backend::{Backend, Failure, ForceStats, Snapshot, Update, UpdateStats};
use surge_core::buffers::{self, BufferSet, Kind, ParticleArrays, ParticleState};
use surge_core::case::{Case, Shifting};
use surge_core::config::KernelKind;
use surge_core::gauge::{self, Interpolate};
use surge_core::geometry::Filled;
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::{CubicSpline, SmoothingKernel, WendlandC2};

/// Particles of one device on CPU cores.
pub struct CpuBackend {
    /// Shared so gauge evaluation can hold it while it borrows the backend.
    case: Arc<Case>,
    /// The case's constants, as the loops use them.
    consts: Constants,
    grid: Grid,
    /// Particle buffers, sorted by cell key after each rebuild.
    a: ParticleArrays,
    /// Re-ordering target of the sort (same length).
    scratch: ParticleArrays,
    /// `cell_start[2k]..cell_start[2k+1]` are the fluid particles of cell k (linear index),
    /// `cell_start[2k+1]..cell_start[2k+2]` its boundary particles.
    cell_start: Vec<u32>,
    pool: rayon::ThreadPool,
    threads: usize,
    /// The buffers allocated for this case.
    buffers: BufferSet,
}

impl CpuBackend {
    /// Load filled particles onto `threads` CPU threads (0: all cores) and sort them.
    pub fn new(case: &Case, filled: &Filled, threads: usize) -> Result<CpuBackend, String> {
        let grid = Grid::new(case, case.split_axis())?;
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("surge-cpu-{i}"))
            .build()
            .map_err(|e| format!("cannot start the CPU thread pool: {e}"))?;
        let threads = pool.current_num_threads();
        let n = filled.len();
        let buffers = BufferSet::for_case(case);
        let mut a = ParticleArrays::with_buffers(n, buffers);
        for i in 0..n {
            let (c, off) = grid.locate(filled.pos[i]);
            let v = filled.vel[i];
            a.pos[i] = [off[0], off[1], off[2], case.mass as f32];
            a.cell[i] = [c[0], c[1], c[2], 0];
            a.vel[i] = [v[0] as f32, v[1] as f32, v[2] as f32, filled.rel_density[i]];
            a.vel_prev[i] = a.vel[i];
            a.info[i] = [i as u32, filled.kind[i] as u32];
            if let Some(w) = a.wall.get_mut(i) {
                *w = filled.wall[i];
            }
        }
        let scratch = ParticleArrays::with_buffers(n, buffers.and(BufferSet::conserved()));
        let cell_start = vec![0; 2 * grid.cell_count() + 1];
        let consts = Constants::of(case);
        let mut be =
            CpuBackend { case: Arc::new(case.clone()), consts, grid, a, scratch, cell_start, pool, threads, buffers };
        be.rebuild().map_err(|f| f.to_string())?;
        Ok(be)
    }

    /// Number of threads of the pool.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The grid.
    pub fn grid(&self) -> &Grid {
        &self.grid
    }

    /// The particle arrays (sorted by cell key).
    pub fn arrays(&self) -> &ParticleArrays {
        &self.a
    }

    /// Indices of the particles within the kernel support of particle i, found through the
    /// cell stencil (for tests against a brute-force search).
    pub fn neighbours_of(&self, i: usize) -> Vec<usize> {
        let mut out = Vec::new();
        let support2 = (self.grid.support * self.grid.support) as f32;
        forces::for_each_neighbour(&self.grid, &self.cell_start, &self.a, i, true, |j, _r, r2, _| {
            if r2 < support2 && j != i {
                out.push(j);
            }
        });
        out
    }
}

/// Memory of the CPU backend per particle for a case's buffers: every buffer, a second copy
/// of the conserved ones (the sort target), and the cell table (two bins per cell).
pub fn bytes_per_particle(buffers: BufferSet, particles: usize, cells: usize) -> usize {
    buffers.bytes_per_particle()
        + buffers.and(BufferSet::conserved()).bytes_per_particle()
        + 4 * (2 * cells + 1) / particles.max(1)
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({} threads)", self.threads)
    }

    fn len(&self) -> usize {
        self.a.len()
    }

    fn bytes_per_particle(&self) -> usize {
        bytes_per_particle(self.buffers, self.a.len(), self.grid.cell_count())
    }

    fn skin(&self) -> f64 {
        self.grid.skin
    }

    fn rebuild(&mut self) -> Result<(), Failure> {
        let CpuBackend { grid, a, scratch, cell_start, pool, .. } = self;
        pool.install(|| sort::rebuild(grid, a, scratch, cell_start)).map_err(Failure::Particle)
    }

    fn forces(&mut self) -> Result<ForceStats, Failure> {
        let CpuBackend { case, consts, grid, a, cell_start, pool, .. } = self;
        Ok(pool.install(|| forces::forces(case, consts, grid, cell_start, a)))
    }

    fn update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure> {
        let CpuBackend { case, consts, grid, a, pool, .. } = self;
        let shift = (case.shifting != Shifting::None).then_some((consts.shift_ah, consts.shift_threshold));
        pool.install(|| update::update(grid, a, which, dt, shift)).map_err(Failure::Particle)
    }

    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), Failure> {
        let c = &self.consts;
        let a = &self.a;
        let n = a.len();
        out.id = a.info.iter().map(|i| i[0]).collect();
        out.kind = a.info.iter().map(|i| i[1] as u8).collect();
        out.pos = (0..n).map(|i| self.grid.absolute(a.cell[i], a.pos[i])).collect();
        out.vel = a.vel.iter().map(|v| [v[0], v[1], v[2]]).collect();
        out.rho = a.vel.iter().map(|v| c.density(v[3])).collect();
        out.p = a.vel.iter().map(|v| c.pressure(v[3])).collect();
        Ok(())
    }

    fn gauges(&mut self, out: &mut Vec<f64>) -> Result<(), Failure> {
        let case = Arc::clone(&self.case);
        gauge::evaluate(&case, self, out).map_err(Failure::Device)
    }

    fn export_state(&mut self, out: &mut ParticleState) -> Result<(), Failure> {
        out.copy_from(&self.a, self.buffers);
        out.set_grid(&self.grid);
        Ok(())
    }

    fn import_state(&mut self, mut state: ParticleState) -> Result<(), String> {
        let want = self.buffers.and(BufferSet::conserved());
        if state.buffers() != want {
            return Err(format!(
                "the particle state holds the buffers [{}], this case needs [{}]",
                buffers::names(state.buffers()),
                buffers::names(want)
            ));
        }
        state.relocate(&self.grid)?;
        state.validate(&self.grid)?;
        let n = state.len();
        let mut a = ParticleArrays::with_buffers(n, self.buffers.without(BufferSet::conserved()));
        a.take_from(&mut state.into_arrays(), want);
        self.a = a;
        self.scratch = ParticleArrays::with_buffers(n, want);
        let CpuBackend { grid, a, scratch, cell_start, pool, .. } = self;
        pool.install(|| sort::sort_by_stored_cells(grid, a, scratch, cell_start));
        Ok(())
    }
}

impl Interpolate for CpuBackend {
    fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
        let (h, dim) = (self.case.h, self.case.dim);
        out.clear();
        out.extend(xs.iter().map(|&x| match self.case.kernel {
            KernelKind::WendlandC2 => self.sums_with(WendlandC2::new(h, dim), x),
            KernelKind::CubicSpline => self.sums_with(CubicSpline::new(h, dim), x),
        }));
        Ok(())
    }

    fn fluid_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String> {
        let vert = self.case.dim - 1;
        let a = &self.a;
        let grid = &self.grid;
        Ok(self.pool.install(|| {
            (0..a.len())
                .into_par_iter()
                .filter(|&i| a.info[i][1] == Kind::Fluid as u32)
                .map(|i| grid.absolute(a.cell[i], a.pos[i]))
                .filter(|x| x[vert] < below)
                .map(|x| x[axis])
                .reduce_with(f64::max)
        }))
    }
}

impl CpuBackend {
    fn sums_with<K: SmoothingKernel>(&self, k: K, x: [f64; 3]) -> (f64, f64) {
        let consts = &self.consts;
        let (c, off) = self.grid.locate(x);
        let (mut w_sum, mut pw_sum) = (0.0f64, 0.0f64);
        let support2 = self.grid.support * self.grid.support;
        for d in self.grid.stencil() {
            let Some(nc) = self.grid.neighbour([c[0], c[1], c[2], 0], d) else { continue };
            let k_lin = self.grid.linear(nc);
            let (s, e) = (self.cell_start[2 * k_lin] as usize, self.cell_start[2 * k_lin + 1] as usize);
            for j in s..e {
                let r: [f64; 3] = std::array::from_fn(|ax| {
                    off[ax] as f64 - self.a.pos[j][ax] as f64 - d[ax] as f64 * self.grid.cell[ax]
                });
                let r2 = r[0] * r[0] + r[1] * r[1] + r[2] * r[2];
                if r2 >= support2 {
                    continue;
                }
                let dj = self.a.vel[j][3];
                let vol = self.a.pos[j][3] as f64 / (consts.rho0 as f64 * (1.0 + dj as f64));
                let w = k.w(r2.sqrt() as f32) as f64 * vol;
                w_sum += w;
                pw_sum += w * consts.pressure(dj) as f64;
            }
        }
        (w_sum, pw_sum)
    }
}
