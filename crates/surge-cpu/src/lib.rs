//! surge-cpu: the CPU execution role, on a rayon pool of its own. It is the reference for
//! every other backend: each particle sums its neighbours in a fixed order (stencil order,
//! then sorted order within a cell), so results do not depend on the number of threads.
#![warn(missing_docs)]

mod forces;
#[cfg(target_arch = "x86_64")]
mod lanes;
mod loads;
mod mdbc;
mod open;
mod sort;
mod update;
mod verlet;

use rayon::prelude::*;
use std::ops::Range;
use std::sync::Arc;
use surge_core::backend::{Backend, Failure, ForceStats, Part, Snapshot, Update, UpdateStats};
use surge_core::bodies::{add_particle_load, BodyLoad, LOAD_LEN};
use surge_core::buffers::{self, BufferSet, Kind, ParticleArrays, ParticleState};
use surge_core::case::{Case, Shifting};
use surge_core::config::{KernelKind, OnExit};
use surge_core::decomp::{Side, SliceMap};
use surge_core::gauge::{Interpolate, ParticleLoad};
use surge_core::geometry::Filled;
use surge_core::grid::Grid;
use surge_core::motion::SolidMove;
use surge_core::physics::constants::Constants;
use surge_core::physics::kernel::{CubicSpline, SmoothingKernel, WendlandC2};

/// Particles of one device on CPU cores.
pub struct CpuBackend {
    /// The case.
    case: Arc<Case>,
    /// The case's constants, as the loops use them.
    consts: Constants,
    /// The whole grid.
    whole: Grid,
    /// The grid restricted to this device's window (slice and bands of copies).
    grid: Grid,
    /// Particle buffers: copies from the left, owned, copies from the right; each block
    /// sorted by cell key and id after a rebuild.
    a: ParticleArrays,
    /// Re-ordering target of the sort (same length).
    scratch: ParticleArrays,
    /// `cell_start[2k]..cell_start[2k+1]` are the fluid particles of cell k (linear index in
    /// the window), `cell_start[2k+1]..cell_start[2k+2]` its boundary particles.
    cell_start: Vec<u32>,
    /// The offsets by axis and the cells' boxes the force pass finds neighbours with.
    search: forces::NeighbourSearch,
    pool: rayon::ThreadPool,
    threads: usize,
    /// The buffers allocated for this case.
    buffers: BufferSet,
    /// The decomposition of the last rebuild and this device's number in it.
    map: SliceMap,
    me: usize,
    /// Owned particles.
    own: Range<usize>,
    /// The edges the left and right neighbours copy (empty without a neighbour).
    edges: [Range<usize>; 2],
    /// mDBC: the particles whose boundary values the mDBC pass sets, the owned ones and the
    /// copies within the stencil reach of them (those the force pass reads).
    mdbc_range: Range<usize>,
    /// The moving solids' moves for the next update.
    moves: Vec<SolidMove>,
    /// Largest values of the force pass so far.
    pass: ForceStats,
    /// Fluid particles dropped since the start because they left the domain or their
    /// density range.
    removed: u64,
    /// Of `removed`, those dropped for their density (`domain.density_range`).
    removed_for_density: u64,
    /// The re-key's density bounds: open until [`Backend::arm_density_range`].
    density_bounds: [f32; 2],
    /// Open boundaries (issue 15): particles the outlets (and backflow at inlets) removed,
    /// and particles the inlets made, since the start.
    outflow: u64,
    spawned: u64,
    /// The time of the next force pass, for the inlets' prescribed velocities.
    time: f64,
    /// The last `forces(Part::Edges)` computed the inner part too (a backend alone), so the
    /// next `forces(Part::Inner)` has nothing to do.
    inner_done: bool,
}

