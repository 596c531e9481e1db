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
use surge_core::backend::{Backend, DeviceBlock, Failure, ForceStats, Link, Part, Update};
use surge_core::bodies::{BodyFrame, BodyLoad, BodyState, LOAD_LEN};
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
    /// Waiting for slower devices: in reductions (dt, displacement, balancing times), and for
    /// a neighbour's edge values not computed yet (over device links, where the two can be
    /// told apart: [`Backend::set_copy_forces_peer`]).
    pub reduce: f64,
}

impl DeviceTimes {
    /// The seconds spent since `earlier` (a report of the same device).
    pub fn since(&self, earlier: &DeviceTimes) -> DeviceTimes {
        DeviceTimes {
            rebuild: self.rebuild - earlier.rebuild,
            forces: self.forces - earlier.forces,
            update: self.update - earlier.update,
            exchange: self.exchange - earlier.exchange,
            exposed: self.exposed - earlier.exposed,
            reduce: self.reduce - earlier.reduce,
        }
    }
}

/// Seconds a wait for the device must last to show it was still computing (longer than a
/// wait on an idle device, a few tens of microseconds): host-link receipts before such a
/// wait were hidden behind the inner forces.
const STILL_COMPUTING: f64 = 2e-4;

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
    /// Fluid particles this device took out in this run for a density outside
    /// `domain.density_range` ([`Backend::removed_for_density`]; a restarted run counts from
    /// its restart).
    pub removed_for_density: u64,
    /// Memory held per particle now ([`Backend::bytes_per_particle`]: a CPU backend's
    /// Verlet list counts once built).
    pub bytes_per_particle: usize,
}

/// What a device counted since it was made: fluid that left the domain, particles its
/// inlets made, particles that flowed out ([`Backend::removed`], [`Backend::open_counts`]).
fn counts(b: &dyn Backend) -> [u64; 3] {
    let [made, out] = b.open_counts();
    [b.removed(), made, out]
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
    /// Fluid particles at the start (of the whole case): the base of `domain.max_removed`.
    fluid: u64,
    /// [`Backend::removed`] and [`Backend::open_counts`] as last added into the clock's
    /// counts.
    counted: [u64; 3],
    /// [`Backend::removed_for_density`] as last logged (a line at the first and at each
    /// doubling).
    dense_logged: u64,
    /// Whether the backend's re-keys test the density range yet (from the first step).
    density_armed: bool,
    /// The step's reductions' values, reused: no allocation per step.
    reduced: Vec<f64>,
    pub times: DeviceTimes,
    /// Seconds of work (forces, updates, rebuilds; waiting for other devices excluded)
    /// since the last balancing decision.
    window_work: f64,
    /// Host seconds of the last rebuild, for [`Backend::rebuild_device_seconds`].
    last_rebuild: f64,
    /// No balancing decision made yet: the first window, with the start-up in it (the first
    /// rebuild's exchange, allocations), only resets the measure.
    first_window: bool,
    pub moves: u64,
    /// This device failed: its failure, reported at the next reduction.
    failed: Option<Failure>,
    /// A neighbour sent a failure notice, or a link broke.
    peer_failed: bool,
    /// Per side, the vector the edge force values go out in over a host link: the one the
    /// neighbour on that side sent last, so vectors circulate between two devices and a
    /// force pass allocates none.
    edge_buf: [Vec<[f32; 4]>; 2],
    /// How each neighbour is reached: None until the first rebuild decides it
    /// ([`Worker::decide_links`]), then fixed (neighbours never change).
    links: Option<[Link; 2]>,
    /// The global ids of each moving solid's particles (`case.motions` order).
    solid_ids: Vec<std::ops::Range<u32>>,
    /// The case's step at rest ([`Case::initial_dt`]): a step far below it stops the run
    /// ([`Failure::StepCollapsed`]).
    at_rest: f64,
    /// The time step taken on the device ([`Backend::update_device_dt`]): one device in the
    /// whole job, Verlet, no moving solids, floating bodies or open boundaries (whose moves
    /// and times need the step on the host before the update); `SURGE_DEVICE_DT=0` turns it
    /// off.
    device_dt: bool,
    /// The moving solids' moves of the current update, reused.
    solid_moves: Vec<surge_core::motion::SolidMove>,
    /// The floating bodies' constant properties (issue 15).
    frames: Vec<BodyFrame>,
    /// The bodies' states where the particles are now (the step start, or the predictor's
    /// end), with the load of the last force pass; the clock's are the step start's.
    bodies_now: Vec<BodyState>,
    /// The states at the end of the current update, reused.
    bodies_next: Vec<BodyState>,
    /// What each force pass sums (the bodies' particles, centres and steps) and the sums,
    /// reused.
    load_specs: Vec<BodyLoad>,
    body_sums: Vec<i64>,
}

