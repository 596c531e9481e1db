//! Checkpoint files: the state a run needs to continue bitwise where it stopped, one file per
//! rank, `OUT/checkpoints/ckpt_<step, 10 digits>.rank<rank, 4 digits>.surge`.
//!
//! Layout of one file (integers little-endian):
//!
//! | bytes | content |
//! |---|---|
//! | 8 | magic `SURGECKP` |
//! | 4 | format version ([`FORMAT_VERSION`]) |
//! | 4 | header length H |
//! | H | header: postcard encoding of [`Header`], the particle count and the buffer list |
//! | 4 | CRC-32 of everything before it |
//! | n × elem bytes, per buffer | the conserved buffers, raw (`bytemuck`), in the listed order |
//! | 4 | CRC-32 of the buffers |
//!
//! The magic and the version come before the postcard part so that a later format, whose
//! header no longer decodes as this one, is still recognised and refused by name. The header
//! has a checksum of its own so that its particle count can be trusted before the file's
//! length is compared with it: a short file then reads as truncated, a flipped byte as
//! corrupted. Files are written to a temporary name and renamed, so a crash mid-write never
//! leaves a file that looks valid. CRC-32 (crc32fast) rather than a byte-wise hash: the body
//! is gigabytes on a large run, and CRC-32 runs at memory speed.

use std::fmt;
use std::fs::{self, File};
use std::io::{self, Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use surge_core::backend::Snapshot;
use surge_core::bodies::BodyState;
use surge_core::buffers::{BufferId, BufferSet, ParticleState};
use surge_core::grid::Grid;
use surge_core::physics::constants::Constants;
use surge_core::physics::eos::tait_pressure;
use surge_core::Case;

use crate::{with_path, write_atomic_with};

/// The first bytes of every checkpoint file.
pub const MAGIC: [u8; 8] = *b"SURGECKP";
/// The format this build writes, and the only one it reads (2: the header counts the fluid
/// particles removed, `Header::removed`; 3: it holds the floating bodies' states,
/// `Header::bodies`; 4: it counts the open boundaries' particles, `Header::spawned` and
/// `Header::outflow`).
pub const FORMAT_VERSION: u32 = 4;
/// The folder of the checkpoints inside an output directory.
pub const DIR: &str = "checkpoints";

/// Bytes before the header: magic, version, header length.
const PREFIX: usize = 16;

/// What a checkpoint file says besides the particles.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Header {
    /// The surge version that wrote it, for messages.
    pub written_by: String,
    /// Case name, for messages.
    pub case_name: String,
    /// [`Case::physics_hash`] of the case that wrote it: a restart refuses another case.
    pub case_hash: u64,
    /// This file's rank.
    pub rank: u32,
    /// Number of rank files that make up the checkpoint.
    pub ranks: u32,
    /// Steps done.
    pub step: u64,
    /// Simulated time (s).
    pub time: f64,
    /// The last time step (s).
    pub dt: f64,
    /// Upper bound of any particle's displacement since the last rebuild (m).
    pub drift: f64,
    /// Largest displacement during the last step (m).
    pub last_disp: f64,
    /// Rebuilds done.
    pub rebuilds: u64,
    /// Fluid particles removed so far because they left the domain or `domain.density_range`.
    pub removed: u64,
    /// Particles the inlets made so far.
    pub spawned: u64,
    /// Particles that flowed out through the outlets so far.
    pub outflow: u64,
    /// Index of the next frame of the series.
    pub next_frame: u32,
    /// Wall seconds of the time loop up to this checkpoint, summed over the runs of a chain.
    pub wall_seconds: f64,
    /// The grid the cells refer to.
    pub grid: GridInfo,
    /// The equation of state, so that tools read density and pressure without the case.
    pub eos: EosInfo,
    /// The slices of cells that the devices of this rank owned, in key order; their
    /// particles follow one another in the file.
    pub slices: Vec<Slice>,
    /// The floating bodies' states, in case order (the same in every rank's file).
    pub bodies: Vec<BodyState>,
}

/// The cell grid, as [`Grid`] holds it; written out field by field so that a change of
/// [`Grid`] cannot silently change the file format.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct GridInfo {
    /// 2 or 3.
    pub dim: u32,
    /// Lower corner of cell (0,0,0).
    pub origin: [f64; 3],
    /// Cell size per axis.
    pub cell: [f64; 3],
    /// Cell counts per axis.
    pub n: [i32; 3],
    /// Periodic axes.
    pub periodic: [bool; 3],
    /// Axes from slowest to fastest varying in the linear key; the split axis first.
    pub order: [u32; 3],
    /// Kernel support radius.
    pub support: f64,
    /// Smallest `reach * cell - support`.
    pub skin: f64,
    /// Cells the neighbour stencil reaches on each side.
    pub reach: i32,
}