impl CpuBackend {
    /// Load filled particles (all of a case, or the part a device owns: their ids are
    /// kept) onto `threads` CPU threads (0: all cores) and sort them.
    pub fn new(case: &Case, filled: &Filled, threads: usize) -> Result<CpuBackend, String> {
        let whole = Grid::new(case, case.split_axis())?;
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
            let (c, off) = whole.locate(filled.pos[i]);
            let v = filled.vel[i];
            a.pos[i] = [off[0], off[1], off[2], case.mass as f32];
            a.cell[i] = [c[0], c[1], c[2], 0];
            a.vel[i] = [v[0] as f32, v[1] as f32, v[2] as f32, filled.rel_density[i]];
            a.vel_prev[i] = a.vel[i];
            a.info[i] = [filled.id[i], filled.kind[i] as u32];
            if let Some(w) = a.wall.get_mut(i) {
                *w = filled.wall[i];
            }
        }
        let scratch = ParticleArrays::with_buffers(n, buffers.and(BufferSet::conserved()));
        let consts = Constants::of(case);
        let map = SliceMap::single(whole.layers(), whole.reach);
        let mut be = CpuBackend {
            case: Arc::new(case.clone()),
            consts,
            grid: whole.clone(),
            whole,
            a,
            scratch,
            cell_start: Vec::new(),
            search: forces::NeighbourSearch::default(),
            pool,
            threads,
            buffers,
            map: map.clone(),
            me: 0,
            own: 0..n,
            edges: [0..0, 0..0],
            mdbc_range: 0..0,
            moves: Vec::new(),
            pass: ForceStats::default(),
            removed: 0,
            removed_for_density: 0,
            density_bounds: [f32::NEG_INFINITY, f32::INFINITY],
            outflow: 0,
            spawned: 0,
            time: 0.0,
            inner_done: false,
        };
        be.solo_rebuild(&map, true).map_err(|f| f.to_string())?;
        Ok(be)
    }

    /// A rebuild with nothing to exchange (a device alone).
    fn solo_rebuild(&mut self, map: &SliceMap, rekey: bool) -> Result<(), Failure> {
        let mut out = [ParticleState::default(), ParticleState::default()];
        self.rebuild_begin(map, 0, rekey, &mut out)?;
        let empty = || ParticleState::empty(self.buffers, &self.whole);
        self.rebuild_end([empty(), empty()])
    }

    /// Number of threads of the pool.
    pub fn threads(&self) -> usize {
        self.threads
    }

    /// The particle arrays (sorted by cell key), copies included.
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

    /// First particle of layer `l` of the window.
    fn layer_start(&self, l: i32) -> usize {
        self.cell_start[2 * self.grid.layer_start(l)] as usize
    }

    /// The copies from a side.
    fn copies(&self, side: Side) -> Range<usize> {
        match side {
            Side::Left => 0..self.own.start,
            Side::Right => self.own.end..self.a.len(),
        }
    }

    fn run_forces(&mut self, range: Range<usize>, pressures: bool) -> ForceStats {
        let CpuBackend { case, consts, grid, a, cell_start, search, pool, own, .. } = self;
        let own = own.clone();
        pool.install(|| forces::forces(case, consts, grid, cell_start, a, search, range, own, pressures))
    }
}

/// Memory of the CPU backend per particle for a case's buffers: every buffer, a second copy
/// of the conserved ones (the sort target), the offsets by axis of the force pass, and the
/// cell table (two bins per cell).
pub fn bytes_per_particle(buffers: BufferSet, particles: usize, cells: usize) -> usize {
    buffers.bytes_per_particle()
        + buffers.and(BufferSet::conserved()).bytes_per_particle()
        + forces::NeighbourSearch::BYTES_PER_PARTICLE
        + 4 * (2 * cells + 1) / particles.max(1)
}

/// Memory of the CPU backend's Verlet neighbour list per particle, estimated for a case of
/// `fluid` fluid particles out of `total` on `grid` (the figure [`bytes_per_particle`] leaves
/// out): 4 bytes a candidate, a fluid particle listing those within `support + margin` (a
/// ball of them at spacing dp), a DBC boundary particle at most half as many (fluid only),
/// an mDBC one none, and half again for the vectors' growth.
pub fn list_bytes_per_particle(case: &Case, grid: &Grid, fluid: u64, total: u64) -> usize {
    let r = (grid.support + verlet::VerletList::MARGIN * grid.skin) / case.dp;
    let ball = if case.dim == 3 { 4.0 / 3.0 * std::f64::consts::PI * r * r * r } else { std::f64::consts::PI * r * r };
    let boundary = if case.boundary.is_mdbc() { 0.0 } else { 0.5 };
    let entries = ball * (fluid as f64 + boundary * total.saturating_sub(fluid) as f64) / total.max(1) as f64;
    (1.5 * 4.0 * entries) as usize + 4
}

fn max_stats(x: ForceStats, y: ForceStats) -> ForceStats {
    ForceStats { acc_max: x.acc_max.max(y.acc_max), visc_max: x.visc_max.max(y.visc_max) }
}

