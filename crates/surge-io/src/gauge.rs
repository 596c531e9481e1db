//! Gauge tables: one CSV row per gauge sample, appended and flushed as the run goes, so the
//! table can be plotted while the run is still going and survives a crash.

use std::fs::{self, File, OpenOptions};
use std::io::{self, Write};
use std::path::{Path, PathBuf};

use crate::{invalid, with_path, write_atomic};

/// Appends gauge rows to a CSV file with the header `time,<name1>,<name2>...`.
#[derive(Debug)]
pub struct GaugeWriter {
    path: PathBuf,
    file: File,
    columns: usize,
}

fn header(path: &Path, names: &[String]) -> io::Result<String> {
    match names.iter().find(|n| n.contains([',', '\n', '\r'])) {
        Some(n) => Err(invalid(path, format!("gauge name {n:?} cannot be a CSV column name"))),
        None => Ok(std::iter::once("time").chain(names.iter().map(String::as_str)).collect::<Vec<_>>().join(",")),
    }
}

impl GaugeWriter {
    /// Creates or truncates `path` and writes the header `time,<name1>,<name2>...`.
    pub fn create(path: &Path, names: &[String]) -> io::Result<GaugeWriter> {
        let header = header(path, names)?;
        let mut file = File::create(path).map_err(|e| with_path(e, "create", path))?;
        writeln!(file, "{header}").map_err(|e| with_path(e, "write", path))?;
        Ok(GaugeWriter { path: path.to_owned(), file, columns: names.len() })
    }

    /// Opens an existing gauge file for appending after a restart at `up_to_time`: keeps the
    /// header and the rows at or before that time, so the table has no rows from the
    /// abandoned future. A row cut short by a crash is dropped; the header must match `names`.
    pub fn resume(path: &Path, names: &[String], up_to_time: f64) -> io::Result<GaugeWriter> {
        let want = header(path, names)?;
        let text = fs::read_to_string(path).map_err(|e| with_path(e, "read", path))?;
        let mut lines = text.split_inclusive('\n').filter(|l| l.ends_with('\n'));
        let found = lines.next().unwrap_or("").trim_end();
        if found != want {
            return Err(invalid(path, format!("gauge header {found:?} does not match this case's {want:?}")));
        }
        let mut kept = format!("{want}\n");
        for (k, line) in lines.enumerate() {
            let time = line.split(',').next().and_then(|t| t.trim().parse::<f64>().ok());
            match time {
                Some(t) if t <= up_to_time => kept.push_str(line),
                Some(_) => {}
                None => return Err(invalid(path, format!("line {}: no time in {line:?}", k + 2))),
            }
        }
        write_atomic(path, kept.as_bytes())?;
        let file = OpenOptions::new().append(true).open(path).map_err(|e| with_path(e, "open", path))?;
        Ok(GaugeWriter { path: path.to_owned(), file, columns: names.len() })
    }

    /// Appends one row `time,v1,v2...` and flushes it; the row goes out in one write, so a
    /// reader sees complete lines.
    pub fn write_row(&mut self, time: f64, values: &[f64]) -> io::Result<()> {
        if values.len() != self.columns {
            let msg = format!("{} gauge values for {} columns", values.len(), self.columns);
            return Err(invalid(&self.path, msg));
        }
        let mut row = time.to_string();
        for v in values {
            row.push(',');
            row.push_str(&v.to_string());
        }
        row.push('\n');
        self.file
            .write_all(row.as_bytes())
            .and_then(|()| self.file.flush())
            .map_err(|e| with_path(e, "write", &self.path))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir;

    fn names() -> Vec<String> {
        vec!["h1".into(), "p2".into()]
    }

    #[test]
    fn resume_drops_rows_after_the_time() {
        let dir = test_dir("gauge_resume");
        let path = dir.join("gauges.csv");
        let mut g = GaugeWriter::create(&path, &names()).unwrap();
        for k in 0..5 {
            g.write_row(k as f64 * 0.25, &[k as f64, -0.1 * k as f64]).unwrap();
        }
        drop(g);
        // A crash may leave half a row at the end.
        OpenOptions::new().append(true).open(&path).unwrap().write_all(b"1.25,0.3").unwrap();
        let mut g = GaugeWriter::resume(&path, &names(), 0.5).unwrap();
        g.write_row(0.75, &[9.0, 1e-3]).unwrap();
        let text = fs::read_to_string(&path).unwrap();
        assert_eq!(text, "time,h1,p2\n0,0,-0\n0.25,1,-0.1\n0.5,2,-0.2\n0.75,9,0.001\n");
    }

    #[test]
    fn resume_rejects_another_header() {
        let dir = test_dir("gauge_header");
        let path = dir.join("gauges.csv");
        GaugeWriter::create(&path, &names()).unwrap();
        let err = GaugeWriter::resume(&path, &["h1".to_string()], 1.0).unwrap_err();
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
    }

    #[test]
    fn write_row_rejects_a_wrong_count() {
        let dir = test_dir("gauge_count");
        let path = dir.join("gauges.csv");
        let mut g = GaugeWriter::create(&path, &names()).unwrap();
        assert!(g.write_row(0.0, &[1.0]).is_err());
    }
}
