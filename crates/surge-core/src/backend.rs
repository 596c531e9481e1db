//! The execution role: what a worker asks of a device (CPU cores, a GPU). The worker runs
//! the step plan over this trait and never knows which device it drives.

use crate::buffers::{Kind, ParticleState};
use crate::decomp::{Side, SliceMap};
use crate::gauge::Interpolate;
use crate::grid::Grid;

/// Largest values found by a force pass, for the time step.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct ForceStats {
    /// Largest acceleration magnitude of a fluid particle (body force included).
    pub acc_max: f32,
    /// Largest `h |v_ij . r_ij| / (r² + eta²)`.
    pub visc_max: f32,
}

/// Which update of the step plan to apply.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// Symplectic predictor: half step from the stored start state.
    Predictor,
    /// Symplectic corrector: full step from the start state with the mid-step forces.
    Corrector,
    /// Verlet step from the state one step back.
    Verlet,
    /// The periodic Euler step of the Verlet scheme.
    VerletEuler,
}

/// A particle that made the run fail.
#[derive(Debug, Clone, PartialEq)]
pub struct BadParticle {
    /// Global id.
    pub id: u32,
    /// Absolute position (may be non-finite).
    pub pos: [f64; 3],
    /// What is wrong.
    pub reason: &'static str,
    /// The case file's name of the moving solid (prescribed motion or floating body) the
    /// particle belongs to, when its motion carried it out of the domain (set by the runtime,
    /// which knows the case; the backends leave it `None`).
    pub solid: Option<String>,
}

/// [`BadParticle::reason`] of a particle outside the domain (with `domain.on_exit = "stop"`,
/// or a solid's particle, which is never removed).
pub const LEFT_DOMAIN: &str = "left the domain";

/// [`BadParticle::reason`] of a fluid particle whose density left `domain.density_range`
/// with `domain.on_exit = "stop"`.
pub const DENSITY_OUT: &str = "has a density outside domain.density_range";

/// Why a stage failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The physics blew up: the lowest-id particle that left the domain or is not finite.
    Particle(BadParticle),
    /// The device failed; the message names the kernel or call (e.g. a CUDA error).
    Device(String),
    /// More of the fluid left the domain or its density range than the case allows
    /// (`domain.max_removed`).
    Leaving {
        /// Fluid particles removed so far.
        removed: u64,
        /// Fluid particles at the start.
        fluid: u64,
        /// The allowed share.
        share: f64,
    },
    /// The time step fell below [`DT_COLLAPSE`] of the step at rest: the flow went unstable
    /// (a run would crawl on for ever at such steps).
    StepCollapsed {
        /// The step the last force pass allowed (s).
        dt: f64,
        /// The step at rest, [`crate::case::Case::initial_dt`] (s).
        at_rest: f64,
    },
}

/// The share of the step at rest below which a time step stops the run
/// ([`Failure::StepCollapsed`]). Violent flows take steps a few times shorter than at rest;
/// 10 000 times shorter is an instability (e.g. density diffusion's `delta` of 0.15 or more
/// with the Verlet scheme on SPHERIC Test 2 fell from 1.7e-4 s to 1e-10 s within 0.011 s).
pub const DT_COLLAPSE: f64 = 1e-4;

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Particle(p) => {
                write!(f, "particle {} at ({:.4}, {:.4}, {:.4}) {}", p.id, p.pos[0], p.pos[1], p.pos[2], p.reason)?;
                match &p.solid {
                    Some(s) => write!(f, ": a particle of {s}, carried there by its motion (make [domain] hold the solid's whole path)"),
                    None => Ok(()),
                }
            }
            Failure::Device(m) => write!(f, "{m}"),
            Failure::Leaving { removed, fluid, share } => write!(
                f,
                "{removed} of {fluid} fluid particles ({:.2} %) have left the domain or domain.density_range, more than \
                 domain.max_removed = {share} allows (a domain too small for the flow, a leak, or densities running \
                 away: the log names the rebuilds that took particles out for their density)",
                100.0 * *removed as f64 / (*fluid).max(1) as f64
            ),
            Failure::StepCollapsed { dt, at_rest } => write!(
                f,
                "the time step fell to {dt:.3e} s, below {DT_COLLAPSE:e} of the step at rest ({at_rest:.3e} s): the \
                 flow went unstable (common causes: physics.density_diffusion.delta above 0.1 with the Verlet \
                 scheme, time.cfl above 0.2)"
            ),
        }
    }
}

