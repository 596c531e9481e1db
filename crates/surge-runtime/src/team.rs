//! Several devices in one process: one smart worker thread per device, commanded by the
//! thread that owns the [`crate::Simulation`]. The workers step on their own between
//! commands and meet each other only through their [`crate::exchange::Local`] links.

use crate::cluster::Cluster;
use crate::exchange::{self, Exchange};
use crate::simulation::StepState;
use crate::worker::{DeviceError, DeviceReport, Worker};
use std::ops::Range;
use std::sync::mpsc::{channel, Receiver, Sender};
use std::sync::Arc;
use std::thread::JoinHandle;
use surge_core::backend::{Backend, Failure, Snapshot};
use surge_core::buffers::ParticleState;
use surge_core::decomp::SliceMap;
use surge_core::gauge::{Interpolate, ParticleLoad};
use surge_core::grid::Grid;
use surge_core::Case;

/// Loads one device's particles, on that device's worker thread (a GPU context then
/// belongs to the thread that uses it).
pub type Loader = Box<dyn FnOnce() -> Result<Box<dyn Backend>, String> + Send>;

enum Cmd {
    Step(f64),
    Snapshot,
    Sums(Vec<[f64; 3]>),
    Front(usize, f64),
    Loads(Vec<Range<u32>>),
    Export,
    Import(StepState, ParticleState, SliceMap),
    Report,
}

enum Reply {
    Ready(Result<(usize, String), String>),
    Stepped(Result<StepState, DeviceError>),
    Snapshot(Result<Snapshot, Failure>),
    Sums(Result<Vec<(f64, f64)>, String>),
    Front(Result<Option<f64>, String>),
    Loads(Result<Vec<ParticleLoad>, String>),
    Export(Result<ParticleState, Failure>),
    Import(Result<(), String>),
    Report(DeviceReport),
}

pub(crate) struct Handle {
    tx: Sender<Cmd>,
    rx: Receiver<Reply>,
    thread: Option<JoinHandle<()>>,
}

/// The worker threads of one process.
pub(crate) struct Team {
    pub handles: Vec<Handle>,
    /// The whole grid of the backends.
    grid: Grid,
    /// The slice map as of the last report (gauge points go to their owner).
    map: SliceMap,
    pub bytes_per_particle: usize,
    /// The ranks; this rank's devices are `first..first + handles.len()`.
    cluster: Arc<dyn Cluster>,
    first: usize,
}

fn serve(mut w: Worker, rx: Receiver<Cmd>, tx: Sender<Reply>) {
    for cmd in rx {
        let reply = match cmd {
            Cmd::Step(limit) => Reply::Stepped(w.step(limit).map(|_| w.clock.clone())),
            Cmd::Snapshot => {
                let mut s = Snapshot::default();
                Reply::Snapshot(w.backend.snapshot(&mut s).map(|_| s))
            }
            Cmd::Sums(xs) => {
                let mut out = Vec::new();
                Reply::Sums(w.backend.fluid_sums(&xs, &mut out).map(|_| out))
            }
            Cmd::Front(axis, below) => Reply::Front(w.backend.fluid_front(axis, below)),
            Cmd::Loads(ids) => {
                let mut out = Vec::new();
                Reply::Loads(w.backend.boundary_loads(&ids, &mut out).map(|_| out))
            }
            Cmd::Export => {
                let mut s = ParticleState::default();
                Reply::Export(w.backend.export_state(&mut s).map(|_| s))
            }
            Cmd::Import(clock, particles, map) => Reply::Import((|| {
                w.backend.import_state(particles)?;
                w.set_clock(clock);
                w.map = map;
                w.rebuild(false).map_err(|e| e.map_or("another device failed".to_string(), |f| f.to_string()))
            })()),
            Cmd::Report => Reply::Report(w.report()),
        };
        if tx.send(reply).is_err() {
            return;
        }
    }
}

