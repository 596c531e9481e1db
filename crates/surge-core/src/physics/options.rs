//! Physics options as types. A backend's force loop is generic over these; the one runtime
//! `match` in [`crate::physics::pair::dispatch`]'s callers picks the monomorphised loop, so an
//! option that is off costs nothing. Each type holds only the constants its formula needs.

use super::diffusion::{fourtakas, molteni_colagrossi};
use super::viscosity::{monaghan_artificial, morris_laminar};
use crate::V3;

/// The geometry of one interacting pair, shared by all terms.
#[derive(Debug, Clone, Copy)]
pub struct PairGeom {
    /// `x_i - x_j`.
    pub r: V3,
    /// `|r|²`.
    pub r2: f32,
    /// The kernel's `F(|r|)`: `grad_i W_ij = r F`.
    pub f: f32,
    /// `grad_i W_ij`.
    pub gw: V3,
    /// `v_i - v_j`.
    pub v: V3,
    /// `v . r`.
    pub vr: f32,
}

/// A viscosity model: the viscous acceleration of particle i from particle j.
pub trait ViscosityModel: Copy + Send + Sync + 'static {
    /// Name used in logs and NVRTC defines.
    const NAME: &'static str;
    /// True when boundary neighbours take part with the Morris et al. (1997) mirrored velocity
    /// (no-slip at the wall surface rather than at the first boundary layer).
    const MIRROR_WALL: bool;
    /// Acceleration contribution.
    fn acc(&self, g: &PairGeom, rho_i: f32, rho_j: f32, m_j: f32) -> V3;
    /// The same from a boundary neighbour j: the viscosity times the case's boundary factor
    /// (`physics.viscosity.boundary_factor`).
    fn acc_wall(&self, g: &PairGeom, rho_i: f32, rho_j: f32, m_j: f32) -> V3;
}

/// Monaghan artificial viscosity.
#[derive(Debug, Clone, Copy)]
pub struct Artificial {
    /// alpha.
    pub alpha: f32,
    /// alpha of a fluid particle's pairs with boundary particles.
    pub alpha_wall: f32,
    /// Smoothing length.
    pub h: f32,
    /// Speed of sound used as the mean `c` of the pair (c0, as DualSPHysics does).
    pub c0: f32,
    /// `eta² = 0.01 h²`, keeps the denominator away from 0.
    pub eta2: f32,
}

impl ViscosityModel for Artificial {
    const NAME: &'static str = "artificial";
    const MIRROR_WALL: bool = false;
    #[inline(always)]
    fn acc(&self, g: &PairGeom, rho_i: f32, rho_j: f32, m_j: f32) -> V3 {
        monaghan_artificial(self.alpha, self.h, self.c0, 0.5 * (rho_i + rho_j), m_j, g.vr, g.r2, self.eta2, g.gw)
    }
    #[inline(always)]
    fn acc_wall(&self, g: &PairGeom, rho_i: f32, rho_j: f32, m_j: f32) -> V3 {
        monaghan_artificial(self.alpha_wall, self.h, self.c0, 0.5 * (rho_i + rho_j), m_j, g.vr, g.r2, self.eta2, g.gw)
    }
}

/// Morris laminar viscosity.
#[derive(Debug, Clone, Copy)]
pub struct Laminar {
    /// Kinematic viscosity nu.
    pub nu: f32,
    /// nu of a fluid particle's pairs with boundary particles.
    pub nu_wall: f32,
    /// `eta² = 0.01 h²`.
    pub eta2: f32,
}

impl ViscosityModel for Laminar {
    const NAME: &'static str = "laminar";
    const MIRROR_WALL: bool = true;
    #[inline(always)]
    fn acc(&self, g: &PairGeom, rho_i: f32, rho_j: f32, m_j: f32) -> V3 {
        morris_laminar(self.nu, rho_i, rho_j, m_j, g.r, g.r2, self.eta2, g.gw, g.v)
    }
    #[inline(always)]
    fn acc_wall(&self, g: &PairGeom, rho_i: f32, rho_j: f32, m_j: f32) -> V3 {
        morris_laminar(self.nu_wall, rho_i, rho_j, m_j, g.r, g.r2, self.eta2, g.gw, g.v)
    }
}