impl Backend for CpuBackend {
    fn name(&self) -> String {
        format!("cpu ({} threads)", self.threads)
    }

    fn len(&self) -> usize {
        self.own.len()
    }

    fn removed(&self) -> u64 {
        self.removed
    }

    fn removed_for_density(&self) -> u64 {
        self.removed_for_density
    }

    fn arm_density_range(&mut self) {
        self.density_bounds = self.case.density_bounds();
    }

    fn open_counts(&self) -> [u64; 2] {
        [self.spawned, self.outflow]
    }

    fn set_time(&mut self, t: f64) {
        self.time = t;
    }

    fn bytes_per_particle(&self) -> usize {
        bytes_per_particle(self.buffers, self.a.len(), self.grid.cell_count())
            + self.search.list.bytes() / self.a.len().max(1)
    }

    fn grid(&self) -> &Grid {
        &self.whole
    }

    fn rebuild_begin(
        &mut self,
        map: &SliceMap,
        me: usize,
        rekey: bool,
        out: &mut [ParticleState; 2],
    ) -> Result<(), Failure> {
        // The particles move in storage (and the cell table changes): the Verlet list goes.
        self.search.list.invalidate();
        self.inner_done = false;
        let own = self.own.clone();
        let held = self.a.len();
        let mut leaving = Vec::new();
        // Open boundaries first (issue 15): kinds change at the planes, what flowed out is
        // dropped, and new inlet particles come after the held ones, owned like the others.
        let mut spawned = 0..0;
        if rekey && !self.case.open.is_empty() {
            let conserved = self.buffers.and(BufferSet::conserved());
            let CpuBackend { case, whole, a, pool, .. } = self;
            let changes = pool.install(|| open::rebuild(case, whole, a, own.clone(), conserved))?;
            self.outflow += changes.removed.len() as u64;
            self.spawned += changes.spawned as u64;
            leaving = changes.removed;
            spawned = held..held + changes.spawned;
        }
        if rekey {
            let remove = self.case.on_exit == OnExit::Remove;
            let density = self.density_bounds;
            let CpuBackend { whole, a, pool, .. } = self;
            let (mut left, mut dense) = (Vec::new(), 0);
            for r in [own.clone(), spawned.clone()] {
                let gone = &leaving;
                let (l, d) =
                    pool.install(|| sort::rekey(whole, a, r, remove, density, gone)).map_err(Failure::Particle)?;
                left.extend(l);
                dense += d;
            }
            self.removed_for_density += dense;
            self.removed += left.len() as u64;
            leaving.extend(left);
            leaving.sort_unstable();
        }
        // No copies held, no neighbour and nothing removed or added: every particle stays
        // where it is (a device alone).
        let everything = own == (0..held);
        if !(everything && map.devices() == 1 && leaving.is_empty() && spawned.is_empty()) {
            let axis = self.whole.split_axis();
            let (lo, hi) = map.window(me);
            let windows = Side::BOTH.map(|s| map.neighbour(me, s).map(|d| map.window(d)));
            let mut keep = Vec::with_capacity(own.len() + spawned.len());
            let mut send = [Vec::new(), Vec::new()];
            let mut leaving = leaving.iter().peekable();
            for i in own.clone().chain(spawned.clone()) {
                if leaving.next_if(|&&r| r as usize == i).is_some() {
                    continue;
                }
                let l = self.a.cell[i][axis];
                let mut held_somewhere = false;
                if l >= lo && l < hi {
                    keep.push(i as u32);
                    held_somewhere = true;
                }
                for (s, w) in windows.iter().enumerate() {
                    if w.is_some_and(|(wl, wh)| l >= wl && l < wh) {
                        send[s].push(i as u32);
                        held_somewhere = true;
                    }
                }
                if !held_somewhere && i >= held {
                    return Err(Failure::Device(format!(
                        "an inlet made particle {} in layer {l}, outside the windows of device {me} and its \
                         neighbours",
                        self.a.info[i][0]
                    )));
                }
            }
            for (o, idx) in out.iter_mut().zip(&send) {
                *o = ParticleState::gather(&self.a, idx, self.buffers, &self.whole);
            }
            if !(everything && keep.len() == own.len() && spawned.is_empty()) {
                self.a = self.a.gather(&keep, self.buffers.and(BufferSet::conserved()));
            }
        }
        let (wl, wh) = map.window(me);
        self.grid = self.whole.windowed(wl, wh);
        self.map = map.clone();
        self.me = me;
        self.own = 0..0;
        self.edges = [0..0, 0..0];
        Ok(())
    }

