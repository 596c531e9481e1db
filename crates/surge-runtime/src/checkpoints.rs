//! When and where checkpoints are written and which one a restart continues from. The file
//! format is `surge_io::checkpoint`'s; this module holds the policy: file names per step and
//! rank, keeping the newest `keep`, dropping an abandoned future, falling back past a
//! damaged checkpoint.

use std::fmt;
use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use surge_core::buffers::ParticleState;
use surge_core::Case;
use surge_io::checkpoint::{self, Checkpoint, EosInfo, GridInfo, Header, Slice};

use crate::simulation::StepState;

/// The checkpoint a run continues from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestartFrom {
    /// The newest usable checkpoint in `OUT/checkpoints/`.
    Latest,
    /// This checkpoint file (any rank's file of the checkpoint).
    Path(PathBuf),
}

impl FromStr for RestartFrom {
    type Err = std::convert::Infallible;
    /// `latest`, or a path.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Ok(if s == "latest" { RestartFrom::Latest } else { RestartFrom::Path(PathBuf::from(s)) })
    }
}

impl fmt::Display for RestartFrom {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RestartFrom::Latest => write!(f, "latest"),
            RestartFrom::Path(p) => write!(f, "{}", p.display()),
        }
    }
}

/// A checkpoint chosen and read for a restart.
#[derive(Debug, Clone)]
pub struct Restart {
    /// The file it was read from (rank 0's, or the one named).
    pub path: PathBuf,
    /// The particles of every rank, joined, and rank 0's header.
    pub checkpoint: Checkpoint,
}

impl Restart {
    /// The simulation's clock and rebuild bookkeeping at the checkpoint.
    pub fn step_state(&self) -> StepState {
        let h = &self.checkpoint.header;
        StepState {
            step: h.step,
            time: h.time,
            dt: h.dt,
            drift: h.drift,
            last_disp: h.last_disp,
            rebuilds: h.rebuilds,
            removed: h.removed,
            spawned: h.spawned,
            outflow: h.outflow,
            bodies: h.bodies.clone(),
        }
    }
}

/// The folder of the checkpoints of an output directory.
pub fn checkpoint_dir(out_dir: &Path) -> PathBuf {
    out_dir.join(checkpoint::DIR)
}

/// Finds and reads the checkpoint to continue `case` from. A checkpoint of another case or
/// of a newer format is refused. With [`RestartFrom::Latest`], a damaged checkpoint (cut
/// short, corrupted, a rank file missing) is skipped with a warning for the next older one:
/// that is what keeping more than one is for. The error is one line naming the file.
pub fn find_restart(out_dir: &Path, from: &RestartFrom, case: &Case) -> Result<Restart, String> {
    let hash = case.physics_hash();
    let path = match from {
        RestartFrom::Path(p) => {
            return checkpoint::load(p, Some(hash))
                .map(|checkpoint| Restart { path: p.clone(), checkpoint })
                .map_err(|e| e.to_string())
        }
        RestartFrom::Latest => checkpoint_dir(out_dir),
    };
    let sets = checkpoint::list(&path).map_err(|e| e.to_string())?;
    if sets.is_empty() {
        return Err(format!(
            "{}: no checkpoint to restart from; one is written every [checkpoint] interval and when a run is \
             stopped by SIGTERM or SIGUSR1",
            path.display()
        ));
    }
    let mut newest_damage = None;
    for set in sets.iter().rev() {
        let file = &set.files[0].1;
        match checkpoint::load(file, Some(hash)) {
            Ok(checkpoint) => return Ok(Restart { path: file.clone(), checkpoint }),
            Err(e) if e.is_damage() => {
                tracing::warn!("skipping a damaged checkpoint: {e}");
                newest_damage.get_or_insert(e);
            }
            Err(e) => return Err(e.to_string()),
        }
    }
    let e = newest_damage.expect("a checkpoint was tried");
    Err(format!("{e} (and no older checkpoint in {} is usable)", path.display()))
}

