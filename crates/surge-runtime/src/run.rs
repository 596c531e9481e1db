//! The manager and its smart worker: the worker thread runs the simulation and hands
//! snapshots, gauge rows and checkpoint states to the manager (the calling thread), which
//! writes the files while the worker computes on.
//!
//! Checkpoints go the same way as frames: the worker copies the conserved particle state off
//! the device at the end of a step and sends it; the manager writes the file. The worker
//! never waits on the disk (beyond the channel's two messages in flight), and every file of
//! a run is written by one thread.

use crate::checkpoints::{self, RestartFrom};
use crate::simulation::{Simulation, StepError};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{mpsc, Arc};
use std::time::{Duration, Instant};
use surge_core::backend::{Failure, Snapshot};
use surge_core::buffers::{Kind, ParticleState};
use surge_core::Case;
use surge_io::{write_summary, DeviceSummary, FrameWriter, GaugeWriter, Summary};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output directory.
    pub out_dir: PathBuf,
    /// Stop after this many steps in all, counted from t = 0 (benchmarks, smoke tests);
    /// `None`: run to the end time.
    pub max_steps: Option<u64>,
    /// Wall time between progress reports.
    pub progress_every: Duration,
    /// Set (by a signal handler) to stop: the worker writes a checkpoint at the end of the
    /// current step and the run ends with status `interrupted`.
    pub stop: Arc<AtomicBool>,
    /// Continue from a checkpoint instead of starting at t = 0: frames, gauge rows and
    /// checkpoints after it are dropped, the series continue.
    pub restart: Option<RestartFrom>,
}

impl RunOptions {
    /// Run to the end time from t = 0 into `out_dir`, progress every 250 ms, no stop flag
    /// set.
    pub fn new(out_dir: PathBuf) -> RunOptions {
        RunOptions {
            out_dir,
            max_steps: None,
            progress_every: Duration::from_millis(250),
            stop: Arc::new(AtomicBool::new(false)),
            restart: None,
        }
    }
}

/// Progress of a run, as reported to the [`Observer`].
#[derive(Debug, Clone, Copy)]
pub struct Progress {
    /// Steps done.
    pub step: u64,
    /// Simulated time.
    pub time: f64,
    /// End time.
    pub end: f64,
    /// Last time step.
    pub dt: f64,
    /// Wall seconds since the first step.
    pub wall: f64,
    /// Steps per wall second so far.
    pub steps_per_second: f64,
    /// Fluid particles removed so far because they left the domain or `domain.density_range`.
    pub removed: u64,
    /// Particles the inlets made and those that flowed out through the outlets so far.
    pub open: [u64; 2],
}

/// What the manager reports while it runs (progress bar, logs).
pub trait Observer {
    /// Periodic progress.
    fn progress(&mut self, p: &Progress);
    /// A frame was written.
    fn frame(&mut self, index: u32, time: f64, files: &[PathBuf]);
}

/// Why a run did not complete.
#[derive(Debug)]
pub enum RunError {
    /// The run did not start: the checkpoint to restart from was refused, or the output
    /// it would continue does not fit this case. Nothing was written.
    Restart(String),
    /// An output file could not be written.
    Io(std::io::Error),
    /// The physics blew up; the diagnosis frame was written, and for a collapsed time step
    /// where this rank's state went wrong ([`Snapshot::collapse_diagnosis`]).
    Diverged(StepError, Vec<PathBuf>, Option<String>),
    /// The worker thread failed unexpectedly.
    Worker(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Restart(m) => write!(f, "cannot restart: {m}"),
            RunError::Io(e) => write!(f, "{e}"),
            RunError::Diverged(d, files, note) => {
                write!(f, "{d}")?;
                if let Some(n) = note {
                    write!(f, "; {n}")?;
                }
                write!(f, "; frames written so far are kept")?;
                if let Some(p) = files.first() {
                    write!(f, ", the state at failure is in {}", p.display())?;
                }
                Ok(())
            }
            RunError::Worker(m) => write!(f, "internal error in the worker thread: {m}"),
        }
    }
}

impl std::error::Error for RunError {}