impl Worker {
    /// A device with its particles loaded and sorted under `map` (the backend's own
    /// rebuild); [`Worker::rebuild`] brings the copies.
    pub fn new(case: &Case, backend: Box<dyn Backend>, ex: Box<dyn Exchange>, map: SliceMap) -> Worker {
        let half_skin = 0.5 * backend.skin();
        let counted = counts(backend.as_ref());
        let frames = surge_core::geometry::body_frames(case);
        let clock = StepState::start(case, &frames);
        let device_dt = map.devices() == 1
            && backend.device_time_step()
            && case.scheme == surge_core::config::Scheme::Verlet
            && case.moving_solids() == 0
            && frames.is_empty()
            && case.open.is_empty()
            && std::env::var("SURGE_DEVICE_DT").map_or(true, |v| v.trim() != "0");
        Worker {
            bodies_now: clock.bodies.clone(),
            bodies_next: Vec::new(),
            load_specs: frames
                .iter()
                .map(|f| BodyLoad { ids: f.ids.clone(), centre: f.centre0, scale: f.scale, contact: f.contact })
                .collect(),
            body_sums: vec![0; LOAD_LEN * frames.len()],
            frames,
            fluid: surge_core::geometry::counts(case).fluid,
            counted,
            dense_logged: backend.removed_for_density(),
            density_armed: false,
            reduced: Vec::new(),
            backend,
            ex,
            case: case.clone(),
            map,
            pending: None,
            clock,
            half_skin,
            times: DeviceTimes::default(),
            window_work: 0.0,
            last_rebuild: 0.0,
            first_window: true,
            moves: 0,
            failed: None,
            peer_failed: false,
            edge_buf: [Vec::new(), Vec::new()],
            links: None,
            solid_ids: case.motions.iter().map(|m| surge_core::geometry::solid_ids(case, m.solid)).collect(),
            at_rest: case.initial_dt(),
            device_dt,
            solid_moves: Vec::new(),
        }
    }

