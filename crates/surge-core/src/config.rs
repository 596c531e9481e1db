//! The case file (TOML) as written by the user, and its validation into a [`Case`](crate::Case).
//!
//! Parsing goes file → `toml::Table` → `--set` overrides → typed [`CaseFile`] (every struct
//! denies unknown keys) → [`Case`](crate::Case) (checked, dimension resolved, derived constants). Every
//! error names the file and the field, in one sentence.

use serde::Deserialize;
use std::fmt;
use std::path::Path;

/// An error in a case file: which file, which field, what is expected.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseError {
    /// The case file (or `<string>` when parsed from memory).
    pub file: String,
    /// Dotted key path of the offending field, empty when the error is not about one field.
    pub field: String,
    /// What is wrong and what is expected.
    pub message: String,
}

impl fmt::Display for CaseError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.field.is_empty() {
            write!(f, "{}: {}", self.file, self.message)
        } else {
            write!(f, "{}: field `{}`: {}", self.file, self.field, self.message)
        }
    }
}

impl std::error::Error for CaseError {}

fn default_h_over_dp() -> f64 {
    1.5
}
fn default_rho0() -> f64 {
    1000.0
}
fn default_gamma() -> f64 {
    7.0
}
fn default_cfl() -> f64 {
    0.2
}
fn default_verlet_euler_every() -> u32 {
    40
}
fn default_formats() -> Vec<OutputFormat> {
    vec![OutputFormat::Vtu]
}

/// The case file exactly as the user writes it. See `configs/` and the README for examples.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CaseFile {
    /// Case name: output files are `<name>_NNNNN.vtu`; default: the file stem.
    pub name: Option<String>,
    /// Initial particle spacing `dp` (m).
    pub dp: f64,
    /// Smoothing length over particle spacing, `h = h_over_dp * dp`; default 1.5
    /// (Wendland C2 then has 2h = 3 dp support: about 28 neighbours in 2D, 110 in 3D).
    #[serde(default = "default_h_over_dp")]
    pub h_over_dp: f64,
    /// The simulation box; default: the bounding box of the geometry grown by one kernel
    /// support. Required with periodic axes (it sets the period).
    pub domain: Option<DomainSpec>,
    /// Physics options.
    #[serde(default)]
    pub physics: PhysicsSpec,
    /// Time stepping.
    pub time: TimeSpec,
    /// Frames and gauges.
    #[serde(default)]
    pub output: OutputSpec,
    /// Boxes filled with fluid particles on the dp lattice.
    #[serde(default)]
    pub fluid: Vec<FluidBox>,
    /// Walls: boundary particle layers outside chosen faces of a box.
    #[serde(default)]
    pub wall: Vec<WallBox>,
    /// Solid boxes of boundary particles.
    #[serde(default)]
    pub obstacle: Vec<ObstacleBox>,
    /// Floating rigid bodies: solids of boundary particles that the fluid moves.
    #[serde(default)]
    pub body: Vec<BodyTable>,
    /// Open boundaries where fluid enters (issue 15).
    #[serde(default)]
    pub inlet: Vec<OpenSpec>,
    /// Open boundaries where fluid leaves.
    #[serde(default)]
    pub outlet: Vec<OpenSpec>,
    /// Gauges written to `gauges.csv`.
    #[serde(default)]
    pub gauge: Vec<GaugeSpec>,
    /// Damping zones (wave absorption).
    #[serde(default)]
    pub damping: Vec<DampingSpec>,
    /// Initial velocity of the fluid; default at rest.
    pub initial_velocity: Option<InitialVelocity>,
    /// Periodic checkpoints; default none (a stop signal still writes one).
    #[serde(default)]
    pub checkpoint: CheckpointSpec,
    /// How the domain is cut between devices (`--devices`, `--workers`, MPI ranks).
    #[serde(default)]
    pub decomposition: DecompositionSpec,
    /// GPU options (the CUDA backend's; the CPU ignores them).
    #[serde(default)]
    pub gpu: GpuSpec,
}

/// GPU options. Not part of the case's identity: a restart may change them.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct GpuSpec {
    /// How the neighbour loops walk the stencil's cells; default `auto`.
    #[serde(default)]
    pub traversal: Traversal,
}

/// The neighbour traversal of the CUDA force pass and ghost-node (mDBC) pass
/// (docs/PERFORMANCE.md, "Neighbour traversals").
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Traversal {
    /// `ranges` in 3D, `cells` in 2D: what measured faster on an H100.
    #[default]
    Auto,
    /// The stencil's cells one by one, in the CPU's order.
    Cells,
    /// A row of the stencil's cells along the key's fastest axis as one range of particles.
    Ranges,
    /// `ranges` with each block's rows read once into shared memory (X-pencils, after Algis
    /// et al.); slower than `ranges` on an H100 (docs/PERFORMANCE.md).
    Pencil,
    /// A block per cell of the whole support (27 cells), its neighbour rows staged in shared
    /// memory (after Huang et al.'s CTA per cell); slower than `ranges` on an H100.
    Cta,
}

