//! The step plan driven over one backend: what a smart worker does between exchanges.

use std::fmt;
use std::time::Instant;
use surge_core::backend::{Backend, Failure, ForceStats, Snapshot};
use surge_core::buffers::ParticleState;
use surge_core::step::{plan, time_step, Stage};
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
    /// True when the physics diverged (rather than the device failing).
    pub fn diverged(&self) -> bool {
        matches!(self.failure, Failure::Particle(_))
    }
}

impl fmt::Display for StepError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let what = if self.diverged() { "the run diverged" } else { "the device failed" };
        write!(f, "{what} at step {} (t = {:.6} s): {}", self.step, self.time, self.failure)
    }
}

impl std::error::Error for StepError {}

/// Everything of a [`Simulation`] besides its particles that decides how it goes on: the
/// clock, the step number (the Verlet plan depends on its parity with the Euler period) and
/// the rebuild bookkeeping (the next rebuild, hence the neighbour order, depends on it).
/// With the particles in storage order, this is what a checkpoint must hold for a restart
/// to continue bitwise.
#[derive(Debug, Clone, Copy, PartialEq)]
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
}

/// Wall seconds spent in each stage since the start (backends finish their work before a
/// stage returns, so host clocks measure device stages too).
#[derive(Debug, Clone, Copy, Default, PartialEq)]
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

/// A case running on one backend.
pub struct Simulation {
    times: StageTimes,
    case: Case,
    backend: Box<dyn Backend>,
    time: f64,
    step: u64,
    dt: f64,
    /// Half the skin: neighbour lists hold while no particle has moved farther.
    half_skin: f64,
    /// Upper bound of any particle's displacement since the last rebuild.
    drift: f64,
    /// Largest displacement during the last step.
    last_disp: f64,
    rebuilds: u64,
}

impl Simulation {
    /// Start at t = 0 with a backend that holds the filled (and sorted) particles.
    pub fn new(case: Case, backend: Box<dyn Backend>) -> Simulation {
        let half_skin = 0.5 * backend.skin();
        Simulation {
            times: StageTimes::default(),
            case,
            backend,
            time: 0.0,
            step: 0,
            dt: 0.0,
            half_skin,
            drift: 0.0,
            last_disp: 0.0,
            rebuilds: 0,
        }
    }

    /// Time spent in each stage so far.
    pub fn stage_times(&self) -> StageTimes {
        self.times
    }

    /// The case.
    pub fn case(&self) -> &Case {
        &self.case
    }
    /// Simulated time.
    pub fn time(&self) -> f64 {
        self.time
    }
    /// Steps done.
    pub fn steps(&self) -> u64 {
        self.step
    }
    /// The last time step.
    pub fn dt(&self) -> f64 {
        self.dt
    }
    /// Rebuilds done (re-key and sort).
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }
    /// The backend.
    pub fn backend(&self) -> &dyn Backend {
        self.backend.as_ref()
    }

    /// Copy the particles to the host.
    pub fn snapshot(&mut self) -> Result<Snapshot, StepError> {
        let mut s = Snapshot::default();
        self.backend.snapshot(&mut s).map_err(|f| self.error(f))?;
        Ok(s)
    }

    fn error(&self, failure: Failure) -> StepError {
        StepError { step: self.step, time: self.time, failure }
    }

    /// The clock and the rebuild bookkeeping, for a checkpoint.
    pub fn step_state(&self) -> StepState {
        StepState {
            step: self.step,
            time: self.time,
            dt: self.dt,
            drift: self.drift,
            last_disp: self.last_disp,
            rebuilds: self.rebuilds,
        }
    }

    /// Copy the conserved particle state off the backend, for a checkpoint.
    pub fn export_particles(&mut self, out: &mut ParticleState) -> Result<(), StepError> {
        self.backend.export_state(out).map_err(|f| self.error(f))
    }

    /// Continue from a checkpoint: the backend takes the particles as they were stored (no
    /// re-key, so neighbour order and rebuild times are those of the run that wrote it) and
    /// the clock and rebuild bookkeeping are set back. Any backend and thread count may
    /// take a state that any other exported.
    pub fn restore(&mut self, state: StepState, particles: ParticleState) -> Result<(), String> {
        self.backend.import_state(particles)?;
        let StepState { step, time, dt, drift, last_disp, rebuilds } = state;
        (self.step, self.time, self.dt, self.drift, self.last_disp, self.rebuilds) =
            (step, time, dt, drift, last_disp, rebuilds);
        Ok(())
    }

    /// Evaluate the gauges now.
    pub fn gauges(&mut self) -> Result<Vec<f64>, StepError> {
        let mut g = Vec::new();
        self.backend.gauges(&mut g).map_err(|f| self.error(f))?;
        Ok(g)
    }

    /// One step of the plan, its dt shortened so the time does not pass `limit`.
    ///
    /// Sequence: rebuild when some particle may have moved half the skin since the last
    /// rebuild (the largest displacement of this step counted twice as a margin for the
    /// next one; NaN forces a rebuild, which reports the particle); then the stages of
    /// [`plan`]: force passes, the time step from the first pass, updates.
    pub fn step(&mut self, limit: f64) -> Result<(), StepError> {
        if !(self.drift + 2.0 * self.last_disp <= self.half_skin) {
            let t0 = Instant::now();
            self.backend.rebuild().map_err(|f| self.error(f))?;
            self.times.rebuild += t0.elapsed().as_secs_f64();
            self.drift = 0.0;
            self.rebuilds += 1;
        }
        let mut stats = ForceStats::default();
        let mut dt = 0.0;
        let mut disp = 0.0;
        for stage in plan(&self.case, self.step) {
            match *stage {
                Stage::Forces => {
                    let t0 = Instant::now();
                    stats = self.backend.forces().map_err(|f| self.error(f))?;
                    self.times.forces += t0.elapsed().as_secs_f64();
                }
                Stage::ReduceDt => {
                    dt = time_step(&self.case, &stats);
                    let left = limit - self.time;
                    // Land on `limit` exactly, without leaving a sliver step after it.
                    if dt >= left * 0.99 {
                        dt = left;
                    }
                }
                Stage::Update(u) => {
                    let t0 = Instant::now();
                    let s = self.backend.update(u, dt).map_err(|f| self.error(f))?;
                    self.times.update += t0.elapsed().as_secs_f64();
                    disp += s.disp_max as f64;
                }
            }
        }
        self.drift += disp;
        self.last_disp = disp;
        self.dt = dt;
        self.time = if dt == limit - self.time { limit } else { self.time + dt };
        self.step += 1;
        Ok(())
    }

    /// Step until the time reaches `t`.
    pub fn advance_to(&mut self, t: f64) -> Result<(), StepError> {
        while self.time < t {
            self.step(t)?;
        }
        Ok(())
    }
}
