//! Shapes beyond axis-aligned boxes: a rotated box, a sphere (a circle in 2D), a capped
//! cylinder, a polygon (2D, or extruded along z in 3D) and a closed triangle mesh, each
//! placed by `scale`, then `rotate`, then `translate`:
//! `world = R (scale * local) + translate`, R rotating about the shape's own origin.
//!
//! A shape answers two questions for the fill ([`crate::geometry`]): is a point inside, and
//! which surface point is nearest to it (for wall layers, wall normals and the gap between
//! fluid and solids). Analytic shapes answer both exactly in their local frame; a mesh
//! through [`MeshIndex`], in world coordinates, within its `reach`.

use crate::case::Aabb;
use crate::mesh::{add, cross, dot, norm, scale as vscale, sub, MeshIndex};
use std::sync::Arc;

/// A shape in its own frame.
#[derive(Debug, Clone, PartialEq)]
pub enum Primitive {
    /// A box (`shape = "box"` with `rotate`).
    Box {
        /// Lower corner.
        min: [f64; 3],
        /// Upper corner.
        max: [f64; 3],
    },
    /// A sphere in 3D, a circle in 2D.
    Sphere {
        /// Centre.
        centre: [f64; 3],
        /// Radius.
        radius: f64,
    },
    /// A cylinder with flat caps (3D).
    Cylinder {
        /// Centre of the axis segment.
        centre: [f64; 3],
        /// Unit axis.
        axis: [f64; 3],
        /// Radius.
        radius: f64,
        /// Length along the axis, caps included.
        length: f64,
    },
    /// A closed polygon in the xy plane (winding rule: inside where the winding number is
    /// not zero), extruded over `[z0, z1]` in 3D.
    Polygon {
        /// Vertices in order; the last joins the first.
        points: Vec<[f64; 2]>,
        /// The extrusion's z range (3D); `None` in 2D.
        extrude: Option<[f64; 2]>,
    },
    /// A closed triangle mesh, already in world coordinates (the placement was applied to
    /// its vertices).
    Mesh(Arc<MeshIndex>),
}

/// `scale`, then a rotation, then `translate`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Placement {
    /// Rotation matrix (rows).
    pub rot: [[f64; 3]; 3],
    /// Uniform scale factor.
    pub scale: f64,
    /// Translation.
    pub translate: [f64; 3],
}

impl Placement {
    /// No change.
    pub const IDENTITY: Placement =
        Placement { rot: [[1.0, 0.0, 0.0], [0.0, 1.0, 0.0], [0.0, 0.0, 1.0]], scale: 1.0, translate: [0.0; 3] };

    /// The rotation by `degrees` about the unit `axis` (right-hand rule, Rodrigues).
    pub fn rotation(axis: [f64; 3], degrees: f64) -> [[f64; 3]; 3] {
        let k = vscale(axis, 1.0 / norm(axis));
        let (s, c) = degrees.to_radians().sin_cos();
        let t = 1.0 - c;
        [
            [c + k[0] * k[0] * t, k[0] * k[1] * t - k[2] * s, k[0] * k[2] * t + k[1] * s],
            [k[1] * k[0] * t + k[2] * s, c + k[1] * k[1] * t, k[1] * k[2] * t - k[0] * s],
            [k[2] * k[0] * t - k[1] * s, k[2] * k[1] * t + k[0] * s, c + k[2] * k[2] * t],
        ]
    }

    /// True when nothing rotates.
    pub fn is_axis_aligned(&self) -> bool {
        self.rot == Self::IDENTITY.rot
    }

    /// Local to world.
    pub fn apply(&self, p: [f64; 3]) -> [f64; 3] {
        add(self.apply_vec(vscale(p, self.scale)), self.translate)
    }
    fn apply_vec(&self, v: [f64; 3]) -> [f64; 3] {
        std::array::from_fn(|i| dot(self.rot[i], v))
    }
    /// World to local.
    fn invert(&self, p: [f64; 3]) -> [f64; 3] {
        let d = sub(p, self.translate);
        std::array::from_fn(|i| (self.rot[0][i] * d[0] + self.rot[1][i] * d[1] + self.rot[2][i] * d[2]) / self.scale)
    }
}

/// A placed shape of a case: its primitive, where it is, and its bounding box in the world.
#[derive(Debug, Clone, PartialEq)]
pub struct Shape {
    /// The kind of shape, for messages (`sphere`, `mesh`, ...).
    pub kind: &'static str,
    /// The shape in its own frame.
    pub prim: Primitive,
    /// Its placement (the identity for a mesh, whose vertices were placed).
    pub place: Placement,
    /// 2 or 3.
    pub dim: usize,
    /// The world bounding box (z = 0 in 2D).
    pub bbox: Aabb,
}