    /// Set the clock (a restart), the bodies' states with it.
    pub fn set_clock(&mut self, clock: StepState) {
        self.bodies_now.clone_from(&clock.bodies);
        self.clock = clock;
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
        // Device to device over the links that allow it (decided once), else through host
        // states.
        let links = self.decide_links()?;
        let mut out = [ParticleState::default(), ParticleState::default()];
        let mut blocks: [Option<DeviceBlock>; 2] = [None, None];
        match self.call(|b| b.rebuild_begin_peer(&map, me, rekey, links, &mut out)) {
            Some(Some(b)) => blocks = b,
            Some(None) => self.fail(Failure::Device(format!(
                "{} offered its memory to its neighbours but gave no device blocks",
                self.backend.name()
            ))),
            // Broken: the sends below are failure notices.
            None => {}
        }
        let old = std::mem::replace(&mut self.map, map);
        let t1 = Instant::now();
        // Neighbours of the new map (a device keeps its neighbours: boundaries move, devices
        // do not); send first, then receive, so no pair waits on the other.
        for side in self.neighbours() {
            let s = side as usize;
            let p = if links[s] == Link::Host {
                Packet::Particles(std::mem::take(&mut out[s]))
            } else {
                match blocks[s].take() {
                    Some(b) => Packet::Device(b),
                    None => {
                        if !self.broken() {
                            self.fail(Failure::Device(format!(
                                "the backend gave no particles for the {side:?} neighbour"
                            )));
                        }
                        Packet::Failed
                    }
                }
            };
            self.send(side, p);
        }
        // What was made for a side without a neighbour is dropped here.
        drop((out, blocks));
        let sent = t1.elapsed().as_secs_f64();
        let mut states = [ParticleState::default(), ParticleState::default()];
        let mut incoming: [Option<DeviceBlock>; 2] = [None, None];
        for side in self.neighbours() {
            let host = links[side as usize] == Link::Host;
            match self.recv(side) {
                Some(Packet::Particles(p)) if host => states[side as usize] = p,
                Some(Packet::Device(b)) if !host => incoming[side as usize] = Some(b),
                Some(p) => self.fail(Failure::Device(format!(
                    "expected {} from the {side:?} neighbour, got {}",
                    if host { "particles" } else { "a device block" },
                    p.kind()
                ))),
                None => {}
            }
        }
        let exchanged = t1.elapsed().as_secs_f64();
        self.times.exchange += exchanged;
        let received: usize = states.iter().map(ParticleState::len).sum();
        let t2 = Instant::now();
        self.call(|b| b.rebuild_end_peer(incoming, states));
        tracing::debug!(
            "device {me} rebuild: begin {:.1} ms, send {:.1} ms, receive {:.1} ms ({received} particles \
             through host memory), end {:.1} ms",
            1e3 * (t1 - t0).as_secs_f64(),
            1e3 * sent,
            1e3 * (exchanged - sent),
            1e3 * t2.elapsed().as_secs_f64()
        );
        // Moves of this device's own boundaries.
        self.moves +=
            (old.bounds[me] != self.map.bounds[me]) as u64 + (old.bounds[me + 1] != self.map.bounds[me + 1]) as u64;
        let took = t0.elapsed().as_secs_f64();
        self.times.rebuild += took;
        self.last_rebuild = took;
        self.window_work += took - exchanged;
        Ok(())
    }

    /// How each neighbour is reached, decided at the first rebuild and then fixed. A
    /// neighbour of this process: device to device when the backend offers its memory
    /// ([`Backend::share_offer`]; every device of a process has the same backend kind). A
    /// neighbour on another rank: device to device (CUDA IPC on one node) when each of the
    /// two reaches the other's memory with its offer ([`Backend::share_accept`]); both tell
    /// each other, so both ends agree. Else through host memory. `SURGE_DEVICE_LINKS` in the
    /// environment (of every rank): `host` keeps every exchange on the host, `process` only
    /// those between ranks (to compare, or where IPC misbehaves). Device 0 logs how many
    /// links of each kind the run has.
    fn decide_links(&mut self) -> Result<[Link; 2], DeviceError> {
        if let Some(l) = self.links {
            return Ok(l);
        }
        let mode = match links_mode() {
            Ok(m) => m,
            Err(e) => {
                self.fail(Failure::Device(e));
                String::new()
            }
        };
        let offer = if mode == "host" { None } else { self.call(|b| b.share_offer()).flatten() };
        let me = self.me();
        let mut links = [Link::Host; 2];
        let remote: Vec<Side> = self.neighbours().filter(|&s| self.ex.remote(s)).collect();
        for side in self.neighbours() {
            if !remote.contains(&side) && offer.is_some() {
                links[side as usize] = Link::Process;
            }
        }
        let share = if mode == "process" { Vec::new() } else { offer.unwrap_or_default() };
        for &side in &remote {
            self.send(side, Packet::Offer(share.clone()));
        }
        let mut mine = [false; 2];
        for &side in &remote {
            match self.recv(side) {
                Some(Packet::Offer(o)) => {
                    mine[side as usize] =
                        !share.is_empty() && !o.is_empty() && self.call(|b| b.share_accept(&o)).unwrap_or(false);
                }
                Some(p) => self.fail(Failure::Device(format!("expected a memory offer, got {}", p.kind()))),
                None => {}
            }
        }
        // Each end's verdict to the other: a link is a device link when both reach across.
        for &side in &remote {
            self.send(side, Packet::Offer(vec![mine[side as usize] as u8]));
        }
        for &side in &remote {
            match self.recv(side) {
                Some(Packet::Offer(v)) if mine[side as usize] && v == [1] => links[side as usize] = Link::Node,
                Some(Packet::Offer(_)) => {}
                Some(p) => self.fail(Failure::Device(format!("expected a link verdict, got {}", p.kind()))),
                None => {}
            }
        }
        // Every device's right link, for the log (a failure above is reported at the next
        // reduction, as always).
        let code = |l: Link| match l {
            Link::Host => 0.0,
            Link::Process => 1.0,
            Link::Node => 2.0,
        };
        let all = self.ex.gather(code(links[Side::Right as usize]));
        let all = match all {
            Ok(a) => a,
            Err(_) => {
                self.peer_failed = true;
                return Err(self.failed.take());
            }
        };
        if me == 0 && all.len() > 1 {
            // Each link once: the right side of every device but the last.
            let r = &all[..all.len() - 1];
            let count = |c: f64| r.iter().filter(|&&x| x == c).count();
            tracing::info!(
                "halo exchanges: {} link(s) device to device within a process, {} through CUDA IPC between ranks, \
                 {} through host memory{}",
                count(1.0),
                count(2.0),
                count(0.0),
                if mode == "host" || mode == "process" {
                    format!(" (SURGE_DEVICE_LINKS={mode})")
                } else {
                    String::new()
                }
            );
        }
        self.links = Some(links);
        Ok(links)
    }

