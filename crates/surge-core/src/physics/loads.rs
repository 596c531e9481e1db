//! Loads on solids: the force the fluid exerts on a boundary particle, from the momentum
//! terms of the force pass itself, so action is exactly minus reaction pair by pair.

use super::kernel::SmoothingKernel;
use super::options::{BoundaryModel, DiffusionModel, ShiftingModel, ViscosityModel};
use super::pair::{Accum, PairParticle, Physics};
use crate::V3;

impl<
        K: SmoothingKernel,
        V: ViscosityModel,
        D: DiffusionModel,
        S: ShiftingModel,
        B: BoundaryModel,
        const DIM: usize,
    > Physics<K, V, D, S, B, DIM>
{
    /// Boundary particle b, fluid neighbour f at `r = x_b - x_f` (within the support,
    /// r² > 0): adds to `out` the force of f on b, `-m_f a_fb`, where `a_fb` is the
    /// acceleration (pressure and viscosity) [`Physics::fluid_pair`] gives f from b (with
    /// mDBC, `pb.mdbc` holds b's viscous velocity of the last mDBC pass).
    #[inline(always)]
    pub fn load_pair(&self, r: V3, r2: f32, pb: &PairParticle, pf: &PairParticle, out: &mut V3) {
        let mut a = Accum::default();
        self.fluid_pair(-r, r2, pf, pb, false, &mut a);
        *out -= a.acc * pf.m;
    }
}