impl Team {
    /// Start a worker per loader; each loads its device, then all take part in the first
    /// rebuild (which brings the copies).
    pub fn start(
        case: &Case,
        map: SliceMap,
        grid: Grid,
        loaders: Vec<Loader>,
        cluster: Arc<dyn Cluster>,
    ) -> Result<Team, String> {
        let halo = surge_core::decomp::halo(case, &grid);
        if map.halo < halo {
            return Err(format!("the slice map's halo is {} cell layers, the case needs {halo}", map.halo));
        }
        let first = cluster.rank() * loaders.len();
        let links = exchange::links(cluster.clone(), loaders.len());
        let mut handles = Vec::new();
        for ((i, loader), link) in loaders.into_iter().enumerate().zip(links) {
            let d = first + i;
            let (ctx, crx) = channel::<Cmd>();
            let (rtx, rrx) = channel::<Reply>();
            let (case, map) = (case.clone(), map.clone());
            let thread = std::thread::Builder::new()
                .name(format!("surge-device-{d}"))
                .spawn(move || {
                    let backend = match loader() {
                        Ok(b) => b,
                        Err(e) => {
                            let _ = rtx.send(Reply::Ready(Err(e)));
                            return;
                        }
                    };
                    let bpp = backend.bytes_per_particle();
                    let mut w = Worker::new(&case, backend, Box::new(link) as Box<dyn Exchange>, map);
                    let ready = w
                        .rebuild(true)
                        .map(|_| (bpp, w.backend.name()))
                        .map_err(|e| e.map_or("another device failed to load".to_string(), |f| f.to_string()));
                    let ok = ready.is_ok();
                    if rtx.send(Reply::Ready(ready)).is_ok() && ok {
                        serve(w, crx, rtx);
                    }
                })
                .map_err(|e| format!("cannot start the worker thread of device {d}: {e}"))?;
            handles.push(Handle { tx: ctx, rx: rrx, thread: Some(thread) });
        }
        let mut team = Team { handles, grid, map, bytes_per_particle: 0, cluster, first };
        // A device that failed to load makes the others fail too: report the first that did
        // not merely notice another's failure.
        let mut errors = Vec::new();
        for (i, h) in team.handles.iter().enumerate() {
            let d = first + i;
            match h.rx.recv() {
                Ok(Reply::Ready(Ok((bpp, _)))) => team.bytes_per_particle = team.bytes_per_particle.max(bpp),
                Ok(Reply::Ready(Err(e))) => errors.push((e.starts_with("another device"), format!("device {d}: {e}"))),
                _ => errors.push((true, format!("device {d}: its worker stopped while loading"))),
            }
        }
        if let Some((_, e)) = errors.iter().find(|e| !e.0).or(errors.first()) {
            return Err(e.clone());
        }
        for r in team.reports() {
            tracing::debug!(
                "device {}: {}, cell layers {}..{} of {} along {}, {} particles",
                r.device,
                r.name,
                r.slice.0,
                r.slice.1,
                team.map.layers(),
                ["x", "y", "z"][team.grid.split_axis()],
                r.particles
            );
        }
        Ok(team)
    }

    /// Send a command to every device and collect the replies in device order. A worker
    /// that is gone answers `None`.
    fn all(&self, cmd: impl Fn(usize) -> Cmd) -> Vec<Option<Reply>> {
        for (d, h) in self.handles.iter().enumerate() {
            let _ = h.tx.send(cmd(d));
        }
        self.handles.iter().map(|h| h.rx.recv().ok()).collect()
    }

    pub fn reports(&self) -> Vec<DeviceReport> {
        self.all(|_| Cmd::Report)
            .into_iter()
            .filter_map(|r| match r {
                Some(Reply::Report(r)) => Some(r),
                _ => None,
            })
            .collect()
    }

    pub fn step(&mut self, limit: f64) -> Result<StepState, DeviceError> {
        let replies = self.all(|_| Cmd::Step(limit));
        let mut clock = None;
        let mut error: Option<DeviceError> = None;
        for r in replies {
            match r {
                Some(Reply::Stepped(Ok(c))) => clock = clock.or(Some(c)),
                Some(Reply::Stepped(Err(Some(f)))) => {
                    if !matches!(error, Some(Some(_))) {
                        error = Some(Some(f));
                    }
                }
                _ => error = error.or(Some(None)),
            }
        }
        match (error, clock) {
            (None, Some(c)) => Ok(c),
            (Some(e), _) => Err(e),
            (None, None) => Err(None),
        }
    }