impl From<&Grid> for GridInfo {
    fn from(g: &Grid) -> Self {
        GridInfo {
            dim: g.dim as u32,
            origin: g.origin,
            cell: g.cell,
            n: g.n,
            periodic: g.periodic,
            order: g.order.map(|a| a as u32),
            support: g.support,
            skin: g.skin,
            reach: g.reach,
        }
    }
}

impl GridInfo {
    /// The grid.
    pub fn grid(&self) -> Grid {
        Grid {
            origin: self.origin,
            cell: self.cell,
            n: self.n,
            periodic: self.periodic,
            order: self.order.map(|a| a as usize),
            dim: self.dim as usize,
            support: self.support,
            skin: self.skin,
            reach: self.reach,
            window: (0, self.n[self.order[0] as usize]),
        }
    }
}

/// Tait equation-of-state constants in float32, as the backends use them.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct EosInfo {
    /// Reference density.
    pub rho0: f32,
    /// Tait coefficient B.
    pub b: f32,
    /// Tait exponent.
    pub gamma: f32,
    /// Background pressure.
    pub background_pressure: f32,
}

impl EosInfo {
    /// The constants of a case.
    pub fn of(case: &Case) -> EosInfo {
        let c = Constants::of(case);
        EosInfo { rho0: c.rho0, b: c.tait_b, gamma: c.gamma, background_pressure: c.pb }
    }
}

/// A run of cell layers along the split axis that one device owned.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Slice {
    /// Global device number (rank-major, then local device).
    pub device: u32,
    /// First cell layer along the split axis.
    pub first_layer: i32,
    /// Number of layers.
    pub layers: i32,
    /// Particles of the slice.
    pub particles: u64,
}

/// The postcard part of a file: the header and the layout of the buffers that follow.
#[derive(Debug, Clone, Serialize, Deserialize)]
struct FileHeader {
    header: Header,
    particles: u64,
    /// Name and element size of each buffer, in file order.
    buffers: Vec<(String, u32)>,
}

/// A checkpoint read back: one rank file, or every rank file of a checkpoint joined.
#[derive(Debug, Clone)]
pub struct Checkpoint {
    /// The header (rank 0's when joined, with the slices of every rank).
    pub header: Header,
    /// The particles, in key order.
    pub particles: ParticleState,
}

/// What is wrong with a checkpoint.
#[derive(Debug, Clone, PartialEq)]
pub enum Problem {
    /// The file could not be read.
    Unreadable(String),
    /// The file does not start with [`MAGIC`].
    NotACheckpoint,
    /// Written in a newer format than this build reads.
    NewerFormat(u32),
    /// A format version this build never wrote.
    UnknownFormat(u32),
    /// Shorter than its header says.
    Truncated {
        /// Bytes the file should have.
        expected: u64,
        /// Bytes it has.
        found: u64,
    },
    /// A checksum does not match, or the content is not what the format allows.
    Corrupted(String),
    /// Written by another case.
    OtherCase {
        /// The case name in the file.
        name: String,
        /// Its case hash.
        found: u64,
        /// This case's hash.
        expected: u64,
    },
    /// A rank file of the checkpoint is not there (the error's path is the missing file).
    MissingRank {
        /// Ranks that wrote the checkpoint.
        ranks: u32,
    },
    /// Rank files that do not belong together.
    Inconsistent(String),
}

/// A checkpoint that cannot be used: which file, and what is wrong with it.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointError {
    /// The file.
    pub path: PathBuf,
    /// What is wrong.
    pub problem: Problem,
}

impl CheckpointError {
    fn new(path: &Path, problem: Problem) -> Self {
        CheckpointError { path: path.to_owned(), problem }
    }
    /// True when the file is damaged (unreadable, truncated, corrupted, incomplete), as
    /// opposed to sound but not for this case or this build: a restart from the latest
    /// checkpoint then falls back to an older one.
    pub fn is_damage(&self) -> bool {
        !matches!(self.problem, Problem::NewerFormat(_) | Problem::OtherCase { .. })
    }
}