impl Traversal {
    /// Its name in `[gpu] traversal`.
    pub fn name(self) -> &'static str {
        match self {
            Traversal::Auto => "auto",
            Traversal::Cells => "cells",
            Traversal::Ranges => "ranges",
            Traversal::Pencil => "pencil",
            Traversal::Cta => "cta",
        }
    }

    /// What `auto` stands for in a case of `dim` dimensions with `periodic` axes along the
    /// fastest axis of the cell key, `fast_axis` (ranges need it walled: the row is cut at the
    /// grid's edges).
    pub fn resolve(self, dim: usize, fast_axis_periodic: bool) -> Traversal {
        match self {
            Traversal::Auto if dim == 3 && !fast_axis_periodic => Traversal::Ranges,
            Traversal::Auto => Traversal::Cells,
            Traversal::Ranges | Traversal::Pencil | Traversal::Cta if fast_axis_periodic => Traversal::Cells,
            t => t,
        }
    }
}

/// The split between devices. Not part of the case's identity: results do not depend on it
/// (devices reproduce one device's particles), and a restart may change it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DecompositionSpec {
    /// Axis cut into slices; default: the longest extent of the fluid among the axes that
    /// are not periodic.
    pub split_axis: Option<Axis>,
    /// Move slice boundaries toward the slower device (a posteriori load balancing);
    /// default true.
    #[serde(default = "default_true")]
    pub balance: bool,
    /// Steps between balancing decisions (each device's work time is measured over them);
    /// default 20 (a decision costs one gather of a number per device, and the boundaries
    /// move at the next rebuild, which comes every few steps anyway).
    #[serde(default = "default_balance_every")]
    pub balance_every: u32,
    /// Relative difference of two neighbours' work times above which their boundary moves
    /// (by the layers that halve the difference, at most 4 at once); default 0.02.
    #[serde(default = "default_balance_threshold")]
    pub balance_threshold: f64,
}

fn default_true() -> bool {
    true
}
fn default_balance_every() -> u32 {
    20
}
fn default_balance_threshold() -> f64 {
    0.02
}

impl Default for DecompositionSpec {
    fn default() -> Self {
        Self {
            split_axis: None,
            balance: true,
            balance_every: default_balance_every(),
            balance_threshold: default_balance_threshold(),
        }
    }
}

fn default_keep() -> u32 {
    2
}

/// Checkpoints written into `OUT/checkpoints/`, from which `surge run --restart` continues.
/// Not part of the case's identity: they may change on a restart.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CheckpointSpec {
    /// Simulated time between checkpoints (s); default none: only a stop signal (SIGTERM,
    /// SIGUSR1) writes one. With an interval, the end of the run writes one too, so the run
    /// can be extended later by a larger `time.end`.
    pub interval: Option<f64>,
    /// How many of the newest checkpoints to keep, default 2: the older one is the fallback
    /// when the newest is damaged.
    #[serde(default = "default_keep")]
    pub keep: u32,
}

impl Default for CheckpointSpec {
    fn default() -> Self {
        Self { interval: None, keep: default_keep() }
    }
}

/// The simulation box, its periodic axes and what happens to particles that leave it.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DomainSpec {
    /// Lower corner; give both corners or neither (default: the geometry's bounding box
    /// grown by one kernel support).
    pub min: Option<Vec<f64>>,
    /// Upper corner.
    pub max: Option<Vec<f64>>,
    /// Periodic axes, e.g. `["x"]`.
    #[serde(default)]
    pub periodic: Vec<Axis>,
    /// A fluid particle that leaves the domain (a jet over an open wall): `remove` it
    /// (default, as DualSPHysics and GPUSPH do) or `stop` the run naming it.
    #[serde(default)]
    pub on_exit: OnExit,
    /// With `on_exit = "remove"`, the run stops when more than this share of the initial
    /// fluid has left; default 0.05.
    #[serde(default = "default_max_removed")]
    pub max_removed: f64,
    /// A fluid particle whose density leaves `[min, max]` times `physics.rho0` is taken out
    /// as one that left the domain (removed and counted, or the run stops, by `on_exit`):
    /// DualSPHysics' `RhopOut`, default [0.7, 1.3] (its 700 and 1300 kg/m^3 for water). A
    /// density that far from rho0 is a particle running away (squeezed into a wall, or
    /// pulled apart), whose pressure, growing as rho^gamma, would collapse the time step.
    /// `[-inf, inf]` turns it off.
    pub density_range: Option<Vec<f64>>,
}

fn default_max_removed() -> f64 {
    0.05
}

/// What happens to a fluid particle that leaves the domain.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OnExit {
    /// Removed at the next rebuild and counted.
    #[default]
    Remove,
    /// The run stops, naming the particle and the step.
    Stop,
}

/// A coordinate axis.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Axis {
    /// x
    X,
    /// y
    Y,
    /// z
    Z,
}

impl Axis {
    /// 0, 1 or 2.
    pub fn index(self) -> usize {
        match self {
            Axis::X => 0,
            Axis::Y => 1,
            Axis::Z => 2,
        }
    }
}

/// Physics options; each one selects code at compile time in every backend.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PhysicsSpec {
    /// Reference density `rho0` (kg/m³), default 1000.
    #[serde(default = "default_rho0")]
    pub rho0: f64,
    /// Body force per unit mass (m/s²), e.g. gravity `[0, -9.81]`; default zero.
    #[serde(default)]
    pub body_force: Vec<f64>,
    /// Smoothing kernel.
    #[serde(default)]
    pub kernel: KernelKind,
    /// Tait equation of state.
    #[serde(default)]
    pub eos: EosSpec,
    /// Viscosity model.
    #[serde(default)]
    pub viscosity: ViscositySpec,
    /// Density diffusion (delta-SPH).
    #[serde(default)]
    pub density_diffusion: DiffusionSpec,
    /// Particle shifting; default none.
    #[serde(default)]
    pub shifting: ShiftingSpec,
    /// Boundary condition of walls and obstacles; default `dbc`.
    #[serde(default)]
    pub boundary: BoundarySpec,
    /// The shear of walls on the fluid that the particles do not resolve; default none.
    #[serde(default)]
    pub wall_function: WallFunctionSpec,
    /// Initial fluid pressure: `hydrostatic` (default when the body force does not act along
    /// a periodic axis: each fluid box starts at rest under its own free surface) or `zero`.
    pub initial_pressure: Option<InitialPressure>,
}