    /// The slice map as the devices have it now (every rank's devices; a collective).
    fn refresh_map(&mut self) {
        let reports = self.reports();
        let lo: Vec<f64> = reports.iter().map(|r| r.slice.0 as f64).collect();
        let all = self.cluster.all_gather(&lo);
        if all.len() + 1 == self.map.bounds.len() {
            let mut bounds: Vec<i32> = all.iter().map(|&l| l as i32).collect();
            bounds.push(self.map.layers());
            self.map.bounds = bounds;
        }
    }

    pub fn snapshot(&mut self) -> Result<Snapshot, Failure> {
        let mut out = Snapshot::default();
        for r in self.all(|_| Cmd::Snapshot) {
            match r {
                Some(Reply::Snapshot(Ok(mut s))) => out.append(&mut s),
                Some(Reply::Snapshot(Err(f))) => return Err(f),
                _ => return Err(Failure::Device("a device's worker stopped".into())),
            }
        }
        Ok(out)
    }

    pub fn export(&mut self, out: &mut ParticleState) -> Result<(), Failure> {
        let mut whole: Option<ParticleState> = None;
        for r in self.all(|_| Cmd::Export) {
            match r {
                Some(Reply::Export(Ok(s))) => match whole.as_mut() {
                    None => whole = Some(s),
                    Some(w) => w.append(s).map_err(Failure::Device)?,
                },
                Some(Reply::Export(Err(f))) => return Err(f),
                _ => return Err(Failure::Device("a device's worker stopped".into())),
            }
        }
        *out = whole.unwrap_or_default();
        Ok(())
    }

    /// Give every device its part of a whole state: slices drawn anew so each holds about
    /// the same number of particles, then a rebuild without re-keying brings the copies.
    pub fn import(&mut self, clock: StepState, mut particles: ParticleState) -> Result<(), String> {
        particles.relocate(&self.grid)?;
        particles.validate(&self.grid)?;
        let axis = self.grid.split_axis();
        let a = particles.arrays();
        let weights = surge_core::decomp::layer_weights(
            self.grid.layers(),
            a.cell.iter().zip(&a.info).map(|(c, i)| (c[axis], i[1])),
        );
        let (k, first) = (self.handles.len(), self.first);
        let map = SliceMap::balanced(&weights, k * self.cluster.size(), self.map.halo)?;
        let cells = &particles.arrays().cell;
        // This rank's devices take theirs; the others' particles go to a part left unused.
        let mut parts = particles
            .split(k + 1, |i| {
                let d = map.owner(cells[i][axis]);
                if d >= first && d < first + k {
                    d - first
                } else {
                    k
                }
            })
            .into_iter();
        let parts: Vec<ParticleState> = (0..k).map(|_| parts.next().unwrap_or_default()).collect();
        let parts = std::sync::Mutex::new(parts.into_iter().map(Some).collect::<Vec<_>>());
        let replies = self.all(|d| {
            let p = parts.lock().expect("parts")[d].take().unwrap_or_default();
            Cmd::Import(clock.clone(), p, map.clone())
        });
        for (d, r) in replies.into_iter().enumerate() {
            let d = first + d;
            match r {
                Some(Reply::Import(Ok(()))) => {}
                Some(Reply::Import(Err(e))) => return Err(format!("device {d}: {e}")),
                _ => return Err(format!("device {d}: its worker stopped")),
            }
        }
        self.map = map;
        Ok(())
    }

    /// The device owning the layer of a point.
    fn owner_of(&self, x: [f64; 3]) -> usize {
        let (c, _) = self.grid.locate(x);
        self.map.owner(c[self.grid.split_axis()])
    }
}

