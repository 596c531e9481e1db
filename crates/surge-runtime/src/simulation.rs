//! A case running on its devices: one driven on the calling thread, or several smart
//! workers on threads of their own ([`crate::team`]), behind one interface.

use crate::cluster::{Cluster, Single};
use crate::exchange::Solo;
use crate::team::{Loader, Team};
use crate::worker::{DeviceError, DeviceReport, DeviceTimes, Worker};
use std::fmt;
use std::sync::Arc;
use surge_core::backend::{Backend, Failure, Snapshot, LEFT_DOMAIN};
use surge_core::bodies::{BodyFrame, BodyState};
use surge_core::buffers::ParticleState;
use surge_core::decomp::SliceMap;
use surge_core::gauge;
use surge_core::grid::Grid;
#[allow(unused_imports)]
use surge_core::step::plan;
use surge_core::Case;

/// A step that failed: which step, when, and why (a particle that blew up, or the device).
#[derive(Debug, Clone, PartialEq)]
pub struct StepError {
    /// Step number (0-based) during which it was found.
    pub step: u64,
    /// Simulated time at the start of that step.
    pub time: f64,
    /// What failed.
    pub failure: Failure,
}

impl StepError {
    /// True when the physics diverged or the fluid left the domain (rather than the device
    /// failing).
    pub fn diverged(&self) -> bool {
        matches!(self.failure, Failure::Particle(_) | Failure::Leaving { .. } | Failure::StepCollapsed { .. })
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = match &self.failure {
            // A solid carried out of the domain by its motion (Simulation::error) is no
            // divergence of the flow.
            Failure::Particle(p) if p.solid.is_some() => "the run stopped",
            Failure::Particle(_) | Failure::StepCollapsed { .. } => "the run diverged",
            Failure::Leaving { .. } => "the run stopped",
            Failure::Device(_) => "the device failed",
        };
        write!(f, "{what} at step {} (t = {:.6} s): {}", self.step, self.time, self.failure)
    }
}

impl std::error::Error for StepError {}

/// Everything of a [`Simulation`] besides its particles that decides how it goes on: the
/// clock, the step number (the Verlet plan depends on its parity with the Euler period) and
/// the rebuild bookkeeping (the next rebuild, hence the neighbour order, depends on it).
/// With the particles in storage order, this is what a checkpoint must hold for a restart
/// to continue bitwise.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct StepState {
    /// Steps done.
    pub step: u64,
    /// Simulated time.
    pub time: f64,
    /// The last time step.
    pub dt: f64,
    /// Upper bound of any particle's displacement since the last rebuild.
    pub drift: f64,
    /// Largest displacement during the last step.
    pub last_disp: f64,
    /// Rebuilds done.
    pub rebuilds: u64,
    /// Fluid particles removed so far because they left the domain or `domain.density_range`
    /// (over every device).
    pub removed: u64,
    /// Open boundaries (issue 15): particles the inlets made so far.
    pub spawned: u64,
    /// Particles that flowed out through the outlets (or back into an inlet) so far.
    pub outflow: u64,
    /// The floating bodies' states (issue 15), in case order.
    pub bodies: Vec<BodyState>,
}

impl StepState {
    /// The state at t = 0 of a case: its bodies at rest where the geometry put them (with
    /// their initial velocities), `frames` from [`surge_core::geometry::body_frames`].
    pub fn start(case: &Case, frames: &[BodyFrame]) -> StepState {
        let bodies = case.bodies.iter().zip(frames).map(|(b, f)| BodyState::start(b, f)).collect();
        StepState { bodies, ..StepState::default() }
    }
}

/// Wall seconds spent in each stage since the start (backends finish their work before a
/// stage returns, so host clocks measure device stages too). With several devices, each
/// stage's largest time over the devices.
#[derive(Debug, Clone, Copy, Default, PartialEq, serde::Serialize)]
pub struct StageTimes {
    /// Re-key and sort.
    pub rebuild: f64,
    /// Force passes.
    pub forces: f64,
    /// Updates (integration).
    pub update: f64,
}

impl StageTimes {
    /// Total of the stages.
    pub fn total(&self) -> f64 {
        self.rebuild + self.forces + self.update
    }
}

/// A case running on one device or several: the smart workers and the clock they share.
pub struct Simulation {
    case: Case,
    /// The ranks of the run (one without MPI).
    cluster: Arc<dyn Cluster>,
    /// The clock (the same on every device).
    clock: StepState,
    devices: Devices,
}

enum Devices {
    /// One device, driven on the calling thread.
    Solo(Box<Worker>),
    /// Several, each on its own worker thread.
    Team(Team),
}

