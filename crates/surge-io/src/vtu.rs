//! VTK XML unstructured grid frames: binary, so large frames stay small and load fast in
//! ParaView, and a minimal reader of the same files for tests.

use std::collections::BTreeMap;
use std::fs;
use std::io::{self, Read, Write};
use std::path::Path;

use surge_core::backend::Snapshot;

use crate::{invalid, with_path, xml_attr};

/// The arrays of a frame in the order of their appended blocks:
/// (name, VTK type, components, bytes per component).
const ARRAYS: [(&str, &str, usize, usize); 9] = [
    ("id", "UInt32", 1, 4),
    ("kind", "UInt8", 1, 1),
    ("velocity", "Float32", 3, 4),
    ("density", "Float32", 1, 4),
    ("pressure", "Float32", 1, 4),
    ("Points", "Float64", 3, 8),
    ("connectivity", "Int64", 1, 8),
    ("offsets", "Int64", 1, 8),
    ("types", "UInt8", 1, 1),
];

/// VTK cell type of a single point: one per particle, so ParaView shows the particles
/// without a glyph filter.
const VTK_VERTEX: u8 = 1;

/// One `DataArray` of the appended data, at byte `offset` of it.
fn declaration(name: &str, ty: &str, comps: usize, offset: usize) -> String {
    let nc = if comps > 1 { format!(" NumberOfComponents=\"{comps}\"") } else { String::new() };
    format!("        <DataArray type=\"{ty}\" Name=\"{name}\"{nc} format=\"appended\" offset=\"{offset}\"/>\n")
}

/// The XML before the appended data of `n` points (one vertex cell each): the point data
/// `decl[..np]`, the points `decl[np]`, the cells `decl[np + 1..]`.
fn write_header<W: Write>(w: &mut W, n: usize, decl: &[String], np: usize) -> io::Result<()> {
    write!(
        w,
        "<?xml version=\"1.0\"?>\n\
         <VTKFile type=\"UnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  \
         <UnstructuredGrid>\n    <Piece NumberOfPoints=\"{n}\" NumberOfCells=\"{n}\">\n      \
         <PointData>\n{}      </PointData>\n      <Points>\n{}      </Points>\n      <Cells>\n{}      </Cells>\n    \
         </Piece>\n  </UnstructuredGrid>\n  <AppendedData encoding=\"raw\">\n   _",
        decl[..np].concat(),
        decl[np],
        decl[np + 1..].concat()
    )
}

/// Writes the particles in `order` as a VTU file with raw appended data. Little-endian bytes
/// are written explicitly, so the file is the same on every host.
pub(crate) fn write_vtu<W: Write>(w: &mut W, s: &Snapshot, order: &[usize], dim: usize) -> io::Result<()> {
    let n = order.len();
    let mut decl = Vec::with_capacity(ARRAYS.len());
    let mut offset = 0;
    for (name, ty, comps, size) in ARRAYS {
        decl.push(declaration(name, ty, comps, offset));
        offset += 8 + n * comps * size;
    }
    write_header(w, n, &decl, 5)?;
    // Block byte counts come from the same table as the offsets, so the two cannot disagree.
    let mut counts = ARRAYS.iter().map(|&(_, _, comps, size)| ((n * comps * size) as u64).to_le_bytes());
    let mut count = |w: &mut W| w.write_all(&counts.next().unwrap());
    count(w)?;
    for &i in order {
        w.write_all(&s.id[i].to_le_bytes())?;
    }
    count(w)?;
    for &i in order {
        w.write_all(&[s.kind[i]])?;
    }
    count(w)?;
    for &i in order {
        let v = s.vel[i];
        for c in [v[0], v[1], if dim == 2 { 0.0 } else { v[2] }] {
            w.write_all(&c.to_le_bytes())?;
        }
    }
    for field in [&s.rho, &s.p] {
        count(w)?;
        for &i in order {
            w.write_all(&field[i].to_le_bytes())?;
        }
    }
    count(w)?;
    for &i in order {
        for c in s.pos[i] {
            w.write_all(&c.to_le_bytes())?;
        }
    }
    count(w)?;
    for k in 0..n as i64 {
        w.write_all(&k.to_le_bytes())?;
    }
    count(w)?;
    for k in 1..=n as i64 {
        w.write_all(&k.to_le_bytes())?;
    }
    count(w)?;
    io::copy(&mut io::repeat(VTK_VERTEX).take(n as u64), w)?;
    w.write_all(b"\n  </AppendedData>\n</VTKFile>\n")
}