impl From<std::io::Error> for RunError {
    fn from(e: std::io::Error) -> Self {
        RunError::Io(e)
    }
}

enum Msg {
    Frame {
        index: u32,
        time: f64,
        snap: Snapshot,
        /// Fluid particles over every rank (frame 0 only).
        fluid: Option<u64>,
        /// Fluid particles removed so far.
        removed: u64,
    },
    Gauges {
        time: f64,
        values: Vec<f64>,
    },
    /// The floating bodies' row of `bodies.csv`.
    Bodies {
        time: f64,
        values: Vec<f64>,
    },
    Progress(Progress),
    /// The state to write as a checkpoint; `wall` counts from t = 0 over the whole chain.
    Checkpoint {
        state: crate::simulation::StepState,
        next_frame: u32,
        wall: f64,
        particles: Box<ParticleState>,
        /// This rank's devices: (device, layers, particles).
        slices: Vec<(usize, (i32, i32), u64)>,
    },
    /// A step failed; the state at failure when the device could still give it.
    Failed {
        error: StepError,
        snap: Option<Snapshot>,
        steps: u64,
        wall: f64,
    },
    /// The stop flag was seen; the checkpoint was sent just before.
    Interrupted {
        steps: u64,
        time: f64,
        wall: f64,
        bytes_per_particle: usize,
    },
    Done {
        steps: u64,
        time: f64,
        wall: f64,
        bytes_per_particle: usize,
    },
}

/// Where the worker starts: t = 0, or a checkpoint.
#[derive(Debug, Clone, Copy, Default)]
struct Start {
    restarted: bool,
    step: u64,
    next_frame: u32,
    /// Wall seconds of the runs before this one.
    wall: f64,
}

