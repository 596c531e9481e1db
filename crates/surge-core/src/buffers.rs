//! The one registry of per-particle buffers. Each entry gives the buffer's id (one bit, so a
//! set of buffers is a bitmask), its element type (16 bytes where possible), the field of
//! [`ParticleArrays`], its name in dumps, and whether it is conserved (moves with the
//! particle when arrays are re-ordered) or scratch (recomputed each step).

use crate::grid::Grid;
use bytemuck::Zeroable;

/// Particle kind, stored in `Info[1]`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u32)]
pub enum Kind {
    /// Fluid particle.
    Fluid = 0,
    /// Dynamic boundary particle (walls, obstacles).
    Boundary = 1,
    /// Buffer particle of an open boundary (issue 15, [`crate::open`]): stored with the fluid
    /// of its cell, it moves with the velocity its zone gives it and takes no force.
    Buffer = 2,
}

impl Kind {
    /// From the stored code.
    pub fn from_code(c: u32) -> Kind {
        match c {
            0 => Kind::Fluid,
            2 => Kind::Buffer,
            _ => Kind::Boundary,
        }
    }
    /// The bin of a cell the sort puts a particle of kind code `c` in: 0 for fluid and
    /// buffer particles (the neighbours a fluid particle sees as fluid), 1 for boundary.
    #[inline(always)]
    pub fn bin(c: u32) -> u32 {
        (c == Kind::Boundary as u32) as u32
    }
    /// Name in output files.
    pub fn name(self) -> &'static str {
        match self {
            Kind::Fluid => "fluid",
            Kind::Boundary => "boundary",
            Kind::Buffer => "buffer",
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
            /// Arrays of n elements for the buffers in `set` from the pool of host buffers
            /// ([`crate::staging`]; contents unspecified, to be overwritten), empty ones for
            /// the others.
            pub fn pooled(n: usize, set: BufferSet) -> Self {
                Self { $( $field: if set.contains(BufferId::$variant) { crate::staging::take(n) } else { Vec::new() }, )* }
            }
            /// Give every buffer's allocation to the pool of host buffers.
            pub fn recycle(self) {
                $( crate::staging::give(self.$field); )*
            }
            /// Number of particles.
            pub fn len(&self) -> usize { self.info.len() }
            /// True when there are no particles.
            pub fn is_empty(&self) -> bool { self.info.is_empty() }
            /// The bytes of buffer `id` (empty when it is not allocated).
            pub fn bytes(&self, id: BufferId) -> &[u8] {
                match id { $(BufferId::$variant => bytemuck::cast_slice(&self.$field)),* }
            }
            /// The bytes of buffer `id`, to fill in place.
            pub fn bytes_mut(&mut self, id: BufferId) -> &mut [u8] {
                match id { $(BufferId::$variant => bytemuck::cast_slice_mut(&mut self.$field)),* }
            }
            /// Make the buffers of `set` copies of those of `src`, reusing this set's
            /// allocations; the other buffers are emptied.
            pub fn copy_from(&mut self, src: &Self, set: BufferSet) {
                $( self.$field.clear();
                if set.contains(BufferId::$variant) { self.$field.extend_from_slice(&src.$field); } )*
            }
            /// Make the buffers of `set` copies of the particles `range` of `src`, reusing this
            /// set's allocations; the other buffers are emptied.
            pub fn copy_range_from(&mut self, src: &Self, set: BufferSet, range: std::ops::Range<usize>) {
                $( self.$field.clear();
                if set.contains(BufferId::$variant) { self.$field.extend_from_slice(&src.$field[range.clone()]); } )*
            }
            /// New arrays holding, for the buffers of `set`, the particles `idx` of this one
            /// in that order; the other buffers are empty.
            pub fn gather(&self, idx: &[u32], set: BufferSet) -> Self {
                let mut out = Self::default();
                $( if set.contains(BufferId::$variant) {
                    out.$field = idx.iter().map(|&i| self.$field[i as usize]).collect();
                } )*
                out
            }
            /// Resize the buffers of `set` to n particles (new elements zeroed).
            pub fn resize(&mut self, n: usize, set: BufferSet) {
                $( if set.contains(BufferId::$variant) { self.$field.resize(n, <$ty>::zeroed()); } )*
            }
            /// Move the buffers of `set` out of `src` (left empty there) into this set.
            pub fn take_from(&mut self, src: &mut Self, set: BufferSet) {
                $( if set.contains(BufferId::$variant) { self.$field = std::mem::take(&mut src.$field); } )*
            }
            /// Move buffer `id` out (left empty), to be read as bytes without a copy; with
            /// `pooled` its allocation goes to the pool of host buffers when the bytes are
            /// dropped.
            pub fn take_bytes(&mut self, id: BufferId, pooled: bool) -> OwnedBytes {
                match id { $(BufferId::$variant => {
                    let v = std::mem::take(&mut self.$field);
                    if pooled { OwnedBytes::pooled(v) } else { OwnedBytes::new(v) }
                }),* }
            }
            /// Append the particles of `other` (left empty) to every buffer.
            pub fn append(&mut self, other: &mut Self) {
                $( self.$field.append(&mut other.$field); )*
            }
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

/// A typed buffer moved out of its arrays ([`ParticleArrays::take_bytes`]) or plain bytes,
/// read as bytes: what a send to another rank owns until MPI is done with it, no copy made.
pub struct OwnedBytes(Option<Box<dyn AsBytes>>);

trait AsBytes: Send {
    fn bytes(&self) -> &[u8];
    /// Done with: dropped, or its allocation given to the pool of host buffers.
    fn release(self: Box<Self>);
}

impl<T: bytemuck::Pod + Send> AsBytes for Vec<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(self)
    }
    fn release(self: Box<Self>) {}
}

