//! surge-runtime: the manager and the smart workers. A worker runs the step plan over a
//! backend and meets the other devices through an exchange ([`worker`], [`exchange`]); a
//! [`Simulation`] drives one device on the calling thread or several on threads of their own
//! ([`team`]); the manager ([`run`]) writes what it hands over (frames, gauge rows,
//! checkpoints) and the run summary.
#![warn(missing_docs)]

mod bench;
mod checkpoints;
pub mod cluster;
mod device;
pub mod exchange;
pub mod memory;
mod run;
mod simulation;
pub mod team;
pub mod worker;

pub use bench::{bench, develop, develop_cache, BenchResult, WARM_UP_STEPS};
pub use checkpoints::{checkpoint_dir, find_restart, Restart, RestartFrom};
pub use device::{
    census_cut, cuda_unavailable, fill_layers, gpu_share, load, simulation, simulation_on, stream_to_gpu,
    BackendChoice, Chosen, DeviceRequest, Gpus, Loaded, SLAB_PARTICLES,
};
pub use run::{default_out_dir, run, Observer, Progress, RunError, RunOptions};
pub use simulation::{Simulation, StageTimes, StepError, StepState};
pub use worker::{DeviceReport, DeviceTimes};

use surge_core::Case;

/// Fill a case and load it on a CPU backend with `threads` threads (0: all cores).
pub fn cpu_simulation(case: &Case, threads: usize) -> Result<Simulation, String> {
    simulation(case, &DeviceRequest::one(BackendChoice::Cpu, threads)).map(|l| l.sim)
}
