//! The smart worker: one device running the step plan itself over its backend, meeting the
//! other devices only at the halo exchanges and the reductions.
//!
//! Every device holds the same clock (step, time, dt, rebuild bookkeeping): it changes only
//! through reduced values, so all devices decide the same dt and rebuild at the same step.
//! A device that fails keeps taking part in every exchange (sending failure notices instead
//! of data) until the next reduction tells everyone, so no device waits forever.

use crate::exchange::{Exchange, Packet};
use crate::simulation::StepState;
use std::time::Instant;
use surge_core::backend::{Backend, DeviceBlock, Failure, ForceStats, Part};
use surge_core::buffers::ParticleState;
use surge_core::decomp::{Move, Side, SliceMap};
use surge_core::step::{plan, time_step, Stage};
use surge_core::Case;

/// Wall seconds a device spent, since the start.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DeviceTimes {
    /// Re-key, sort and the rebuild's particle exchange.
    pub rebuild: f64,
    /// Force computation (edges, inner, waiting for the device), exchange excluded.
    pub forces: f64,
    /// Updates.
    pub update: f64,
    /// Every exchange: edge forces out and in, particles at rebuilds.
    pub exchange: f64,
    /// The part of the force passes' exchange the device waited on: taking the edge values
    /// off the device, waiting for the neighbours' values, putting them on the copies.
    pub exposed: f64,
    /// Reductions (dt, displacement, balancing times), waiting for the slowest device.
    pub reduce: f64,
}

/// What a device reports about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct DeviceReport {
    /// Global device number.
    pub device: usize,
    /// Backend name.
    pub name: String,
    /// Particles owned.
    pub particles: u64,
    /// Layers owned `lo..hi`.
    pub slice: (i32, i32),
    /// Times.
    pub times: DeviceTimes,
    /// Boundary moves applied (all devices count all moves).
    pub moves: u64,
}

/// How a device's step ended badly: its own failure, or another device's (reported there).
pub(crate) type DeviceError = Option<Failure>;

/// One device and its links.
pub(crate) struct Worker {
    pub backend: Box<dyn Backend>,
    ex: Box<dyn Exchange>,
    case: Case,
    /// The slice map of the last rebuild.
    pub map: SliceMap,
    /// A map decided by the load balancer, applied at the next rebuild.
    pending: Option<SliceMap>,
    pub clock: StepState,
    half_skin: f64,
    pub times: DeviceTimes,
    /// Force seconds since the last balancing decision.
    window_forces: f64,
    pub moves: u64,
    /// This device failed: its failure, reported at the next reduction.
    failed: Option<Failure>,
    /// A neighbour sent a failure notice, or a link broke.
    peer_failed: bool,
    edge_buf: Vec<[f32; 4]>,
    /// Whether the exchanges stay on the devices ([`Packet::Device`]): None until the first
    /// rebuild decides it for the whole run ([`Worker::decide_links`]), then fixed.
    peer: Option<bool>,
    /// The sides whose neighbour is a device of another process (blocks go as bytes).
    remote: [bool; 2],
}

impl Worker {
    /// A device with its particles loaded and sorted under `map` (the backend's own
    /// rebuild); [`Worker::rebuild`] brings the copies.
    pub fn new(case: &Case, backend: Box<dyn Backend>, ex: Box<dyn Exchange>, map: SliceMap) -> Worker {
        let half_skin = 0.5 * backend.skin();
        Worker {
            backend,
            ex,
            case: case.clone(),
            map,
            pending: None,
            clock: StepState::default(),
            half_skin,
            times: DeviceTimes::default(),
            window_forces: 0.0,
            moves: 0,
            failed: None,
            peer_failed: false,
            edge_buf: Vec::new(),
            peer: None,
            remote: [false; 2],
        }
    }

    /// This device's number.
    pub fn me(&self) -> usize {
        self.ex.device()
    }

    fn broken(&self) -> bool {
        self.failed.is_some() || self.peer_failed
    }

    fn fail(&mut self, f: Failure) {
        if self.failed.is_none() {
            self.failed = Some(f);
        }
    }

    /// Run a backend call unless this device is already broken.
    fn call<T>(&mut self, f: impl FnOnce(&mut dyn Backend) -> Result<T, Failure>) -> Option<T> {
        if self.broken() {
            return None;
        }
        match f(self.backend.as_mut()) {
            Ok(v) => Some(v),
            Err(e) => {
                self.fail(e);
                None
            }
        }
    }

