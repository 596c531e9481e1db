//! A small float32 3-vector; 2D cases keep z = 0.

use bytemuck::{Pod, Zeroable};
use std::ops::{Add, AddAssign, Mul, Neg, Sub, SubAssign};

/// Three float32 components; in 2D z is always 0.
#[derive(Debug, Clone, Copy, Default, PartialEq, Pod, Zeroable)]
#[repr(C)]
pub struct V3 {
    /// x
    pub x: f32,
    /// y
    pub y: f32,
    /// z
    pub z: f32,
}

impl V3 {
    /// The zero vector.
    pub const ZERO: V3 = V3 { x: 0.0, y: 0.0, z: 0.0 };
    /// From components.
    #[inline(always)]
    pub const fn new(x: f32, y: f32, z: f32) -> Self {
        Self { x, y, z }
    }
    /// From the first three lanes of a 16-byte value.
    #[inline(always)]
    pub fn from4(a: [f32; 4]) -> Self {
        Self { x: a[0], y: a[1], z: a[2] }
    }
    /// Back to a 16-byte value with `w` in the last lane.
    #[inline(always)]
    pub fn with_w(self, w: f32) -> [f32; 4] {
        [self.x, self.y, self.z, w]
    }
    /// Dot product.
    #[inline(always)]
    pub fn dot(self, o: V3) -> f32 {
        self.x * o.x + self.y * o.y + self.z * o.z
    }
    /// Squared length.
    #[inline(always)]
    pub fn norm2(self) -> f32 {
        self.dot(self)
    }
    /// Component by axis index.
    #[inline(always)]
    pub fn get(self, axis: usize) -> f32 {
        match axis {
            0 => self.x,
            1 => self.y,
            _ => self.z,
        }
    }
    /// From a float64 array (rounded).
    pub fn from_f64(a: [f64; 3]) -> Self {
        Self::new(a[0] as f32, a[1] as f32, a[2] as f32)
    }
}

impl Add for V3 {
    type Output = V3;
    #[inline(always)]
    fn add(self, o: V3) -> V3 {
        V3::new(self.x + o.x, self.y + o.y, self.z + o.z)
    }
}
impl Sub for V3 {
    type Output = V3;
    #[inline(always)]
    fn sub(self, o: V3) -> V3 {
        V3::new(self.x - o.x, self.y - o.y, self.z - o.z)
    }
}
impl Mul<f32> for V3 {
    type Output = V3;
    #[inline(always)]
    fn mul(self, s: f32) -> V3 {
        V3::new(self.x * s, self.y * s, self.z * s)
    }
}
impl Neg for V3 {
    type Output = V3;
    #[inline(always)]
    fn neg(self) -> V3 {
        V3::new(-self.x, -self.y, -self.z)
    }
}
impl AddAssign for V3 {
    #[inline(always)]
    fn add_assign(&mut self, o: V3) {
        *self = *self + o;
    }
}
impl SubAssign for V3 {
    #[inline(always)]
    fn sub_assign(&mut self, o: V3) {
        *self = *self - o;
    }
}