/// Initial fluid pressure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum InitialPressure {
    /// `p = rho0 |g| depth` below the top of each fluid box.
    Hydrostatic,
    /// Uniform density rho0 (plus any analytic field).
    Zero,
}

fn default_shift_coef() -> f64 {
    2.0
}

/// Particle shifting.
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ShiftingSpec {
    /// No shifting.
    #[default]
    None,
    /// Lind et al. (2012) Fickian shifting as in DualSPHysics: `dr = -A h |v| dt grad C`,
    /// switched off near the free surface (position divergence below the threshold).
    Lind {
        /// A, default 2.
        #[serde(default = "default_shift_coef")]
        coefficient: f64,
        /// Free-surface threshold of `div r`; default 1.5 in 2D, 2.75 in 3D.
        surface_threshold: Option<f64>,
    },
}

fn default_water_nu() -> f64 {
    1.0e-6
}

/// `physics.wall_function`: a turbulent wall shear at free-slip mDBC walls
/// ([`crate::physics::wall_function`]).
#[derive(Debug, Clone, Default, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum WallFunctionSpec {
    /// No wall shear beyond what the viscosity gives (default).
    #[default]
    None,
    /// The smooth-wall law of the wall (viscous sublayer, then log layer), evaluated for each
    /// fluid particle near a wall from its slip speed and its distance to the wall.
    LogLaw {
        /// The fluid's molecular kinematic viscosity (m²/s); default 1e-6 (water near 20 °C).
        #[serde(default = "default_water_nu")]
        nu: f64,
    },
}

/// Boundary condition of the boundary particles (walls and obstacles).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum BoundarySpec {
    /// Dynamic boundary particles (Crespo et al. 2007): boundary particles integrate the
    /// continuity equation over their fluid neighbours (default). A struct variant, so that
    /// a field of mDBC given with it (`slip`) is refused rather than ignored.
    Dbc {},
    /// Modified dynamic boundary conditions (English et al. 2022, DualSPHysics 5): each
    /// boundary particle takes its density (and the velocity the viscous term sees) from a
    /// ghost node mirrored across the wall surface, interpolated from the fluid there.
    Mdbc {
        /// `false` (default): no-slip, the viscous term sees `2 v_wall - v_ghost`; `true`:
        /// free slip, the ghost's velocity relative to the wall keeps its tangential part and
        /// has its normal part mirrored; `"wall"`: the wall's own velocity, as dynamic
        /// boundaries show it (the original mDBC, DualSPHysics 5.0's).
        #[serde(default)]
        slip: crate::case::Slip,
    },
}

/// `physics.boundary`'s `slip`: `true` (free), `false` (no-slip) or `"wall"`.
impl<'de> Deserialize<'de> for crate::case::Slip {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        use crate::case::Slip;
        struct V;
        impl serde::de::Visitor<'_> for V {
            type Value = Slip;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("true (free slip), false (no-slip) or \"wall\" (the wall's own velocity)")
            }
            fn visit_bool<E: serde::de::Error>(self, v: bool) -> Result<Slip, E> {
                Ok(if v { Slip::Free } else { Slip::No })
            }
            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<Slip, E> {
                match v {
                    "wall" => Ok(Slip::Wall),
                    _ => Err(E::invalid_value(serde::de::Unexpected::Str(v), &self)),
                }
            }
        }
        d.deserialize_any(V)
    }
}

impl Default for BoundarySpec {
    fn default() -> Self {
        BoundarySpec::Dbc {}
    }
}

impl Default for PhysicsSpec {
    fn default() -> Self {
        Self {
            rho0: default_rho0(),
            body_force: Vec::new(),
            kernel: KernelKind::default(),
            eos: EosSpec::default(),
            viscosity: ViscositySpec::default(),
            density_diffusion: DiffusionSpec::default(),
            shifting: ShiftingSpec::default(),
            boundary: BoundarySpec::default(),
            wall_function: WallFunctionSpec::default(),
            initial_pressure: None,
        }
    }
}

/// Smoothing kernel, both with support radius 2h.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum KernelKind {
    /// Wendland C2 (default).
    #[default]
    WendlandC2,
    /// Cubic B-spline (Monaghan & Lattanzio 1985).
    CubicSpline,
}

/// Tait equation of state `p = B((rho/rho0)^gamma - 1) + p_b`, `B = c0² rho0 / gamma`.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EosSpec {
    /// Polytropic exponent, default 7.
    #[serde(default = "default_gamma")]
    pub gamma: f64,
    /// Numerical speed of sound (m/s). Give this or `c0_coef`.
    pub c0: Option<f64>,
    /// `c0 = c0_coef * sqrt(|g| H)` with H the tallest fluid column along the body force
    /// (DualSPHysics' `coefsound`; SPHERIC Test 2's benchmark uses 20). Without c0 or
    /// c0_coef, c0 is ten times the fastest flow to expect: a dam-break front
    /// `2 sqrt(|g| H)`, the initial and the wall velocities (density varies about 1 %).
    pub c0_coef: Option<f64>,
    /// Background pressure `p_b` (Pa) added to Tait; default 0.
    #[serde(default)]
    pub background_pressure: f64,
}