/// Run a case to its end time (or `max_steps`), writing frames, gauges, checkpoints and the
/// summary into `opts.out_dir`. Returns the summary, also when the run diverged (then with
/// the error); a run stopped by `opts.stop` returns its summary with status
/// [`Summary::INTERRUPTED`].
///
/// With `opts.restart`, the checkpoint is found and checked, and the particles loaded,
/// before anything in the output directory is touched: a refused restart
/// ([`RunError::Restart`]) leaves it as it was.
pub fn run(
    case: &Case,
    mut sim: Simulation,
    threads: u32,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Summary, (RunError, Option<Summary>)> {
    let not_started = |m: String| (RunError::Restart(m), None);
    let cluster = sim.cluster().clone();
    let (rank, ranks) = (cluster.rank(), cluster.size());
    let root = rank == 0;
    let mut total = [sim.particles() as f64];
    cluster.sum(&mut total);
    let restart = match &opts.restart {
        Some(from) => Some(checkpoints::find_restart(&opts.out_dir, from, case).map_err(not_started)?),
        None => None,
    };
    let mut summary = Summary {
        case: case.name.clone(),
        particles: total[0] as u64,
        bytes_per_particle: sim.bytes_per_particle() as u64,
        backend: sim.backend_name(),
        workers: (sim.device_count() * ranks) as u32,
        ranks: ranks as u32,
        threads,
        end_time: case.end_time,
        ..Summary::default()
    };
    let mut start = Start::default();
    if let Some(r) = restart {
        let h = &r.checkpoint.header;
        start = Start { restarted: true, step: h.step, next_frame: h.next_frame, wall: h.wall_seconds };
        let info = &r.checkpoint.particles.arrays().info;
        summary.particles = info.len() as u64;
        summary.fluid_particles = info.iter().filter(|i| i[1] == Kind::Fluid as u32).count() as u64;
        summary.boundary_particles = summary.particles - summary.fluid_particles;
        summary.frames = h.next_frame as u64;
        summary.restarted_from = Some(r.path.display().to_string());
        summary.removed_particles = h.removed;
        (summary.inlet_particles, summary.outlet_particles) = (h.spawned, h.outflow);
        let state = r.step_state();
        sim.restore(state.clone(), r.checkpoint.particles)
            .map_err(|e| not_started(format!("{}: {e}", r.path.display())))?;
        tracing::info!(
            "restart from {} at t = {} s (step {}), {} frames so far",
            r.path.display(),
            state.time,
            state.step,
            start.next_frame
        );
    }

    // Only now is the output directory touched.
    let mut frames = FrameWriter::create(&opts.out_dir, &case.name, case.dim, &case.formats)
        .map_err(|e| (e.into(), None))?
        .with_piece(rank, ranks);
    // The gauges' columns, then the count of fluid particles removed so far.
    // With open boundaries, the particles the inlets made and those that flowed out so far.
    let open: &[&str] = if case.open.is_empty() { &[] } else { &["inflow", "outflow"] };
    let names: Vec<String> = surge_core::gauge::columns(case)
        .into_iter()
        .chain(["removed".into()])
        .chain(open.iter().map(|s| s.to_string()))
        .collect();
    let gauge_path = opts.out_dir.join("gauges.csv");
    // Every rank evaluates the gauges (a collective); rank 0 writes them.
    let mut gauges = match (case.gauges.is_empty() || !root, start.restarted && gauge_path.exists()) {
        (true, _) => None,
        (false, true) => Some(GaugeWriter::resume(&gauge_path, &names, sim.time()).map_err(|e| {
            if e.kind() == std::io::ErrorKind::InvalidData {
                not_started(format!("{e}; move it away to continue with other gauges"))
            } else {
                (e.into(), None)
            }
        })?),
        (false, false) => Some(GaugeWriter::create(&gauge_path, &names).map_err(|e| (e.into(), None))?),
    };
    // The floating bodies' states at the gauge times; rank 0 writes them (every rank has
    // them all).
    let body_names = surge_core::bodies::columns(&case.bodies, case.dim);
    let body_path = opts.out_dir.join("bodies.csv");
    let mut bodies = match (case.bodies.is_empty() || !root, start.restarted && body_path.exists()) {
        (true, _) => None,
        (false, true) => Some(GaugeWriter::resume(&body_path, &body_names, sim.time()).map_err(|e| (e.into(), None))?),
        (false, false) => Some(GaugeWriter::create(&body_path, &body_names).map_err(|e| (e.into(), None))?),
    };
    if start.restarted {
        frames.resume(sim.time()).map_err(|e| (e.into(), None))?;
    }
    let ckpt_dir = checkpoints::checkpoint_dir(&opts.out_dir);
    let dropped = if root {
        checkpoints::remove_after(&ckpt_dir, start.restarted.then_some(start.step)).map_err(|e| (e.into(), None))?
    } else {
        0
    };
    if dropped > 0 {
        // Visible even with --quiet: a run from t = 0 into a folder of an earlier chain ends it.
        tracing::warn!(
            "removed {dropped} checkpoint(s) of {} after this run's start ({})",
            ckpt_dir.display(),
            if start.restarted { "an abandoned future" } else { "a run from t = 0 starts a new series" }
        );
    }

    // Bounded: at most two frames in flight, so a slow disk throttles the worker instead of
    // filling memory.
    let (tx, rx) = mpsc::sync_channel::<Msg>(2);
    let opts2 = opts.clone();
    let worker = std::thread::Builder::new()
        .name("surge-worker-0".into())
        .spawn(move || {
            worker_loop(&mut sim, &opts2, start, &tx);
            sim.reports()
        })
        .map_err(|e| (RunError::Worker(e.to_string()), None))?;

    // Speed of this run only, `(particle-steps/s, ms/step)`: a restarted run did not take the
    // earlier steps.
    let speed = |particles: u64, steps: u64, wall: f64| match steps.saturating_sub(start.step) {
        0 => (0.0, 0.0),
        _ if wall <= 0.0 => (0.0, 0.0),
        n => (particles as f64 * n as f64 / wall, 1e3 * wall / n as f64),
    };
    let mut run_wall = 0.0;
    let mut failure: Option<RunError> = None;
    for msg in rx {
        let r: Result<(), RunError> = (|| {
            match msg {
                Msg::Frame { index, time, snap, fluid, removed } => {
                    if let Some(f) = fluid {
                        summary.fluid_particles = f;
                        summary.boundary_particles = summary.particles - summary.fluid_particles;
                    }
                    if removed > summary.removed_particles && root {
                        tracing::info!(
                            "frame {index} at t = {time:.4} s: {removed} fluid particles removed so far (they left the \
                             domain or domain.density_range)"
                        );
                    }
                    summary.removed_particles = removed;
                    let files = frames.write_frame(index, time, &snap)?;
                    summary.frames += 1;
                    obs.frame(index, time, &files);
                }
                Msg::Gauges { time, values } => {
                    if let Some(g) = gauges.as_mut() {
                        g.write_row(time, &values)?;
                    }
                }
                Msg::Bodies { time, values } => {
                    if let Some(b) = bodies.as_mut() {
                        b.write_row(time, &values)?;
                    }
                }
                Msg::Progress(p) => {
                    summary.removed_particles = p.removed;
                    (summary.inlet_particles, summary.outlet_particles) = (p.open[0], p.open[1]);
                    obs.progress(&p)
                }
                Msg::Checkpoint { state, next_frame, wall, particles, slices } => {
                    let time = state.time;
                    let header =
                        checkpoints::header(case, state, next_frame, wall, &particles, (rank, ranks), &slices)?;
                    let path = checkpoints::write(&ckpt_dir, &header, &particles, case.checkpoint_keep)?;
                    tracing::debug!("checkpoint at t = {} s: {}", time, path.display());
                    summary.checkpoint = Some(path.display().to_string());
                }
                Msg::Failed { error, snap, steps, wall } => {
                    summary.steps = steps;
                    summary.sim_time = error.time;
                    summary.wall_seconds = start.wall + wall;
                    let files = match &snap {
                        Some(snap) => frames.write_frame(summary.frames as u32, error.time, snap)?,
                        None => Vec::new(),
                    };
                    summary.status = if error.diverged() { Summary::DIVERGED } else { Summary::FAILED }.into();
                    let note = match (&error.failure, &snap) {
                        (Failure::StepCollapsed { .. }, Some(snap)) => snap.collapse_diagnosis(case.dp, case.rho0),
                        _ => None,
                    };
                    summary.message =
                        Some(note.as_ref().map_or_else(|| error.to_string(), |n| format!("{error}; {n}")));
                    return Err(RunError::Diverged(error, files, note));
                }
                Msg::Interrupted { steps, time, wall, bytes_per_particle } => {
                    summary.bytes_per_particle = summary.bytes_per_particle.max(bytes_per_particle as u64);
                    summary.steps = steps;
                    summary.sim_time = time;
                    summary.wall_seconds = start.wall + wall;
                    (summary.particle_steps_per_second, summary.ms_per_step) = speed(summary.particles, steps, wall);
                    run_wall = wall;
                    summary.status = Summary::INTERRUPTED.into();
                    summary.message = Some(format!(
                        "stopped by a signal at t = {time} s (step {steps}); {} continues the run with \
                         `--restart latest`",
                        summary.checkpoint.as_deref().unwrap_or("the checkpoint")
                    ));
                }
                Msg::Done { steps, time, wall, bytes_per_particle } => {
                    summary.bytes_per_particle = summary.bytes_per_particle.max(bytes_per_particle as u64);
                    summary.steps = steps;
                    summary.sim_time = time;
                    summary.wall_seconds = start.wall + wall;
                    (summary.particle_steps_per_second, summary.ms_per_step) = speed(summary.particles, steps, wall);
                    run_wall = wall;
                    if summary.status.is_empty() {
                        summary.status = Summary::COMPLETED.into();
                    }
                }
            }
            Ok(())
        })();
        if let Err(e) = r {
            failure = Some(e);
            break;
        }
    }
    if failure.is_some() {
        // The receiver is dropped when this function returns; the worker stops at its next send.
        drop(worker);
    } else {
        match worker.join() {
            Ok(reports) => {
                let mine: Vec<DeviceSummary> = reports.iter().map(device_summary).collect();
                if let Some(all) = gather_devices(cluster.as_ref(), &mine) {
                    summary.devices = all;
                }
                if run_wall > 0.0 {
                    let most = summary.devices.iter().map(|d| d.rebuild_seconds).fold(0.0, f64::max);
                    summary.rebuild_share = most / run_wall;
                }
            }
            Err(p) => {
                let m = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
                failure = Some(RunError::Worker(m.unwrap_or_else(|| "panic".into())));
            }
        }
    }
    if let Some(RunError::Io(_)) | Some(RunError::Worker(_)) = &failure {
        summary.status = Summary::FAILED.into();
        summary.message = failure.as_ref().map(|e| e.to_string());
    }
    let written = if root { write_summary(&opts.out_dir.join("summary.json"), &summary) } else { Ok(()) };
    match (failure, written) {
        (Some(e), _) => Err((e, Some(summary))),
        (None, Err(e)) => Err((e.into(), Some(summary))),
        (None, Ok(())) => Ok(summary),
    }
}

/// A device's figures since the start.
pub(crate) fn device_summary(r: &crate::DeviceReport) -> DeviceSummary {
    DeviceSummary {
        device: r.device as u32,
        backend: r.name.clone(),
        particles: r.particles,
        slice: [r.slice.0, r.slice.1],
        force_seconds: r.times.forces,
        rebuild_seconds: r.times.rebuild,
        update_seconds: r.times.update,
        exchange_seconds: r.times.exchange,
        exposed_exchange_seconds: r.times.exposed,
        reduce_seconds: r.times.reduce,
        boundary_moves: r.moves,
        removed_for_density: r.removed_for_density,
    }
}

/// Every rank's devices at rank 0, in rank order (`None` on the other ranks; a collective).
pub(crate) fn gather_devices(
    cluster: &dyn crate::cluster::Cluster,
    mine: &[DeviceSummary],
) -> Option<Vec<DeviceSummary>> {
    let bytes = serde_json::to_vec(mine).unwrap_or_default();
    let all = cluster.gather_bytes(bytes)?;
    Some(all.iter().flat_map(|b| serde_json::from_slice::<Vec<DeviceSummary>>(b).unwrap_or_default()).collect())
}

/// Event times on a fixed grid `k * interval`, robust to rounding.
struct Schedule {
    interval: f64,
    next: u64,
}

impl Schedule {
    /// The schedule from t = 0: the first event is at t = 0.
    fn from_zero(interval: f64) -> Schedule {
        Schedule { interval, next: 0 }
    }
    /// The schedule whose events up to `t` are past: what a run that reached `t` has left.
    /// Depends on `t` and the interval only, so a restart continues the same schedule, and
    /// an interval changed on restart takes effect at once.
    fn past(interval: f64, t: f64) -> Schedule {
        let mut s = Schedule { interval, next: ((t / interval).floor() as u64).saturating_sub(1) };
        s.skip_past(t);
        s
    }
    fn time(&self) -> f64 {
        self.next as f64 * self.interval
    }
    fn due(&self, t: f64) -> bool {
        t >= self.time() - 1e-9 * self.interval
    }
    fn skip_past(&mut self, t: f64) {
        while self.due(t) {
            self.next += 1;
        }
    }
}

/// The time loop of the worker. At each step's end, in this order: gauge row, frame,
/// checkpoint (when due, at the end of the run when checkpoints are on, or when the stop
/// flag is set), then done or stopped. Nothing shortens a step: each is written at the first
/// step end at or after its time, with that step's time, so writing them (at any interval)
/// does not change the run, and a run stopped at its end continues as if it never stopped.
fn worker_loop(sim: &mut Simulation, opts: &RunOptions, start: Start, tx: &mpsc::SyncSender<Msg>) {
    let end = sim.case().end_time;
    let t0 = sim.time();
    let schedule = |interval: f64| {
        if start.restarted {
            Schedule::past(interval, t0)
        } else {
            Schedule::from_zero(interval)
        }
    };
    let mut frame = schedule(sim.case().output_interval);
    let mut gauge = schedule(sim.case().gauge_interval);
    let mut checkpoint = sim.case().checkpoint_interval.map(|i| Schedule::past(i, t0));
    let mut frame_index = start.next_frame;
    let clock = Instant::now();
    let mut last_report = clock;
    let send = |m: Msg| tx.send(m).is_ok();
    // A failed stage ends the run: report it with the state at failure, if there is one.
    let failed = |sim: &mut Simulation, error: StepError| {
        let (steps, wall) = (sim.steps(), clock.elapsed().as_secs_f64());
        send(Msg::Failed { error, snap: sim.snapshot().ok(), steps, wall });
    };
    loop {
        let t = sim.time();
        if gauge.due(t) && !sim.case().gauges.is_empty() {
            let values = match sim.gauges() {
                Ok(v) => v,
                Err(e) => return failed(sim, e),
            };
            let mut values = values;
            values.push(sim.removed() as f64);
            if !sim.case().open.is_empty() {
                values.extend(sim.open_counts().map(|c| c as f64));
            }
            if !send(Msg::Gauges { time: t, values }) {
                return;
            }
        }
        if gauge.due(t) && !sim.case().bodies.is_empty() {
            let mut values = Vec::new();
            surge_core::bodies::values(sim.bodies(), sim.case().dim, &mut values);
            if !send(Msg::Bodies { time: t, values }) {
                return;
            }
        }
        gauge.skip_past(t);
        if frame.due(t) {
            let snap = match sim.snapshot() {
                Ok(s) => s,
                Err(e) => return failed(sim, e),
            };
            let fluid = (frame_index == start.next_frame).then(|| {
                let mut f = [snap.kind.iter().filter(|&&k| k == Kind::Fluid as u8).count() as f64];
                sim.cluster().sum(&mut f);
                f[0] as u64
            });
            if !send(Msg::Frame { index: frame_index, time: t, snap, fluid, removed: sim.removed() }) {
                return;
            }
            frame_index += 1;
            frame.skip_past(t);
        }
        let done = t >= end || opts.max_steps.is_some_and(|m| sim.steps() >= m);
        // A signal may reach one rank only: every rank stops when any has it.
        let mut stop = [opts.stop.load(Ordering::Relaxed) as u8 as f64];
        if sim.cluster().size() > 1 {
            sim.cluster().max(&mut stop);
        }
        let stop = stop[0] > 0.0;
        let due = checkpoint.as_ref().is_some_and(|c| c.due(t));
        if stop || due || (done && checkpoint.is_some()) {
            if let Some(c) = checkpoint.as_mut() {
                c.skip_past(t);
            }
            let mut particles = Box::<ParticleState>::default();
            if let Err(e) = sim.export_particles(&mut particles) {
                return failed(sim, e);
            }
            let wall = start.wall + clock.elapsed().as_secs_f64();
            let slices = sim.reports().iter().map(|r| (r.device, r.slice, r.particles)).collect();
            if !send(Msg::Checkpoint { state: sim.step_state(), next_frame: frame_index, wall, particles, slices }) {
                return;
            }
        }
        let now = Instant::now();
        if done || stop || now - last_report >= opts.progress_every {
            last_report = now;
            let wall = (now - clock).as_secs_f64();
            let p = Progress {
                step: sim.steps(),
                time: t,
                end,
                dt: sim.dt(),
                wall,
                steps_per_second: if wall > 0.0 { (sim.steps() - start.step) as f64 / wall } else { 0.0 },
                removed: sim.removed(),
                open: sim.open_counts(),
            };
            if !send(Msg::Progress(p)) {
                return;
            }
        }
        let wall = clock.elapsed().as_secs_f64();
        if done {
            send(Msg::Done { steps: sim.steps(), time: t, wall, bytes_per_particle: sim.bytes_per_particle() });
            return;
        }
        if stop {
            send(Msg::Interrupted { steps: sim.steps(), time: t, wall, bytes_per_particle: sim.bytes_per_particle() });
            return;
        }
        // Nothing shortens a step: frames and gauges read the state at the first step end at
        // or after their times, so sampling never changes the run (docs/ARCHITECTURE.md,
        // "Sampling"); the last step may pass the end time.
        if let Err(error) = sim.step(f64::INFINITY) {
            return failed(sim, error);
        }
    }
}

/// Default output directory of a case: `out/<case name>`.
pub fn default_out_dir(case: &Case) -> PathBuf {
    Path::new("out").join(&case.name)
}