/// The `.pvtu` that joins the pieces `pieces` (file names relative to it) of one frame.
pub(crate) fn write_pvtu<W: Write>(w: &mut W, pieces: &[String]) -> io::Result<()> {
    let decl = |i: usize| {
        let (name, ty, comps, _) = ARRAYS[i];
        let nc = if comps > 1 { format!(" NumberOfComponents=\"{comps}\"") } else { String::new() };
        format!("      <PDataArray type=\"{ty}\" Name=\"{name}\"{nc}/>\n")
    };
    write!(
        w,
        "<?xml version=\"1.0\"?>\n\
         <VTKFile type=\"PUnstructuredGrid\" version=\"1.0\" byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  \
         <PUnstructuredGrid GhostLevel=\"0\">\n    <PPointData>\n{}    </PPointData>\n    <PPoints>\n{}    </PPoints>\n",
        (0..5).map(decl).collect::<String>(),
        decl(5).replace("      ", "        ")
    )?;
    for p in pieces {
        writeln!(w, "    <Piece Source=\"{}\"/>", crate::frame::xml_escape(p))?;
    }
    w.write_all(b"  </PUnstructuredGrid>\n</VTKFile>\n")
}

/// Write the particles of a freshly filled case (`surge check --write-particles`): ids,
/// kind (0 fluid, 1 boundary), the object each belongs to (fluid regions, then walls, then
/// obstacles, numbered in that order from 0 as [`surge_core::geometry::fill`] makes them),
/// velocity, relative density, and for boundary particles the wall normal (towards the
/// fluid) and the distance to the wall surface. Written whole to a temporary file, then
/// renamed.
pub fn write_filled(path: &Path, f: &surge_core::geometry::Filled, object: &[u32]) -> io::Result<()> {
    let n = f.len();
    let bytes = |v: &mut Vec<u8>, x: &[u8]| v.extend_from_slice(x);
    let mut arrays: Vec<(&str, &str, usize, Vec<u8>)> = Vec::new();
    let mut a = Vec::with_capacity(4 * n);
    f.id.iter().for_each(|x| bytes(&mut a, &x.to_le_bytes()));
    arrays.push(("id", "UInt32", 1, a));
    arrays.push(("kind", "UInt8", 1, f.kind.iter().map(|k| *k as u8).collect()));
    let mut a = Vec::with_capacity(4 * n);
    object.iter().for_each(|x| bytes(&mut a, &x.to_le_bytes()));
    arrays.push(("object", "UInt32", 1, a));
    let mut a = Vec::with_capacity(12 * n);
    f.vel.iter().flatten().for_each(|x| bytes(&mut a, &(*x as f32).to_le_bytes()));
    arrays.push(("velocity", "Float32", 3, a));
    let mut a = Vec::with_capacity(4 * n);
    f.rel_density.iter().for_each(|x| bytes(&mut a, &x.to_le_bytes()));
    arrays.push(("relative_density", "Float32", 1, a));
    let mut a = Vec::with_capacity(12 * n);
    f.wall.iter().flat_map(|w| &w[..3]).for_each(|x| bytes(&mut a, &x.to_le_bytes()));
    arrays.push(("wall_normal", "Float32", 3, a));
    let mut a = Vec::with_capacity(4 * n);
    f.wall.iter().for_each(|w| bytes(&mut a, &w[3].to_le_bytes()));
    arrays.push(("wall_distance", "Float32", 1, a));
    let mut pts = Vec::with_capacity(24 * n);
    f.pos.iter().flatten().for_each(|x| bytes(&mut pts, &x.to_le_bytes()));
    let mut conn = Vec::with_capacity(8 * n);
    (0..n as i64).for_each(|k| bytes(&mut conn, &k.to_le_bytes()));
    let mut offs = Vec::with_capacity(8 * n);
    (1..=n as i64).for_each(|k| bytes(&mut offs, &k.to_le_bytes()));
    let all: Vec<(&str, &str, usize, &[u8])> = arrays
        .iter()
        .map(|(a, b, c, d)| (*a, *b, *c, &d[..]))
        .chain([
            ("Points", "Float64", 3, &pts[..]),
            ("connectivity", "Int64", 1, &conn[..]),
            ("offsets", "Int64", 1, &offs[..]),
        ])
        .collect();
    let types = vec![VTK_VERTEX; n];
    let all: Vec<_> = all.into_iter().chain([("types", "UInt8", 1, &types[..])]).collect();
    let mut decl = Vec::new();
    let mut offset = 0;
    for (name, ty, comps, data) in &all {
        decl.push(declaration(name, ty, *comps, offset));
        offset += 8 + data.len();
    }
    let np = arrays.len();
    crate::write_atomic_with(path, |w| {
        write_header(w, n, &decl, np)?;
        for (_, _, _, data) in &all {
            w.write_all(&(data.len() as u64).to_le_bytes())?;
            w.write_all(data)?;
        }
        w.write_all(b"\n  </AppendedData>\n</VTKFile>\n")
    })
}

