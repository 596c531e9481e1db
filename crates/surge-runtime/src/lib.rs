//! surge-runtime: the manager and the smart workers. A worker runs the step plan over a
//! backend ([`Simulation`]); the manager ([`run`]) starts it, writes what it hands over
//! (frames, gauge rows, checkpoints) and the run summary.
#![warn(missing_docs)]

mod bench;
mod checkpoints;
mod device;
mod run;
mod simulation;

pub use bench::{bench, BenchResult, WARM_UP_STEPS};
pub use checkpoints::{checkpoint_dir, find_restart, Restart, RestartFrom};
pub use device::{cuda_unavailable, load, BackendChoice, Chosen, DeviceRequest};
pub use run::{default_out_dir, run, Observer, Progress, RunError, RunOptions};
pub use simulation::{Simulation, StageTimes, StepError, StepState};

use surge_core::geometry::fill;
use surge_core::Case;

/// Fill a case and load it on a CPU backend with `threads` threads (0: all cores).
pub fn cpu_simulation(case: &Case, threads: usize) -> Result<Simulation, String> {
    simulation(case, DeviceRequest { backend: BackendChoice::Cpu, threads, gpu: 0 }).map(|(s, _)| s)
}

/// Fill a case and load it on the requested backend.
pub fn simulation(case: &Case, req: DeviceRequest) -> Result<(Simulation, String), String> {
    let chosen = load(case, &fill(case), req)?;
    Ok((Simulation::new(case.clone(), chosen.backend), chosen.note))
}