impl Simulation {
    /// Start at t = 0 with one backend that holds the filled (and sorted) particles.
    pub fn new(case: Case, backend: Box<dyn Backend>) -> Simulation {
        let map = SliceMap::single(backend.grid().layers(), surge_core::decomp::halo(&case, backend.grid()));
        let worker = Worker::new(&case, backend, Box::new(Solo), map);
        Simulation {
            clock: worker.clock.clone(),
            case,
            cluster: Arc::new(Single),
            devices: Devices::Solo(Box::new(worker)),
        }
    }

    /// The ranks of the run.
    pub fn cluster(&self) -> &Arc<dyn Cluster> {
        &self.cluster
    }

    /// Start at t = 0 on several devices, each worker thread loading its particles with its
    /// entry of `loaders` (device d owns the slice `map.owned(d)`), then the first rebuild
    /// brings the copies. Fails with the first device (in device order) that could not load.
    pub fn team(case: Case, map: SliceMap, grid: Grid, loaders: Vec<Loader>) -> Result<Simulation, String> {
        Simulation::ranks(case, map, grid, loaders, Arc::new(Single))
    }

    /// As [`Simulation::team`] for this rank's devices of an MPI run: `map` covers every
    /// rank's devices (rank-major), `loaders` load this rank's.
    pub fn ranks(
        case: Case,
        map: SliceMap,
        grid: Grid,
        loaders: Vec<Loader>,
        cluster: Arc<dyn Cluster>,
    ) -> Result<Simulation, String> {
        let team = Team::start(&case, map, grid, loaders, cluster.clone())?;
        let clock = StepState::start(&case, &surge_core::geometry::body_frames(&case));
        Ok(Simulation { case, clock, cluster, devices: Devices::Team(team) })
    }

    /// Time spent in each stage so far (each stage's largest over the devices).
    pub fn stage_times(&self) -> StageTimes {
        let reports = self.reports();
        let max = |f: fn(&DeviceTimes) -> f64| reports.iter().map(|r| f(&r.times)).fold(0.0, f64::max);
        StageTimes { rebuild: max(|t| t.rebuild), forces: max(|t| t.forces), update: max(|t| t.update) }
    }

    /// What each device reports: slice, particles, times, boundary moves, removals for density.
    pub fn reports(&self) -> Vec<DeviceReport> {
        match &self.devices {
            Devices::Solo(w) => vec![w.report()],
            Devices::Team(t) => t.reports(),
        }
    }

    /// Number of devices.
    pub fn device_count(&self) -> usize {
        match &self.devices {
            Devices::Solo(_) => 1,
            Devices::Team(t) => t.handles.len(),
        }
    }

    /// Particles owned over all devices.
    pub fn particles(&self) -> u64 {
        self.reports().iter().map(|r| r.particles).sum()
    }

    /// The backends' names, one per device (`cuda:0 (...) ×4` style joins are the caller's).
    pub fn backend_names(&self) -> Vec<String> {
        self.reports().into_iter().map(|r| r.name).collect()
    }

    /// The backend's name; with several devices, their count and names; under MPI, the
    /// ranks and this rank's devices.
    pub fn backend_name(&self) -> String {
        let names = self.backend_names();
        let here = match names.as_slice() {
            [one] => one.clone(),
            _ if names.iter().all(|n| n.starts_with("cpu")) => format!("{} x {}", names.len(), names[0]),
            _ => format!("{} devices: {}", names.len(), names.join(", ")),
        };
        match self.cluster.size() {
            1 => here,
            r => format!("{r} ranks, rank {}: {here}", self.cluster.rank()),
        }
    }

    /// Device memory per particle held now (the largest over the devices).
    pub fn bytes_per_particle(&self) -> usize {
        match &self.devices {
            Devices::Solo(w) => w.backend.bytes_per_particle(),
            // The figure at load, or more since (a CPU worker's Verlet list).
            Devices::Team(t) => t.reports().iter().map(|r| r.bytes_per_particle).fold(t.bytes_per_particle, usize::max),
        }
    }

    /// The case.
    pub fn case(&self) -> &Case {
        &self.case
    }
    /// Simulated time.
    pub fn time(&self) -> f64 {
        self.clock.time
    }
    /// Steps done.
    pub fn steps(&self) -> u64 {
        self.clock.step
    }
    /// The last time step.
    pub fn dt(&self) -> f64 {
        self.clock.dt
    }
    /// Rebuilds done (re-key and sort).
    pub fn rebuilds(&self) -> u64 {
        self.clock.rebuilds
    }
    /// Fluid particles removed so far because they left the domain or `domain.density_range`.
    pub fn removed(&self) -> u64 {
        self.clock.removed
    }