/// A vector whose allocation goes back to [`crate::staging`] when released.
struct Pooled<T>(Vec<T>);

impl<T: bytemuck::Pod + Send> AsBytes for Pooled<T> {
    fn bytes(&self) -> &[u8] {
        bytemuck::cast_slice(&self.0)
    }
    fn release(self: Box<Self>) {
        crate::staging::give(self.0)
    }
}

impl OwnedBytes {
    /// A vector of plain values, moved in.
    pub fn new<T: bytemuck::Pod + Send>(v: Vec<T>) -> OwnedBytes {
        OwnedBytes(Some(Box::new(v)))
    }
    /// A vector of plain values, moved in, whose allocation goes to the pool of host buffers
    /// ([`crate::staging`]) when the bytes are dropped (after MPI has sent them).
    pub fn pooled<T: bytemuck::Pod + Send>(v: Vec<T>) -> OwnedBytes {
        OwnedBytes(Some(Box::new(Pooled(v))))
    }
    /// The bytes.
    pub fn bytes(&self) -> &[u8] {
        self.0.as_ref().map_or(&[], |b| b.bytes())
    }
}

impl Drop for OwnedBytes {
    fn drop(&mut self) {
        if let Some(b) = self.0.take() {
            b.release();
        }
    }
}

impl From<Vec<u8>> for OwnedBytes {
    fn from(v: Vec<u8>) -> OwnedBytes {
        OwnedBytes::new(v)
    }
}