impl fmt::Display for CheckpointError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.path.display())?;
        match &self.problem {
            Problem::Unreadable(e) => write!(f, "cannot read the checkpoint: {e}"),
            Problem::NotACheckpoint => write!(f, "not a surge checkpoint (the file does not start with SURGECKP)"),
            Problem::NewerFormat(v) => write!(
                f,
                "written by a newer surge (checkpoint format version {v}; this surge reads version \
                 {FORMAT_VERSION}): restart it with that surge"
            ),
            Problem::UnknownFormat(v) if *v < FORMAT_VERSION => write!(
                f,
                "written by an older surge (checkpoint format version {v}; this surge reads version \
                 {FORMAT_VERSION}): restart it with that surge"
            ),
            Problem::UnknownFormat(v) => write!(f, "unknown checkpoint format version {v}"),
            Problem::Truncated { expected, found } => write!(
                f,
                "truncated: the checkpoint should be {expected} bytes long, the file has {found} (was its \
                 writing cut short?)"
            ),
            Problem::Corrupted(what) => write!(f, "corrupted: {what}"),
            Problem::OtherCase { name, found, expected } => write!(
                f,
                "written for another case (`{name}`, case hash {found:016x}; this case's is {expected:016x}): \
                 dp, geometry, physics or time scheme differ; a restart may change only the name, time.end, \
                 time.cfl, time.dt_max, [output], [[gauge]] and [checkpoint]"
            ),
            Problem::MissingRank { ranks } => {
                write!(f, "missing: the checkpoint was written by {ranks} ranks and this rank's file is not there")
            }
            Problem::Inconsistent(what) => write!(f, "does not belong with the other rank files: {what}"),
        }
    }
}

impl std::error::Error for CheckpointError {}

/// File name of a rank's file of the checkpoint at `step`.
pub fn file_name(step: u64, rank: u32) -> String {
    format!("ckpt_{step:010}.rank{rank:04}.surge")
}

/// `(step, rank)` of a checkpoint file name; `None` for any other name (temporary files
/// included).
pub fn parse_file_name(name: &str) -> Option<(u64, u32)> {
    let rest = name.strip_prefix("ckpt_")?.strip_suffix(".surge")?;
    let (step, rank) = rest.split_once(".rank")?;
    let digits = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_digit());
    if !digits(step, 10) || !digits(rank, 4) {
        return None;
    }
    Some((step.parse().ok()?, rank.parse().ok()?))
}

/// The files of one checkpoint found in a folder.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckpointFiles {
    /// Steps done when it was written.
    pub step: u64,
    /// `(rank, path)` of each file found, by rank.
    pub files: Vec<(u32, PathBuf)>,
}

/// The checkpoints in `dir`, oldest (fewest steps) first; none when `dir` does not exist.
pub fn list(dir: &Path) -> io::Result<Vec<CheckpointFiles>> {
    let entries = match fs::read_dir(dir) {
        Ok(e) => e,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(with_path(e, "list", dir)),
    };
    let mut found: Vec<(u64, u32, PathBuf)> = Vec::new();
    for e in entries {
        let e = e.map_err(|e| with_path(e, "list", dir))?;
        if let Some((step, rank)) = e.file_name().to_str().and_then(parse_file_name) {
            found.push((step, rank, e.path()));
        }
    }
    found.sort();
    let mut sets: Vec<CheckpointFiles> = Vec::new();
    for (step, rank, path) in found {
        match sets.last_mut() {
            Some(s) if s.step == step => s.files.push((rank, path)),
            _ => sets.push(CheckpointFiles { step, files: vec![(rank, path)] }),
        }
    }
    Ok(sets)
}

/// Writes one rank's checkpoint file atomically. The particle count and the buffer list
/// come from `particles`; the slices of `header` must add up to its particle count, and
/// `header.grid` must be the grid the particles say their cells refer to.
pub fn write(path: &Path, header: &Header, particles: &ParticleState) -> io::Result<()> {
    let n = particles.len() as u64;
    let in_slices: u64 = header.slices.iter().map(|s| s.particles).sum();
    let bad = |msg: String| Err(with_path(io::Error::new(io::ErrorKind::InvalidInput, msg), "write", path));
    if in_slices != n {
        return bad(format!("the slices hold {in_slices} particles, the state {n}"));
    }
    if particles.grid() != Some(&header.grid.grid()) {
        return bad("the particles' cells refer to another grid than the header's (or to none)".into());
    }
    little_endian(path)?;
    let buffers: Vec<BufferId> = particles.buffers().iter().collect();
    let fh = FileHeader {
        header: header.clone(),
        particles: n,
        buffers: buffers.iter().map(|b| (b.name().to_string(), b.elem_bytes() as u32)).collect(),
    };
    let encoded = postcard::to_stdvec(&fh).map_err(|e| with_path(io::Error::other(e), "encode", path))?;
    let mut head = Vec::with_capacity(PREFIX + encoded.len() + 4);
    head.extend_from_slice(&MAGIC);
    head.extend_from_slice(&FORMAT_VERSION.to_le_bytes());
    head.extend_from_slice(&(encoded.len() as u32).to_le_bytes());
    head.extend_from_slice(&encoded);
    let head_crc = crc32fast::hash(&head);
    head.extend_from_slice(&head_crc.to_le_bytes());
    write_atomic_with(path, |w| {
        w.write_all(&head)?;
        let mut crc = crc32fast::Hasher::new();
        for &b in &buffers {
            let bytes = particles.bytes(b);
            crc.update(bytes);
            w.write_all(bytes)?;
        }
        w.write_all(&crc.finalize().to_le_bytes())
    })
}