impl Default for EosSpec {
    fn default() -> Self {
        Self { gamma: default_gamma(), c0: None, c0_coef: None, background_pressure: 0.0 }
    }
}

/// Viscosity model.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum ViscositySpec {
    /// Monaghan (1992) artificial viscosity with coefficient alpha.
    Artificial {
        /// Coefficient alpha (typically 0.01 to 0.1).
        alpha: f64,
        /// The factor on alpha for the pairs of a fluid particle and a boundary particle
        /// (DualSPHysics' `ViscoBoundFactor`; default 1).
        #[serde(default = "one")]
        boundary_factor: f64,
    },
    /// Morris et al. (1997) laminar viscosity with kinematic viscosity nu.
    Laminar {
        /// Kinematic viscosity (m²/s).
        nu: f64,
        /// The factor on nu for the pairs of a fluid particle and a boundary particle
        /// (default 1).
        #[serde(default = "one")]
        boundary_factor: f64,
    },
}

fn one() -> f64 {
    1.0
}

impl Default for ViscositySpec {
    fn default() -> Self {
        ViscositySpec::Artificial { alpha: 0.01, boundary_factor: 1.0 }
    }
}

/// Density diffusion term (delta-SPH).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum DiffusionSpec {
    /// No density diffusion.
    None,
    /// Molteni & Colagrossi (2009).
    MolteniColagrossi {
        /// Coefficient delta (typically 0.1).
        delta: f64,
    },
    /// Fourtakas et al. (2019): the hydrostatic part is removed from the density difference.
    Fourtakas {
        /// Coefficient delta (typically 0.1).
        delta: f64,
    },
}

impl Default for DiffusionSpec {
    fn default() -> Self {
        DiffusionSpec::MolteniColagrossi { delta: 0.1 }
    }
}

/// Time integration.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Scheme {
    /// Symplectic position-Verlet predictor-corrector, two force passes a step (default).
    #[default]
    Symplectic,
    /// Verlet (leap-frog style) with an Euler step every `verlet_euler_every` steps.
    Verlet,
}

/// Time stepping.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct TimeSpec {
    /// End time (s).
    pub end: f64,
    /// CFL coefficient of the variable time step, default 0.2.
    #[serde(default = "default_cfl")]
    pub cfl: f64,
    /// Integration scheme.
    #[serde(default)]
    pub scheme: Scheme,
    /// Verlet: one Euler step every this many steps, default 40.
    #[serde(default = "default_verlet_euler_every")]
    pub verlet_euler_every: u32,
    /// Upper limit on dt (s); default none.
    pub dt_max: Option<f64>,
}

/// Output formats for frames.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum OutputFormat {
    /// VTK unstructured grid (binary, appended raw), with a `.pvd` time series.
    Vtu,
    /// CSV, columns `id,kind,x,y[,z],vx,vy[,vz],rho,p`.
    Csv,
}

/// Frames and gauges.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OutputSpec {
    /// Simulated time between frames (s); default end/20. Frame 0 is the initial state.
    pub interval: Option<f64>,
    /// Simulated time between gauge rows (s); default the frame interval / 10.
    pub gauge_interval: Option<f64>,
    /// Frame formats, default `["vtu"]`.
    #[serde(default = "default_formats")]
    pub formats: Vec<OutputFormat>,
}

impl Default for OutputSpec {
    fn default() -> Self {
        Self { interval: None, gauge_interval: None, formats: default_formats() }
    }
}

/// The kind of a fluid, wall or obstacle shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ShapeKind {
    /// `min`, `max` (default).
    #[default]
    Box,
    /// `centre`, `axis`, `radius`, `length` in 3D; in 2D a circle: `centre`, `radius`.
    Cylinder,
    /// `centre`, `radius` (a circle in 2D).
    Sphere,
    /// `points` (the outline in the xy plane), and in 3D `extrude = [zmin, zmax]`.
    Polygon,
    /// `file`: a closed STL surface (binary or ASCII), the path relative to the case file.
    Mesh,
}

impl ShapeKind {
    /// The name in the case file.
    pub fn name(self) -> &'static str {
        match self {
            ShapeKind::Box => "box",
            ShapeKind::Cylinder => "cylinder",
            ShapeKind::Sphere => "sphere",
            ShapeKind::Polygon => "polygon",
            ShapeKind::Mesh => "mesh",
        }
    }
}

/// A rotation by `degrees` about `axis` (right-hand rule) through the shape's origin; in 2D
/// the axis is z and may be left out.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RotateSpec {
    /// Axis of rotation (3 numbers; default z, the only one in 2D).
    pub axis: Option<Vec<f64>>,
    /// Angle in degrees.
    pub degrees: f64,
}

/// Which side of a shape's surface a wall's layers lie on.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WallSide {
    /// Outside the closed surface: the fluid is inside (a tank) (default).
    #[default]
    Outside,
    /// Inside the surface: the fluid is outside (a hollow body's skin).
    Inside,
}

