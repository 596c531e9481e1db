//! surge-io: everything the simulator writes to disk (particle frames as VTU or CSV, the
//! `.pvd` time series, gauge tables, the run summary, checkpoints) and small readers of the
//! same files for tests and tools.
//!
//! Files that something else may read while the run goes on, or after a crash or a restart,
//! are written atomically: a viewer or a restart never sees half a file.
#![warn(missing_docs)]

pub mod checkpoint;
mod csv;
mod frame;
mod gauge;
mod vtu;

use std::fmt::Display;
use std::fs::{self, File};
use std::io::{self, BufWriter, Write};
use std::path::{Path, PathBuf};

pub use csv::{read_csv_frame, CsvFrame};
pub use frame::FrameWriter;
pub use gauge::GaugeWriter;
pub use vtu::{read_vtu, write_filled, VtuData};

/// Writes `bytes` to `path` atomically: to `path` + ".tmp" in the same folder, fsync, then
/// rename. Never leaves a half-written file under the final name.
pub fn write_atomic(path: &Path, bytes: &[u8]) -> io::Result<()> {
    write_atomic_with(path, |w| w.write_all(bytes))
}

/// Like [`write_atomic`], but `fill` streams the content, so a large frame is never held
/// whole in memory. On any error the temporary file is removed and `path` is untouched.
pub fn write_atomic_with(path: &Path, fill: impl FnOnce(&mut BufWriter<File>) -> io::Result<()>) -> io::Result<()> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    let result = (|| {
        let mut w = BufWriter::new(File::create(&tmp)?);
        fill(&mut w)?;
        // The data must be on disk before the rename makes it visible, or a crash could
        // leave an empty file under the final name.
        w.into_inner().map_err(|e| e.into_error())?.sync_all()?;
        fs::rename(&tmp, path)
    })();
    if let Err(e) = result {
        let _ = fs::remove_file(&tmp);
        return Err(with_path(e, "write", path));
    }
    // Make the rename itself durable; not every platform can open a folder, so best effort.
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty()).unwrap_or(Path::new("."));
    if let Ok(d) = File::open(dir) {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The run summary written as JSON (pretty) by [`write_summary`]: what scripts and benchmark
/// tables read after a run, so that they never parse the log.
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default)]
pub struct Summary {
    /// Case name.
    pub case: String,
    /// All particles, fluid and boundary.
    pub particles: u64,
    /// Fluid particles (at this run's first frame).
    pub fluid_particles: u64,
    /// Fluid particles removed because they left the domain or `domain.density_range`, over the
    /// whole chain of runs.
    #[serde(default)]
    pub removed_particles: u64,
    /// Particles the inlets made (issue 15), over the whole chain of runs.
    #[serde(default)]
    pub inlet_particles: u64,
    /// Particles that flowed out through the outlets, over the whole chain of runs.
    #[serde(default)]
    pub outlet_particles: u64,
    /// Boundary particles.
    pub boundary_particles: u64,
    /// Time steps taken.
    pub steps: u64,
    /// Simulated time reached (s).
    pub sim_time: f64,
    /// Simulated time asked for (s).
    pub end_time: f64,
    /// Frames written.
    pub frames: u64,
    /// Wall-clock time of the time loop (s).
    pub wall_seconds: f64,
    /// Throughput: particles times steps per wall-clock second.
    pub particle_steps_per_second: f64,
    /// This run's wall milliseconds per step (its own steps: a restart's earlier ones are
    /// not counted).
    #[serde(default)]
    pub ms_per_step: f64,
    /// This run's share of the wall time spent in rebuilds (re-key, sort, particle
    /// exchange), on the device that spent most: what a developed flow's frequent rebuilds
    /// cost. 0 when not known (a failed run).
    #[serde(default)]
    pub rebuild_share: f64,
    /// Device memory per particle: the most held at the start or the end of the run (a CPU
    /// backend's Verlet list is built after the start), on the device that holds most.
    pub bytes_per_particle: u64,
    /// Backend name, e.g. `cpu`.
    pub backend: String,
    /// Number of devices (GPUs or CPU workers) over every rank.
    pub workers: u32,
    /// MPI ranks (1 without MPI).
    #[serde(default)]
    pub ranks: u32,
    /// Threads per worker.
    pub threads: u32,
    /// [`Summary::COMPLETED`], [`Summary::DIVERGED`], [`Summary::INTERRUPTED`] or
    /// [`Summary::FAILED`].
    pub status: String,
    /// The failure message when `status` is not `completed`.
    pub message: Option<String>,
    /// The checkpoint this run continued from; `None` for a run from t = 0. `steps`,
    /// `sim_time`, `frames` and `wall_seconds` count from t = 0 over the whole chain of
    /// runs; `particle_steps_per_second` is this run's.
    pub restarted_from: Option<String>,
    /// The last checkpoint this run wrote: where `--restart latest` continues.
    pub checkpoint: Option<String>,
    /// Per device (global device order), this run's figures.
    #[serde(default)]
    pub devices: Vec<DeviceSummary>,
}

