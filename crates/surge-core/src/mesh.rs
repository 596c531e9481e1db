//! Triangle meshes: STL reading (binary and ASCII), the closedness check, point-in-mesh by
//! signed ray crossings along x, and nearest-surface-point queries through a uniform grid.
//!
//! Point-in-mesh: the mesh is projected on the (y, z) plane and each lattice row (a line
//! along x) collects the triangles it pierces, with the sign of their normal's x component;
//! the winding number of a point is the signed count of crossings before it. A row's
//! candidate triangles come from a 2D bin grid over (y, z), so a whole row of particles costs
//! one pass over the few triangles of its bin, never particles × triangles. A row through an
//! edge or a vertex shared by several triangles is counted once: each projected edge is
//! evaluated in one canonical direction (lower vertex first) and a point exactly on it
//! belongs to the triangle on its left, which is the same as a consistent infinitesimal
//! shift of the row (simulation of simplicity), so boxes and cubes whose lattice rows run
//! exactly through their diagonal edges fill without holes or doubled particles.

use std::collections::HashMap;

/// A triangle, three vertices.
pub type Tri = [[f64; 3]; 3];

/// Read an STL file, binary or ASCII; the triangles in file order, as f32 coordinates were
/// widened (exactly) to f64.
pub fn read_stl(path: &std::path::Path) -> Result<Vec<Tri>, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("cannot read `{}`: {e}", path.display()))?;
    parse_stl(&bytes).map_err(|e| format!("`{}`: {e}", path.display()))
}

/// Parse STL bytes: binary when the size matches the triangle count of its header
/// (`84 + 50 n` bytes), ASCII when the text starts with `solid`.
pub fn parse_stl(bytes: &[u8]) -> Result<Vec<Tri>, String> {
    if bytes.len() >= 84 {
        let n = u32::from_le_bytes(bytes[80..84].try_into().expect("4 bytes")) as usize;
        if bytes.len() == 84 + 50 * n {
            let f = |o: usize| f32::from_le_bytes(bytes[o..o + 4].try_into().expect("4 bytes")) as f64;
            return Ok((0..n)
                .map(|t| {
                    let o = 84 + 50 * t + 12;
                    std::array::from_fn(|v| std::array::from_fn(|a| f(o + 12 * v + 4 * a)))
                })
                .collect());
        }
    }
    let text = std::str::from_utf8(bytes).ok().filter(|t| t.trim_start().starts_with("solid")).ok_or_else(|| {
        "not an STL file (neither binary of the size its header gives, nor ASCII `solid ...`)".to_string()
    })?;
    let mut tris = Vec::new();
    let mut verts: Vec<[f64; 3]> = Vec::new();
    for (ln, line) in text.lines().enumerate() {
        let mut words = line.split_whitespace();
        match words.next() {
            Some("vertex") => {
                let xs: Vec<f64> = words
                    .map(|w| w.parse::<f32>().map(f64::from))
                    .collect::<Result<_, _>>()
                    .map_err(|_| format!("line {}: a vertex needs three numbers: `{}`", ln + 1, line.trim()))?;
                if xs.len() != 3 || xs.iter().any(|x| !x.is_finite()) {
                    return Err(format!("line {}: a vertex needs three finite numbers: `{}`", ln + 1, line.trim()));
                }
                verts.push([xs[0], xs[1], xs[2]]);
            }
            Some("endfacet") => {
                if verts.len() != 3 {
                    return Err(format!("line {}: a facet has {} vertices, expected 3", ln + 1, verts.len()));
                }
                tris.push([verts[0], verts[1], verts[2]]);
                verts.clear();
            }
            _ => {}
        }
    }
    Ok(tris)
}

/// Write triangles as a binary STL (tests and `scripts/`); normals are computed.
pub fn write_binary_stl(tris: &[Tri]) -> Vec<u8> {
    let mut out = vec![0u8; 80];
    out[..21].copy_from_slice(b"surge binary STL mesh");
    out.extend_from_slice(&(tris.len() as u32).to_le_bytes());
    for t in tris {
        let n = normalised(cross(sub(t[1], t[0]), sub(t[2], t[0])));
        for x in n.iter().chain(t.iter().flatten()) {
            out.extend_from_slice(&(*x as f32).to_le_bytes());
        }
        out.extend_from_slice(&[0, 0]);
    }
    out
}