    fn rebuild_end(&mut self, incoming: [ParticleState; 2]) -> Result<(), Failure> {
        self.search.list.invalidate();
        let conserved = self.buffers.and(BufferSet::conserved());
        for mut part in incoming {
            if part.is_empty() {
                continue;
            }
            buffers::require(part.buffers(), conserved)
                .map_err(|e| Failure::Device(format!("from a neighbour: {e}")))?;
            self.a.append(part.arrays_mut());
        }
        let n = self.a.len();
        self.a.resize(n, self.buffers.without(conserved));
        self.scratch.resize(n, conserved);
        self.cell_start.clear();
        self.cell_start.resize(2 * self.grid.cell_count() + 1, 0);
        let CpuBackend { grid, a, scratch, cell_start, pool, me, .. } = self;
        pool.install(|| sort::sort(grid, a, scratch, cell_start)).map_err(|id| {
            Failure::Device(format!("particle {id} lies outside the window of device {me} after a rebuild"))
        })?;
        let (lo, hi) = self.map.owned(self.me);
        let halo = self.map.halo;
        self.own = self.layer_start(lo)..self.layer_start(hi);
        let reach = self.grid.reach;
        self.mdbc_range = self.layer_start(lo - reach)..self.layer_start(hi + reach);
        self.edges = [
            match self.map.neighbour(self.me, Side::Left) {
                Some(_) => self.own.start..self.layer_start(lo + halo),
                None => self.own.start..self.own.start,
            },
            match self.map.neighbour(self.me, Side::Right) {
                Some(_) => self.layer_start(hi - halo)..self.own.end,
                None => self.own.end..self.own.end,
            },
        ];
        Ok(())
    }

    fn forces(&mut self, part: Part) -> Result<(), Failure> {
        match part {
            Part::Edges => {
                if !self.case.open.is_empty() {
                    let CpuBackend { case, consts, grid, a, cell_start, pool, mdbc_range, time, .. } = self;
                    let range = mdbc_range.clone();
                    pool.install(|| open::pass(case, consts, grid, cell_start, a, range, *time));
                }
                if self.case.boundary.is_mdbc() {
                    let CpuBackend { case, consts, grid, a, cell_start, pool, mdbc_range, search, .. } = self;
                    let range = mdbc_range.clone();
                    let simd = search.avx2();
                    pool.install(|| mdbc::mdbc(case, consts, grid, cell_start, a, range, simd));
                }
                let [l, r] = self.edges.clone();
                let inner = self.edges[0].end..self.edges[1].start;
                // Alone (a backend without neighbours: nothing is exchanged between the two
                // parts), the inner part too, in the same task of the pool: each `install`
                // from the caller's thread wakes the pool's threads and waits for them.
                let alone = Side::BOTH.iter().all(|&side| self.map.neighbour(self.me, side).is_none());
                let CpuBackend { case, consts, grid, a, cell_start, search, pool, own, .. } = self;
                let own = own.clone();
                self.pass = pool.install(|| {
                    let mut run = |range, pressures| {
                        forces::forces(case, consts, grid, cell_start, a, search, range, own.clone(), pressures)
                    };
                    let s = run(l, true);
                    let t = run(r, false);
                    let u = if alone { run(inner, false) } else { ForceStats::default() };
                    max_stats(max_stats(s, t), u)
                });
                self.inner_done = alone;
            }
            Part::Inner => {
                if !std::mem::take(&mut self.inner_done) {
                    let s = self.run_forces(self.edges[0].end..self.edges[1].start, false);
                    self.pass = max_stats(self.pass, s);
                }
            }
        }
        Ok(())
    }

    fn force_stats(&mut self) -> Result<ForceStats, Failure> {
        Ok(self.pass)
    }

    fn edge_forces(&mut self, side: Side, out: &mut Vec<[f32; 4]>) -> Result<(), Failure> {
        let r = self.edges[side as usize].clone();
        out.clear();
        out.extend_from_slice(&self.a.force[r.clone()]);
        if !self.a.shift.is_empty() {
            out.extend_from_slice(&self.a.shift[r]);
        }
        Ok(())
    }

