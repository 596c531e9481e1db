//! The step plan driven over one backend: what a smart worker does between exchanges.

use std::fmt;
use surge_core::backend::{Backend, BadParticle, ForceStats, Snapshot};
use surge_core::grid::Grid;
use surge_core::step::{plan, time_step, Stage};
use surge_core::Case;

/// A run that blew up: which step, when, which particle.
#[derive(Debug, Clone, PartialEq)]
pub struct Diverged {
    /// Step number (0-based) during which it was found.
    pub step: u64,
    /// Simulated time at the start of that step.
    pub time: f64,
    /// The particle.
    pub particle: BadParticle,
}

impl fmt::Display for Diverged {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let p = &self.particle.pos;
        write!(
            f,
            "the run diverged at step {} (t = {:.6} s): particle {} at ({:.4}, {:.4}, {:.4}) {}",
            self.step, self.time, self.particle.id, p[0], p[1], p[2], self.particle.reason
        )
    }
}

impl std::error::Error for Diverged {}

/// A case running on one backend.
pub struct Simulation {
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
    pub fn new(case: Case, backend: Box<dyn Backend>) -> Result<Simulation, String> {
        let half_skin = 0.5 * Grid::new(&case, case.split_axis())?.skin;
        Ok(Simulation {
            case,
            backend,
            time: 0.0,
            step: 0,
            dt: 0.0,
            half_skin,
            drift: 0.0,
            last_disp: 0.0,
            rebuilds: 0,
        })
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
    pub fn snapshot(&mut self) -> Snapshot {
        let mut s = Snapshot::default();
        self.backend.snapshot(&mut s);
        s
    }

    /// Evaluate the gauges now.
    pub fn gauges(&mut self) -> Vec<f64> {
        let mut g = Vec::new();
        self.backend.gauges(&mut g);
        g
    }

    /// One step of the plan, its dt shortened so the time does not pass `limit`.
    ///
    /// Sequence: rebuild when some particle may have moved half the skin since the last
    /// rebuild (the largest displacement of this step counted twice as a margin for the
    /// next one; NaN forces a rebuild, which reports the particle); then the stages of
    /// [`plan`]: force passes, the time step from the first pass, updates.
    pub fn step(&mut self, limit: f64) -> Result<(), Diverged> {
        let fail = |s: &Simulation, particle| Diverged { step: s.step, time: s.time, particle };
        if !(self.drift + 2.0 * self.last_disp <= self.half_skin) {
            self.backend.rebuild().map_err(|p| fail(self, p))?;
            self.drift = 0.0;
            self.rebuilds += 1;
        }
        let mut stats = ForceStats::default();
        let mut dt = 0.0;
        let mut disp = 0.0;
        for stage in plan(&self.case, self.step) {
            match *stage {
                Stage::Forces => stats = self.backend.forces(),
                Stage::ReduceDt => {
                    dt = time_step(&self.case, &stats);
                    let left = limit - self.time;
                    // Land on `limit` exactly, without leaving a sliver step after it.
                    if dt >= left * 0.99 {
                        dt = left;
                    }
                }
                Stage::Update(u) => {
                    let s = self.backend.update(u, dt);
                    if let Some(p) = s.bad {
                        return Err(fail(self, p));
                    }
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
    pub fn advance_to(&mut self, t: f64) -> Result<(), Diverged> {
        while self.time < t {
            self.step(t)?;
        }
        Ok(())
    }
}