impl Shape {
    /// Place `prim` and compute its world bounding box.
    pub fn new(kind: &'static str, prim: Primitive, place: Placement, dim: usize) -> Shape {
        let mut s = Shape { kind, prim, place, dim, bbox: Aabb { min: [0.0; 3], max: [0.0; 3] } };
        s.bbox = s.world_bounds();
        s
    }

    fn world_bounds(&self) -> Aabb {
        let p = &self.place;
        let of_points = |pts: &mut dyn Iterator<Item = [f64; 3]>| {
            let mut b = Aabb { min: [f64::INFINITY; 3], max: [f64::NEG_INFINITY; 3] };
            for q in pts {
                for (a, x) in q.iter().enumerate() {
                    b.min[a] = b.min[a].min(*x);
                    b.max[a] = b.max[a].max(*x);
                }
            }
            b
        };
        let mut b = match &self.prim {
            Primitive::Box { min, max } => of_points(
                &mut (0..8).map(|k| p.apply(std::array::from_fn(|a| if k >> a & 1 == 0 { min[a] } else { max[a] }))),
            ),
            Primitive::Sphere { centre, radius } => {
                let (c, r) = (p.apply(*centre), radius * p.scale);
                Aabb { min: c.map(|x| x - r), max: c.map(|x| x + r) }
            }
            Primitive::Cylinder { centre, axis, radius, length } => {
                let (c, a) = (p.apply(*centre), p.apply_vec(*axis));
                let (r, l) = (radius * p.scale, length * p.scale);
                let e: [f64; 3] =
                    std::array::from_fn(|i| a[i].abs() * l / 2.0 + r * (1.0 - a[i] * a[i]).max(0.0).sqrt());
                Aabb { min: std::array::from_fn(|i| c[i] - e[i]), max: std::array::from_fn(|i| c[i] + e[i]) }
            }
            Primitive::Polygon { points, extrude } => {
                let zs = extrude.map_or(vec![0.0], |z| z.to_vec());
                of_points(&mut points.iter().flat_map(|q| zs.iter().map(|&z| p.apply([q[0], q[1], z]))))
            }
            Primitive::Mesh(m) => {
                let (lo, hi) = m.bounds();
                Aabb { min: lo, max: hi }
            }
        };
        if self.dim == 2 {
            b.min[2] = 0.0;
            b.max[2] = 0.0;
        }
        b
    }

    /// True when `p` is inside (surface points count as inside for analytic shapes).
    pub fn inside(&self, p: [f64; 3]) -> bool {
        if let Primitive::Mesh(m) = &self.prim {
            return m.inside(p);
        }
        let l = self.place.invert(p);
        match &self.prim {
            Primitive::Box { min, max } => (0..self.dim).all(|a| min[a] <= l[a] && l[a] <= max[a]),
            Primitive::Sphere { centre, radius } => {
                let d = sub(l, *centre);
                (0..self.dim).map(|a| d[a] * d[a]).sum::<f64>() <= radius * radius
            }
            Primitive::Cylinder { centre, axis, radius, length } => {
                let d = sub(l, *centre);
                let t = dot(d, *axis);
                t.abs() <= length / 2.0 && norm(sub(d, vscale(*axis, t))) <= *radius
            }
            Primitive::Polygon { points, extrude } => {
                extrude.is_none_or(|z| z[0] <= l[2] && l[2] <= z[1]) && winding(points, [l[0], l[1]]) != 0
            }
            Primitive::Mesh(_) => unreachable!("handled above"),
        }
    }