impl From<String> for Failure {
    fn from(m: String) -> Self {
        Failure::Device(m)
    }
}

/// Result of an update.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct UpdateStats {
    /// Largest displacement of a particle during this update.
    pub disp_max: f32,
    /// Largest speed after the update.
    pub vel_max: f32,
}

/// Result of an update that took its time step on the device
/// ([`Backend::update_device_dt`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DeviceStep {
    /// The time step the update took.
    pub dt: f64,
    /// [`crate::step::time_step`]'s value before it landed on the step's limit
    /// ([`crate::step::land`]): what a collapsed step is judged by, as on the host.
    pub time_step: f64,
    /// The update's values, as [`Backend::update`] returns them.
    pub stats: UpdateStats,
    /// The device's own seconds from the end of the force pass to the end of the update,
    /// where it can say: the host, which waited for both in the update, counts the rest as
    /// the force pass's.
    pub device_seconds: Option<f64>,
}

/// Host copy of the particles for output, in storage order.
#[derive(Debug, Clone, Default)]
pub struct Snapshot {
    /// Global ids.
    pub id: Vec<u32>,
    /// Kind codes.
    pub kind: Vec<u8>,
    /// Absolute positions.
    pub pos: Vec<[f64; 3]>,
    /// Velocities.
    pub vel: Vec<[f32; 3]>,
    /// Physical density.
    pub rho: Vec<f32>,
    /// Pressure.
    pub p: Vec<f32>,
}

impl Snapshot {
    /// Number of particles.
    pub fn len(&self) -> usize {
        self.id.len()
    }
    /// Move the particles of `other` after these (`other` is left empty).
    pub fn append(&mut self, other: &mut Snapshot) {
        self.id.append(&mut other.id);
        self.kind.append(&mut other.kind);
        self.pos.append(&mut other.pos);
        self.vel.append(&mut other.vel);
        self.rho.append(&mut other.rho);
        self.p.append(&mut other.p);
    }
    /// True when empty.
    pub fn is_empty(&self) -> bool {
        self.id.is_empty()
    }
    /// Indices that put the particles in id order.
    pub fn order_by_id(&self) -> Vec<usize> {
        let mut idx: Vec<usize> = (0..self.len()).collect();
        idx.sort_unstable_by_key(|&i| self.id[i]);
        idx
    }

    /// Where a run whose time step collapsed ([`Failure::StepCollapsed`]) went wrong, as a
    /// line for its error message: the fastest fluid particle of this state (the lowest id
    /// among equals; an instability accelerates its particles step after step as the step
    /// shrinks), its density, the particle nearest to it, the distance in units of `dp`, and
    /// the fluid particle whose density lies farthest from `rho0` (a density running away
    /// raises its pressure as rho^gamma). None without a finite fluid particle.
    pub fn collapse_diagnosis(&self, dp: f64, rho0: f64) -> Option<String> {
        let speed = |i: usize| self.vel[i].iter().map(|&v| (v as f64) * (v as f64)).sum::<f64>().sqrt();
        let fast = (0..self.len())
            .filter(|&i| self.kind[i] == Kind::Fluid as u8 && speed(i).is_finite())
            .max_by(|&a, &b| speed(a).total_cmp(&speed(b)).then(self.id[b].cmp(&self.id[a])))?;
        let x = self.pos[fast];
        let dist = |j: usize| x.iter().zip(&self.pos[j]).map(|(a, b)| (a - b) * (a - b)).sum::<f64>().sqrt();
        let near = (0..self.len())
            .filter(|&j| j != fast)
            .min_by(|&a, &b| dist(a).total_cmp(&dist(b)).then(self.id[a].cmp(&self.id[b])));
        let mut line = format!(
            "the fastest fluid particle is {} at ({:.4}, {:.4}, {:.4}) m, {:.3e} m/s, density {:.1} kg/m^3",
            self.id[fast],
            x[0],
            x[1],
            x[2],
            speed(fast),
            self.rho[fast]
        );
        if let Some(j) = near {
            let kind = Kind::from_code(self.kind[j] as u32).name();
            line += &format!(", the particle nearest to it {kind} particle {} at {:.3} dp", self.id[j], dist(j) / dp);
        }
        let off = |i: usize| (self.rho[i] as f64 - rho0).abs();
        let far = (0..self.len())
            .filter(|&i| self.kind[i] == Kind::Fluid as u8 && off(i).is_finite())
            .max_by(|&a, &b| off(a).total_cmp(&off(b)).then(self.id[b].cmp(&self.id[a])));
        if let Some(i) = far.filter(|&i| i != fast) {
            let y = self.pos[i];
            line += &format!(
                "; the fluid density farthest from rho0 is particle {}'s, {:.1} kg/m^3 at ({:.4}, {:.4}, {:.4}) m",
                self.id[i], self.rho[i], y[0], y[1], y[2]
            );
        }
        Some(line)
    }
}