/// The keys every shape takes, borrowed from a [`FluidBox`], [`WallBox`] or [`ObstacleBox`].
#[derive(Debug, Clone, Copy)]
pub struct ShapeKeys<'a> {
    /// Kind.
    pub shape: ShapeKind,
    /// Box lower corner.
    pub min: Option<&'a [f64]>,
    /// Box upper corner.
    pub max: Option<&'a [f64]>,
    /// Sphere, cylinder: centre.
    pub centre: Option<&'a [f64]>,
    /// Cylinder axis.
    pub axis: Option<&'a [f64]>,
    /// Sphere, cylinder radius.
    pub radius: Option<f64>,
    /// Cylinder length.
    pub length: Option<f64>,
    /// Polygon outline.
    pub points: Option<&'a [Vec<f64>]>,
    /// Polygon z range in 3D.
    pub extrude: Option<&'a [f64]>,
    /// Mesh file.
    pub file: Option<&'a str>,
    /// Translation.
    pub translate: Option<&'a [f64]>,
    /// Rotation.
    pub rotate: Option<&'a RotateSpec>,
    /// Uniform scale.
    pub scale: Option<f64>,
}

/// Defines a shape-bearing table: the shape keys shared by `[[fluid]]`, `[[wall]]` and
/// `[[obstacle]]` (serde's `flatten` cannot be combined with `deny_unknown_fields`), and its
/// own keys.
macro_rules! shaped {
    ($(#[$m:meta])* $name:ident { $($(#[$fm:meta])* $f:ident : $t:ty,)* }) => {
        $(#[$m])*
        #[derive(Debug, Clone, Deserialize)]
        #[serde(deny_unknown_fields)]
        pub struct $name {
            /// `box` (default), `cylinder`, `sphere`, `polygon` or `mesh`.
            #[serde(default)]
            pub shape: ShapeKind,
            /// Box: lower corner.
            pub min: Option<Vec<f64>>,
            /// Box: upper corner.
            pub max: Option<Vec<f64>>,
            /// Sphere, cylinder: centre.
            pub centre: Option<Vec<f64>>,
            /// Cylinder (3D): axis direction.
            pub axis: Option<Vec<f64>>,
            /// Sphere, cylinder: radius.
            pub radius: Option<f64>,
            /// Cylinder (3D): length along the axis.
            pub length: Option<f64>,
            /// Polygon: the outline's vertices `[[x, y], ...]`.
            pub points: Option<Vec<Vec<f64>>>,
            /// Polygon in 3D: `[zmin, zmax]` of the prism.
            pub extrude: Option<Vec<f64>>,
            /// Mesh: STL file, relative to the case file.
            pub file: Option<String>,
            /// Moves the shape, applied last.
            pub translate: Option<Vec<f64>>,
            /// Rotates the shape about its own origin, after scaling.
            pub rotate: Option<RotateSpec>,
            /// Uniform scale factor, applied first (e.g. 0.001 for a mesh in mm).
            pub scale: Option<f64>,
            $($(#[$fm])* pub $f: $t,)*
        }

        impl $name {
            /// The shape keys.
            pub fn keys(&self) -> ShapeKeys<'_> {
                ShapeKeys {
                    shape: self.shape,
                    min: self.min.as_deref(),
                    max: self.max.as_deref(),
                    centre: self.centre.as_deref(),
                    axis: self.axis.as_deref(),
                    radius: self.radius,
                    length: self.length,
                    points: self.points.as_deref(),
                    extrude: self.extrude.as_deref(),
                    file: self.file.as_deref(),
                    translate: self.translate.as_deref(),
                    rotate: self.rotate.as_ref(),
                    scale: self.scale,
                }
            }
        }
    };
}

shaped! {
    /// A region filled with fluid particles on the dp lattice: a box at `min + (i + 1/2) dp`,
    /// or any other shape on the lattice anchored at its bounding box's lower corner.
    FluidBox {}
}

shaped! {
    /// Boundary layers along a surface. For a box: outside the chosen faces; the face itself
    /// is the wall surface, layer k sits at `(k + 1/2) dp` outside it, so fluid filling the box
    /// sits dp/2 inside it. For another shape: the lattice points within `layers * dp` of the
    /// closed surface, on the side `side` names.
    WallBox {
        /// Box walls: faces that carry layers: any of `x-`, `x+`, `y-`, `y+`, `z-`, `z+`;
        /// default all.
        faces: Option<Vec<String>>,
        /// Number of particle layers; default enough to fill the kernel support, ceil(2h/dp).
        layers: Option<u32>,
        /// Constant velocity of the wall (a moving lid or plate); default at rest.
        velocity: Option<Vec<f64>>,
        /// Prescribed motion: one law (`{ kind = "sinusoid", ... }`) or a list composed in
        /// order ([`MotionSpec`]).
        motion: Option<toml::Value>,
        /// A name a force gauge can use (`on = "NAME"`) besides `wall.INDEX`.
        name: Option<String>,
        /// Shapes other than an axis-aligned box: `outside` (default: a tank, fluid inside)
        /// or `inside` the surface.
        side: Option<WallSide>,
        /// mDBC only: free slip (`true`) or no-slip (`false`) on this solid; default
        /// `physics.boundary`'s `slip`.
        slip: Option<bool>,
    }
}

shaped! {
    /// A solid of boundary particles filled on the dp lattice.
    ObstacleBox {
        /// A name a force gauge can use (`on = "NAME"`) besides `obstacle.INDEX`.
        name: Option<String>,
        /// Prescribed motion: one law (`{ kind = "sinusoid", ... }`) or a list composed in
        /// order ([`MotionSpec`]).
        motion: Option<toml::Value>,
        /// mDBC only: free slip (`true`) or no-slip (`false`) on this solid; default
        /// `physics.boundary`'s `slip`.
        slip: Option<bool>,
    }
}

shaped! {
    /// A floating rigid body (`[[body]]`): a solid of boundary particles filled like an
    /// obstacle, moved each step by the fluid's force and moment and by gravity.
    BodyTable {
        /// A name for `bodies.csv` and force gauges (`on = "NAME"`) besides `body.INDEX`.
        name: Option<String>,
        /// Density (kg/m³): the mass is density × particles × dp³ (dp² in 2D). Give this or
        /// `mass`.
        density: Option<f64>,
        /// Mass (kg; kg per metre of depth in 2D).
        mass: Option<f64>,
        /// Centre of mass; default: the centroid of the body's particles.
        centre_of_mass: Option<Vec<f64>>,
        /// Inertia tensor about the centre of mass (kg m²): 3 principal values along x, y,
        /// z or 9 values (rows) in 3D, the value about z in 2D; default: from the particles.
        inertia: Option<Vec<f64>>,
        /// Initial velocity of the centre of mass; default at rest.
        velocity: Option<Vec<f64>>,
        /// Initial angular velocity (rad/s): 3 values in 3D, the rate about z in 2D.
        omega: Option<Vec<f64>>,
        /// Degrees of freedom held fixed: any of `x`, `y`, `z` (translations) and `rx`,
        /// `ry`, `rz` (rotations about axes through the centre of mass).
        fixed: Option<Vec<String>>,
        /// Mooring lines: linear springs, taut only, from a fixed anchor to a point of the
        /// body.
        moorings: Option<Vec<MooringSpec>>,
        /// A hinge: the body only turns about a fixed axis (`{ point, axis }`; 2D: about z
        /// through `point`).
        hinge: Option<HingeSpec>,
        /// mDBC only: free slip (`true`) or no-slip (`false`) on this solid; default
        /// `physics.boundary`'s `slip`.
        slip: Option<bool>,
    }
}

/// The hinge of a `[[body]]` (`hinge = { point = [...], axis = [...] }`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct HingeSpec {
    /// A point of the axis.
    pub point: Vec<f64>,
    /// Its direction (3D; 2D: z, not given).
    pub axis: Option<Vec<f64>>,
}

/// A mooring line of a `[[body]]` (`moorings = [{ anchor, fairlead, stiffness, length }]`).
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct MooringSpec {
    /// The fixed end.
    pub anchor: Vec<f64>,
    /// The body's end, where the geometry puts the body.
    pub fairlead: Vec<f64>,
    /// Stiffness (N/m; N/m per metre of depth in 2D).
    pub stiffness: f64,
    /// Unstretched length (m); default the distance from anchor to fairlead at the start.
    pub length: Option<f64>,
}

/// One law of a wall's or an obstacle's prescribed motion (`motion = {...}` or a list of
/// them, composed in order). Every law starts at rest where the geometry puts the solid.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum MotionSpec {
    /// Translation `amplitude (sin(2π t / period + phase) - sin(phase))` along `axis`.
    Sinusoid {
        /// Amplitude (m).
        amplitude: f64,
        /// Period (s).
        period: f64,
        /// Phase (radians); default 0.
        phase: Option<f64>,
        /// Direction of the motion (normalised).
        axis: Vec<f64>,
    },
    /// Rotation about the axis through `centre` by the angle `law` gives.
    Rotation {
        /// Axis direction (3D; in 2D the rotation is about z and the key is not taken).
        axis: Option<Vec<f64>>,
        /// A point of the axis.
        centre: Vec<f64>,
        /// The angle against time.
        law: AngleLaw,
    },
    /// Displacement from a CSV file of rows `time, dx, dy[, dz]` (relative to the case file;
    /// lines starting with `#` and a header row are skipped), linear between rows, held
    /// after the last; the first row is at t = 0 with zero displacement.
    Table {
        /// The CSV file.
        file: String,
    },
    /// A wave-maker paddle (piston or flap) making regular waves (`height`, `period`,
    /// `order` 1 or 2) or an irregular sea (`spectrum`) in water of `depth`, ramped up over
    /// `ramp` seconds.
    Wave {
        /// `piston` or `flap`.
        paddle: PaddleKind,
        /// Horizontal direction the waves travel (normalised).
        direction: Vec<f64>,
        /// Still-water depth at the paddle (m).
        depth: f64,
        /// Regular waves: wave height (m).
        height: Option<f64>,
        /// Regular waves: period (s).
        period: Option<f64>,
        /// Regular waves: 1 (default) or 2 (Madsen 1971's second-order piston signal).
        order: Option<u32>,
        /// Irregular sea instead of `height` and `period`.
        spectrum: Option<SpectrumSpec>,
        /// Flap: a point of the hinge line (at the bottom); the flap turns about the
        /// horizontal line through it normal to `direction`.
        hinge: Option<Vec<f64>>,
        /// Ramp-up time (s); default two periods (regular) or two peak periods.
        ramp: Option<f64>,
    },
}

impl MotionSpec {
    /// The `kind` key's value.
    pub fn kind(&self) -> &'static str {
        match self {
            MotionSpec::Sinusoid { .. } => "sinusoid",
            MotionSpec::Rotation { .. } => "rotation",
            MotionSpec::Table { .. } => "table",
            MotionSpec::Wave { .. } => "wave",
        }
    }
}