/// A density diffusion model: rate of the physical density of fluid particle i from fluid j.
pub trait DiffusionModel: Copy + Send + Sync + 'static {
    /// Name used in logs and NVRTC defines.
    const NAME: &'static str;
    /// False for [`NoDiffusion`]: the loop then skips the term entirely.
    const ON: bool;
    /// Rate contribution (kg/m³/s).
    fn rate(&self, g: &PairGeom, rho_i: f32, rho_j: f32, vol_j: f32) -> f32;
}

/// No density diffusion.
#[derive(Debug, Clone, Copy)]
pub struct NoDiffusion;

impl DiffusionModel for NoDiffusion {
    const NAME: &'static str = "none";
    const ON: bool = false;
    #[inline(always)]
    fn rate(&self, _: &PairGeom, _: f32, _: f32, _: f32) -> f32 {
        0.0
    }
}

/// Molteni–Colagrossi delta-SPH.
#[derive(Debug, Clone, Copy)]
pub struct MolteniColagrossi {
    /// `delta h c0`.
    pub delta_h_c0: f32,
    /// `eta²`.
    pub eta2: f32,
}

impl DiffusionModel for MolteniColagrossi {
    const NAME: &'static str = "molteni_colagrossi";
    const ON: bool = true;
    #[inline(always)]
    fn rate(&self, g: &PairGeom, rho_i: f32, rho_j: f32, vol_j: f32) -> f32 {
        molteni_colagrossi(self.delta_h_c0, rho_i, rho_j, g.r, g.r2, self.eta2, g.gw, vol_j)
    }
}

/// Fourtakas delta-SPH.
#[derive(Debug, Clone, Copy)]
pub struct Fourtakas {
    /// `delta h c0`.
    pub delta_h_c0: f32,
    /// `eta²`.
    pub eta2: f32,
    /// rho0.
    pub rho0: f32,
    /// Body force.
    pub g: V3,
    /// `1 / B`.
    pub inv_b: f32,
    /// `1 / gamma`.
    pub inv_gamma: f32,
}

impl DiffusionModel for Fourtakas {
    const NAME: &'static str = "fourtakas";
    const ON: bool = true;
    #[inline(always)]
    fn rate(&self, g: &PairGeom, rho_i: f32, rho_j: f32, vol_j: f32) -> f32 {
        fourtakas(
            self.delta_h_c0,
            rho_i,
            rho_j,
            g.r,
            g.r2,
            self.eta2,
            g.gw,
            vol_j,
            self.rho0,
            self.g,
            self.inv_b,
            self.inv_gamma,
        )
    }
}

/// A particle shifting model: whether the force pass accumulates the concentration gradient
/// and position divergence that the update turns into a shift.
pub trait ShiftingModel: Copy + Send + Sync + 'static {
    /// Name used in logs and NVRTC defines.
    const NAME: &'static str;
    /// False for [`NoShifting`].
    const ON: bool;
}

/// No shifting.
#[derive(Debug, Clone, Copy)]
pub struct NoShifting;

impl ShiftingModel for NoShifting {
    const NAME: &'static str = "none";
    const ON: bool = false;
}

/// Lind et al. (2012) shifting.
#[derive(Debug, Clone, Copy)]
pub struct LindShifting;

impl ShiftingModel for LindShifting {
    const NAME: &'static str = "lind";
    const ON: bool = true;
}

/// A boundary model: how boundary particles get their density, and which velocity of theirs
/// the viscous term of the fluid sees.
pub trait BoundaryModel: Copy + Send + Sync + 'static {
    /// Name used in logs and NVRTC defines.
    const NAME: &'static str;
    /// True for mDBC: a pass before each force pass sets the boundary particles' density and
    /// viscous velocity from their ghost nodes ([`crate::physics::mdbc`]); boundary particles
    /// then have no continuity equation, and the viscous term takes the mDBC velocity of a
    /// boundary neighbour (instead of the Morris mirrored one with laminar viscosity).
    const MDBC: bool;
}

/// Dynamic boundary particles (DBC).
#[derive(Debug, Clone, Copy)]
pub struct Dbc;

impl BoundaryModel for Dbc {
    const NAME: &'static str = "dbc";
    const MDBC: bool = false;
}

/// Modified dynamic boundary conditions.
#[derive(Debug, Clone, Copy)]
pub struct Mdbc;

impl BoundaryModel for Mdbc {
    const NAME: &'static str = "mdbc";
    const MDBC: bool = true;
}