    /// The nearest surface point to `p`; `None` for a mesh when it is farther than the mesh
    /// index's reach.
    pub fn nearest(&self, p: [f64; 3]) -> Option<[f64; 3]> {
        if let Primitive::Mesh(m) = &self.prim {
            return m.nearest(p);
        }
        let l = self.place.invert(p);
        let inside = self.inside(p);
        let q = match &self.prim {
            Primitive::Box { min, max } => {
                if inside {
                    let (a, hi) = (0..self.dim)
                        .flat_map(|a| [(a, false), (a, true)])
                        .min_by(|x, y| box_face(min, max, l, *x).total_cmp(&box_face(min, max, l, *y)))
                        .expect("an axis");
                    let mut q = l;
                    q[a] = if hi { max[a] } else { min[a] };
                    q
                } else {
                    std::array::from_fn(|a| if a < self.dim { l[a].clamp(min[a], max[a]) } else { l[a] })
                }
            }
            Primitive::Sphere { centre, radius } => {
                let mut d = sub(l, *centre);
                if self.dim == 2 {
                    d[2] = 0.0;
                }
                let r = norm(d);
                let u = if r > 0.0 { vscale(d, 1.0 / r) } else { [1.0, 0.0, 0.0] };
                let mut q = add(*centre, vscale(u, *radius));
                if self.dim == 2 {
                    q[2] = l[2];
                }
                q
            }
            Primitive::Cylinder { centre, axis, radius, length } => {
                let d = sub(l, *centre);
                let t = dot(d, *axis);
                let rho = sub(d, vscale(*axis, t));
                let rr = norm(rho);
                let half = length / 2.0;
                let u = if rr > 0.0 { vscale(rho, 1.0 / rr) } else { perpendicular(*axis) };
                if !inside {
                    let radial = if rr > *radius { vscale(u, *radius) } else { rho };
                    add(*centre, add(vscale(*axis, t.clamp(-half, half)), radial))
                } else if radius - rr <= half - t.abs() {
                    add(*centre, add(vscale(*axis, t), vscale(u, *radius)))
                } else {
                    add(*centre, add(vscale(*axis, half.copysign(t)), rho))
                }
            }
            Primitive::Polygon { points, extrude } => {
                let e = nearest_on_outline(points, [l[0], l[1]]);
                match extrude {
                    None => [e[0], e[1], l[2]],
                    Some([z0, z1]) => {
                        let in_outline = winding(points, [l[0], l[1]]) != 0;
                        if !inside {
                            let z = l[2].clamp(*z0, *z1);
                            if in_outline {
                                [l[0], l[1], z]
                            } else {
                                [e[0], e[1], z]
                            }
                        } else {
                            let side = ((e[0] - l[0]).powi(2) + (e[1] - l[1]).powi(2)).sqrt();
                            let (down, up) = (l[2] - z0, z1 - l[2]);
                            if side <= down.min(up) {
                                [e[0], e[1], l[2]]
                            } else if down <= up {
                                [l[0], l[1], *z0]
                            } else {
                                [l[0], l[1], *z1]
                            }
                        }
                    }
                }
            }
            Primitive::Mesh(_) => unreachable!("handled above"),
        };
        Some(self.place.apply(q))
    }

    /// The volume (area in 2D) the shape encloses, exactly (for meshes: of the placed mesh).
    pub fn measure(&self) -> f64 {
        let s = self.place.scale;
        let s_dim = s.powi(self.dim as i32);
        use std::f64::consts::PI;
        match &self.prim {
            Primitive::Box { min, max } => (0..self.dim).map(|a| max[a] - min[a]).product::<f64>() * s_dim,
            Primitive::Sphere { radius, .. } if self.dim == 2 => PI * radius * radius * s_dim,
            Primitive::Sphere { radius, .. } => 4.0 / 3.0 * PI * radius.powi(3) * s_dim,
            Primitive::Cylinder { radius, length, .. } => PI * radius * radius * length * s_dim,
            Primitive::Polygon { points, extrude } => {
                let n = points.len();
                let area = 0.5
                    * (0..n)
                        .map(|i| {
                            let (a, b) = (points[i], points[(i + 1) % n]);
                            a[0] * b[1] - a[1] * b[0]
                        })
                        .sum::<f64>()
                        .abs();
                area * extrude.map_or(1.0, |z| z[1] - z[0]) * s_dim
            }
            Primitive::Mesh(m) => crate::mesh::volume(m.triangles()).abs(),
        }
    }

    /// Feed the shape's identity to a hash (a case's physics hash).
    pub fn hash_into(&self, hs: &mut crate::hash::Fnv1a) {
        hs.str(self.kind);
        match &self.prim {
            Primitive::Box { min, max } => hs.f64s(min).f64s(max),
            Primitive::Sphere { centre, radius } => hs.f64s(centre).f64(*radius),
            Primitive::Cylinder { centre, axis, radius, length } => {
                hs.f64s(centre).f64s(axis).f64s(&[*radius, *length])
            }
            Primitive::Polygon { points, extrude } => {
                points.iter().for_each(|p| {
                    hs.f64s(p);
                });
                hs.f64s(&extrude.unwrap_or([0.0; 2]))
            }
            Primitive::Mesh(m) => {
                m.triangles().iter().flatten().for_each(|v| {
                    hs.f64s(v);
                });
                hs.u64(m.triangles().len() as u64)
            }
        };
        self.place.rot.iter().for_each(|r| {
            hs.f64s(r);
        });
        hs.f64(self.place.scale).f64s(&self.place.translate);
    }
}