/// A wave paddle.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PaddleKind {
    /// A vertical plate moving along the wave direction.
    Piston,
    /// A plate hinged at the bottom.
    Flap,
}

/// An irregular sea.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SpectrumSpec {
    /// JONSWAP spectrum, components at equally spaced frequencies with seeded random phases.
    Jonswap {
        /// Significant wave height (m).
        hs: f64,
        /// Peak period (s).
        tp: f64,
        /// Peak enhancement factor; default 3.3.
        gamma: Option<f64>,
        /// Number of components; default 128.
        components: Option<usize>,
        /// Seed of the random phases; default 1.
        seed: Option<u64>,
    },
}

/// The angle of a rotation against time.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum AngleLaw {
    /// Constant rate.
    Constant {
        /// Degrees per second.
        rate: f64,
    },
    /// `amplitude (sin(2π t / period + phase) - sin(phase))`.
    Sinusoid {
        /// Degrees.
        amplitude: f64,
        /// Period (s).
        period: f64,
        /// Phase (radians); default 0.
        phase: Option<f64>,
    },
    /// A CSV file of rows `time, degrees` (relative to the case file), linear between rows,
    /// held after the last; the first row is at t = 0 with angle 0.
    Table {
        /// The CSV file.
        file: String,
    },
}

/// An open boundary (`[[inlet]]` or `[[outlet]]`, [`crate::open`]): a box of buffer layers
/// beside the plane the flow crosses.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct OpenSpec {
    /// A name for the log; default `inlet.N` / `outlet.N`.
    pub name: Option<String>,
    /// Lower corner of the buffer box.
    pub min: Vec<f64>,
    /// Upper corner. Across `direction` the box is the opening; along it, its face towards
    /// the fluid is the plane (the downstream face of an inlet's box, the upstream face of an
    /// outlet's), and the buffer reaches `layers` spacings beyond it.
    pub max: Vec<f64>,
    /// Buffer layers beyond the plane; default `ceil(2h/dp) + 1` (4 with h = 1.5 dp), at
    /// least the kernel support.
    pub layers: Option<u32>,
    /// The flow's direction: `+x`, `-x`, `+y`, `-y`, `+z` or `-z`.
    pub direction: String,
    /// The mean normal speed (m/s): a number, `[[t, u], ...]` (linear in between), or
    /// `"extrapolated"` from the fluid (outlets only). Inlets: required; outlets: default
    /// extrapolated.
    pub velocity: Option<OpenVelocitySpec>,
    /// `uniform` (default) or `parabolic` across the opening.
    pub profile: Option<String>,
    /// The buffer's pressure: a number (Pa), `"hydrostatic"` (below `level`), or
    /// `"extrapolated"`. Default: inlets extrapolated; outlets hydrostatic with a `level`,
    /// else 0.
    pub pressure: Option<OpenPressureSpec>,
    /// Free-surface level along the last axis: an inlet fills its opening only below it;
    /// `pressure = "hydrostatic"` is measured from it.
    pub level: Option<f64>,
}