    /// One force pass: edges, their values out, inner, the neighbours' values in (over host
    /// links while a device computes the inner part), the wait for the device.
    fn forces(&mut self, wait: bool) -> ForceStats {
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
            if self.links.is_some_and(|l| l[side as usize] != Link::Host) {
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
            let mut buf = std::mem::take(&mut self.edge_buf[side as usize]);
            self.call(|b| b.edge_forces(side, &mut buf));
            self.send(side, Packet::Forces(buf));
        }
        let alone = self.neighbours().next().is_none();
        let out = if alone { 0.0 } else { t.elapsed().as_secs_f64() };
        if !launch_first {
            self.call(|b| b.forces(Part::Inner));
        }
        // Values over a host link are taken while the device computes the inner part (their
        // upload queues behind it); a device link's copy waits for the device, so it comes
        // after.
        let links = self.links.unwrap_or_default();
        let early = |side: Side| launch_first && links[side as usize] == Link::Host;
        let t1 = Instant::now();
        for side in self.neighbours().filter(|&s| early(s)) {
            // Host links: the values arrive through the host, no wait to tell apart.
            self.copy_forces_from(side);
        }
        let back_early = t1.elapsed().as_secs_f64();
        let t2 = Instant::now();
        // Without the wait the update takes the time step on the device and waits for the
        // force pass; that wait counts as the force pass's there.
        let stats = if wait { self.call(|b| b.force_stats()).unwrap_or_default() } else { ForceStats::default() };
        // The device still computing after the early receipts hid them.
        let hidden = t2.elapsed().as_secs_f64() > STILL_COMPUTING;
        let early_exposed = if hidden { 0.0 } else { back_early };
        let mut computed = t0.elapsed().as_secs_f64() - early_exposed - if launch_first { 0.0 } else { out };
        // A device whose rebuild ran on past the host's part of it (a GPU alone queues its
        // sort's tail behind one wait): that tail was waited for here, and is the rebuild's.
        let tail = if wait { self.rebuild_tail(computed) } else { 0.0 };
        computed -= tail;
        self.window_work += tail;
        let t3 = Instant::now();
        let mut behind = 0.0;
        for side in self.neighbours().filter(|&s| !early(s)) {
            behind += self.copy_forces_from(side);
        }
        // Waiting for a neighbour still computing its edges is load imbalance, not exchange.
        self.times.reduce += behind;
        let back = if alone { 0.0 } else { t3.elapsed().as_secs_f64() - behind };
        let exposed = back + early_exposed + if launch_first { 0.0 } else { out };
        self.times.exchange += out + back_early + back;
        self.times.forces += computed;
        self.window_work += computed;
        self.times.exposed += exposed;
        stats
    }