fn box_face(min: &[f64; 3], max: &[f64; 3], x: [f64; 3], (a, hi): (usize, bool)) -> f64 {
    if hi {
        max[a] - x[a]
    } else {
        x[a] - min[a]
    }
}

/// A unit vector perpendicular to the unit vector `a`.
fn perpendicular(a: [f64; 3]) -> [f64; 3] {
    let t = if a[0].abs() < 0.9 { [1.0, 0.0, 0.0] } else { [0.0, 1.0, 0.0] };
    let c = cross(a, t);
    vscale(c, 1.0 / norm(c))
}

/// Winding number of the closed polygon around `p` (Sunday's crossing rule: an upward edge
/// counts when p is strictly left of it, a downward one when strictly right).
pub fn winding(points: &[[f64; 2]], p: [f64; 2]) -> i32 {
    let n = points.len();
    let mut w = 0;
    for i in 0..n {
        let (a, b) = (points[i], points[(i + 1) % n]);
        let side = (b[0] - a[0]) * (p[1] - a[1]) - (p[0] - a[0]) * (b[1] - a[1]);
        if a[1] <= p[1] {
            if b[1] > p[1] && side > 0.0 {
                w += 1;
            }
        } else if b[1] <= p[1] && side < 0.0 {
            w -= 1;
        }
    }
    w
}

/// The nearest point of the polygon's outline to `p`.
fn nearest_on_outline(points: &[[f64; 2]], p: [f64; 2]) -> [f64; 2] {
    let n = points.len();
    let mut best = (f64::INFINITY, points[0]);
    for i in 0..n {
        let (a, b) = (points[i], points[(i + 1) % n]);
        let ab = [b[0] - a[0], b[1] - a[1]];
        let l2 = ab[0] * ab[0] + ab[1] * ab[1];
        let t = if l2 > 0.0 { (((p[0] - a[0]) * ab[0] + (p[1] - a[1]) * ab[1]) / l2).clamp(0.0, 1.0) } else { 0.0 };
        let q = [a[0] + t * ab[0], a[1] + t * ab[1]];
        let d = (q[0] - p[0]).powi(2) + (q[1] - p[1]).powi(2);
        if d < best.0 {
            best = (d, q);
        }
    }
    best.1
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placement_round_trips_and_rotates_right_handed() {
        let r = Placement::rotation([0.0, 0.0, 1.0], 90.0);
        let p = Placement { rot: r, scale: 2.0, translate: [1.0, 2.0, 3.0] };
        let x = p.apply([1.0, 0.0, 0.0]);
        assert!((x[0] - 1.0).abs() < 1e-12 && (x[1] - 4.0).abs() < 1e-12 && (x[2] - 3.0).abs() < 1e-12, "{x:?}");
        let back = p.invert(x);
        assert!((back[0] - 1.0).abs() < 1e-12 && back[1].abs() < 1e-12);
    }

    #[test]
    fn nearest_points_lie_on_the_surface() {
        let cyl = Shape::new(
            "cylinder",
            Primitive::Cylinder { centre: [0.0; 3], axis: [0.0, 0.0, 1.0], radius: 1.0, length: 2.0 },
            Placement::IDENTITY,
            3,
        );
        for (p, q) in [
            ([0.5, 0.0, 0.0], [1.0, 0.0, 0.0]),
            ([0.0, 0.1, 0.95], [0.0, 0.1, 1.0]),
            ([2.0, 0.0, 3.0], [1.0, 0.0, 1.0]),
            ([0.0, 0.5, -1.5], [0.0, 0.5, -1.0]),
        ] {
            let got = cyl.nearest(p).unwrap();
            assert!((0..3).all(|a| (got[a] - q[a]).abs() < 1e-12), "{p:?}: {got:?}");
        }
        let square = [[0.0, 0.0], [1.0, 0.0], [1.0, 1.0], [0.0, 1.0]];
        assert_eq!(winding(&square, [0.5, 0.5]), 1);
        assert_eq!(winding(&square, [1.5, 0.5]), 0);
        let prism = Shape::new(
            "polygon",
            Primitive::Polygon { points: square.to_vec(), extrude: Some([0.0, 2.0]) },
            Placement::IDENTITY,
            3,
        );
        assert_eq!(prism.nearest([0.5, 0.4, 1.0]).unwrap(), [0.5, 0.0, 1.0]);
        assert_eq!(prism.nearest([0.5, 0.5, 1.9]).unwrap(), [0.5, 0.5, 2.0]);
        assert!((prism.measure() - 2.0).abs() < 1e-12);
    }
}