impl Interpolate for Team {
    /// Each point is summed by the device owning its layer (which holds every particle within
    /// the support: its own and the copies), so the sums are those of one device.
    fn fluid_sums(&mut self, xs: &[[f64; 3]], out: &mut Vec<(f64, f64)>) -> Result<(), String> {
        // The load balancer may have moved boundaries since the last look.
        self.refresh_map();
        let owner: Vec<usize> = xs.iter().map(|&x| self.owner_of(x)).collect();
        let first = self.first;
        let replies =
            self.all(|i| Cmd::Sums(xs.iter().zip(&owner).filter(|(_, &o)| o == first + i).map(|(x, _)| *x).collect()));
        let mut per: Vec<std::vec::IntoIter<(f64, f64)>> = Vec::new();
        for r in replies {
            match r {
                Some(Reply::Sums(Ok(v))) => per.push(v.into_iter()),
                Some(Reply::Sums(Err(e))) => return Err(e),
                _ => return Err("a device's worker stopped".into()),
            }
        }
        // Points of other ranks' devices count 0 here; the sum over ranks adds exact zeros.
        let mut flat = Vec::with_capacity(2 * xs.len());
        for o in owner {
            let (w, pw) = match o.checked_sub(first).filter(|&i| i < per.len()) {
                Some(i) => per[i].next().ok_or("a device returned too few gauge sums")?,
                None => (0.0, 0.0),
            };
            flat.extend([w, pw]);
        }
        self.cluster.sum(&mut flat);
        out.clear();
        out.extend(flat.chunks_exact(2).map(|c| (c[0], c[1])));
        Ok(())
    }

    fn fluid_front(&mut self, axis: usize, below: f64) -> Result<Option<f64>, String> {
        let mut best: Option<f64> = None;
        for r in self.all(|_| Cmd::Front(axis, below)) {
            match r {
                Some(Reply::Front(Ok(v))) => {
                    best = match (best, v) {
                        (Some(a), Some(b)) => Some(a.max(b)),
                        (a, b) => a.or(b),
                    }
                }
                Some(Reply::Front(Err(e))) => return Err(e),
                _ => return Err("a device's worker stopped".into()),
            }
        }
        let mut v = [best.unwrap_or(f64::NEG_INFINITY)];
        self.cluster.max(&mut v);
        Ok((v[0] > f64::NEG_INFINITY).then_some(v[0]))
    }

    /// Every device's loads, then every rank's (gathered to all ranks, exactly: ids,
    /// positions and float32 forces all fit f64), so every rank holds every particle's load
    /// and [`surge_core::gauge::evaluate`] sums them in id order, as one device would.
    fn boundary_loads(&mut self, ids: &[Range<u32>], out: &mut Vec<ParticleLoad>) -> Result<(), String> {
        out.clear();
        for r in self.all(|_| Cmd::Loads(ids.to_vec())) {
            match r {
                Some(Reply::Loads(Ok(mut v))) => out.append(&mut v),
                Some(Reply::Loads(Err(e))) => return Err(e),
                _ => return Err("a device's worker stopped".into()),
            }
        }
        if self.cluster.size() == 1 {
            return Ok(());
        }
        // A collective needs the same length on every rank: pad to the longest.
        const WORDS: usize = 7;
        let counts = self.cluster.all_gather(&[out.len() as f64]);
        let longest = counts.iter().fold(0.0f64, |a, &b| a.max(b)) as usize;
        let mut mine = vec![0.0f64; WORDS * longest];
        for (l, w) in out.iter().zip(mine.chunks_exact_mut(WORDS)) {
            let f = l.force.map(f64::from);
            w.copy_from_slice(&[l.id as f64, l.pos[0], l.pos[1], l.pos[2], f[0], f[1], f[2]]);
        }
        let all = self.cluster.all_gather(&mine);
        out.clear();
        for (rank, &count) in counts.iter().enumerate() {
            let words = &all[rank * WORDS * longest..][..WORDS * count as usize];
            out.extend(words.chunks_exact(WORDS).map(|w| ParticleLoad {
                id: w[0] as u32,
                pos: [w[1], w[2], w[3]],
                force: [w[4] as f32, w[5] as f32, w[6] as f32],
            }));
        }
        Ok(())
    }
}

impl Drop for Team {
    fn drop(&mut self) {
        for h in &mut self.handles {
            // Closing the command channel ends the worker's loop.
            let (tx, _) = channel();
            drop(std::mem::replace(&mut h.tx, tx));
        }
        for h in &mut self.handles {
            if let Some(t) = h.thread.take() {
                let _ = t.join();
            }
        }
    }
}