/// The header of rank 0's file of a checkpoint of a one-device run. Fails when the backend
/// did not say which grid the cells of its particles refer to.
/// The header of this rank's file: `slices` are this rank's devices' (global number,
/// layers `lo..hi`, particles), `(rank, ranks)` its place among the ranks.
pub(crate) fn header(
    case: &Case,
    state: StepState,
    next_frame: u32,
    wall_seconds: f64,
    particles: &ParticleState,
    (rank, ranks): (usize, usize),
    slices: &[(usize, (i32, i32), u64)],
) -> io::Result<Header> {
    let StepState { step, time, dt, drift, last_disp, rebuilds, removed, spawned, outflow, bodies } = state;
    let grid = particles.grid().ok_or_else(|| {
        io::Error::other("cannot write a checkpoint: the backend did not say which grid its particles' cells refer to")
    })?;
    Ok(Header {
        written_by: format!("surge {}", env!("CARGO_PKG_VERSION")),
        case_name: case.name.clone(),
        case_hash: case.physics_hash(),
        rank: rank as u32,
        ranks: ranks as u32,
        step,
        time,
        dt,
        drift,
        last_disp,
        rebuilds,
        removed,
        spawned,
        outflow,
        next_frame,
        wall_seconds,
        grid: GridInfo::from(grid),
        eos: EosInfo::of(case),
        slices: slices
            .iter()
            .map(|&(device, (lo, hi), particles)| Slice {
                device: device as u32,
                first_layer: lo,
                layers: hi - lo,
                particles,
            })
            .collect(),
        bodies,
    })
}

/// Writes rank 0's file of the checkpoint at `header.step` into `dir`, then removes all but
/// the newest `keep` checkpoints. Returns the file written.
pub(crate) fn write(dir: &Path, header: &Header, particles: &ParticleState, keep: u32) -> io::Result<PathBuf> {
    fs::create_dir_all(dir).map_err(|e| io::Error::new(e.kind(), format!("cannot create {}: {e}", dir.display())))?;
    let path = dir.join(checkpoint::file_name(header.step, header.rank));
    checkpoint::write(&path, header, particles)?;
    let sets = checkpoint::list(dir)?;
    let old = sets.len().saturating_sub(keep as usize);
    // Each rank removes its own files of the old checkpoints (the others do theirs).
    for set in &sets[..old] {
        for (r, p) in set.files.iter().filter(|(r, _)| *r == header.rank) {
            fs::remove_file(p)
                .map_err(|e| io::Error::new(e.kind(), format!("cannot remove rank {r}'s {}: {e}", p.display())))?;
        }
    }
    Ok(path)
}

/// Removes the checkpoints after `step` (all of them for `None`: a run from t = 0) and any
/// temporary file of a write cut short. A run that starts from a checkpoint abandons what
/// came after it, as it does for frames and gauge rows: otherwise `--restart latest` could
/// later continue a future that this run no longer leads to. Returns how many were removed.
pub(crate) fn remove_after(dir: &Path, step: Option<u64>) -> io::Result<usize> {
    let sets = checkpoint::list(dir)?;
    let mut removed = 0;
    let abandoned = |s: &&checkpoint::CheckpointFiles| match step {
        Some(k) => s.step > k,
        None => true,
    };
    for set in sets.iter().filter(abandoned) {
        remove(set)?;
        removed += 1;
    }
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let name = e.file_name();
        let name = name.to_string_lossy();
        if name.ends_with(".surge.tmp") && name.starts_with("ckpt_") {
            fs::remove_file(e.path())
                .map_err(|err| io::Error::new(err.kind(), format!("cannot remove {}: {err}", e.path().display())))?;
        }
    }
    Ok(removed)
}

fn remove(set: &checkpoint::CheckpointFiles) -> io::Result<()> {
    for (_, p) in &set.files {
        fs::remove_file(p).map_err(|e| io::Error::new(e.kind(), format!("cannot remove {}: {e}", p.display())))?;
    }
    Ok(())
}