    /// Of `waited` seconds waiting for the device, the tail of the last rebuild that ran on
    /// past the host's part of it (a GPU alone queues its sort's tail behind one wait):
    /// counted as the rebuild's here, returned for the caller to take off its own stage.
    fn rebuild_tail(&mut self, waited: f64) -> f64 {
        let Some(device) = self.backend.rebuild_device_seconds() else { return 0.0 };
        let tail = (device - self.last_rebuild).clamp(0.0, waited.max(0.0));
        self.times.rebuild += tail;
        tail
    }

    /// The neighbour on `side`'s edge force values into this device's copies. Returns the
    /// seconds spent waiting for the neighbour to launch and compute them (device links: its
    /// block is sent as soon as the edges are launched).
    fn copy_forces_from(&mut self, side: Side) -> f64 {
        let mut behind = 0.0;
        let t = Instant::now();
        match self.recv(side) {
            Some(Packet::Forces(v)) => {
                self.call(|b| b.set_copy_forces(side, &v));
                self.edge_buf[side as usize] = v;
            }
            // Returns once the copy is done: the sender may overwrite the values after the
            // next reduction, which this device reaches only after this.
            Some(Packet::Device(block)) => {
                behind = t.elapsed().as_secs_f64();
                behind += self.call(|b| b.set_copy_forces_peer(side, block)).unwrap_or(0.0);
            }
            Some(p) => self.fail(Failure::Device(format!("expected forces, got {}", p.kind()))),
            None => {}
        }
        behind
    }