/// `velocity` of an open boundary.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OpenVelocitySpec {
    /// A constant speed.
    Speed(f64),
    /// `(t, u)` points.
    Series(Vec<[f64; 2]>),
    /// `"extrapolated"`.
    Word(String),
}

/// `pressure` of an open boundary.
#[derive(Debug, Clone, Deserialize)]
#[serde(untagged)]
pub enum OpenPressureSpec {
    /// A fixed pressure (Pa).
    Value(f64),
    /// `"hydrostatic"` or `"extrapolated"`.
    Word(String),
}

/// A damping zone (`[[damping]]`): fluid velocities relax towards rest over the zone, as
/// DualSPHysics' damping zones do, to absorb waves at the end of a flume.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct DampingSpec {
    /// The axis along which the zone ramps up.
    pub axis: Axis,
    /// Coordinate where damping starts (none before it).
    pub start: f64,
    /// Coordinate where it reaches full strength (it stays full beyond); may be below
    /// `start` for a zone at the low end.
    pub end: f64,
    /// Largest relaxation rate (1/s); default 10. Each full update multiplies a fluid
    /// particle's velocity by `max(0, 1 - dt strength s²)`, s the position in the zone (0
    /// to 1).
    pub strength: Option<f64>,
}

/// A gauge: one column of `gauges.csv` (a force gauge: one per component).
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum GaugeSpec {
    /// Pressure at a point: kernel interpolation over fluid, Shepard-normalised; 0 when no
    /// fluid is within the kernel support.
    Pressure {
        /// Column name.
        name: String,
        /// The point, inside the domain.
        point: Vec<f64>,
    },
    /// Water height along the vertical line (last axis) through `at` (x in 2D, x,y in 3D),
    /// as a wire gauge reads it: the integral of the interpolated fluid fraction along the
    /// line from the domain bottom to its top (0 when dry).
    WaterHeight {
        /// Column name.
        name: String,
        /// Horizontal position of the line, inside the domain.
        at: Vec<f64>,
    },
    /// The largest coordinate of fluid along `axis`, optionally only fluid whose vertical
    /// coordinate (last axis) is below `below`.
    Front {
        /// Column name.
        name: String,
        /// Axis of the front.
        axis: Axis,
        /// Only fluid under this height counts (above the domain's bottom).
        below: Option<f64>,
    },
    /// Force and moment the fluid exerts on a wall or an obstacle: columns `NAME.fx`,
    /// `NAME.fy` (`NAME.fz`), then `NAME.mx`, `NAME.my`, `NAME.mz` in 3D or `NAME.mz` in 2D.
    Force {
        /// Column name prefix.
        name: String,
        /// The solid: `wall.INDEX`, `obstacle.INDEX` (from 0, in file order) or its `name`.
        on: String,
        /// The point the moment is taken about; default the centre of the solid's min/max box.
        about: Option<Vec<f64>>,
    },
}