impl std::fmt::Debug for OwnedBytes {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OwnedBytes({} bytes)", self.bytes().len())
    }
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
    /// (xyz), and the distance to that surface (w), from the geometry (walls and obstacles
    /// today; imported geometry will fill it the same way). Used by the Morris no-slip
    /// condition and by mDBC (the ghost node lies at twice the distance along the normal).
    Wall => wall: [f32; 4], "wall_normal_distance", true;
    /// mDBC: per boundary particle, the velocity the viscous term sees (xyz) and the relative
    /// density taken from the ghost node (w), of the last mDBC pass.
    Mdbc => mdbc: [f32; 4], "mdbc_velocity_density", false;
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
    /// The buffers a case needs: wall normals only with laminar viscosity (Morris no-slip)
    /// or mDBC, the mDBC values only with mDBC, shifting sums only with shifting, the
    /// step-start positions only for the symplectic scheme.
    pub fn for_case(case: &crate::Case) -> Self {
        use crate::case::{Shifting, Viscosity};
        let mut s = Self::all().0;
        if !matches!(case.viscosity, Viscosity::Laminar { .. }) && !case.boundary.is_mdbc() {
            s &= !BufferId::Wall.bit();
        }
        if !case.boundary.is_mdbc() {
            s &= !BufferId::Mdbc.bit();
        }
        if case.shifting == Shifting::None {
            s &= !BufferId::Shift.bit();
        }
        if case.scheme != crate::config::Scheme::Symplectic {
            s &= !BufferId::PosPrev.bit();
        }
        BufferSet(s)
    }
    /// The buffers of this set that `o` does not hold.
    pub fn without(self, o: BufferSet) -> Self {
        BufferSet(self.0 & !o.0)
    }
    /// The buffers of the set, in registry order.
    pub fn iter(self) -> impl Iterator<Item = BufferId> {
        BufferId::ALL.iter().copied().filter(move |b| self.contains(*b))
    }
    /// Bytes per particle of the buffers in the set.
    pub fn bytes_per_particle(self) -> usize {
        self.iter().map(|b| b.elem_bytes()).sum()
    }
}

/// The conserved state of particles in a form every backend and the checkpoint files share:
/// the conserved buffers a case allocates ([`BufferSet::for_case`] and
/// [`BufferSet::conserved`]), as host arrays of the registry's element types. Scratch
/// buffers are recomputed each step and never part of it.
///
/// Order: sorted by the linear key of the stored cells, slices of devices one after the
/// other. Positions stay in cell + offset form, and the cells are those of the last rebuild
/// (a particle may have moved past its cell's edge since), so a backend rebuilds its cell
/// table from them without re-keying and continues bitwise where the exporter stopped.
///
/// The cells refer to the grid of the backend that exported the state ([`Self::grid`]):
/// backends may choose their own cell size (skin), so one whose grid differs re-locates the
/// particles on import ([`Self::relocate`]), exact to float32 rounding of the offsets.
#[derive(Debug, Clone, Default)]
pub struct ParticleState {
    /// Which buffers are held; kept explicitly, since a device may hold no particle.
    buffers: BufferSet,
    arrays: ParticleArrays,
    /// The grid the cells refer to; `None` until the exporter says.
    grid: Option<Grid>,
}