/// The buffers are written as the machine holds them; every platform surge runs on is
/// little-endian, and the format says so.
fn little_endian(path: &Path) -> io::Result<()> {
    if cfg!(target_endian = "big") {
        let e = io::Error::new(io::ErrorKind::Unsupported, "checkpoints are little-endian; this machine is not");
        return Err(with_path(e, "use checkpoint", path));
    }
    Ok(())
}

/// An open checkpoint file whose header has been checked.
struct Opened {
    file: io::BufReader<File>,
    fh: FileHeader,
    buffers: Vec<BufferId>,
}

/// Opens a file and checks everything up to the buffers: magic, version, header checksum,
/// the file's length against the header, the buffer list and the slices.
fn open(path: &Path) -> Result<Opened, CheckpointError> {
    let err = |p| CheckpointError::new(path, p);
    let io_err = |e: io::Error| {
        if e.kind() == io::ErrorKind::NotFound {
            err(Problem::Unreadable("no such file".into()))
        } else {
            err(Problem::Unreadable(e.to_string()))
        }
    };
    little_endian(path).map_err(|e| err(Problem::Unreadable(e.to_string())))?;
    let file = File::open(path).map_err(io_err)?;
    let len = file.metadata().map_err(io_err)?.len();
    let mut file = io::BufReader::with_capacity(1 << 20, file);
    let mut prefix = [0u8; PREFIX];
    let got = read_up_to(&mut file, &mut prefix).map_err(io_err)?;
    if got < MAGIC.len() || prefix[..8] != MAGIC {
        return Err(err(Problem::NotACheckpoint));
    }
    if got < PREFIX {
        return Err(err(Problem::Truncated { expected: PREFIX as u64, found: len }));
    }
    let version = u32::from_le_bytes(prefix[8..12].try_into().expect("4 bytes"));
    if version > FORMAT_VERSION {
        return Err(err(Problem::NewerFormat(version)));
    }
    if version != FORMAT_VERSION {
        return Err(err(Problem::UnknownFormat(version)));
    }
    let h = u32::from_le_bytes(prefix[12..16].try_into().expect("4 bytes")) as u64;
    let head_end = PREFIX as u64 + h + 4;
    if len < head_end {
        return Err(err(Problem::Truncated { expected: head_end, found: len }));
    }
    let mut head = vec![0u8; h as usize + 4];
    file.read_exact(&mut head).map_err(io_err)?;
    let stored = u32::from_le_bytes(head[h as usize..].try_into().expect("4 bytes"));
    let mut crc = crc32fast::Hasher::new();
    crc.update(&prefix);
    crc.update(&head[..h as usize]);
    if crc.finalize() != stored {
        return Err(err(Problem::Corrupted("the header's checksum does not match".into())));
    }
    let fh: FileHeader = postcard::from_bytes(&head[..h as usize])
        .map_err(|e| err(Problem::Corrupted(format!("the header does not decode: {e}"))))?;
    let mut buffers = Vec::new();
    let mut body = 0u64;
    for (name, elem) in &fh.buffers {
        let b = BufferId::ALL.iter().copied().find(|b| b.name() == name && b.conserved()).ok_or_else(|| {
            err(Problem::Corrupted(format!("unknown buffer `{name}` (a checkpoint holds conserved buffers only)")))
        })?;
        if *elem as usize != b.elem_bytes() || buffers.contains(&b) {
            return Err(err(Problem::Corrupted(format!(
                "buffer `{name}` listed twice or with {elem}-byte elements (expected {})",
                b.elem_bytes()
            ))));
        }
        buffers.push(b);
        body =
            fh.particles.checked_mul(*elem as u64).and_then(|x| x.checked_add(body)).ok_or_else(|| {
                err(Problem::Corrupted(format!("{} particles cannot be held in a file", fh.particles)))
            })?;
    }
    let expected = head_end.saturating_add(body).saturating_add(4);
    if len < expected {
        return Err(err(Problem::Truncated { expected, found: len }));
    }
    if len > expected {
        return Err(err(Problem::Corrupted(format!("{} bytes after the end of the checkpoint", len - expected))));
    }
    let in_slices: u64 = fh.header.slices.iter().map(|s| s.particles).sum();
    if in_slices != fh.particles {
        return Err(err(Problem::Corrupted(format!(
            "the slices hold {in_slices} particles, the file {}",
            fh.particles
        ))));
    }
    Ok(Opened { file, fh, buffers })
}

