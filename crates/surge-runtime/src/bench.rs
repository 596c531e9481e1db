//! Timing of whole steps on a case: what `surge bench` and `cargo bench` report.

use crate::checkpoints::{self, find_restart, RestartFrom};
use crate::simulation::StageTimes;
use crate::Simulation;
use std::path::{Path, PathBuf};
use std::time::Instant;
use surge_io::DeviceSummary;

/// Steps run before timing (sort settles, caches warm).
pub const WARM_UP_STEPS: u64 = 5;

/// One benchmark measurement.
#[derive(Debug, Clone, serde::Serialize)]
pub struct BenchResult {
    /// Case name.
    pub case: String,
    /// Backend name.
    pub backend: String,
    /// Particles.
    pub particles: usize,
    /// Timed steps.
    pub steps: u64,
    /// Wall seconds of the timed steps.
    pub seconds: f64,
    /// Device memory per particle.
    pub bytes_per_particle: usize,
    /// Seconds per stage over the timed steps.
    pub stages: StageTimes,
    /// Rebuilds during the timed steps.
    pub rebuilds: u64,
    /// Devices.
    pub devices: usize,
    /// Largest exchange seconds of a device over the timed steps.
    pub exchange: f64,
    /// Largest exposed (waited-on) exchange seconds of a device over the timed steps.
    pub exposed: f64,
    /// MPI ranks.
    pub ranks: usize,
    /// Milliseconds per step (derived, for readers of the JSON).
    pub ms_per_step: f64,
    /// Particle-steps per second (derived, for readers of the JSON).
    pub particle_steps_per_second: f64,
    /// Every device's figures over the timed steps (every rank's, in rank order; rank 0
    /// has them): where the time went, and how long each waited for the slowest
    /// (`reduce_seconds`).
    pub per_device: Vec<DeviceSummary>,
}

impl BenchResult {
    /// Milliseconds per step.
    pub fn ms_per_step(&self) -> f64 {
        1e3 * self.seconds / self.steps as f64
    }
    /// Particle-steps per second.
    pub fn particle_steps_per_second(&self) -> f64 {
        self.particles as f64 * self.steps as f64 / self.seconds
    }
    /// Header of [`BenchResult::row`].
    pub const HEADER: &'static str = "case           backend                particles   steps    ms/step  particle-st/s  bytes/p  forces  update  rebuild (rebuilds)  exposed";
    /// One table row: the stage columns are shares of the step time.
    pub fn row(&self) -> String {
        let share = |x: f64| format!("{:.0}%", 100.0 * x / self.seconds);
        format!(
            "{:<14} {:<20} {:>11} {:>7} {:>10.3} {:>14.4e} {:>8} {:>7} {:>7} {:>8} ({}) {:>8}",
            self.case,
            self.backend,
            self.particles,
            self.steps,
            self.ms_per_step(),
            self.particle_steps_per_second(),
            self.bytes_per_particle,
            share(self.stages.forces),
            share(self.stages.update),
            share(self.stages.rebuild),
            self.rebuilds,
            share(self.exposed)
        )
    }

    /// One line per device when there are several: particles, slice, and the shares of the
    /// step time each spent computing forces, rebuilding, updating, waiting on exchanges
    /// (exposed) and waiting for the slowest device (reductions).
    pub fn device_rows(&self) -> Vec<String> {
        if self.per_device.len() < 2 {
            return Vec::new();
        }
        let share = |x: f64| format!("{:.1}%", 100.0 * x / self.seconds);
        self.per_device
            .iter()
            .map(|d| {
                format!(
                    "  device {:<3} {:>11} particles  layers {:>5}..{:<5}  forces {:>6}  rebuild {:>5}  update {:>5}  \
                     exposed {:>5}  waiting {:>5}  moves {}",
                    d.device,
                    d.particles,
                    d.slice[0],
                    d.slice[1],
                    share(d.force_seconds),
                    share(d.rebuild_seconds),
                    share(d.update_seconds),
                    share(d.exposed_exchange_seconds),
                    share(d.reduce_seconds),
                    d.boundary_moves
                )
            })
            .collect()
    }
}