/// What [`read_vtu`] returns.
#[derive(Debug, Clone, Default)]
pub struct VtuData {
    /// Point coordinates.
    pub points: Vec<[f64; 3]>,
    /// PointData arrays by name, as f64, components flattened.
    pub arrays: BTreeMap<String, Vec<f64>>,
}

/// Minimal reader of the VTU files this crate writes (for tests): point coordinates and every
/// PointData array as f64. Not a general VTK reader: raw appended data, UInt64 headers only.
pub fn read_vtu(path: &Path) -> io::Result<VtuData> {
    let bytes = fs::read(path).map_err(|e| with_path(e, "read", path))?;
    let bad = |m: &str| invalid(path, m);
    let tag = b"<AppendedData encoding=\"raw\">";
    let at = bytes.windows(tag.len()).position(|w| w == tag).ok_or_else(|| bad("no raw AppendedData"))?;
    let marker = bytes[at..].iter().position(|&b| b == b'_').ok_or_else(|| bad("no '_' before the data"))?;
    let data = &bytes[at + marker + 1..];
    let header = std::str::from_utf8(&bytes[..at]).map_err(|_| bad("header is not UTF-8"))?;
    let section = |open: &str, close: &str| header.split(open).nth(1).and_then(|s| s.split(close).next()).unwrap_or("");
    let n: usize = xml_attr(section("<Piece", ">"), "NumberOfPoints")
        .and_then(|v| v.parse().ok())
        .ok_or_else(|| bad("no NumberOfPoints"))?;
    let array = |tag: &str| -> io::Result<(String, Vec<f64>)> {
        let attr = |k| xml_attr(tag, k).ok_or_else(|| bad(&format!("DataArray without {k}")));
        let name = attr("Name")?;
        let offset = attr("offset")?.parse().map_err(|_| bad("bad offset"))?;
        let values = decode(data, offset, attr("type")?).ok_or_else(|| bad(&format!("bad data of array {name}")))?;
        Ok((name.to_owned(), values))
    };
    let mut out = VtuData::default();
    for tag in section("<PointData>", "</PointData>").split("<DataArray").skip(1) {
        let (name, values) = array(tag)?;
        out.arrays.insert(name, values);
    }
    let points = section("<Points>", "</Points>").split("<DataArray").nth(1).ok_or_else(|| bad("no Points"))?;
    let (_, coords) = array(points)?;
    if coords.len() != 3 * n {
        return Err(bad("Points does not hold NumberOfPoints points"));
    }
    out.points = coords.chunks_exact(3).map(|c| [c[0], c[1], c[2]]).collect();
    Ok(out)
}

/// Decodes the appended block at `offset` (after its UInt64 byte count) as f64 values.
fn decode(data: &[u8], offset: usize, ty: &str) -> Option<Vec<f64>> {
    let start = offset.checked_add(8)?;
    let len = u64::from_le_bytes(data.get(offset..start)?.try_into().ok()?);
    let block = data.get(start..start.checked_add(usize::try_from(len).ok()?)?)?;
    fn each<const N: usize>(b: &[u8], f: impl Fn([u8; N]) -> f64) -> Option<Vec<f64>> {
        b.chunks_exact(N).remainder().is_empty().then(|| b.chunks_exact(N).map(|c| f(c.try_into().unwrap())).collect())
    }
    match ty {
        "Float64" => each(block, f64::from_le_bytes),
        "Float32" => each(block, |c| f32::from_le_bytes(c) as f64),
        "Int64" => each(block, |c| i64::from_le_bytes(c) as f64),
        "UInt32" => each(block, |c| u32::from_le_bytes(c) as f64),
        "UInt8" => each(block, |c: [u8; 1]| c[0] as f64),
        _ => None,
    }
}