    fn set_copy_forces(&mut self, side: Side, values: &[[f32; 4]]) -> Result<(), Failure> {
        let r = self.copies(side);
        let per = if self.a.shift.is_empty() { 1 } else { 2 };
        if values.len() != per * r.len() {
            return Err(Failure::Device(format!(
                "{} force values for the {} copies from the {side:?} neighbour",
                values.len(),
                r.len()
            )));
        }
        let (f, sh) = values.split_at(r.len());
        self.a.force[r.clone()].copy_from_slice(f);
        if per == 2 {
            self.a.shift[r].copy_from_slice(sh);
        }
        Ok(())
    }

    fn update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure> {
        let CpuBackend { case, consts, grid, a, pool, moves, .. } = self;
        let shift = (case.shifting != Shifting::None).then_some((consts.shift_ah, consts.shift_threshold));
        let mdbc = case.boundary.is_mdbc();
        let motions = update::Motions { moves, damping: &case.damping };
        pool.install(|| update::update(grid, a, which, dt, shift, mdbc, &motions)).map_err(Failure::Particle)
    }

    fn set_moves(&mut self, moves: &[SolidMove]) -> Result<(), Failure> {
        self.moves.clear();
        self.moves.extend_from_slice(moves);
        Ok(())
    }

    fn body_loads(&mut self, bodies: &[BodyLoad], out: &mut [i64]) -> Result<(), Failure> {
        let CpuBackend { case, consts, grid, whole, a, cell_start, pool, own, .. } = self;
        let ids: Vec<Range<u32>> = bodies.iter().map(|b| b.ids.clone()).collect();
        let contacts = Some((bodies, case.dp as f32));
        let loads = pool
            .install(|| loads::boundary_loads(case, consts, grid, whole, cell_start, a, own.clone(), &ids, contacts));
        for l in &loads {
            if let Some(k) = bodies.iter().position(|b| b.ids.contains(&l.id)) {
                add_particle_load(&bodies[k], l.pos, l.force, &mut out[LOAD_LEN * k..LOAD_LEN * (k + 1)]);
            }
        }
        Ok(())
    }

    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), Failure> {
        let c = &self.consts;
        let a = &self.a;
        let r = self.own.clone();
        out.id = a.info[r.clone()].iter().map(|i| i[0]).collect();
        out.kind = a.info[r.clone()].iter().map(|i| i[1] as u8).collect();
        out.pos = r.clone().map(|i| self.grid.absolute(a.cell[i], a.pos[i])).collect();
        out.vel = a.vel[r.clone()].iter().map(|v| [v[0], v[1], v[2]]).collect();
        out.rho = a.vel[r.clone()].iter().map(|v| c.density(v[3])).collect();
        out.p = a.vel[r].iter().map(|v| c.pressure(v[3])).collect();
        Ok(())
    }

    fn export_state(&mut self, out: &mut ParticleState) -> Result<(), Failure> {
        out.copy_range_from(&self.a, self.buffers, self.own.clone());
        out.set_grid(&self.whole);
        Ok(())
    }

    fn import_state(&mut self, mut state: ParticleState) -> Result<(), String> {
        let want = self.buffers.and(BufferSet::conserved());
        state.prepare_import(want, &self.whole)?;
        let n = state.len();
        let mut a = ParticleArrays::with_buffers(n, self.buffers.without(BufferSet::conserved()));
        a.take_from(&mut state.into_arrays(), want);
        self.a = a;
        self.search.list.invalidate();
        self.inner_done = false;
        self.own = 0..n;
        self.edges = [0..0, 0..0];
        self.mdbc_range = 0..0;
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
        let own = self.own.clone();
        Ok(self.pool.install(|| {
            own.into_par_iter()
                .filter(|&i| a.info[i][1] == Kind::Fluid as u32)
                .map(|i| grid.absolute(a.cell[i], a.pos[i]))
                .filter(|x| x[vert] < below)
                .map(|x| x[axis])
                .reduce_with(f64::max)
        }))
    }

    fn boundary_loads(&mut self, ids: &[Range<u32>], out: &mut Vec<ParticleLoad>) -> Result<(), String> {
        let CpuBackend { case, consts, grid, whole, a, cell_start, pool, own, .. } = self;
        *out = pool.install(|| loads::boundary_loads(case, consts, grid, whole, cell_start, a, own.clone(), ids, None));
        Ok(())
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