impl ParticleState {
    /// n zeroed particles with the conserved buffers of `set` (its scratch buffers are
    /// ignored), to fill through [`ParticleState::bytes_mut`].
    pub fn zeroed(n: usize, set: BufferSet) -> Self {
        let buffers = set.and(BufferSet::conserved());
        ParticleState { buffers, arrays: ParticleArrays::with_buffers(n, buffers), grid: None }
    }
    /// n particles with the conserved buffers of `set`, in host buffers from the pool kept
    /// from rebuild to rebuild ([`crate::staging`]): contents unspecified, to fill through
    /// [`ParticleState::bytes_mut`]; [`ParticleState::recycle`] gives them back.
    pub fn pooled(n: usize, set: BufferSet) -> Self {
        let buffers = set.and(BufferSet::conserved());
        ParticleState { buffers, arrays: ParticleArrays::pooled(n, buffers), grid: None }
    }
    /// Give the buffers' allocations to the pool of host buffers ([`crate::staging`]), once
    /// their particles are uploaded.
    pub fn recycle(self) {
        self.arrays.recycle()
    }
    /// Copy the conserved buffers of `set` out of a device's arrays, reusing this state's
    /// allocations.
    pub fn copy_from(&mut self, src: &ParticleArrays, set: BufferSet) {
        self.buffers = set.and(BufferSet::conserved());
        self.arrays.copy_from(src, self.buffers);
    }
    /// Copy the conserved buffers of `set` of the particles `range` of a device's arrays.
    pub fn copy_range_from(&mut self, src: &ParticleArrays, set: BufferSet, range: std::ops::Range<usize>) {
        self.buffers = set.and(BufferSet::conserved());
        self.arrays.copy_range_from(src, self.buffers, range);
    }
    /// The particles `idx` of a device's arrays (conserved buffers of `set`), on `grid`.
    pub fn gather(src: &ParticleArrays, idx: &[u32], set: BufferSet, grid: &Grid) -> Self {
        let buffers = set.and(BufferSet::conserved());
        ParticleState { buffers, arrays: src.gather(idx, buffers), grid: Some(grid.clone()) }
    }
    /// No particle, with the conserved buffers of `set`, on `grid`.
    pub fn empty(set: BufferSet, grid: &Grid) -> Self {
        ParticleState {
            buffers: set.and(BufferSet::conserved()),
            arrays: ParticleArrays::default(),
            grid: Some(grid.clone()),
        }
    }
    /// Split into parts by `part(index) -> part number` (< parts), keeping the order.
    pub fn split(&self, parts: usize, part: impl Fn(usize) -> usize) -> Vec<ParticleState> {
        let mut idx = vec![Vec::new(); parts];
        for i in 0..self.len() {
            idx[part(i)].push(i as u32);
        }
        idx.iter()
            .map(|ix| ParticleState {
                buffers: self.buffers,
                arrays: self.arrays.gather(ix, self.buffers),
                grid: self.grid.clone(),
            })
            .collect()
    }
    /// Say which grid the cells refer to: every exporter must (see [`Self::grid`]).
    pub fn set_grid(&mut self, grid: &Grid) {
        self.grid = Some(grid.clone());
    }
    /// The grid the cells refer to, when the exporter said.
    pub fn grid(&self) -> Option<&Grid> {
        self.grid.as_ref()
    }
    /// Re-key every particle from the grid it was stored on to `to` through its absolute
    /// position (float64), wrapping periodic axes: what a backend with another cell size
    /// does on import. Does nothing when the grids are the same (or the state does not say
    /// its grid), so that a restart on the same grid stays bitwise. A particle beyond the
    /// last cell of `to` along an axis without periodicity (the cells of another size reach
    /// past the domain by another margin: a particle that left the domain within the step
    /// the state was taken at lies there) is kept at its exact position in the nearest cell,
    /// its offset past the cell's half, so that the backend's first re-key finds it outside
    /// the domain, as one that left in a step (removed or stopping the run, by
    /// `[domain] on_exit`). Fails with the lowest id of a particle whose position is not
    /// finite.
    pub fn relocate(&mut self, to: &Grid) -> Result<(), String> {
        let from = match self.grid.take() {
            Some(g) if g != *to => g,
            other => {
                self.grid = other;
                return Ok(());
            }
        };
        let a = &mut self.arrays;
        let mut outside: Option<u32> = None;
        for i in 0..a.len() {
            let x = from.absolute(a.cell[i], a.pos[i]);
            let (c, off) = to.locate(x);
            let c4 = [c[0], c[1], c[2], 0];
            let o4 = [off[0], off[1], off[2], a.pos[i][3]];
            match to.rekey(c4, o4).or_else(|| to.locate_clamped(x)) {
                Some((c, o)) => (a.cell[i], a.pos[i]) = (c, [o[0], o[1], o[2], a.pos[i][3]]),
                None => {
                    let id = a.info[i][0];
                    outside = Some(outside.map_or(id, |o| o.min(id)));
                }
            }
        }
        if let Some(id) = outside {
            return Err(format!("particle {id} has a position that is not finite"));
        }
        self.grid = Some(to.clone());
        Ok(())
    }
    /// The buffers held.
    pub fn buffers(&self) -> BufferSet {
        self.buffers
    }
    /// Number of particles.
    pub fn len(&self) -> usize {
        self.arrays.len()
    }
    /// True when there is no particle.
    pub fn is_empty(&self) -> bool {
        self.arrays.is_empty()
    }
    /// The arrays (the buffers not held are empty).
    pub fn arrays(&self) -> &ParticleArrays {
        &self.arrays
    }
    /// The arrays, to change values in place; keep every held buffer at the same length.
    pub fn arrays_mut(&mut self) -> &mut ParticleArrays {
        &mut self.arrays
    }
    /// The raw bytes of a held buffer (empty for one not held).
    pub fn bytes(&self, id: BufferId) -> &[u8] {
        self.arrays.bytes(id)
    }
    /// The raw bytes of a held buffer, to fill in place (e.g. straight from a file).
    pub fn bytes_mut(&mut self, id: BufferId) -> &mut [u8] {
        self.arrays.bytes_mut(id)
    }
    /// The arrays, for a backend to move into its own.
    pub fn into_arrays(self) -> ParticleArrays {
        self.arrays
    }
    /// Append the particles of `other` (the next slice in key order); both must hold the
    /// same buffers.
    pub fn append(&mut self, mut other: ParticleState) -> Result<(), String> {
        if other.grid != self.grid {
            return Err("particle states on different grids cannot be joined".into());
        }
        if other.buffers != self.buffers {
            return Err(format!(
                "particle states with different buffers ({} and {}) cannot be joined",
                names(self.buffers),
                names(other.buffers)
            ));
        }
        self.arrays.append(&mut other.arrays);
        Ok(())
    }