    /// The sides with a neighbour, as an owned iterator (no allocation, no borrow of self).
    fn neighbours(&self) -> std::iter::Flatten<std::array::IntoIter<Option<Side>, 2>> {
        let me = self.me();
        Side::BOTH.map(|s| self.map.neighbour(me, s).map(|_| s)).into_iter().flatten()
    }

    fn send(&mut self, side: Side, p: Packet) {
        if matches!(p, Packet::Device(DeviceBlock::Local(_))) && self.ex.remote(side) {
            self.fail(Failure::Device(format!(
                "{} gave a local device block for a neighbour on another rank",
                self.backend.name()
            )));
        }
        let p = if self.broken() { Packet::Failed } else { p };
        if self.ex.send(side, p).is_err() {
            self.peer_failed = true;
        }
    }

    fn recv(&mut self, side: Side) -> Option<Packet> {
        match self.ex.recv(side) {
            Ok(Packet::Failed) | Err(_) => {
                self.peer_failed = true;
                None
            }
            Ok(p) => Some(p),
        }
    }

    /// Reduce `v` (max) with a last element saying whether anyone is broken; `Err` when so.
    fn reduce(&mut self, v: &mut Vec<f64>) -> Result<(), DeviceError> {
        let t0 = Instant::now();
        v.push(if self.broken() { 1.0 } else { 0.0 });
        let r = self.ex.max(v);
        self.times.reduce += t0.elapsed().as_secs_f64();
        if r.is_err() {
            self.peer_failed = true;
        }
        if r.is_err() || v.pop() != Some(0.0) {
            return Err(self.failed.take());
        }
        Ok(())
    }

    /// A rebuild of every device: re-key (when `rekey`) under the newest map, exchange the
    /// particles with the neighbours, sort. The map takes effect on every device at once.
    pub fn rebuild(&mut self, rekey: bool) -> Result<(), DeviceError> {
        let t0 = Instant::now();
        let map = self.pending.take().unwrap_or_else(|| self.map.clone());
        let me = self.me();
        // Device to device when every link of the run allows it (decided once), else
        // through host states.
        self.decide_links()?;
        let mut blocks: [Option<Packet>; 2] = [None, None];
        if self.peer == Some(true) {
            let remote = self.remote;
            match self.call(|b| b.rebuild_begin_peer(&map, me, rekey, remote)) {
                Some(Some(out)) => blocks = out.map(|b| b.map(Packet::Device)),
                Some(None) => self.fail(Failure::Device(format!(
                    "{} offered its memory to its neighbours but gave no device blocks",
                    self.backend.name()
                ))),
                // Broken: the sends below are failure notices.
                None => {}
            }
        }
        if self.peer == Some(false) {
            let mut out = [ParticleState::default(), ParticleState::default()];
            self.call(|b| b.rebuild_begin(&map, me, rekey, &mut out));
            blocks = out.map(|p| Some(Packet::Particles(p)));
        }
        let old = std::mem::replace(&mut self.map, map);
        let t1 = Instant::now();
        // Neighbours of the new map (a device keeps its neighbours: boundaries move, devices
        // do not); send first, then receive, so no pair waits on the other.
        for side in self.neighbours() {
            let p = match blocks[side as usize].take() {
                Some(p) => p,
                None => {
                    if !self.broken() {
                        self.fail(Failure::Device(format!("the backend gave no particles for the {side:?} neighbour")));
                    }
                    Packet::Failed
                }
            };
            self.send(side, p);
        }
        // What was made for a side without a neighbour (host states) is dropped here.
        drop(blocks);
        let mut incoming = [ParticleState::default(), ParticleState::default()];
        let mut incoming_dev: [Option<DeviceBlock>; 2] = [None, None];
        let peer = self.peer == Some(true);
        for side in self.neighbours() {
            match self.recv(side) {
                Some(Packet::Particles(p)) if !peer => incoming[side as usize] = p,
                Some(Packet::Device(b)) if peer => incoming_dev[side as usize] = Some(b),
                Some(p) => self.fail(Failure::Device(format!(
                    "expected {}, got {}",
                    if peer { "a device block" } else { "particles" },
                    p.kind()
                ))),
                None => {}
            }
        }
        self.times.exchange += t1.elapsed().as_secs_f64();
        if peer {
            self.call(|b| b.rebuild_end_peer(incoming_dev));
        } else {
            self.call(|b| b.rebuild_end(incoming));
        }
        // Moves of this device's own boundaries.
        self.moves +=
            (old.bounds[me] != self.map.bounds[me]) as u64 + (old.bounds[me + 1] != self.map.bounds[me + 1]) as u64;
        self.times.rebuild += t0.elapsed().as_secs_f64();
        Ok(())
    }