/// Reads as many bytes as there are, up to `buf.len()`.
fn read_up_to(r: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut got = 0;
    while got < buf.len() {
        match r.read(&mut buf[got..]) {
            Ok(0) => break,
            Ok(k) => got += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(got)
}

/// The header of one checkpoint file, checked (magic, version, header checksum, length)
/// without reading the particles.
pub fn read_header(path: &Path) -> Result<Header, CheckpointError> {
    Ok(open(path)?.fh.header)
}

/// Reads and checks one checkpoint file: magic, version, both checksums, length.
pub fn read(path: &Path) -> Result<Checkpoint, CheckpointError> {
    let Opened { mut file, fh, buffers } = open(path)?;
    let n = usize::try_from(fh.particles)
        .map_err(|_| CheckpointError::new(path, Problem::Corrupted("too many particles".into())))?;
    let set = buffers.iter().fold(BufferSet::default(), |s, b| BufferSet(s.0 | b.bit()));
    let mut particles = ParticleState::zeroed(n, set);
    let mut crc = crc32fast::Hasher::new();
    let io_err = |e: io::Error| CheckpointError::new(path, Problem::Unreadable(e.to_string()));
    for &b in &buffers {
        let bytes = particles.bytes_mut(b);
        file.read_exact(bytes).map_err(io_err)?;
        crc.update(bytes);
    }
    let mut stored = [0u8; 4];
    file.read_exact(&mut stored).map_err(io_err)?;
    if crc.finalize() != u32::from_le_bytes(stored) {
        return Err(CheckpointError::new(
            path,
            Problem::Corrupted(
                "the particle data's checksum does not match (the file was damaged after it was written)".into(),
            ),
        ));
    }
    particles.set_grid(&fh.header.grid.grid());
    Ok(Checkpoint { header: fh.header, particles })
}

/// Reads a whole checkpoint from the path of any of its rank files: every rank file, checked
/// and joined in rank order (the particles of all ranks, in key order), so that any number
/// of devices can take them. With `case_hash`, a checkpoint of another case is refused
/// before its particles are read.
pub fn load(path: &Path, case_hash: Option<u64>) -> Result<Checkpoint, CheckpointError> {
    let first = read_header(path)?;
    let check_case = |h: &Header, p: &Path| match case_hash {
        Some(want) if h.case_hash != want => Err(CheckpointError::new(
            p,
            Problem::OtherCase { name: h.case_name.clone(), found: h.case_hash, expected: want },
        )),
        _ => Ok(()),
    };
    check_case(&first, path)?;
    let name = path.file_name().and_then(|n| n.to_str()).and_then(parse_file_name);
    let paths: Vec<PathBuf> = match name {
        Some((step, _)) => {
            let dir = path.parent().unwrap_or(Path::new(""));
            (0..first.ranks).map(|r| dir.join(file_name(step, r))).collect()
        }
        // A renamed file can only stand alone.
        None if first.ranks == 1 => vec![path.to_owned()],
        None => {
            return Err(CheckpointError::new(
                path,
                Problem::Inconsistent(format!(
                    "one of {} rank files, renamed: its siblings cannot be found",
                    first.ranks
                )),
            ))
        }
    };
    // Every file is there and belongs before any particle is read.
    for (r, p) in paths.iter().enumerate() {
        if !p.exists() {
            return Err(CheckpointError::new(p, Problem::MissingRank { ranks: first.ranks }));
        }
        let h = if p == path { first.clone() } else { read_header(p)? };
        check_case(&h, p)?;
        let mismatch = if h.rank as usize != r {
            Some(format!("it says it is rank {} of {}", h.rank, h.ranks))
        } else if h.ranks != first.ranks || h.step != first.step || h.time.to_bits() != first.time.to_bits() {
            Some(format!(
                "rank {r} of {} at step {} (t = {}), not {} ranks at step {} (t = {})",
                h.ranks, h.step, h.time, first.ranks, first.step, first.time
            ))
        } else if h.case_hash != first.case_hash {
            Some("another case hash".into())
        } else {
            None
        };
        if let Some(m) = mismatch {
            return Err(CheckpointError::new(p, Problem::Inconsistent(m)));
        }
    }
    let mut joined: Option<Checkpoint> = None;
    for p in &paths {
        let c = read(p)?;
        match joined.as_mut() {
            None => joined = Some(c),
            Some(j) => {
                // Devices may have keyed their cells on grids of their own: join on rank 0's.
                let mut particles = c.particles;
                let inconsistent = |e| CheckpointError::new(p, Problem::Inconsistent(e));
                particles.relocate(&j.header.grid.grid()).map_err(inconsistent)?;
                j.header.slices.extend_from_slice(&c.header.slices);
                j.particles.append(particles).map_err(inconsistent)?;
            }
        }
    }
    let mut joined = joined.expect("a checkpoint has at least one rank");
    joined.header.rank = 0;
    Ok(joined)
}

impl Checkpoint {
    /// The particles as a frame has them (absolute positions, density, pressure), computed
    /// as the backends' snapshots compute them, in storage order.
    pub fn snapshot(&self) -> Snapshot {
        let grid = self.header.grid.grid();
        let e = self.header.eos;
        let a = self.particles.arrays();
        Snapshot {
            id: a.info.iter().map(|i| i[0]).collect(),
            kind: a.info.iter().map(|i| i[1] as u8).collect(),
            pos: a.cell.iter().zip(&a.pos).map(|(c, o)| grid.absolute(*c, *o)).collect(),
            vel: a.vel.iter().map(|v| [v[0], v[1], v[2]]).collect(),
            rho: a.vel.iter().map(|v| e.rho0 * (1.0 + v[3])).collect(),
            p: a.vel.iter().map(|v| tait_pressure(v[3], e.b, e.gamma, e.background_pressure)).collect(),
        }
    }

    /// Writes the particles as a CSV frame (`id,kind,x,y[,z],vx,vy[,vz],rho,p`, rows in id
    /// order), the same bytes as a CSV frame written at the same time.
    pub fn write_csv(&self, path: &Path) -> io::Result<()> {
        let snap = self.snapshot();
        let order = snap.order_by_id();
        write_atomic_with(path, |w| crate::csv::write_csv(w, &snap, &order, self.header.grid.dim as usize))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::test_dir;
    use surge_core::buffers::ParticleArrays;

    fn grid() -> Grid {
        Grid {
            origin: [-0.5, -0.25, 0.0],
            cell: [0.5, 0.5, 0.5],
            n: [4, 3, 1],
            periodic: [false, true, false],
            order: [0, 1, 2],
            dim: 2,
            support: 0.4,
            skin: 0.1,
            reach: 1,
            window: (0, 4),
        }
    }

    /// Five particles with values that need every bit, in a key order, with wall normals.
    fn state() -> ParticleState {
        let mut a = ParticleArrays::zeroed(5);
        for i in 0..5 {
            let k = i as f32;
            a.info[i] = [(i as u32 * 3) % 5, (i % 2) as u32];
            a.cell[i] = [i as i32 % 4, 1, 0, 0];
            a.pos[i] = [0.1 * k + 1e-7, -1.0 / (k + 3.0), 0.0, 0.004];
            a.vel[i] = [k * 0.7, -0.2, 0.0, 1e-3 * k - 1.5e-3];
            a.vel_prev[i] = [k * 0.6, 0.3, 0.0, f32::from_bits(0x3a83_126f + i as u32)];
            a.wall[i] = [0.0, 1.0, 0.0, 0.01 * k];
        }
        let mut s = ParticleState::default();
        s.copy_from(&a, BufferSet::all());
        s.set_grid(&grid());
        s
    }

    fn header(n: u64, rank: u32, ranks: u32) -> Header {
        Header {
            written_by: "test".into(),
            case_name: "c".into(),
            case_hash: 0x1234_5678_9abc_def0,
            rank,
            ranks,
            step: 42,
            time: 0.1 + 0.2,
            dt: 1.0 / 3.0 * 1e-4,
            drift: 1e-3 / 7.0,
            last_disp: 2e-5 / 3.0,
            rebuilds: 7,
            removed: 3,
            spawned: 5,
            outflow: 4,
            next_frame: 3,
            wall_seconds: 1.5,
            grid: GridInfo::from(&grid()),
            eos: EosInfo { rho0: 1000.0, b: 1.0e5 / 7.0, gamma: 7.0, background_pressure: 0.0 },
            slices: vec![Slice { device: rank, first_layer: 0, layers: 4, particles: n }],
            bodies: vec![BodyState {
                centre: [0.1, 1.0 / 3.0, 0.7],
                rot: [[0.0, -1.0, 0.0], [1.0, 0.0, 0.0], [0.0, 0.0, 1.0]],
                vel: [1e-3, -2.5, 0.0],
                omega: [0.0, 0.0, std::f64::consts::PI],
                force: [1.0, 2.0, 3.0],
                moment: [-1.0, 0.5, 1e-9],
                vel_half: [2e-3, -2.4, 0.0],
                omega_half: [0.0, 0.0, 3.0],
                pending: 2.5e-5,
            }],
        }
    }

    /// Particles lo..hi of a state.
    fn part(s: &ParticleState, lo: usize, hi: usize) -> ParticleState {
        let mut out = ParticleState::zeroed(hi - lo, s.buffers());
        for b in s.buffers().iter() {
            let e = b.elem_bytes();
            out.bytes_mut(b).copy_from_slice(&s.bytes(b)[lo * e..hi * e]);
        }
        out.set_grid(s.grid().unwrap());
        out
    }

    fn bits(s: &ParticleState) -> Vec<u8> {
        s.buffers().iter().flat_map(|b| s.bytes(b).to_vec()).collect()
    }

    fn write_one(dir: &Path) -> PathBuf {
        let path = dir.join(file_name(42, 0));
        write(&path, &header(5, 0, 1), &state()).unwrap();
        path
    }

    #[test]
    fn round_trip_is_bitwise() {
        let dir = test_dir("ckpt_round_trip");
        let path = write_one(&dir);
        assert!(!dir.join(format!("{}.tmp", file_name(42, 0))).exists());
        let back = load(&path, Some(0x1234_5678_9abc_def0)).unwrap();
        assert_eq!(back.header, header(5, 0, 1));
        assert_eq!(back.particles.buffers(), state().buffers());
        assert_eq!(bits(&back.particles), bits(&state()));
        assert_eq!(back.header.grid.grid(), grid());
    }

    #[test]
    fn names_parse_back() {
        assert_eq!(file_name(1234, 3), "ckpt_0000001234.rank0003.surge");
        assert_eq!(parse_file_name("ckpt_0000001234.rank0003.surge"), Some((1234, 3)));
        for bad in [
            "ckpt_0000001234.rank0003.surge.tmp",
            "ckpt_1234.rank0003.surge",
            "x.surge",
            "ckpt_000000123a.rank0000.surge",
        ] {
            assert_eq!(parse_file_name(bad), None, "{bad}");
        }
    }

    fn problem(path: &Path, hash: Option<u64>) -> (Problem, String) {
        let e = load(path, hash).unwrap_err();
        let msg = e.to_string();
        assert!(msg.starts_with(&path.display().to_string()), "{msg}");
        assert!(!msg.contains('\n'), "{msg}");
        (e.problem, msg)
    }

    #[test]
    fn damage_is_named() {
        let dir = test_dir("ckpt_damage");
        let path = write_one(&dir);
        let good = fs::read(&path).unwrap();

        // A flipped bit in the particle data.
        let mut bytes = good.clone();
        let k = bytes.len() - 20;
        bytes[k] ^= 0x10;
        fs::write(&path, &bytes).unwrap();
        let (p, msg) = problem(&path, None);
        assert!(matches!(p, Problem::Corrupted(_)) && msg.contains("particle data's checksum"), "{msg}");

        // A flipped bit in the header.
        let mut bytes = good.clone();
        bytes[PREFIX + 3] ^= 0x01;
        fs::write(&path, &bytes).unwrap();
        let (p, msg) = problem(&path, None);
        assert!(matches!(p, Problem::Corrupted(_)) && msg.contains("header's checksum"), "{msg}");

        // Cut anywhere: in the prefix, the header or the particles.
        for cut in [12, PREFIX + 5, good.len() / 2, good.len() - 1] {
            fs::write(&path, &good[..cut]).unwrap();
            let (p, msg) = problem(&path, None);
            assert!(matches!(p, Problem::Truncated { found, .. } if found == cut as u64), "cut at {cut}: {msg}");
            assert!(msg.contains("truncated"), "{msg}");
        }

        // Trailing garbage.
        let mut bytes = good.clone();
        bytes.extend_from_slice(b"junk");
        fs::write(&path, &bytes).unwrap();
        assert!(problem(&path, None).1.contains("4 bytes after the end"));

        // Not a checkpoint at all, and empty.
        for junk in [&b"<?xml version"[..], b""] {
            fs::write(&path, junk).unwrap();
            assert_eq!(problem(&path, None).0, Problem::NotACheckpoint);
        }

        // A newer format is refused by name, before its checksum is looked at.
        let mut bytes = good.clone();
        bytes[8..12].copy_from_slice(&(FORMAT_VERSION + 1).to_le_bytes());
        fs::write(&path, &bytes).unwrap();
        let (p, msg) = problem(&path, None);
        assert_eq!(p, Problem::NewerFormat(FORMAT_VERSION + 1));
        assert!(msg.contains("newer surge"), "{msg}");
        assert!(!CheckpointError::new(&path, p).is_damage());

        // Another case.
        fs::write(&path, &good).unwrap();
        let (p, msg) = problem(&path, Some(7));
        assert!(matches!(p, Problem::OtherCase { found: 0x1234_5678_9abc_def0, expected: 7, .. }), "{msg}");
        assert!(msg.contains("another case"), "{msg}");
    }

    #[test]
    fn ranks_join_in_order_and_a_missing_rank_is_named() {
        let dir = test_dir("ckpt_ranks");
        let s = state();
        let (p0, p1) = (part(&s, 0, 2), part(&s, 2, 5));
        write(&dir.join(file_name(42, 0)), &header(2, 0, 2), &p0).unwrap();
        let p1_path = dir.join(file_name(42, 1));

        let e = load(&dir.join(file_name(42, 0)), None).unwrap_err();
        assert_eq!(e.path, p1_path);
        assert!(e.to_string().contains("missing") && e.to_string().contains("2 ranks"), "{e}");
        assert!(e.is_damage());

        write(&p1_path, &header(3, 1, 2), &p1).unwrap();
        // From the path of either rank.
        for p in [dir.join(file_name(42, 0)), p1_path.clone()] {
            let c = load(&p, None).unwrap();
            assert_eq!(bits(&c.particles), bits(&state()));
            assert_eq!(c.header.slices.iter().map(|s| s.particles).collect::<Vec<_>>(), [2, 3]);
        }
        assert_eq!(
            list(&dir).unwrap(),
            [CheckpointFiles { step: 42, files: vec![(0, dir.join(file_name(42, 0))), (1, p1_path.clone())] }]
        );

        // A rank file of another checkpoint put in its place.
        let mut other = header(3, 1, 2);
        other.step = 43;
        write(&p1_path, &other, &p1).unwrap();
        let e = load(&dir.join(file_name(42, 0)), None).unwrap_err();
        assert!(matches!(e.problem, Problem::Inconsistent(_)) && e.to_string().contains("step 43"), "{e}");
    }

    #[test]
    fn csv_dump_matches_the_snapshot() {
        let dir = test_dir("ckpt_csv");
        let c = load(&write_one(&dir), None).unwrap();
        let csv = dir.join("dump.csv");
        c.write_csv(&csv).unwrap();
        let f = crate::read_csv_frame(&csv).unwrap();
        assert_eq!(f.header.join(","), "id,kind,x,y,vx,vy,rho,p");
        assert_eq!(f.ids, [0, 1, 2, 3, 4]);
        let snap = c.snapshot();
        let order = snap.order_by_id();
        let x: Vec<f64> = order.iter().map(|&i| snap.pos[i][0]).collect();
        assert_eq!(f.column("x").unwrap(), x);
        // Particle with id 3 is stored at index 1: cell 1, offset -0.25 along y in cell 1.
        let i = order[3];
        assert_eq!(i, 1);
        assert_eq!(snap.pos[i][1], -0.25 + 1.5 * 0.5 + (-0.25f32) as f64);
        assert_eq!(snap.rho[i], 1000.0 * (1.0 + (1e-3f32 - 1.5e-3)));
        assert_eq!(f.kinds[3], "boundary");
    }

    #[test]
    fn list_groups_ranks_and_skips_other_files() {
        let dir = test_dir("ckpt_list");
        assert!(list(&dir.join("nope")).unwrap().is_empty());
        for (step, rank) in [(20, 0), (3, 0), (20, 1)] {
            fs::write(dir.join(file_name(step, rank)), b"").unwrap();
        }
        fs::write(dir.join(format!("{}.tmp", file_name(30, 0))), b"").unwrap();
        fs::write(dir.join("notes.txt"), b"").unwrap();
        let l = list(&dir).unwrap();
        assert_eq!(l.iter().map(|s| (s.step, s.files.len())).collect::<Vec<_>>(), [(3, 1), (20, 2)]);
    }
}