    /// One step of the plan, dt shortened so the time does not pass `limit` (see
    /// [`crate::Simulation::step`]).
    pub fn step(&mut self, limit: f64) -> Result<(), DeviceError> {
        if !self.density_armed {
            self.backend.arm_density_range();
            self.density_armed = true;
        }
        let c = StepState { bodies: Vec::new(), ..self.clock };
        // Twice the last step's displacement as the margin: once (with Verlet) ran faster,
        // but Test 2 at dp 0.01 went unstable with it (docs/ARCHITECTURE.md, "Grid, keys,
        // rebuild").
        let rebuilt = !(c.drift + 2.0 * c.last_disp <= self.half_skin);
        if rebuilt {
            self.rebuild(true)?;
            self.clock.drift = 0.0;
            self.clock.rebuilds += 1;
            // Logged at the first and then whenever the count has doubled since the last
            // line: a late flow that sheds a few a rebuild would otherwise write a line each
            // (the progress lines and summary.json carry the total removed).
            let dense = self.backend.removed_for_density();
            if dense > self.dense_logged && (self.dense_logged == 0 || dense >= 2 * self.dense_logged) {
                let [lo, hi] = self.case.density_range;
                tracing::warn!(
                    "step {}, t = {:.6} s: {dense} fluid particle(s) removed so far on this device for a density \
                     outside domain.density_range [{lo}, {hi}] rho0 ({} since the last such line; counted as \
                     removed; the next line when this count has doubled)",
                    c.step,
                    c.time,
                    dense - self.dense_logged
                );
                self.dense_logged = dense;
            }
        }
        let mut stats = ForceStats::default();
        let mut dt = 0.0;
        let mut disp = 0.0f64;
        let mut forces_done = 0;
        for stage in plan(&self.case, c.step) {
            match *stage {
                Stage::Forces => {
                    if !self.case.open.is_empty() {
                        // The symplectic corrector's pass is at mid-step.
                        let t = if forces_done > 0 { c.time + 0.5 * dt } else { c.time };
                        self.call(|b| {
                            b.set_time(t);
                            Ok(())
                        });
                    }
                    forces_done += 1;
                    stats = self.forces(!self.device_dt);
                    if !self.frames.is_empty() {
                        self.body_loads();
                    }
                }
                Stage::ReduceDt if self.device_dt => {}
                Stage::ReduceDt => {
                    let mut v = std::mem::take(&mut self.reduced);
                    v.clear();
                    v.extend([stats.acc_max as f64, stats.visc_max as f64]);
                    self.reduce(&mut v)?;
                    let s = ForceStats { acc_max: v[0] as f32, visc_max: v[1] as f32 };
                    self.reduced = v;
                    dt = time_step(&self.case, &s);
                    // Every device reduced the same dt, so every device stops at this step.
                    if dt < surge_core::backend::DT_COLLAPSE * self.at_rest {
                        return Err(Some(Failure::StepCollapsed { dt, at_rest: self.at_rest }));
                    }
                    // Land on `limit` exactly, without leaving a sliver step after it.
                    dt = surge_core::step::land(dt, limit - c.time);
                }
                Stage::Update(u) => {
                    let t0 = Instant::now();
                    if self.case.moving_solids() > 0 {
                        // Every device computes the same moves from the same clock and the
                        // same reduced body loads.
                        let mut mv = std::mem::take(&mut self.solid_moves);
                        let grid = self.backend.grid();
                        surge_core::motion::moves(&self.case.motions, &self.solid_ids, grid, u, c.time, dt, &mut mv);
                        if !self.frames.is_empty() {
                            let g = self.case.body_force;
                            let (start, now) = (&self.clock.bodies, &self.bodies_now);
                            self.bodies_next.clear();
                            self.bodies_next.extend(
                                self.frames.iter().enumerate().map(|(k, f)| start[k].advance(f, u, dt, g, &now[k])),
                            );
                            // The wall normals are where the previous update of the step left
                            // them: at the predictor's state for the corrector.
                            let normals = if u == Update::Corrector { now } else { start };
                            surge_core::bodies::moves(&self.frames, start, &self.bodies_next, normals, grid, &mut mv);
                            std::mem::swap(&mut self.bodies_now, &mut self.bodies_next);
                        }
                        self.call(|b| b.set_moves(&mv));
                        self.solid_moves = mv;
                    }
                    // The time the update waited for the force pass (a device time step):
                    // the force pass's, and the rebuild's where its tail ran before.
                    let mut waited = 0.0;
                    if self.device_dt {
                        if let Some(step) = self.call(|b| b.update_device_dt(u, limit - c.time)) {
                            dt = step.dt;
                            disp += step.stats.disp_max as f64;
                            // As the host's time step is checked (before landing), one update
                            // later.
                            if step.time_step < surge_core::backend::DT_COLLAPSE * self.at_rest {
                                let dt = step.time_step;
                                return Err(Some(Failure::StepCollapsed { dt, at_rest: self.at_rest }));
                            }
                            if let Some(device) = step.device_seconds {
                                waited = (t0.elapsed().as_secs_f64() - device).max(0.0);
                            }
                        }
                    } else if let Some(s) = self.call(|b| b.update(u, dt)) {
                        disp += s.disp_max as f64;
                    }
                    let took = t0.elapsed().as_secs_f64();
                    let tail = self.rebuild_tail(waited);
                    self.times.update += took - waited;
                    self.times.forces += waited - tail;
                    self.window_work += took;
                }
            }
        }
        // After a rebuild (every device rebuilt), the fluid each device removed rides on the
        // same reduction: device d's count in slot 1 + d, the others 0, so the max is each
        // count, summed exactly below.
        let mut v = std::mem::take(&mut self.reduced);
        v.clear();
        v.push(disp);
        // The open boundaries' counts ride along the same way: slots 1 + 3d, 2 + 3d, 3 + 3d.
        if rebuilt {
            let now = counts(self.backend.as_ref());
            let me = self.me();
            v.resize(1 + 3 * self.map.devices(), 0.0);
            for k in 0..3 {
                v[1 + 3 * me + k] = (now[k] - self.counted[k]) as f64;
            }
            self.counted = now;
        }
        self.reduce(&mut v)?;
        let disp = v[0];
        let total = |k: usize| v.iter().skip(1 + k).step_by(3).sum::<f64>() as u64;
        let removed = self.clock.removed + total(0);
        let (spawned, outflow) = (self.clock.spawned + total(1), self.clock.outflow + total(2));
        self.reduced = v;
        if removed > 0 && removed as f64 > self.case.max_removed * self.fluid as f64 {
            let share = self.case.max_removed;
            return Err(Some(Failure::Leaving { removed, fluid: self.fluid, share }));
        }
        let clock = &mut self.clock;
        clock.bodies.clone_from(&self.bodies_now);
        clock.removed = removed;
        clock.spawned = spawned;
        clock.outflow = outflow;
        clock.drift += disp;
        clock.last_disp = disp;
        clock.dt = dt;
        clock.time = if dt == limit - c.time { limit } else { c.time + dt };
        clock.step += 1;
        self.balance()
    }