/// How a device exchanges with the neighbour on one side; decided once for a run, the same
/// at both ends of the link.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Link {
    /// Through host memory: [`ParticleState`]s and force values.
    #[default]
    Host,
    /// Device to device with a device of this process ([`DeviceBlock::Local`]).
    Process,
    /// Device to device with a device of another process of this node
    /// ([`DeviceBlock::Shared`]).
    Node,
}

/// What one device hands a neighbour for a transfer that stays on the devices (GPU to GPU):
/// what it holds is the backend's own business (for CUDA: device addresses or memory
/// handles, counts, an event to wait on). Only a backend of the same kind can take it.
pub enum DeviceBlock {
    /// For a device of this process: handed over as it is.
    Local(Box<dyn std::any::Any + Send>),
    /// For a device of another process on this node (an MPI rank), whose backend maps the
    /// sender's memory itself (CUDA IPC): bytes, sent over MPI.
    Shared(Vec<u8>),
}

impl std::fmt::Debug for DeviceBlock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            DeviceBlock::Local(_) => f.write_str("DeviceBlock::Local(..)"),
            DeviceBlock::Shared(b) => write!(f, "DeviceBlock::Shared({} bytes)", b.len()),
        }
    }
}

/// Which owned particles a force call computes: the two parts of a force pass.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Part {
    /// The edges: the owned particles of the `halo` layers next to each neighbour, whose
    /// forces the neighbour needs for its copies. Empty on a device without neighbours.
    Edges,
    /// Every other owned particle.
    Inner,
}