impl GaugeSpec {
    /// The column name.
    pub fn name(&self) -> &str {
        match self {
            GaugeSpec::Pressure { name, .. }
            | GaugeSpec::WaterHeight { name, .. }
            | GaugeSpec::Front { name, .. }
            | GaugeSpec::Force { name, .. } => name,
        }
    }
}

/// Initial velocity of every fluid particle.
#[derive(Debug, Clone, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum InitialVelocity {
    /// The same velocity everywhere.
    Constant {
        /// The velocity (m/s).
        value: Vec<f64>,
    },
    /// 2D Taylor–Green vortex on the periodic domain of side L:
    /// `u = -U cos(2πx/L) sin(2πy/L)`, `v = U sin(2πx/L) cos(2πy/L)`, with the matching
    /// pressure `p = -rho0 U²/4 (cos(4πx/L) + cos(4πy/L))` set through the equation of state.
    TaylorGreen {
        /// Velocity amplitude U (m/s).
        u0: f64,
    },
    /// A developed turbulent boundary layer over the floor, along x: the smooth-wall law of
    /// the wall (`u+ = y+` to y+ 11.06, then `ln(y+) / 0.41 + 5.2`) at friction velocity
    /// `u_star`, y the height above the bottom of each fluid box (the last axis: z in 3D,
    /// y in 2D). An open-channel flow started developed, and the test of
    /// `physics.wall_function` (it takes such a layer the law's wall shear, rho u_star²).
    LogLaw {
        /// Friction velocity u* (m/s).
        u_star: f64,
        /// Kinematic viscosity (m²/s); default 1e-6, water's.
        #[serde(default = "default_water_nu")]
        nu: f64,
    },
}

/// Parse a case from TOML text, applying `key.path=value` overrides first.
pub fn parse_case_file(text: &str, file: &str, overrides: &[String]) -> Result<CaseFile, CaseError> {
    let err = |field: &str, message: String| CaseError { file: file.to_string(), field: field.to_string(), message };
    let mut table: toml::Table = text.parse().map_err(|e: toml::de::Error| {
        err("", format!("not valid TOML: {}", e.message().trim()) + &line_of(text, e.span()))
    })?;
    for o in overrides {
        apply_override(&mut table, o).map_err(|m| CaseError {
            file: file.to_string(),
            field: o.split('=').next().unwrap_or("").trim().to_string(),
            message: format!("--set {o}: {m}"),
        })?;
    }
    let value = toml::Value::Table(table);
    serde_path_to_error::deserialize::<_, CaseFile>(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        // `message()`, not `to_string()`: the latter appends "in `path`" on further lines, and
        // the error must stay one line.
        err(&path, e.inner().message().trim().to_string())
    })
}

fn line_of(text: &str, span: Option<std::ops::Range<usize>>) -> String {
    match span {
        Some(s) => format!(" (line {})", text[..s.start.min(text.len())].matches('\n').count() + 1),
        None => String::new(),
    }
}

/// Apply `a.b.c=value` to a TOML table; `value` is read as a TOML value and taken as a
/// string when it is not one (so `--set name=run2` works). Numeric segments index arrays
/// (`gauge.0.point=[1,2]`).
pub fn apply_override(table: &mut toml::Table, assignment: &str) -> Result<(), String> {
    let (path, raw) = assignment.split_once('=').ok_or("expected KEY.PATH=VALUE")?;
    let path: Vec<&str> = path.trim().split('.').collect();
    if path.iter().any(|p| p.is_empty()) {
        return Err("empty key in the path".into());
    }
    let raw = raw.trim();
    let value = match format!("v = {raw}").parse::<toml::Table>() {
        Ok(mut t) => t.remove("v").expect("parsed key"),
        Err(_) => toml::Value::String(raw.to_string()),
    };
    let mut root = toml::Value::Table(std::mem::take(table));
    let result = set_path(&mut root, &path, value);
    if let toml::Value::Table(t) = root {
        *table = t;
    }
    result
}

fn set_path(node: &mut toml::Value, path: &[&str], value: toml::Value) -> Result<(), String> {
    let (seg, rest) = path.split_first().expect("non-empty path");
    let child = match node {
        toml::Value::Table(t) if rest.is_empty() => {
            t.insert(seg.to_string(), value);
            return Ok(());
        }
        toml::Value::Table(t) => t.entry(seg.to_string()).or_insert_with(|| toml::Value::Table(toml::Table::new())),
        toml::Value::Array(a) => {
            let idx: usize = seg.parse().map_err(|_| format!("`{seg}`: a list is indexed by a number"))?;
            let len = a.len();
            a.get_mut(idx).ok_or(format!("index {idx} is past the end of a list of {len}"))?
        }
        _ => return Err(format!("`{seg}`: its parent is a value, not a table")),
    };
    if rest.is_empty() {
        *child = value;
        Ok(())
    } else {
        set_path(child, rest, value)
    }
}

/// Read and parse a case file from disk.
pub fn load_case_file(path: &Path, overrides: &[String]) -> Result<CaseFile, CaseError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| CaseError {
        file: file.clone(),
        field: String::new(),
        message: format!("cannot read the case file: {e}"),
    })?;
    parse_case_file(&text, &file, overrides)
}