    /// Decide, once for the whole run, whether the exchanges stay on the devices: every
    /// device's backend must offer its memory ([`Backend::share_offer`]), and every device
    /// with a neighbour on another rank must reach that neighbour's memory with the
    /// neighbour's offer ([`Backend::share_accept`]: CUDA IPC on one node). One answer for
    /// all (a reduction), so both ends of every link agree; else every exchange goes through
    /// host memory. `SURGE_DEVICE_LINKS=host` in the environment (of every rank) forces the
    /// latter, to compare the two.
    fn decide_links(&mut self) -> Result<(), DeviceError> {
        if self.peer.is_some() {
            return Ok(());
        }
        let host = std::env::var("SURGE_DEVICE_LINKS").is_ok_and(|v| v.eq_ignore_ascii_case("host"));
        let offer = if host { None } else { self.call(|b| b.share_offer()).flatten() };
        let mut ok = offer.is_some();
        let me = self.me();
        self.remote = Side::BOTH.map(|s| self.map.neighbour(me, s).is_some() && self.ex.remote(s));
        let remote: Vec<Side> = Side::BOTH.into_iter().filter(|&s| self.remote[s as usize]).collect();
        for &side in &remote {
            self.send(side, Packet::Offer(offer.clone().unwrap_or_default()));
        }
        for &side in &remote {
            match self.recv(side) {
                Some(Packet::Offer(o)) => {
                    ok = ok && !o.is_empty() && self.call(|b| b.share_accept(&o)).unwrap_or(false);
                }
                Some(p) => self.fail(Failure::Device(format!("expected a memory offer, got {}", p.kind()))),
                None => {}
            }
        }
        let mut v = vec![if ok { 0.0 } else { 1.0 }];
        self.reduce(&mut v)?;
        let peer = v[0] == 0.0;
        self.peer = Some(peer);
        if me == 0 && self.ex.devices() > 1 {
            tracing::info!(
                "halo exchanges: {}",
                if peer {
                    "device to device (peer copies within a process, CUDA IPC between ranks of a node)"
                } else if host {
                    "through host memory (SURGE_DEVICE_LINKS=host)"
                } else {
                    "through host memory (some device cannot reach its neighbour's memory)"
                }
            );
        }
        Ok(())
    }

    /// One force pass: edges, their values out, inner, wait, the neighbours' values in.
    fn forces(&mut self) -> ForceStats {
        let t0 = Instant::now();
        self.call(|b| b.forces(Part::Edges));
        // A device that computes on its own gets the inner part first, so it never idles
        // while the host takes the edge values off it.
        let launch_first = self.backend.inner_forces_run_on();
        if launch_first {
            self.call(|b| b.forces(Part::Inner));
        }
        // Taking the edge values off and sending them: hidden when the device computes the
        // inner part meanwhile, exposed otherwise.
        let t = Instant::now();
        for side in self.neighbours() {
            // Device to device when the backend leaves the values there (the neighbour copies
            // them after waiting on this device's edges), else through the host.
            if self.peer == Some(true) {
                match self.call(|b| b.edge_forces_peer(side)) {
                    Some(Some(block)) => {
                        self.send(side, Packet::Device(block));
                        continue;
                    }
                    Some(None) => {}
                    None => {
                        self.send(side, Packet::Failed);
                        continue;
                    }
                }
            }
            let mut buf = std::mem::take(&mut self.edge_buf);
            self.call(|b| b.edge_forces(side, &mut buf));
            self.send(side, Packet::Forces(buf));
        }
        let alone = self.neighbours().next().is_none();
        let out = if alone { 0.0 } else { t.elapsed().as_secs_f64() };
        if !launch_first {
            self.call(|b| b.forces(Part::Inner));
        }
        let stats = self.call(|b| b.force_stats()).unwrap_or_default();
        let computed = t0.elapsed().as_secs_f64() - if launch_first { 0.0 } else { out };
        let t1 = Instant::now();
        for side in self.neighbours() {
            match self.recv(side) {
                Some(Packet::Forces(v)) => {
                    self.call(|b| b.set_copy_forces(side, &v));
                    self.edge_buf = v;
                }
                // Returns once the copy is done: the sender may overwrite the values after
                // the next reduction, which this device reaches only after this.
                Some(Packet::Device(block)) => {
                    self.call(|b| b.set_copy_forces_peer(side, block));
                }
                Some(p) => self.fail(Failure::Device(format!("expected forces, got {}", p.kind()))),
                None => {}
            }
        }
        let back = if alone { 0.0 } else { t1.elapsed().as_secs_f64() };
        let exposed = back + if launch_first { 0.0 } else { out };
        self.times.exchange += out + back;
        self.times.forces += computed;
        self.window_forces += computed;
        self.times.exposed += exposed;
        stats
    }

