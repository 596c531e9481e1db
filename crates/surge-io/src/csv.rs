//! CSV frames: for spreadsheets, scripts and exact comparisons; floats are printed with the
//! shortest representation that reads back to the same value, so nothing is lost.

use std::fs;
use std::io::{self, Write};
use std::path::Path;

use surge_core::backend::Snapshot;
use surge_core::buffers::Kind;

use crate::{invalid, with_path};

/// Writes the particles in `order` as CSV, one row per particle.
pub(crate) fn write_csv<W: Write>(w: &mut W, s: &Snapshot, order: &[usize], dim: usize) -> io::Result<()> {
    let header = if dim == 2 { "id,kind,x,y,vx,vy,rho,p\n" } else { "id,kind,x,y,z,vx,vy,vz,rho,p\n" };
    w.write_all(header.as_bytes())?;
    for &i in order {
        let (id, x, v, rho, p) = (s.id[i], s.pos[i], s.vel[i], s.rho[i], s.p[i]);
        let kind = Kind::from_code(s.kind[i].into()).name();
        if dim == 2 {
            writeln!(w, "{id},{kind},{},{},{},{},{rho},{p}", x[0], x[1], v[0], v[1])?;
        } else {
            writeln!(w, "{id},{kind},{},{},{},{},{},{},{rho},{p}", x[0], x[1], x[2], v[0], v[1], v[2])?;
        }
    }
    Ok(())
}

/// A CSV frame read back by [`read_csv_frame`].
#[derive(Debug, Clone, Default)]
pub struct CsvFrame {
    /// Column names, `id` and `kind` first.
    pub header: Vec<String>,
    /// The `id` column.
    pub ids: Vec<u32>,
    /// The `kind` column (`fluid` or `boundary`).
    pub kinds: Vec<String>,
    /// One column per header entry after `id,kind`, in header order.
    pub columns: Vec<Vec<f64>>,
}

impl CsvFrame {
    /// The column named `name` (not `id` or `kind`), so callers need not count positions.
    pub fn column(&self, name: &str) -> Option<&[f64]> {
        let k = self.header.iter().skip(2).position(|h| h == name)?;
        Some(&self.columns[k])
    }
}

/// Reads a CSV frame back (for tests and tools): returns columns by header name.
pub fn read_csv_frame(path: &Path) -> io::Result<CsvFrame> {
    let text = fs::read_to_string(path).map_err(|e| with_path(e, "read", path))?;
    let mut lines = text.lines();
    let header: Vec<String> = lines.next().unwrap_or("").split(',').map(str::to_owned).collect();
    if header.len() < 2 || header[0] != "id" || header[1] != "kind" {
        return Err(invalid(path, "the header does not start with id,kind"));
    }
    let mut f = CsvFrame { columns: vec![Vec::new(); header.len() - 2], header, ..Default::default() };
    for (k, line) in lines.enumerate().filter(|(_, l)| !l.is_empty()) {
        let bad = || invalid(path, format!("line {}: {line:?} does not match the header", k + 2));
        let fields: Vec<&str> = line.split(',').collect();
        if fields.len() != f.header.len() {
            return Err(bad());
        }
        f.ids.push(fields[0].parse().map_err(|_| bad())?);
        f.kinds.push(fields[1].to_owned());
        for (col, v) in f.columns.iter_mut().zip(&fields[2..]) {
            col.push(v.parse().map_err(|_| bad())?);
        }
    }
    Ok(f)
}