/// Run [`WARM_UP_STEPS`] steps, then time `steps` steps (no output, no gauges).
pub fn bench(mut sim: Simulation, steps: u64) -> Result<BenchResult, crate::StepError> {
    for _ in 0..WARM_UP_STEPS {
        sim.step(f64::INFINITY)?;
    }
    let (times0, rebuilds0, reports0) = (sim.stage_times(), sim.rebuilds(), sim.reports());
    let t0 = Instant::now();
    for _ in 0..steps {
        sim.step(f64::INFINITY)?;
    }
    let seconds = t0.elapsed().as_secs_f64();
    let t = sim.stage_times();
    let stages = StageTimes {
        rebuild: t.rebuild - times0.rebuild,
        forces: t.forces - times0.forces,
        update: t.update - times0.update,
    };
    let reports = sim.reports();
    let mut particles = [sim.particles() as f64];
    sim.cluster().sum(&mut particles);
    // Each device's figures over the timed steps.
    let timed: Vec<DeviceSummary> = reports
        .iter()
        .zip(&reports0)
        .map(|(r, r0)| {
            let r = crate::DeviceReport {
                times: r.times.since(&r0.times),
                moves: r.moves - r0.moves,
                removed_for_density: r.removed_for_density - r0.removed_for_density,
                ..r.clone()
            };
            crate::run::device_summary(&r)
        })
        .collect();
    let largest = |f: fn(&DeviceSummary) -> f64| timed.iter().map(f).fold(0.0, f64::max);
    let ranks = sim.cluster().size();
    let mut r = BenchResult {
        case: sim.case().name.clone(),
        backend: sim.backend_name(),
        particles: particles[0] as usize,
        steps,
        seconds,
        bytes_per_particle: sim.bytes_per_particle(),
        stages,
        rebuilds: sim.rebuilds() - rebuilds0,
        devices: reports.len() * sim.cluster().size(),
        exchange: largest(|d| d.exchange_seconds),
        exposed: largest(|d| d.exposed_exchange_seconds),
        ranks,
        ms_per_step: 0.0,
        particle_steps_per_second: 0.0,
        per_device: Vec::new(),
    };
    r.per_device = crate::run::gather_devices(sim.cluster().as_ref(), &timed).unwrap_or_default();
    // The slowest rank's figures: every rank steps in lockstep, so they agree to a few µs.
    let mut worst = [r.seconds, r.exchange, r.exposed];
    sim.cluster().max(&mut worst);
    [r.seconds, r.exchange, r.exposed] = worst;
    r.ms_per_step = r.ms_per_step();
    r.particle_steps_per_second = r.particle_steps_per_second();
    Ok(r)
}

/// Where [`develop`] keeps the checkpoint of `sim`'s case at `t`: `bench/NAME-HASH-tT/` in
/// surge's cache (`$SURGE_CACHE_DIR`, `$XDG_CACHE_HOME/surge` or `~/.cache/surge`), keyed by
/// the case's physics hash; `None` without a cache.
pub fn develop_cache(sim: &Simulation, t: f64) -> Option<PathBuf> {
    let case = sim.case();
    let key = format!("{}-{:016x}-t{t}", case.name, case.physics_hash());
    Some(surge_core::cache_base()?.join("bench").join(key))
}

/// Bring `sim` (at t = 0) to the developed flow at time `t`, so that a benchmark times what a
/// run spends its steps on, not the first steps at rest: from the checkpoint in `cache` when
/// one of this case at `t` is there, else by stepping to `t` (untimed) and writing one there
/// for the next time (one process only: ranks step every time). Returns how it got there,
/// for the log. A cached checkpoint that cannot be read (another surge version) is replaced.
pub fn develop(sim: &mut Simulation, t: f64, cache: Option<&Path>) -> Result<String, String> {
    let single = sim.cluster().size() == 1;
    if let Some(dir) = cache.filter(|_| single) {
        if checkpoints::checkpoint_dir(dir).is_dir() {
            match find_restart(dir, &RestartFrom::Latest, sim.case()) {
                Ok(r) if r.checkpoint.header.time == t => {
                    let state = r.step_state();
                    sim.restore(state, r.checkpoint.particles)?;
                    return Ok(format!("from the cached flow at t = {t} s ({})", r.path.display()));
                }
                Ok(_) => {}
                Err(e) => tracing::warn!("the cached developed flow is not usable ({e}); stepping to t = {t} s again"),
            }
        }
    }
    let clock = Instant::now();
    sim.advance_to(t).map_err(|e| e.to_string())?;
    let stepped = format!(
        "stepped to t = {t} s in {:.1} s ({} steps, untimed)",
        clock.elapsed().as_secs_f64(),
        sim.step_state().step
    );
    let Some(dir) = cache.filter(|_| single) else {
        return Ok(stepped);
    };
    let mut particles = surge_core::buffers::ParticleState::default();
    sim.export_particles(&mut particles).map_err(|e| e.to_string())?;
    let slices: Vec<_> = sim.reports().iter().map(|r| (r.device, r.slice, r.particles)).collect();
    let header = checkpoints::header(sim.case(), sim.step_state(), 0, 0.0, &particles, (0, 1), &slices)
        .map_err(|e| e.to_string())?;
    match checkpoints::write(&checkpoints::checkpoint_dir(dir), &header, &particles, 1) {
        Ok(path) => Ok(format!("{stepped}; cached in {}", path.display())),
        Err(e) => {
            tracing::warn!("cannot cache the developed flow: {e}");
            Ok(stepped)
        }
    }
}
