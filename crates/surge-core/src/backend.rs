//! The execution role: what a worker asks of a device (CPU cores, a GPU). The worker runs
//! the step plan over this trait and never knows which device it drives.

use crate::buffers::ParticleState;

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
}

/// Why a stage failed.
#[derive(Debug, Clone, PartialEq)]
pub enum Failure {
    /// The physics blew up: the lowest-id particle that left the domain or is not finite.
    Particle(BadParticle),
    /// The device failed; the message names the kernel or call (e.g. a CUDA error).
    Device(String),
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Failure::Particle(p) => {
                write!(f, "particle {} at ({:.4}, {:.4}, {:.4}) {}", p.id, p.pos[0], p.pos[1], p.pos[2], p.reason)
            }
            Failure::Device(m) => write!(f, "{m}"),
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
}

/// A device that runs the stages of a step on the particles it holds.
pub trait Backend: Send {
    /// Human-readable name, e.g. `cpu (2 threads)`.
    fn name(&self) -> String;
    /// Number of particles held.
    fn len(&self) -> usize;
    /// True when no particle is held.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }
    /// Device memory per particle (all buffers).
    fn bytes_per_particle(&self) -> usize;
    /// The skin of the backend's grid (cell size minus kernel support, in metres): the
    /// runtime rebuilds before any particle may have moved half of it.
    fn skin(&self) -> f64;
    /// Re-key every particle to the cell that holds it, sort by key, rebuild cell ranges.
    /// Fails with the lowest-id particle that left the domain or is not finite.
    fn rebuild(&mut self) -> Result<(), Failure>;
    /// One force pass: accelerations and density rates of every particle.
    fn forces(&mut self) -> Result<ForceStats, Failure>;
    /// Apply an update with time step dt. Fails with the lowest-id particle whose new state
    /// is not finite.
    fn update(&mut self, which: Update, dt: f64) -> Result<UpdateStats, Failure>;
    /// Copy the particles to the host.
    fn snapshot(&mut self, out: &mut Snapshot) -> Result<(), Failure>;
    /// Evaluate the case's gauges into `out` (one value per gauge, in order).
    fn gauges(&mut self, out: &mut Vec<f64>) -> Result<(), Failure>;
    /// Copy the conserved particle state to the host for a checkpoint, in storage order
    /// (sorted by the cell keys of the last rebuild; see [`ParticleState`]), and say which
    /// grid its cells refer to ([`ParticleState::set_grid`]: a checkpoint is refused
    /// without it). Postcondition: [`Backend::import_state`] of `out`, on any backend of the
    /// same case with the same grid, continues bitwise as this one would.
    fn export_state(&mut self, out: &mut ParticleState) -> Result<(), Failure>;
    /// Replace every particle with `state`. A state keyed on another grid is first
    /// re-located onto this backend's ([`ParticleState::relocate`]); then it must pass
    /// [`ParticleState::validate`]. The cells are kept, not re-keyed: the particles are
    /// sorted stably by their cell's key (a state in storage order keeps its order) and the
    /// cell table is rebuilt from them. Fails when the state lacks a buffer the case needs.
    fn import_state(&mut self, state: ParticleState) -> Result<(), String>;
}