/// Write triangles as an ASCII STL.
pub fn write_ascii_stl(tris: &[Tri], name: &str) -> String {
    let mut s = format!("solid {name}\n");
    for t in tris {
        let n = normalised(cross(sub(t[1], t[0]), sub(t[2], t[0])));
        s += &format!("  facet normal {} {} {}\n    outer loop\n", n[0] as f32, n[1] as f32, n[2] as f32);
        for v in t {
            s += &format!("      vertex {} {} {}\n", v[0] as f32, v[1] as f32, v[2] as f32);
        }
        s += "    endloop\n  endfacet\n";
    }
    s + &format!("endsolid {name}\n")
}

/// Check that the triangles close a surface: every edge is shared by faces that run it in
/// both directions as often (a closed, consistently oriented surface). The error says how
/// many edges are open (or flipped) and where the first one is, in one sentence.
pub fn check_closed(tris: &[Tri]) -> Result<(), String> {
    if tris.is_empty() {
        return Err("the mesh has no triangles".into());
    }
    let key = |v: [f64; 3]| v.map(f64::to_bits);
    // Directed use count of each undirected edge: (forward, backward).
    let mut edges: HashMap<([u64; 3], [u64; 3]), (u32, u32)> = HashMap::new();
    for t in tris {
        for k in 0..3 {
            let (a, b) = (key(t[k]), key(t[(k + 1) % 3]));
            if a == b {
                continue;
            }
            let e = edges.entry(if a < b { (a, b) } else { (b, a) }).or_default();
            if a < b {
                e.0 += 1;
            } else {
                e.1 += 1;
            }
        }
    }
    let at = |e: &([u64; 3], [u64; 3])| -> [f64; 3] {
        std::array::from_fn(|a| 0.5 * (f64::from_bits(e.0[a]) + f64::from_bits(e.1[a])))
    };
    // The edges failing `bad`, counted, and the first of them (in sorted order) located:
    // "{head}: {n} {kind}edge(s) {why}, the first at (x, y, z)".
    let report = |bad: fn(u32, u32) -> bool, head: &str, kind: &str, why: &str| -> Result<(), String> {
        let mut hit: Vec<_> = edges.iter().filter(|(_, &(f, b))| bad(f, b)).map(|(e, _)| e).collect();
        if hit.is_empty() {
            return Ok(());
        }
        hit.sort();
        let p = at(hit[0]);
        let s = if hit.len() == 1 { "" } else { "s" };
        Err(format!("{head}: {} {kind}edge{s} {why}, the first at ({}, {}, {})", hit.len(), p[0], p[1], p[2]))
    };
    report(|f, b| (f + b) % 2 == 1, "the mesh is not closed", "open ", "(used by one face)")?;
    report(|f, b| f != b, "the mesh's faces are not consistently oriented", "", "run the same way by both faces")?;
    Ok(())
}

/// Signed volume enclosed by a closed mesh (positive with outward normals).
pub fn volume(tris: &[Tri]) -> f64 {
    tris.iter().map(|t| dot(t[0], cross(t[1], t[2]))).sum::<f64>() / 6.0
}

pub(crate) fn sub(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] - b[0], a[1] - b[1], a[2] - b[2]]
}
pub(crate) fn add(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[0] + b[0], a[1] + b[1], a[2] + b[2]]
}
pub(crate) fn scale(a: [f64; 3], s: f64) -> [f64; 3] {
    [a[0] * s, a[1] * s, a[2] * s]
}
pub(crate) fn dot(a: [f64; 3], b: [f64; 3]) -> f64 {
    a[0] * b[0] + a[1] * b[1] + a[2] * b[2]
}
pub(crate) fn cross(a: [f64; 3], b: [f64; 3]) -> [f64; 3] {
    [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]
}
pub(crate) fn norm(a: [f64; 3]) -> f64 {
    dot(a, a).sqrt()
}
fn normalised(a: [f64; 3]) -> [f64; 3] {
    let n = norm(a);
    if n > 0.0 {
        scale(a, 1.0 / n)
    } else {
        a
    }
}