    /// The load (fluid and contacts) on each floating body after a force pass, summed over
    /// every device exactly (fixed-point integers: [`surge_core::bodies`]), moments about
    /// each body's centre of mass where the particles are now; into `bodies_now`.
    fn body_loads(&mut self) {
        let t0 = Instant::now();
        for (l, s) in self.load_specs.iter_mut().zip(&self.bodies_now) {
            l.centre = s.centre;
        }
        let mut sums = std::mem::take(&mut self.body_sums);
        sums.fill(0);
        let loads = std::mem::take(&mut self.load_specs);
        self.call(|b| b.body_loads(&loads, &mut sums));
        self.load_specs = loads;
        self.times.forces += t0.elapsed().as_secs_f64();
        let t1 = Instant::now();
        let r = self.ex.sum_i64(&mut sums);
        self.times.reduce += t1.elapsed().as_secs_f64();
        if r.is_err() {
            self.peer_failed = true;
        }
        if !self.broken() {
            // Otherwise the next reduction tells every device.
            for ((s, f), sum) in self.bodies_now.iter_mut().zip(&self.frames).zip(sums.chunks_exact(LOAD_LEN)) {
                (s.force, s.moment) = surge_core::bodies::from_fixed(sum, &f.scale);
            }
        }
        self.body_sums = sums;
    }

    /// Every `balance.every` steps, the work times of all devices (forces, updates,
    /// rebuilds: what a device does itself, waiting excluded) decide boundary moves
    /// ([`SliceMap::rebalance`]), applied at the next rebuild (so the neighbour order, hence
    /// the results, do not change). The first window after the start only resets the
    /// measure: on 4 GPUs its start-up costs made the first decision move 4 layers the wrong
    /// way (strong scaling over 30 steps fell from 92 % to 89 %).
    fn balance(&mut self) -> Result<(), DeviceError> {
        let b = self.case.balance;
        if !b.enabled
            || self.ex.devices() < 2
            || !self.clock.step.is_multiple_of(b.every as u64)
            || self.pending.is_some()
        {
            return Ok(());
        }
        if std::mem::take(&mut self.first_window) {
            // Every device skips the same window (same steps), so no collective is missed.
            self.window_work = 0.0;
            return Ok(());
        }
        let t0 = Instant::now();
        let times = self.ex.gather(std::mem::take(&mut self.window_work));
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
            removed_for_density: self.backend.removed_for_density(),
            bytes_per_particle: self.backend.bytes_per_particle(),
        }
    }
}

fn log_moves(moves: &[Move], times: &[f64], step: u64) {
    let t: Vec<String> = times.iter().map(|t| format!("{t:.3}")).collect();
    for m in moves {
        tracing::info!(
            "load balance at step {step}: boundary between devices {} and {} moves from layer {} to {} \
             (seconds of work per device since the last decision: {})",
            m.boundary - 1,
            m.boundary,
            m.from,
            m.to,
            t.join(", ")
        );
    }
}

/// `SURGE_DEVICE_LINKS` from the environment, lower case ("" when unset): `host`, `process`,
/// `auto` or nothing; any other value is an error naming it.
pub fn links_mode() -> Result<String, String> {
    let mode = std::env::var("SURGE_DEVICE_LINKS").unwrap_or_default().to_ascii_lowercase();
    if ["", "auto", "host", "process"].contains(&mode.as_str()) {
        Ok(mode)
    } else {
        Err(format!(
            "SURGE_DEVICE_LINKS={mode}: expected host (every exchange through host memory), process (through host \
             memory between ranks only) or auto (the default: device to device wherever possible)"
        ))
    }
}
