//! The manager and its smart worker: the worker thread runs the simulation and hands
//! snapshots and gauge rows to the manager (the calling thread), which writes the files
//! while the worker computes on.

use crate::simulation::{Diverged, Simulation};
use std::path::{Path, PathBuf};
use std::sync::mpsc;
use std::time::{Duration, Instant};
use surge_core::backend::{Backend, Snapshot};
use surge_core::buffers::Kind;
use surge_core::Case;
use surge_io::{write_summary, FrameWriter, GaugeWriter, Summary};

/// How to run.
#[derive(Debug, Clone)]
pub struct RunOptions {
    /// Output directory.
    pub out_dir: PathBuf,
    /// Stop after this many steps (benchmarks, smoke tests); `None`: run to the end time.
    pub max_steps: Option<u64>,
    /// Wall time between progress reports.
    pub progress_every: Duration,
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
    /// An output file could not be written.
    Io(std::io::Error),
    /// The physics blew up; the diagnosis frame was written.
    Diverged(Diverged, Vec<PathBuf>),
    /// The worker thread failed unexpectedly.
    Worker(String),
}

impl std::fmt::Display for RunError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RunError::Io(e) => write!(f, "{e}"),
            RunError::Diverged(d, files) => {
                write!(f, "{d}; frames written so far are kept")?;
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
    Frame { index: u32, time: f64, snap: Snapshot },
    Gauges { time: f64, values: Vec<f64> },
    Progress(Progress),
    Failed { error: Diverged, snap: Snapshot, steps: u64, wall: f64 },
    Done { steps: u64, time: f64, wall: f64 },
}