    /// Make a state ready for a backend to take as its owned particles: the conserved
    /// buffers `want`, keyed on `grid` ([`Self::relocate`]), and valid there
    /// ([`Self::validate_part`]).
    pub fn prepare_import(&mut self, want: BufferSet, grid: &Grid) -> Result<(), String> {
        require(self.buffers, want)?;
        self.relocate(grid)?;
        self.validate_part(grid)
    }

    /// Check a whole state (every particle of a case) before it is split between devices:
    /// every held buffer has one element per particle, ids are unique (removal and open
    /// boundaries leave gaps and add ids past the fill's), kinds are known and cells lie in
    /// `grid`. A state that passes cannot make a backend index out of bounds.
    pub fn validate(&self, grid: &Grid) -> Result<(), String> {
        self.validate_part(grid)
    }

    /// [`Self::validate`] for a device's part of a state.
    pub fn validate_part(&self, grid: &Grid) -> Result<(), String> {
        let n = self.len();
        for b in self.buffers.iter() {
            let len = self.arrays.bytes(b).len() / b.elem_bytes();
            if len != n {
                return Err(format!("buffer `{}` holds {len} particles, `id_kind` {n}", b.name()));
            }
        }
        let mut ids: Vec<u32> = self.arrays.info.iter().map(|i| i[0]).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(format!("id {} is held by two particles: ids must be unique", w[0]));
        }
        for (i, info) in self.arrays.info.iter().enumerate() {
            let [id, kind] = *info;
            if kind > Kind::Buffer as u32 {
                return Err(format!("particle {id} has the unknown kind code {kind}"));
            }
            let c = self.arrays.cell[i];
            if (0..3).any(|a| c[a] < 0 || c[a] >= grid.n[a]) {
                return Err(format!("particle {id} is in cell {:?}, outside the grid of {:?} cells", &c[..3], grid.n));
            }
        }
        Ok(())
    }
}

/// `Ok` when particle data holding the buffers `held` is what a case needing `want` takes;
/// else the message naming both.
pub fn require(held: BufferSet, want: BufferSet) -> Result<(), String> {
    if held == want {
        return Ok(());
    }
    Err(format!("the particle state holds the buffers [{}], this case needs [{}]", names(held), names(want)))
}

