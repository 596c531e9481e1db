//! The one registry of per-particle buffers. Each entry gives the buffer's id (one bit, so a
//! set of buffers is a bitmask), its element type (16 bytes where possible), the field of
//! [`ParticleArrays`], its name in dumps, and whether it is conserved (moves with the
//! particle when arrays are re-ordered) or scratch (recomputed each step).

use bytemuck::Zeroable;

/// Particle kind, stored in `Info[1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// Fluid particle.
    Fluid = 0,
    /// Dynamic boundary particle (walls, obstacles).
    Boundary = 1,
}

impl Kind {
    /// From the stored code.
    pub fn from_code(c: u32) -> Kind {
        if c == 0 {
            Kind::Fluid
        } else {
            Kind::Boundary
        }
    }
    /// Name in output files.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Fluid => "fluid",
            Kind::Boundary => "boundary",
        }
    }
}

macro_rules! buffers {
    ($( $(#[$doc:meta])* $variant:ident => $field:ident : $ty:ty, $name:literal, $conserved:literal; )*) => {
        /// Identifies a per-particle buffer.
        #[derive(Debug, Clone, Copy, PartialEq, Eq)]
        #[repr(u32)]
        pub enum BufferId { $( $(#[$doc])* $variant ),* }

        impl BufferId {
            /// Every buffer, in registry order.
            pub const ALL: &'static [BufferId] = &[$(BufferId::$variant),*];
            /// The buffer's bit in a [`BufferSet`].
            pub const fn bit(self) -> u32 { 1 << (self as u32) }
            /// Name used in dumps and logs.
            pub const fn name(self) -> &'static str { match self { $(BufferId::$variant => $name),* } }
            /// Size of one element in bytes.
            pub const fn elem_bytes(self) -> usize { match self { $(BufferId::$variant => std::mem::size_of::<$ty>()),* } }
            /// True when the buffer moves with its particle.
            pub const fn conserved(self) -> bool { match self { $(BufferId::$variant => $conserved),* } }
        }

        /// Host-side arrays, one per registered buffer, all of the same length.
        #[derive(Debug, Clone, Default)]
        pub struct ParticleArrays { $( $(#[$doc])* pub $field: Vec<$ty>, )* }

        impl ParticleArrays {
            /// Arrays of n zeroed elements.
            pub fn zeroed(n: usize) -> Self {
                Self { $( $field: vec![<$ty>::zeroed(); n], )* }
            }
            /// Arrays of n zeroed elements for the buffers in `set`, empty ones for the others.
            pub fn with_buffers(n: usize, set: BufferSet) -> Self {
                Self { $( $field: if set.contains(BufferId::$variant) { vec![<$ty>::zeroed(); n] } else { Vec::new() }, )* }
            }
            /// Number of particles.
            pub fn len(&self) -> usize { self.info.len() }
            /// True when there are no particles.
            pub fn is_empty(&self) -> bool { self.info.is_empty() }
            /// Re-order every allocated conserved buffer: element k becomes old element
            /// `perm[k]`. `scratch` holds the same conserved buffers; its contents are clobbered.
            pub fn permute_conserved(&mut self, perm: &[u32], scratch: &mut Self) {
                $( if $conserved && !self.$field.is_empty() {
                    for (d, &p) in scratch.$field.iter_mut().zip(perm) { *d = self.$field[p as usize]; }
                    std::mem::swap(&mut self.$field, &mut scratch.$field);
                } )*
            }
        }
    };
}

buffers! {
    /// Offset of the position from the centre of the particle's cell (xyz), mass in w.
    Pos => pos: [f32; 4], "pos_offset_mass", true;
    /// Velocity (xyz) and centred relative density `rho/rho0 - 1` in w.
    Vel => vel: [f32; 4], "vel_rel_density", true;
    /// Integer coordinates of the particle's cell (xyz), 0 in w.
    Cell => cell: [i32; 4], "cell", true;
    /// Global id and kind code ([`Kind`]).
    Info => info: [u32; 2], "id_kind", true;
    /// Velocity and relative density one step back (Verlet) or at the step start (symplectic).
    VelPrev => vel_prev: [f32; 4], "vel_prev", true;
    /// Position offset at the step start (symplectic); cells do not change within a step.
    PosPrev => pos_prev: [f32; 4], "pos_prev", false;
    /// Acceleration including the body force (xyz) and rate of relative density in w.
    Force => force: [f32; 4], "acc_rel_density_rate", false;
    /// Boundary particles: unit normal of the nearest wall surface, pointing into the fluid
    /// (xyz), and the distance to that surface (w). Used by the Morris no-slip condition.
    Wall => wall: [f32; 4], "wall_normal_distance", true;
    /// Shifting: concentration gradient (xyz) and position divergence (w) of the last force pass.
    Shift => shift: [f32; 4], "shift_grad_c_div_r", false;
    /// Pressure, computed once per force pass.
    Press => press: f32, "pressure", false;
    /// Sort key: linear cell index times two, plus one for boundary particles.
    Key => key: u32, "sort_key", false;
    /// Sort permutation.
    Perm => perm: u32, "sort_perm", false;
}

/// A set of buffers as a bitmask of [`BufferId::bit`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct BufferSet(pub u32);

impl BufferSet {
    /// Every registered buffer.
    pub fn all() -> Self {
        BufferSet(BufferId::ALL.iter().fold(0, |m, b| m | b.bit()))
    }
    /// True when the set holds `b`.
    pub fn contains(self, b: BufferId) -> bool {
        self.0 & b.bit() != 0
    }
    /// The conserved buffers.
    pub fn conserved() -> Self {
        BufferSet(BufferId::ALL.iter().filter(|b| b.conserved()).fold(0, |m, b| m | b.bit()))
    }
    /// The buffers both sets hold.
    pub fn and(self, o: BufferSet) -> Self {
        BufferSet(self.0 & o.0)
    }
    /// The buffers a case needs: wall normals only with laminar viscosity (Morris no-slip),
    /// shifting sums only with shifting, the step-start positions only for the symplectic
    /// scheme.
    pub fn for_case(case: &crate::Case) -> Self {
        use crate::case::{Shifting, Viscosity};
        let mut s = Self::all().0;
        if !matches!(case.viscosity, Viscosity::Laminar { .. }) {
            s &= !BufferId::Wall.bit();
        }
        if case.shifting == Shifting::None {
            s &= !BufferId::Shift.bit();
        }
        if case.scheme != crate::config::Scheme::Symplectic {
            s &= !BufferId::PosPrev.bit();
        }
        BufferSet(s)
    }
    /// Bytes per particle of the buffers in the set.
    pub fn bytes_per_particle(self) -> usize {
        BufferId::ALL.iter().filter(|b| self.contains(**b)).map(|b| b.elem_bytes()).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn permutation_moves_conserved_buffers_only() {
        let mut a = ParticleArrays::zeroed(3);
        for i in 0..3 {
            a.info[i] = [i as u32 + 10, 0];
            a.press[i] = i as f32;
        }
        let mut s = ParticleArrays::with_buffers(3, BufferSet::conserved());
        a.permute_conserved(&[2, 0, 1], &mut s);
        assert_eq!(a.info.iter().map(|i| i[0]).collect::<Vec<_>>(), vec![12, 10, 11]);
        assert_eq!(a.press, vec![0.0, 1.0, 2.0]);
        assert!(BufferSet::all().bytes_per_particle() >= 100);
        assert!(BufferId::ALL.iter().all(|b| b.elem_bytes() != 12));
    }
}