/// Run a case to its end time (or `max_steps`), writing frames, gauges and the summary into
/// `opts.out_dir`. Returns the summary, also when the run diverged (then with the error).
pub fn run(
    case: &Case,
    backend: Box<dyn Backend>,
    workers: u32,
    threads: u32,
    opts: &RunOptions,
    obs: &mut dyn Observer,
) -> Result<Summary, (RunError, Option<Summary>)> {
    let mut frames =
        FrameWriter::create(&opts.out_dir, &case.name, case.dim, &case.formats).map_err(|e| (e.into(), None))?;
    let names: Vec<String> = case.gauges.iter().map(|g| g.name().to_string()).collect();
    let mut gauges = if names.is_empty() {
        None
    } else {
        Some(GaugeWriter::create(&opts.out_dir.join("gauges.csv"), &names).map_err(|e| (e.into(), None))?)
    };
    let mut summary = Summary {
        case: case.name.clone(),
        particles: backend.len() as u64,
        bytes_per_particle: backend.bytes_per_particle() as u64,
        backend: backend.name(),
        workers,
        threads,
        end_time: case.end_time,
        ..Summary::default()
    };
    let sim = Simulation::new(case.clone(), backend).map_err(|e| (RunError::Worker(e), None))?;
    // Bounded: at most two frames in flight, so a slow disk throttles the worker instead of
    // filling memory.
    let (tx, rx) = mpsc::sync_channel::<Msg>(2);
    let opts2 = opts.clone();
    let worker = std::thread::Builder::new()
        .name("surge-worker-0".into())
        .spawn(move || worker_loop(sim, &opts2, &tx))
        .map_err(|e| (RunError::Worker(e.to_string()), None))?;

    let mut failure: Option<RunError> = None;
    for msg in rx {
        let r: Result<(), RunError> = (|| {
            match msg {
                Msg::Frame { index, time, snap } => {
                    if index == 0 {
                        summary.fluid_particles = snap.kind.iter().filter(|&&k| k == Kind::Fluid as u8).count() as u64;
                        summary.boundary_particles = summary.particles - summary.fluid_particles;
                    }
                    let files = frames.write_frame(index, time, &snap)?;
                    summary.frames += 1;
                    obs.frame(index, time, &files);
                }
                Msg::Gauges { time, values } => {
                    if let Some(g) = gauges.as_mut() {
                        g.write_row(time, &values)?;
                    }
                }
                Msg::Progress(p) => obs.progress(&p),
                Msg::Failed { error, snap, steps, wall } => {
                    summary.steps = steps;
                    summary.sim_time = error.time;
                    summary.wall_seconds = wall;
                    let files = frames.write_frame(summary.frames as u32, error.time, &snap)?;
                    summary.status = "diverged".into();
                    summary.message = Some(error.to_string());
                    return Err(RunError::Diverged(error, files));
                }
                Msg::Done { steps, time, wall } => {
                    summary.steps = steps;
                    summary.sim_time = time;
                    summary.wall_seconds = wall;
                    summary.particle_steps_per_second =
                        if wall > 0.0 { summary.particles as f64 * steps as f64 / wall } else { 0.0 };
                    if summary.status.is_empty() {
                        summary.status = "completed".into();
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
    } else if let Err(p) = worker.join() {
        let m = p.downcast_ref::<String>().cloned().or_else(|| p.downcast_ref::<&str>().map(|s| s.to_string()));
        failure = Some(RunError::Worker(m.unwrap_or_else(|| "panic".into())));
    }
    if let Some(RunError::Io(_)) | Some(RunError::Worker(_)) = &failure {
        summary.status = "failed".into();
        summary.message = failure.as_ref().map(|e| e.to_string());
    }
    let written = write_summary(&opts.out_dir.join("summary.json"), &summary);
    match (failure, written) {
        (Some(e), _) => Err((e, Some(summary))),
        (None, Err(e)) => Err((e.into(), Some(summary))),
        (None, Ok(())) => Ok(summary),
    }
}

/// Event times on a fixed grid `k * interval`, robust to rounding.
struct Schedule {
    interval: f64,
    next: u64,
}

impl Schedule {
    fn time(&self) -> f64 {
        self.next as f64 * self.interval
    }
    fn due(&self, t: f64) -> bool {
        t >= self.time() - 1e-9 * self.interval
    }
}

fn worker_loop(mut sim: Simulation, opts: &RunOptions, tx: &mpsc::SyncSender<Msg>) {
    let end = sim.case().end_time;
    let mut frame = Schedule { interval: sim.case().output_interval, next: 0 };
    let mut gauge = Schedule { interval: sim.case().gauge_interval, next: 0 };
    let mut frame_index = 0u32;
    let start = Instant::now();
    let mut last_report = start;
    let send = |m: Msg| tx.send(m).is_ok();
    loop {
        let t = sim.time();
        if gauge.due(t) && !sim.case().gauges.is_empty() {
            if !send(Msg::Gauges { time: t, values: sim.gauges() }) {
                return;
            }
        }
        while gauge.due(t) {
            gauge.next += 1;
        }
        if frame.due(t) {
            if !send(Msg::Frame { index: frame_index, time: t, snap: sim.snapshot() }) {
                return;
            }
            frame_index += 1;
            while frame.due(t) {
                frame.next += 1;
            }
        }
        let done = t >= end || opts.max_steps.is_some_and(|m| sim.steps() >= m);
        let now = Instant::now();
        if done || now - last_report >= opts.progress_every {
            last_report = now;
            let wall = (now - start).as_secs_f64();
            let p = Progress {
                step: sim.steps(),
                time: t,
                end,
                dt: sim.dt(),
                wall,
                steps_per_second: if wall > 0.0 { sim.steps() as f64 / wall } else { 0.0 },
            };
            if !send(Msg::Progress(p)) {
                return;
            }
        }
        if done {
            let wall = start.elapsed().as_secs_f64();
            send(Msg::Done { steps: sim.steps(), time: t, wall });
            return;
        }
        let limit = end.min(frame.time()).min(if sim.case().gauges.is_empty() { end } else { gauge.time() });
        if let Err(error) = sim.step(limit) {
            let (steps, wall) = (sim.steps(), start.elapsed().as_secs_f64());
            send(Msg::Failed { error, snap: sim.snapshot(), steps, wall });
            return;
        }
    }
}

/// Default output directory of a case: `out/<case name>`.
pub fn default_out_dir(case: &Case) -> PathBuf {
    Path::new("out").join(&case.name)
}