/// One device's figures in the [`Summary`].
#[derive(Debug, Clone, serde::Serialize, serde::Deserialize, Default, PartialEq)]
pub struct DeviceSummary {
    /// Global device number.
    pub device: u32,
    /// Backend name, e.g. `cuda:1 (NVIDIA H200)`.
    pub backend: String,
    /// Particles owned at the end.
    pub particles: u64,
    /// Cell layers owned at the end along the split axis, `[lo, hi)`.
    pub slice: [i32; 2],
    /// Seconds computing forces (exchange excluded).
    pub force_seconds: f64,
    /// Seconds in rebuilds (re-key, sort, the particle exchange).
    #[serde(default)]
    pub rebuild_seconds: f64,
    /// Seconds in updates.
    #[serde(default)]
    pub update_seconds: f64,
    /// Seconds in exchanges: edge forces each pass, particles at rebuilds.
    pub exchange_seconds: f64,
    /// Seconds of exchange the device waited on (not hidden behind its own work): taking
    /// the edge values off the device and putting the neighbours' on its copies, once they
    /// are computed.
    pub exposed_exchange_seconds: f64,
    /// Seconds waiting for slower devices: in reductions (dt, displacement), and for a
    /// neighbour's edge force values not computed yet (over device links; through the host
    /// that wait counts as exposed exchange).
    pub reduce_seconds: f64,
    /// Moves of this device's slice boundaries by the load balancer.
    pub boundary_moves: u64,
    /// Fluid particles this device took out in this run for a density outside
    /// `domain.density_range` (counted in the summary's `removed_particles` with those that
    /// left the domain; a restarted run counts from its restart).
    #[serde(default)]
    pub removed_for_density: u64,
}

impl Summary {
    /// The run reached its end time (or its step limit).
    pub const COMPLETED: &'static str = "completed";
    /// The physics blew up.
    pub const DIVERGED: &'static str = "diverged";
    /// Stopped by a signal after writing a checkpoint; continue with `--restart latest`.
    pub const INTERRUPTED: &'static str = "interrupted";
    /// Output could not be written, or the worker failed.
    pub const FAILED: &'static str = "failed";
}

/// Writes the summary atomically, so a script polling for it never reads half a JSON.
pub fn write_summary(path: &Path, s: &Summary) -> io::Result<()> {
    let mut json = serde_json::to_vec_pretty(s).map_err(|e| with_path(e.into(), "serialise", path))?;
    json.push(b'\n');
    write_atomic(path, &json)
}

/// Adds what was being done and to which path to an error: a bare "No such file or
/// directory" does not tell the user which file.
pub(crate) fn with_path(e: io::Error, what: &str, path: &Path) -> io::Error {
    io::Error::new(e.kind(), format!("cannot {what} {}: {e}", path.display()))
}

/// An error for a file whose content is not what this crate writes.
pub(crate) fn invalid(path: &Path, msg: impl Display) -> io::Error {
    io::Error::new(io::ErrorKind::InvalidData, format!("{}: {msg}", path.display()))
}

/// Value of attribute `key` in the text of an XML tag. Enough for the files this crate
/// writes (double quotes, no spaces around `=`); not a general XML parser.
pub(crate) fn xml_attr<'a>(tag: &'a str, key: &str) -> Option<&'a str> {
    let pat = format!(" {key}=\"");
    let start = tag.find(&pat)? + pat.len();
    let len = tag[start..].find('"')?;
    Some(&tag[start..start + len])
}

/// A fresh, empty folder for one test (tests run in parallel and must not share files),
/// removed when the test passes and kept for a look when it fails.
#[cfg(test)]
pub(crate) struct TestDir(PathBuf);

#[cfg(test)]
impl Drop for TestDir {
    fn drop(&mut self) {
        if !std::thread::panicking() {
            let _ = fs::remove_dir_all(&self.0);
        }
    }
}

#[cfg(test)]
impl std::ops::Deref for TestDir {
    type Target = Path;
    fn deref(&self) -> &Path {
        &self.0
    }
}

#[cfg(test)]
pub(crate) fn test_dir(name: &str) -> TestDir {
    let dir = std::env::temp_dir().join(format!("surge-io-{name}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(&dir).unwrap();
    TestDir(dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn write_atomic_replaces_and_leaves_no_tmp() {
        let dir = test_dir("atomic");
        let path = dir.join("a.txt");
        write_atomic(&path, b"first").unwrap();
        write_atomic(&path, b"second").unwrap();
        assert_eq!(fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = fs::read_dir(&*dir).unwrap().map(|e| e.unwrap().file_name()).collect();
        assert_eq!(names, ["a.txt"]);
    }

    #[test]
    fn write_atomic_failure_keeps_old_file() {
        let dir = test_dir("atomic_fail");
        let path = dir.join("a.txt");
        write_atomic(&path, b"old").unwrap();
        let err = write_atomic_with(&path, |_| Err(io::Error::other("boom"))).unwrap_err();
        assert!(err.to_string().contains(&path.display().to_string()), "{err}");
        assert_eq!(fs::read(&path).unwrap(), b"old");
        assert!(!dir.join("a.txt.tmp").exists());
    }

    #[test]
    fn summary_round_trips() {
        let dir = test_dir("summary");
        let s = Summary {
            case: "dam".into(),
            steps: 12,
            status: "diverged".into(),
            message: Some("nan".into()),
            ..Default::default()
        };
        write_summary(&dir.join("summary.json"), &s).unwrap();
        let back: Summary = serde_json::from_slice(&fs::read(dir.join("summary.json")).unwrap()).unwrap();
        assert_eq!((back.case, back.steps, back.message), (s.case, s.steps, s.message));
    }
}