/// The closest point of triangle `t` to `p` (Ericson, Real-Time Collision Detection 5.1.5).
pub fn closest_on_triangle(p: [f64; 3], t: &Tri) -> [f64; 3] {
    let [a, b, c] = *t;
    let (ab, ac, ap) = (sub(b, a), sub(c, a), sub(p, a));
    let (d1, d2) = (dot(ab, ap), dot(ac, ap));
    if d1 <= 0.0 && d2 <= 0.0 {
        return a;
    }
    let bp = sub(p, b);
    let (d3, d4) = (dot(ab, bp), dot(ac, bp));
    if d3 >= 0.0 && d4 <= d3 {
        return b;
    }
    let vc = d1 * d4 - d3 * d2;
    if vc <= 0.0 && d1 >= 0.0 && d3 <= 0.0 {
        return add(a, scale(ab, d1 / (d1 - d3)));
    }
    let cp = sub(p, c);
    let (d5, d6) = (dot(ab, cp), dot(ac, cp));
    if d6 >= 0.0 && d5 <= d6 {
        return c;
    }
    let vb = d5 * d2 - d1 * d6;
    if vb <= 0.0 && d2 >= 0.0 && d6 <= 0.0 {
        return add(a, scale(ac, d2 / (d2 - d6)));
    }
    let va = d3 * d6 - d5 * d4;
    if va <= 0.0 && (d4 - d3) >= 0.0 && (d5 - d6) >= 0.0 {
        return add(b, scale(sub(c, b), (d4 - d3) / ((d4 - d3) + (d5 - d6))));
    }
    let denom = 1.0 / (va + vb + vc);
    add(a, add(scale(ab, vb * denom), scale(ac, vc * denom)))
}

/// A closed mesh in world coordinates with its query structures: a 2D bin grid over (y, z)
/// for ray crossings along x, and a 3D grid for nearest-point queries up to `reach`.
#[derive(Debug, Clone, PartialEq)]
pub struct MeshIndex {
    tris: Vec<Tri>,
    lo: [f64; 3],
    hi: [f64; 3],
    /// (y, z) bins: side, counts, triangle lists.
    bin: f64,
    nbin: [usize; 2],
    bins: Vec<Vec<u32>>,
    /// 3D grid of cell side `reach` for nearest-point queries.
    reach: f64,
    cells: std::sync::OnceLock<Cells>,
}

/// The nearest-point grid: triangle lists by cell, and a dense map over the mesh's cells
/// (grown by one) of those with a triangle in their 27-cell neighbourhood, so that a point
/// far from the surface is answered by one array read (`None` when that map would exceed
/// 2^26 cells).
#[derive(Debug, Clone, Default, PartialEq)]
struct Cells {
    lists: HashMap<[i64; 3], Vec<u32>>,
    near: Option<(CellBox, Vec<bool>)>,
}

/// A range of cells: the lowest and the count along each axis.
type CellBox = ([i64; 3], [i64; 3]);

impl Cells {
    fn near(&self, c: [i64; 3]) -> bool {
        match &self.near {
            None => true,
            Some(((lo, n), bits)) => {
                (0..3).all(|a| c[a] >= lo[a] && c[a] < lo[a] + n[a])
                    && bits[(((c[2] - lo[2]) * n[1] + (c[1] - lo[1])) * n[0] + (c[0] - lo[0])) as usize]
            }
        }
    }
}

impl MeshIndex {
    /// Index `tris` for crossings and for nearest-point queries within `reach`.
    pub fn new(tris: Vec<Tri>, reach: f64) -> Self {
        let mut lo = [f64::INFINITY; 3];
        let mut hi = [f64::NEG_INFINITY; 3];
        for v in tris.iter().flatten() {
            for a in 0..3 {
                lo[a] = lo[a].min(v[a]);
                hi[a] = hi[a].max(v[a]);
            }
        }
        // About two triangles per bin on a surface: bins of the mean triangle size.
        let ext = (hi[1] - lo[1]).max(hi[2] - lo[2]).max(1e-30);
        let bin = (ext / (tris.len() as f64).sqrt()).max(ext / 4096.0);
        let nbin = [((hi[1] - lo[1]) / bin) as usize + 1, ((hi[2] - lo[2]) / bin) as usize + 1];
        let mut bins = vec![Vec::new(); nbin[0] * nbin[1]];
        let bidx = |x: f64, a: usize| (((x - lo[a + 1]) / bin) as usize).min(nbin[a] - 1);
        for (i, t) in tris.iter().enumerate() {
            let (mut ylo, mut yhi, mut zlo, mut zhi) =
                (f64::INFINITY, f64::NEG_INFINITY, f64::INFINITY, f64::NEG_INFINITY);
            for v in t {
                ylo = ylo.min(v[1]);
                yhi = yhi.max(v[1]);
                zlo = zlo.min(v[2]);
                zhi = zhi.max(v[2]);
            }
            for bz in bidx(zlo, 1)..=bidx(zhi, 1) {
                for by in bidx(ylo, 0)..=bidx(yhi, 0) {
                    bins[bz * nbin[0] + by].push(i as u32);
                }
            }
        }
        let reach = reach.max(1e-30);
        MeshIndex { tris, lo, hi, bin, nbin, bins, reach, cells: std::sync::OnceLock::new() }
    }