/// A device that runs the stages of a step on the particles it holds.
///
/// A device holds the particles of its slice (owned) and copies of the `halo` layers of its
/// neighbours' slices beside it ([`SliceMap`]). After a rebuild its arrays read
/// `copies from the left | owned | copies from the right`, each block sorted by cell, kind
/// and id, so the order, and with it every sum, is the same whatever the decomposition.
/// The copies are updated like owned particles with forces their owner computed
/// ([`Backend::edge_forces`] → [`Backend::set_copy_forces`]), so they stay identical to
/// the originals between rebuilds.
///
/// One step of a device: [`Backend::forces`] for [`Part::Edges`], the edge forces out to
/// the neighbours, [`Backend::forces`] for [`Part::Inner`] (which may run on while the
/// host exchanges), the neighbours' forces into the copies, [`Backend::force_stats`],
/// [`Backend::update`]. A rebuild is [`Backend::rebuild_begin`], the particles out to the
/// neighbours and theirs in, [`Backend::rebuild_end`]. A device alone does the same with
/// nothing to send. Between devices of one process, or of processes of one node whose
/// memory reaches each other ([`Backend::share_offer`]), a backend may keep both transfers
/// on the devices ([`Backend::rebuild_begin_peer`], [`Backend::edge_forces_peer`]): the
/// neighbour copies straight from its memory, in the same order.
pub trait Backend: Interpolate + Send {
    /// Human-readable name, e.g. `cpu (2 threads)`.
    fn name(&self) -> String;
    /// Number of particles owned (copies not counted).
    fn len(&self) -> usize;
    /// Fluid particles this device has dropped since it was made, because they left the
    /// domain or their density range ([`Backend::rebuild_begin`] with `rekey`).
    fn removed(&self) -> u64;
    /// Of [`Backend::removed`], the fluid particles taken out for a density outside
    /// `domain.density_range`.
    fn removed_for_density(&self) -> u64;
    /// From now on the re-keys of rebuilds take out the fluid particles whose density lies
    /// outside `domain.density_range`. Not before: the load's sort keeps the initial state
    /// whole, so a range that excludes part of it shows as removals at the run's first
    /// rebuild, counted and logged, not as particles lost at the start.
    fn arm_density_range(&mut self);
    /// Open boundaries (issue 15): the particles the inlets made and those that flowed out
    /// (through an outlet, or back into an inlet), since this device was made.
    fn open_counts(&self) -> [u64; 2];
    /// The time of the next force pass (the inlets' prescribed velocities): called before
    /// each force pass of a case with open boundaries.
    fn set_time(&mut self, t: f64);
    /// True when no particle is owned.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Device memory per particle (all buffers).
    fn bytes_per_particle(&self) -> usize;
    /// The whole grid (no window) this backend keys particles on: its cell size, stencil
    /// reach (the halo width) and split axis.
    fn grid(&self) -> &Grid;
    /// The skin of the backend's grid (cell size minus kernel support, in metres): the
    /// runtime rebuilds before any particle may have moved half of it.
    fn skin(&self) -> f64 {
        self.grid().skin
    }
    /// First half of a rebuild under the slice map `map` (which may differ from the last
    /// one: the load balancer moved a boundary) as device `me`: drop the copies; re-key every
    /// owned particle to the cell that holds it (only when `rekey`; a restart keeps the
    /// stored cells); put into `out[side]` every owned particle that lies in the window of
    /// the neighbour on that side (its copies and the particles that now belong to it), and
    /// keep those in the own window (`map.window(me)`: the own slice, and copies of
    /// particles this device owned until now that lie in a band). Every particle of a window
    /// is then held once: kept by its old owner or sent by it. With `rekey`, fluid particles
    /// that left the domain are dropped when the case removes them (`domain.on_exit`) and
    /// counted ([`Backend::removed`]). Fails with the lowest-id owned particle that left the
    /// domain and is not removed (a boundary particle, or `on_exit = "stop"`), or is not
    /// finite.
    fn rebuild_begin(
        &mut self,
        map: &SliceMap,
        me: usize,
        rekey: bool,
        out: &mut [ParticleState; 2],
    ) -> Result<(), Failure>;
    /// Second half of a rebuild: take the neighbours' particles (`incoming[side]`, in any
    /// order), sort everything by cell, kind and id, and rebuild the cell table and the
    /// blocks (copies, edges, inner).
    fn rebuild_end(&mut self, incoming: [ParticleState; 2]) -> Result<(), Failure>;
    /// Forces (accelerations, density rates, shifting sums) of one part of the owned
    /// particles. `Part::Edges` starts a force pass (its pressures, its largest values; with
    /// mDBC first the boundary particles' density and viscous velocity from their ghost
    /// nodes, for the owned ones and the copies the pass reads: [`crate::decomp::halo`]); the
    /// call may return before the device is done (read [`Backend::force_stats`]).
    fn forces(&mut self, part: Part) -> Result<(), Failure>;
    /// True when [`Backend::forces`] for [`Part::Inner`] returns while the device computes
    /// (a GPU), so the worker takes the edge values off the device after launching it;
    /// false when it returns with the work done (the CPU), so the edge values go out first.
    fn inner_forces_run_on(&self) -> bool {
        false
    }
    /// Wait for the force pass and return its largest values (owned particles only).
    fn force_stats(&mut self) -> Result<ForceStats, Failure>;
    /// After [`Backend::force_stats`] (or [`Backend::update_device_dt`], which waits for the
    /// force pass too): the device's own seconds for the last rebuild, once,
    /// where its rebuild returns before the device is done with it (its tail then runs
    /// before the force pass and would count as forces). None by default (a rebuild that
    /// returns done), and where the device cannot say.
    fn rebuild_device_seconds(&mut self) -> Option<f64> {
        None
    }
    /// The force values of the edge on `side` (waits for the edge part): per particle, in
    /// storage order, the `Force` value, then the `Shift` value when shifting is on. The
    /// neighbour's copies of that edge are the same particles in the same order.
    fn edge_forces(&mut self, side: Side, out: &mut Vec<[f32; 4]>) -> Result<(), Failure>;
    /// Set the force values of the copies from the neighbour on `side` (as
    /// [`Backend::edge_forces`] gave them there). Fails when the length does not match.
    fn set_copy_forces(&mut self, side: Side, values: &[[f32; 4]]) -> Result<(), Failure>;
    /// [`Backend::rebuild_begin`] over the links of this device (the runtime's one entry
    /// point): `links[side]` says how each neighbour is reached. [`Link::Host`]: the
    /// particles in `out[side]`, as [`Backend::rebuild_begin`] gives them; a device link
    /// leaves them on the device, described by a [`DeviceBlock`] for
    /// [`Backend::rebuild_end_peer`] of that neighbour ([`Link::Process`]: a
    /// [`DeviceBlock::Local`]; [`Link::Node`]: a [`DeviceBlock::Shared`], and so are the edge
    /// blocks of the force passes until the next rebuild). The blocks are None on the other
    /// sides. `Ok(None)`: a device link this backend does not support, nothing was done. The
    /// default supports host links only ([`Backend::rebuild_begin`]).
    fn rebuild_begin_peer(
        &mut self,
        map: &SliceMap,
        me: usize,
        rekey: bool,
        links: [Link; 2],
        out: &mut [ParticleState; 2],
    ) -> Result<Option<[Option<DeviceBlock>; 2]>, Failure> {
        if links != [Link::Host; 2] {
            return Ok(None);
        }
        self.rebuild_begin(map, me, rekey, out)?;
        Ok(Some([None, None]))
    }
    /// An offer of this device's memory to a neighbour in another process: bytes for that
    /// neighbour's [`Backend::share_accept`], which tries to reach this device's memory with
    /// them; empty when only devices of this process can reach it. `Ok(None)` (the default):
    /// the backend keeps no transfer on the devices ([`Backend::rebuild_begin_peer`] takes host
    /// links only), and every exchange goes through the host.
    fn share_offer(&mut self) -> Result<Option<Vec<u8>>, Failure> {
        Ok(None)
    }
    /// Whether this device can reach the memory of the neighbour (another process) that made
    /// `offer` ([`Backend::share_offer`]): tries it. False (the default) when not, for
    /// whatever reason (another node, no peer access, a backend of another kind).
    fn share_accept(&mut self, _offer: &[u8]) -> Result<bool, Failure> {
        Ok(false)
    }
    /// [`Backend::rebuild_end`] with each neighbour's particles as a block of its
    /// [`Backend::rebuild_begin_peer`] (`blocks[side]`, copied device to device) or, over a
    /// host link, as a state (`states[side]`, empty where a block came). The particles end
    /// in the same order, hence the same results, as through [`Backend::rebuild_end`]. The
    /// default takes states only ([`Backend::rebuild_end`]).
    fn rebuild_end_peer(
        &mut self,
        blocks: [Option<DeviceBlock>; 2],
        states: [ParticleState; 2],
    ) -> Result<(), Failure> {
        if blocks.iter().any(Option::is_some) {
            return Err(Failure::Device(format!("{} takes no particles from another device's memory", self.name())));
        }
        self.rebuild_end(states)
    }
    /// [`Backend::edge_forces`] left on the device: a block describing the force values of the
    /// edge on `side`, for [`Backend::set_copy_forces_peer`] of the neighbour there (shared
    /// when the last [`Backend::rebuild_begin_peer`] gave that side [`Link::Node`]). Called
    /// only for sides with a device link. `Ok(None)`: not supported (the default); the
    /// caller uses [`Backend::edge_forces`].
    fn edge_forces_peer(&mut self, _side: Side) -> Result<Option<DeviceBlock>, Failure> {
        Ok(None)
    }
    /// [`Backend::set_copy_forces`] from a block of the neighbour on `side`
    /// ([`Backend::edge_forces_peer`]), copied device to device; the same values land in the
    /// same places. Fails when the lengths do not match. Returns the seconds it waited for
    /// the neighbour to finish computing the values before copying them (load imbalance,
    /// told apart from the copy itself; 0 where the backend does not tell).
    fn set_copy_forces_peer(&mut self, side: Side, _block: DeviceBlock) -> Result<f64, Failure> {
        Err(Failure::Device(format!("{} takes no {side:?} force values from another device's memory", self.name())))
    }
    /// Apply an update with time step dt to every particle held, copies included. Fails
    /// with the lowest-id particle whose new state is not finite. The boundary particles of
    /// moving solids take the moves of the last [`Backend::set_moves`].
    fn update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure>;
    /// Whether [`Backend::update_device_dt`] works: the time step taken on the device from
    /// the last force pass, so the host need not wait for that pass before the update.
    fn device_time_step(&self) -> bool {
        false
    }
    /// [`Backend::update`] with the time step of [`crate::step::time_step`] computed on the
    /// device from the last force pass's largest values (a device alone: no reduction),
    /// shortened to `left` where the worker would; returns it with the update's values.
    fn update_device_dt(&mut self, which: Update, left: f64) -> Result<DeviceStep, Failure> {
        let _ = (which, left);
        Err(Failure::Device("this backend takes its time step from the host".into()))
    }
    /// The rigid moves of the moving solids for the next update (one per solid; issue 14),
    /// from [`crate::motion::moves`]: called before each update of a case with moving
    /// solids, never otherwise.
    fn set_moves(&mut self, moves: &[crate::motion::SolidMove]) -> Result<(), Failure>;
    /// Floating bodies (issue 15), after a force pass: add to `out` ([`crate::bodies::LOAD_LEN`]
    /// per body, wrapping) the fixed-point sums of the fluid's force on each owned particle
    /// of each body and of its moment about the body's centre
    /// ([`crate::bodies::add_particle_load`], each particle's force as
    /// [`crate::gauge::Interpolate::boundary_loads`] gives it). Integer sums: the same on any
    /// decomposition.
    fn body_loads(&mut self, bodies: &[crate::bodies::BodyLoad], out: &mut [i64]) -> Result<(), Failure>;
    /// Copy the owned particles to the host.
    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), Failure>;
    /// Copy the conserved state of the owned particles to the host for a checkpoint, in
    /// storage order (sorted by the cells of the last rebuild, kind and id; see
    /// [`ParticleState`]), on the whole grid ([`ParticleState::set_grid`] of
    /// [`Backend::grid`]: a checkpoint is refused without it).
    fn export_state(&mut self, out: &mut ParticleState) -> Result<(), Failure>;
    /// Replace every particle with `state` as owned particles: the state must be keyed on
    /// this backend's grid ([`ParticleState::relocate`] first) and lie in the device's
    /// slice. The cells are kept, not re-keyed; a rebuild with `rekey = false` follows,
    /// which sorts them and brings the copies, so a restart continues bitwise. Fails when
    /// the state lacks a buffer the case needs or has a cell outside the grid.
    fn import_state(&mut self, state: ParticleState) -> Result<(), String>;
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The diagnosis of a collapsed step names the fastest fluid particle (not a faster
    /// boundary or buffer one, not a non-finite one; the lowest id among equals) and the
    /// particle nearest to it, in units of dp.
    #[test]
    fn the_collapse_diagnosis_names_the_fastest_fluid_particle_and_its_nearest() {
        let (f, b) = (Kind::Fluid as u8, Kind::Boundary as u8);
        let snap = Snapshot {
            id: vec![3, 9, 7, 4, 5, 8],
            kind: vec![f, f, f, b, f, Kind::Buffer as u8],
            pos: vec![[0.0; 3], [0.5, 0.0, 0.0], [1.0, 2.0, 3.0], [1.0, 2.0, 3.005], [9.0, 9.0, 9.0], [1.0, 2.0, 3.0]],
            vel: vec![
                [1.0, 0.0, 0.0],
                [0.0, 30.0, 40.0],
                [0.0, -50.0, 0.0],
                [99.0, 0.0, 0.0],
                [f32::NAN, 0.0, 0.0],
                [80.0, 0.0, 0.0],
            ],
            rho: vec![1000.0, 1010.0, 1001.0, 2000.0, 1100.0, 3000.0],
            p: vec![0.0; 6],
        };
        // Particles 9 and 7 are equally fast (50 m/s): 7, the lower id; its nearest is the
        // buffer particle 8 at the same place (0 dp), before boundary particle 4 (0.5 dp).
        // The fluid density farthest from rho0 is 5's (100 kg/m^3 off; boundary particle 4's
        // and buffer particle 8's do not count).
        assert_eq!(
            snap.collapse_diagnosis(0.01, 1000.0).unwrap(),
            "the fastest fluid particle is 7 at (1.0000, 2.0000, 3.0000) m, 5.000e1 m/s, density 1001.0 kg/m^3, the \
             particle nearest to it buffer particle 8 at 0.000 dp; the fluid density farthest from rho0 is particle \
             5's, 1100.0 kg/m^3 at (9.0000, 9.0000, 9.0000) m"
        );
        // Where the fastest particle's density is the farthest, it is not named twice.
        let mut one = snap.clone();
        one.rho[2] = 1500.0;
        assert!(one
            .collapse_diagnosis(0.01, 1000.0)
            .unwrap()
            .ends_with("density 1500.0 kg/m^3, the particle nearest to it buffer particle 8 at 0.000 dp"));
        let mut boundary_only = snap.clone();
        boundary_only.kind = vec![b; 6];
        assert_eq!(boundary_only.collapse_diagnosis(0.01, 1000.0), None);
    }
}