    /// Open boundaries (issue 15): the particles the inlets made so far, and those that
    /// flowed out through the outlets (or back into an inlet).
    pub fn open_counts(&self) -> [u64; 2] {
        [self.clock.spawned, self.clock.outflow]
    }

    fn error(&self, e: DeviceError) -> StepError {
        let mut failure = e.unwrap_or_else(|| Failure::Device("a device's worker stopped".into()));
        // A solid's particle out of the domain: its motion (or a floating body's) took it
        // there, which the user fixes with the domain, not the physics.
        if let Failure::Particle(p) = &mut failure {
            if p.reason == LEFT_DOMAIN {
                p.solid = moving_solid_of(&self.case, p.id);
            }
        }
        StepError { step: self.clock.step, time: self.clock.time, failure }
    }

    /// Copy the owned particles of every device to the host (device order).
    pub fn snapshot(&mut self) -> Result<Snapshot, StepError> {
        let r = match &mut self.devices {
            Devices::Solo(w) => {
                let mut s = Snapshot::default();
                w.backend.snapshot(&mut s).map(|_| s)
            }
            Devices::Team(t) => t.snapshot(),
        };
        r.map_err(|f| self.error(Some(f)))
    }

    /// The clock and the rebuild bookkeeping, for a checkpoint.
    pub fn step_state(&self) -> StepState {
        self.clock.clone()
    }

    /// The floating bodies' states now, in case order.
    pub fn bodies(&self) -> &[BodyState] {
        &self.clock.bodies
    }

    /// Copy the conserved particle state of every device (device order, so sorted by
    /// cell key along the split axis), for a checkpoint.
    pub fn export_particles(&mut self, out: &mut ParticleState) -> Result<(), StepError> {
        let r = match &mut self.devices {
            Devices::Solo(w) => w.backend.export_state(out),
            Devices::Team(t) => t.export(out),
        };
        r.map_err(|f| self.error(Some(f)))
    }

    /// Continue from a checkpoint: the devices take the particles as they were stored (no
    /// re-key, so neighbour order and rebuild times are those of the run that wrote it) and
    /// the clock and rebuild bookkeeping are set back. Any backend, device and thread count
    /// may take a state that any other exported: the slices are drawn anew from the stored
    /// particles.
    pub fn restore(&mut self, state: StepState, particles: ParticleState) -> Result<(), String> {
        match &mut self.devices {
            Devices::Solo(w) => {
                w.backend.import_state(particles)?;
                w.set_clock(state.clone());
                w.rebuild(false).map_err(|e| e.map_or("a device failed".to_string(), |f| f.to_string()))?;
            }
            Devices::Team(t) => t.import(state.clone(), particles)?,
        }
        self.clock = state;
        Ok(())
    }

    /// Evaluate the gauges now.
    pub fn gauges(&mut self) -> Result<Vec<f64>, StepError> {
        let mut g = Vec::new();
        let case = self.case.clone();
        let r = match &mut self.devices {
            Devices::Solo(w) => gauge::evaluate(&case, w.backend.as_mut(), &mut g),
            Devices::Team(t) => gauge::evaluate(&case, t, &mut g),
        };
        r.map_err(|m| self.error(Some(Failure::Device(m))))?;
        Ok(g)
    }

    /// One step of the plan on every device, its dt shortened so the time does not pass
    /// `limit`.
    ///
    /// Sequence: rebuild when some particle may have moved half the skin since the last
    /// rebuild (the largest displacement of this step counted twice as a margin for the
    /// next one; NaN forces a rebuild, which reports the particle); then the stages of
    /// [`plan`]: force passes (edges first, their values to the neighbours while the inner
    /// particles are computed), the time step reduced over the devices from the first
    /// pass, updates; then the step's largest displacement reduced over the devices.
    pub fn step(&mut self, limit: f64) -> Result<(), StepError> {
        let r = match &mut self.devices {
            Devices::Solo(w) => w.step(limit).map(|_| w.clock.clone()),
            Devices::Team(t) => t.step(limit),
        };
        match r {
            Ok(c) => {
                self.clock = c;
                Ok(())
            }
            Err(e) => Err(self.error(e)),
        }
    }

    /// Step until the time reaches `t`.
    pub fn advance_to(&mut self, t: f64) -> Result<(), StepError> {
        while self.clock.time < t {
            self.step(t)?;
        }
        Ok(())
    }
}

/// The case file's name of the moving solid (prescribed motion or floating body) that holds
/// the particle of global id `id`, if one does.
fn moving_solid_of(case: &Case, id: u32) -> Option<String> {
    case.motions
        .iter()
        .map(|m| m.solid)
        .chain(case.bodies.iter().map(|b| b.solid))
        .find(|&s| surge_core::geometry::solid_ids(case, s).contains(&id))
        .map(|s| case.solid_label(s))
}