/// The names of the buffers of a set, for messages.
pub fn names(set: BufferSet) -> String {
    set.iter().map(|b| b.name()).collect::<Vec<_>>().join(", ")
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

    #[test]
    fn particle_state_holds_conserved_buffers_only_and_validates() {
        let mut a = ParticleArrays::zeroed(3);
        for i in 0..3 {
            a.info[i] = [2 - i as u32, (i % 2) as u32];
            a.pos[i] = [i as f32, 0.5, 0.0, 1.0];
        }
        let mut s = ParticleState::default();
        s.copy_from(&a, BufferSet::all());
        assert_eq!(s.buffers(), BufferSet::conserved());
        assert_eq!(s.len(), 3);
        assert!(s.arrays().press.is_empty() && s.arrays().key.is_empty());
        assert_eq!(s.bytes(BufferId::Pos), bytemuck::cast_slice::<_, u8>(&a.pos));
        assert!(s.bytes(BufferId::Press).is_empty());

        let grid = crate::grid::Grid {
            origin: [0.0; 3],
            cell: [1.0; 3],
            n: [2, 2, 1],
            periodic: [false; 3],
            order: [0, 1, 2],
            dim: 2,
            support: 0.8,
            skin: 0.2,
            reach: 1,
            window: (0, 2),
        };
        s.validate(&grid).unwrap();
        let mut bad = s.clone();
        bad.arrays_mut().info[1][0] = 0;
        assert!(bad.validate(&grid).unwrap_err().contains("ids must be unique"));
        let mut bad = s.clone();
        bad.arrays_mut().cell[2] = [0, 2, 0, 0];
        assert!(bad.validate(&grid).unwrap_err().contains("outside the grid"));
        let mut bad = s.clone();
        bad.arrays_mut().vel.pop();
        assert!(bad.validate(&grid).unwrap_err().contains("vel_rel_density"));

        // Another grid: cells of half the size, shifted origin, periodic along y.
        s.set_grid(&grid);
        let fine = crate::grid::Grid {
            origin: [-0.25, 0.0, 0.0],
            cell: [0.5, 0.25, 1.0],
            n: [5, 8, 1],
            window: (0, 5),
            ..grid.clone()
        };
        let mut moved = s.clone();
        moved.arrays_mut().pos[2] = [0.3, -0.2, 0.0, 1.0];
        let mut back = moved.clone();
        back.relocate(&fine).unwrap();
        assert_eq!(back.grid(), Some(&fine));
        back.validate(&fine).unwrap();
        back.relocate(&grid).unwrap();
        for i in 0..3 {
            let (x, y) = (
                grid.absolute(moved.arrays().cell[i], moved.arrays().pos[i]),
                grid.absolute(back.arrays().cell[i], back.arrays().pos[i]),
            );
            assert!((0..2).all(|a| (x[a] - y[a]).abs() < 1e-7), "particle {i}: {x:?} -> {y:?}");
            assert!(back.arrays().pos[i].iter().take(2).all(|o| o.abs() <= 0.5), "re-keyed into the cell holding it");
        }
        // The same grid changes nothing.
        let mut same = moved.clone();
        same.relocate(&grid).unwrap();
        assert_eq!(same.bytes(BufferId::Pos), moved.bytes(BufferId::Pos));
        // Beyond a grid that is not periodic there: kept at its position in the nearest cell
        // (its offset past the cell's half), for the first re-key to find outside.
        let small = crate::grid::Grid { n: [1, 2, 1], periodic: [false; 3], window: (0, 1), ..grid.clone() };
        // (Id 1, stored at index 1, is at x = 1.5.)
        let x1 = grid.absolute(moved.arrays().cell[1], moved.arrays().pos[1]);
        let mut kept = moved.clone();
        kept.relocate(&small).unwrap();
        kept.validate(&small).unwrap();
        let y1 = small.absolute(kept.arrays().cell[1], kept.arrays().pos[1]);
        assert!((0..2).all(|a| (x1[a] - y1[a]).abs() < 1e-7), "{x1:?} -> {y1:?}");
        assert_eq!(kept.arrays().cell[1][0], 0);
        assert!(small.rekey(kept.arrays().cell[1], kept.arrays().pos[1]).is_none(), "outside at the first re-key");
        // A position that is not finite: named by id.
        let mut bad = moved.clone();
        bad.arrays_mut().pos[1][0] = f32::NAN;
        let e = bad.relocate(&small).unwrap_err();
        assert!(e.contains("particle 1 has a position that is not finite"), "{e}");

        let mut joined = s.clone();
        joined.append(s.clone()).unwrap();
        assert_eq!(joined.len(), 6);
        let mut fewer = ParticleState::default();
        fewer.copy_from(&a, BufferSet::conserved().without(BufferSet(BufferId::Wall.bit())));
        assert!(joined.append(fewer.clone()).unwrap_err().contains("different grids"));
        fewer.set_grid(&grid);
        assert!(joined.append(fewer).unwrap_err().contains("wall_normal_distance"));
    }
}