    /// The 3D grid of cells of side `reach`, each listing the triangles that may pass through
    /// it; built at the first nearest-point query (a mesh refused for being outside the
    /// domain never builds it). A triangle is walked column by column along its plane's
    /// dominant axis, so its cost is its area over the cell area, not its bounding box's
    /// volume.
    fn cells(&self) -> &Cells {
        self.cells.get_or_init(|| {
            let c = self.reach;
            let cell = |x: f64| (x / c).floor() as i64;
            let mut cells: HashMap<[i64; 3], Vec<u32>> = HashMap::new();
            for (i, t) in self.tris.iter().enumerate() {
                let n = cross(sub(t[1], t[0]), sub(t[2], t[0]));
                let k = (0..3).max_by(|&a, &b| n[a].abs().total_cmp(&n[b].abs())).expect("3 axes");
                let (u, v) = ((k + 1) % 3, (k + 2) % 3);
                let tlo: [f64; 3] = std::array::from_fn(|a| t[0][a].min(t[1][a]).min(t[2][a]));
                let thi: [f64; 3] = std::array::from_fn(|a| t[0][a].max(t[1][a]).max(t[2][a]));
                for cu in cell(tlo[u])..=cell(thi[u]) {
                    for cv in cell(tlo[v])..=cell(thi[v]) {
                        // The plane's range along k over this column (clamped to the
                        // triangle's extent), or the whole extent for a plane along k.
                        let (mut zlo, mut zhi) = (tlo[k], thi[k]);
                        if n[k] != 0.0 {
                            let (mut a, mut b) = (f64::INFINITY, f64::NEG_INFINITY);
                            for (x, y) in [(cu, cv), (cu + 1, cv), (cu, cv + 1), (cu + 1, cv + 1)] {
                                let (x, y) =
                                    ((x as f64 * c).clamp(tlo[u], thi[u]), (y as f64 * c).clamp(tlo[v], thi[v]));
                                let z = t[0][k] - (n[u] * (x - t[0][u]) + n[v] * (y - t[0][v])) / n[k];
                                a = a.min(z);
                                b = b.max(z);
                            }
                            zlo = a.max(tlo[k]);
                            zhi = b.min(thi[k]);
                        }
                        for ck in cell(zlo)..=cell(zhi) {
                            let mut key = [0i64; 3];
                            key[k] = ck;
                            key[u] = cu;
                            key[v] = cv;
                            cells.entry(key).or_default().push(i as u32);
                        }
                    }
                }
            }
            let cell_lo: [i64; 3] = std::array::from_fn(|a| cell(self.lo[a]) - 1);
            let n: [i64; 3] = std::array::from_fn(|a| cell(self.hi[a]) + 2 - cell_lo[a]);
            let near = (n.iter().map(|&x| x as f64).product::<f64>() <= (1u64 << 26) as f64).then(|| {
                let mut bits = vec![false; (n[0] * n[1] * n[2]) as usize];
                for k in cells.keys() {
                    for dz in -1..=1 {
                        for dy in -1..=1 {
                            for dx in -1..=1 {
                                let q = [k[0] + dx - cell_lo[0], k[1] + dy - cell_lo[1], k[2] + dz - cell_lo[2]];
                                if (0..3).all(|a| q[a] >= 0 && q[a] < n[a]) {
                                    bits[((q[2] * n[1] + q[1]) * n[0] + q[0]) as usize] = true;
                                }
                            }
                        }
                    }
                }
                ((cell_lo, n), bits)
            });
            Cells { lists: cells, near }
        })
    }