    /// One step of the plan, dt shortened so the time does not pass `limit` (see
    /// [`crate::Simulation::step`]).
    pub fn step(&mut self, limit: f64) -> Result<(), DeviceError> {
        let c = self.clock;
        if !(c.drift + 2.0 * c.last_disp <= self.half_skin) {
            self.rebuild(true)?;
            self.clock.drift = 0.0;
            self.clock.rebuilds += 1;
        }
        let mut stats = ForceStats::default();
        let mut dt = 0.0;
        let mut disp = 0.0f64;
        for stage in plan(&self.case, c.step) {
            match *stage {
                Stage::Forces => stats = self.forces(),
                Stage::ReduceDt => {
                    let mut v = vec![stats.acc_max as f64, stats.visc_max as f64];
                    self.reduce(&mut v)?;
                    let s = ForceStats { acc_max: v[0] as f32, visc_max: v[1] as f32 };
                    dt = time_step(&self.case, &s);
                    let left = limit - c.time;
                    // Land on `limit` exactly, without leaving a sliver step after it.
                    if dt >= left * 0.99 {
                        dt = left;
                    }
                }
                Stage::Update(u) => {
                    let t0 = Instant::now();
                    if let Some(s) = self.call(|b| b.update(u, dt)) {
                        disp += s.disp_max as f64;
                    }
                    self.times.update += t0.elapsed().as_secs_f64();
                }
            }
        }
        let mut v = vec![disp];
        self.reduce(&mut v)?;
        let disp = v[0];
        let clock = &mut self.clock;
        clock.drift += disp;
        clock.last_disp = disp;
        clock.dt = dt;
        clock.time = if dt == limit - c.time { limit } else { c.time + dt };
        clock.step += 1;
        self.balance()
    }

    /// Every `balance.every` steps, the force times of all devices decide boundary moves,
    /// applied at the next rebuild (so the neighbour order, hence the results, do not
    /// change).
    fn balance(&mut self) -> Result<(), DeviceError> {
        let b = self.case.balance;
        if !b.enabled || self.ex.devices() < 2 || self.clock.step % b.every as u64 != 0 || self.pending.is_some() {
            return Ok(());
        }
        let t0 = Instant::now();
        let times = self.ex.gather(std::mem::take(&mut self.window_forces));
        self.times.reduce += t0.elapsed().as_secs_f64();
        let times = match times {
            Ok(t) => t,
            Err(_) => {
                self.peer_failed = true;
                return Err(self.failed.take());
            }
        };
        let mut map = self.map.clone();
        let moves = map.rebalance(&times, b.threshold);
        if !moves.is_empty() {
            if self.me() == 0 {
                log_moves(&moves, &times, self.clock.step);
            }
            self.pending = Some(map);
        }
        Ok(())
    }

    /// What this device reports.
    pub fn report(&self) -> DeviceReport {
        DeviceReport {
            device: self.me(),
            name: self.backend.name(),
            particles: self.backend.len() as u64,
            slice: self.map.owned(self.me()),
            times: self.times,
            moves: self.moves,
        }
    }
}

fn log_moves(moves: &[Move], times: &[f64], step: u64) {
    let t: Vec<String> = times.iter().map(|t| format!("{t:.3}")).collect();
    for m in moves {
        tracing::info!(
            "load balance at step {step}: boundary between devices {} and {} moves from layer {} to {} \
             (force seconds per device since the last decision: {})",
            m.boundary - 1,
            m.boundary,
            m.from,
            m.to,
            t.join(", ")
        );
    }
}