    /// The bounding box of the mesh.
    pub fn bounds(&self) -> ([f64; 3], [f64; 3]) {
        (self.lo, self.hi)
    }

    /// How far from the surface [`MeshIndex::nearest`] answers.
    pub fn reach(&self) -> f64 {
        self.reach
    }

    /// The triangles.
    pub fn triangles(&self) -> &[Tri] {
        &self.tris
    }

    /// The crossings of the line along x through (y, z), sorted by x: (x, winding step), the
    /// step being -1 where the surface's outward normal points to -x (entering) and +1 where
    /// it points to +x, negated so that the winding number inside is +1 for outward normals.
    pub fn crossings(&self, y: f64, z: f64) -> Vec<(f64, i32)> {
        let mut out = Vec::new();
        if !(y >= self.lo[1] && y <= self.hi[1] && z >= self.lo[2] && z <= self.hi[2]) {
            return out;
        }
        let by = (((y - self.lo[1]) / self.bin) as usize).min(self.nbin[0] - 1);
        let bz = (((z - self.lo[2]) / self.bin) as usize).min(self.nbin[1] - 1);
        for &i in &self.bins[bz * self.nbin[0] + by] {
            let t = &self.tris[i as usize];
            let p: [[f64; 2]; 3] = std::array::from_fn(|k| [t[k][1], t[k][2]]);
            let area = (p[1][0] - p[0][0]) * (p[2][1] - p[0][1]) - (p[1][1] - p[0][1]) * (p[2][0] - p[0][0]);
            if area == 0.0 {
                continue;
            }
            // Counter-clockwise order in (y, z).
            let order = if area > 0.0 { [0, 1, 2] } else { [0, 2, 1] };
            let q = [y, z];
            let inside = (0..3).all(|k| {
                let (u, v) = (p[order[k]], p[order[(k + 1) % 3]]);
                let (lo, hi, owned) = if u < v { (u, v, true) } else { (v, u, false) };
                let e = (hi[0] - lo[0]) * (q[1] - lo[1]) - (hi[1] - lo[1]) * (q[0] - lo[0]);
                let e = if owned { e } else { -e };
                e > 0.0 || (e == 0.0 && owned)
            });
            if !inside {
                continue;
            }
            let n = cross(sub(t[1], t[0]), sub(t[2], t[0]));
            let x = t[0][0] - (n[1] * (y - t[0][1]) + n[2] * (z - t[0][2])) / n[0];
            out.push((x, if n[0] > 0.0 { -1 } else { 1 }));
        }
        out.sort_by(|a, b| a.0.total_cmp(&b.0).then(a.1.cmp(&b.1)));
        out
    }

    /// True when `p` is inside (winding number not zero).
    pub fn inside(&self, p: [f64; 3]) -> bool {
        winding_before(&self.crossings(p[1], p[2]), p[0]) != 0
    }

    /// The nearest surface point within `reach` of `p` (ties: the lower triangle index).
    pub fn nearest(&self, p: [f64; 3]) -> Option<[f64; 3]> {
        let c: [i64; 3] = std::array::from_fn(|a| (p[a] / self.reach).floor() as i64);
        let grid = self.cells();
        if !grid.near(c) {
            return None;
        }
        let mut best: Option<(f64, [f64; 3])> = None;
        for dz in -1..=1 {
            for dy in -1..=1 {
                for dx in -1..=1 {
                    let Some(list) = grid.lists.get(&[c[0] + dx, c[1] + dy, c[2] + dz]) else { continue };
                    for &i in list {
                        let q = closest_on_triangle(p, &self.tris[i as usize]);
                        let d2 = dot(sub(q, p), sub(q, p));
                        if best.is_none_or(|(b, _)| d2 < b) {
                            best = Some((d2, q));
                        }
                    }
                }
            }
        }
        best.filter(|(d2, _)| *d2 <= self.reach * self.reach).map(|(_, q)| q)
    }
}

/// The winding number at `x` from sorted crossings: the sum of the steps before x.
pub fn winding_before(crossings: &[(f64, i32)], x: f64) -> i32 {
    crossings.iter().take_while(|c| c.0 < x).map(|c| c.1).sum()
}

/// The 12 triangles of a box, outward normals.
pub fn box_triangles(min: [f64; 3], max: [f64; 3]) -> Vec<Tri> {
    let v = |i: usize| {
        [
            if i & 1 == 0 { min[0] } else { max[0] },
            if i & 2 == 0 { min[1] } else { max[1] },
            if i & 4 == 0 { min[2] } else { max[2] },
        ]
    };
    // Faces as quads (corner indices, counter-clockwise seen from outside).
    let quads = [[0, 4, 6, 2], [1, 3, 7, 5], [0, 1, 5, 4], [2, 6, 7, 3], [0, 2, 3, 1], [4, 5, 7, 6]];
    quads.iter().flat_map(|q| [[v(q[0]), v(q[1]), v(q[2])], [v(q[0]), v(q[2]), v(q[3])]]).collect()
}

/// A torus about the z axis through `centre`: major radius `r_major`, minor `r_minor`,
/// `n` segments around the axis and `m` around the tube; outward normals.
pub fn torus_triangles(centre: [f64; 3], r_major: f64, r_minor: f64, n: usize, m: usize) -> Vec<Tri> {
    use std::f64::consts::TAU;
    let p = |i: usize, j: usize| {
        let (u, v) = (TAU * (i % n) as f64 / n as f64, TAU * (j % m) as f64 / m as f64);
        let r = r_major + r_minor * v.cos();
        [centre[0] + r * u.cos(), centre[1] + r * u.sin(), centre[2] + r_minor * v.sin()]
    };
    let mut out = Vec::new();
    for i in 0..n {
        for j in 0..m {
            let (a, b, c, d) = (p(i, j), p(i + 1, j), p(i + 1, j + 1), p(i, j + 1));
            out.push([a, b, c]);
            out.push([a, c, d]);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn binary_and_ascii_stl_read_back_the_same_triangles() {
        let tris = torus_triangles([0.5, 0.25, 0.0], 1.0, 0.25, 24, 12)
            .into_iter()
            .map(|t| t.map(|v| v.map(|x| x as f32 as f64)))
            .collect::<Vec<_>>();
        assert_eq!(parse_stl(&write_binary_stl(&tris)).unwrap(), tris);
        assert_eq!(parse_stl(write_ascii_stl(&tris, "torus").as_bytes()).unwrap(), tris);
        assert!(parse_stl(b"hello").unwrap_err().contains("not an STL file"));
    }

    #[test]
    fn closed_meshes_pass_and_open_ones_are_located() {
        let cube = box_triangles([0.0; 3], [1.0; 3]);
        check_closed(&cube).unwrap();
        assert!((volume(&cube) - 1.0).abs() < 1e-12);
        check_closed(&torus_triangles([0.0; 3], 1.0, 0.3, 16, 8)).unwrap();
        let open = &cube[..11];
        let e = check_closed(open).unwrap_err();
        assert!(e.contains("not closed: 3 open edges"), "{e}");
        let mut flipped = cube.clone();
        flipped[0].swap(1, 2);
        flipped[1].swap(1, 2);
        let e = check_closed(&flipped).unwrap_err();
        assert!(e.contains("not consistently oriented"), "{e}");
    }

    /// Rows through the cube's face diagonals count each face once: every lattice point of
    /// the cube is inside, every point outside is out, for rows on and off the diagonals.
    #[test]
    fn rows_through_shared_edges_cross_once() {
        let m = MeshIndex::new(box_triangles([0.0; 3], [1.0; 3]), 0.1);
        for &(y, z) in &[(0.5, 0.5), (0.25, 0.25), (0.75, 0.25), (0.0, 0.5), (0.3, 0.7)] {
            let c = m.crossings(y, z);
            let w: i32 = c.iter().map(|c| c.1).sum();
            assert_eq!(w, 0, "{y} {z}: {c:?}");
            if y > 0.0 {
                assert_eq!(c.len(), 2, "{y} {z}: {c:?}");
                assert!(m.inside([0.5, y, z]) && !m.inside([1.5, y, z]) && !m.inside([-0.5, y, z]));
            }
        }
        let q = m.nearest([0.5, 0.5, 1.05]).unwrap();
        assert!((q[2] - 1.0).abs() < 1e-15 && (q[0] - 0.5).abs() < 1e-15);
        assert!(m.nearest([0.5, 0.5, 1.5]).is_none());
    }
}
