//! Checkpoint and restart: a run stopped at t0 and continued to t1 gives BITWISE the
//! particles, gauge rows and frames of a run straight to t1 (same CPU decomposition; any
//! thread count), through the library and through the binary; a SIGUSR1 mid-run leaves a
//! usable checkpoint and exit code 3; damaged, foreign and newer checkpoints are refused
//! with exit code 2 and one line naming the file; `surge dump` writes the CSV frame.

mod common;

use std::fs;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::*;
use surge_core::buffers::{BufferId, ParticleState};
use surge_core::geometry::fill;
use surge_core::grid::Grid;
use surge_core::Case;
use surge_io::checkpoint::{self, Checkpoint};
use surge_runtime::{Observer, Progress, RestartFrom, RunOptions};

const BIN: &str = env!("CARGO_BIN_EXE_surge");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Exit codes of `surge run` (see `surge run --help`).
const EXIT_BAD_INPUT: i32 = 2;
const EXIT_INTERRUPTED: i32 = 3;

/// The small dam break every test here runs: about 2 000 particles, ~4 000 steps per
/// simulated second; frames every 0.02 s and gauge rows every 0.005 s.
const DAM: &[&str] = &["dp=0.04", "output.interval=0.02", "output.gauge_interval=0.005"];

// ---------------------------------------------------------------------------------------------
// Helpers

/// Overrides for the small dam break, plus `extra`.
fn sets(extra: &[&str]) -> Vec<String> {
    DAM.iter().chain(extra).map(|s| s.to_string()).collect()
}

fn dam_path() -> String {
    Path::new(ROOT).join("configs/dam_break_2d.toml").display().to_string()
}

/// What a run of the binary gave.
struct Out {
    code: Option<i32>,
    stderr: String,
    args: Vec<String>,
}

impl Out {
    fn describe(&self) -> String {
        format!("surge {}\nexit code: {:?}\n--- stderr ---\n{}", self.args.join(" "), self.code, self.stderr)
    }
    fn assert_code(&self, code: i32) {
        assert_eq!(self.code, Some(code), "unexpected exit code\n{}", self.describe());
        assert!(!self.stderr.contains("panicked"), "the binary panicked\n{}", self.describe());
    }
}

/// The arguments of `surge run configs/dam_break_2d.toml --backend cpu --quiet --out OUT`:
/// bitwise reproducibility is the CPU backend's promise, whatever device the machine has.
fn run_args(out: &Path) -> Vec<String> {
    ["run", &dam_path(), "--backend", "cpu", "--quiet", "--out", &out.display().to_string()].map(String::from).to_vec()
}

/// `surge run` of the small dam break into `out` with `extra` overrides and further
/// arguments.
fn surge_run(out: &Path, extra: &[&str], args: &[&str]) -> Out {
    let mut a = run_args(out);
    for s in sets(extra) {
        a.extend(["--set".to_string(), s]);
    }
    a.extend(args.iter().map(|s| s.to_string()));
    surge(&a)
}

fn surge(args: &[String]) -> Out {
    let out = Command::new(BIN).args(args).env_remove("SURGE_LOG").output().expect("the surge binary starts");
    Out { code: out.status.code(), stderr: String::from_utf8_lossy(&out.stderr).into_owned(), args: args.to_vec() }
}

/// The checkpoint files of an output directory, oldest first.
fn checkpoints(out: &Path) -> Vec<PathBuf> {
    checkpoint::list(&out.join("checkpoints")).unwrap().into_iter().map(|s| s.files[0].1.clone()).collect()
}

fn newest_checkpoint(out: &Path) -> Checkpoint {
    let path = checkpoints(out).pop().unwrap_or_else(|| panic!("no checkpoint in {}", out.display()));
    checkpoint::load(&path, None).unwrap_or_else(|e| panic!("{e}"))
}

/// Every conserved buffer of every particle, compared by id, bit for bit.
fn assert_same_particles(a: &ParticleState, b: &ParticleState) {
    assert_eq!(a.buffers(), b.buffers());
    assert_eq!(a.len(), b.len());
    let by_id = |s: &ParticleState| {
        let mut idx: Vec<usize> = (0..s.len()).collect();
        idx.sort_by_key(|&i| s.arrays().info[i][0]);
        idx
    };
    let (ia, ib) = (by_id(a), by_id(b));
    for buf in a.buffers().iter() {
        let e = buf.elem_bytes();
        let (ba, bb) = (a.bytes(buf), b.bytes(buf));
        for (&i, &j) in ia.iter().zip(&ib) {
            let id = a.arrays().info[i][0];
            assert_eq!(&ba[i * e..(i + 1) * e], &bb[j * e..(j + 1) * e], "buffer `{}` of particle {id}", buf.name());
        }
    }
    // Same history, so the same storage order too.
    assert_eq!(a.bytes(BufferId::Info), b.bytes(BufferId::Info), "storage order differs");
}

/// The two output directories hold byte-identical gauge tables, `.pvd` series and frames,
/// and the `.pvd` lists each frame once.
fn assert_same_output(a: &Path, b: &Path, case: &str) {
    let read = |p: PathBuf| fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()));
    assert!(
        read(a.join("gauges.csv")) == read(b.join("gauges.csv")),
        "gauges.csv differ:\n{}\n---\n{}",
        fs::read_to_string(a.join("gauges.csv")).unwrap(),
        fs::read_to_string(b.join("gauges.csv")).unwrap()
    );
    let pvd = format!("{case}.pvd");
    let text = String::from_utf8(read(b.join(&pvd))).unwrap();
    assert_eq!(read(a.join(&pvd)), text.as_bytes(), "{pvd} differ");
    let files: Vec<&str> = text.lines().filter_map(|l| l.split("file=\"").nth(1)).collect();
    let mut unique = files.clone();
    unique.dedup();
    assert!(files.len() > 2 && unique == files, "each frame once, in order:\n{text}");
    for (k, f) in files.iter().enumerate() {
        assert_eq!(*f, format!("frames/{case}_{k:05}.vtu\"/>"), "frame numbering continues:\n{text}");
        let name = format!("frames/{case}_{k:05}.vtu");
        assert!(read(a.join(&name)) == read(b.join(&name)), "{name} differ");
    }
}

struct Quiet;

impl Observer for Quiet {
    fn progress(&mut self, _: &Progress) {}
    fn frame(&mut self, _: u32, _: f64, _: &[PathBuf]) {}
}

/// `surge_runtime::run` of the small dam break on the CPU with `threads` threads.
fn library_run(out: &Path, extra: &[&str], threads: usize, restart: Option<RestartFrom>) -> surge_io::Summary {
    let case = dam(extra);
    let backend = surge_cpu::CpuBackend::new(&case, &fill(&case), threads).unwrap();
    let opts = RunOptions { restart, ..RunOptions::new(out.to_owned()) };
    let sim = surge_runtime::Simulation::new(case.clone(), Box::new(backend));
    surge_runtime::run(&case, sim, threads as u32, &opts, &mut Quiet).unwrap_or_else(|(e, _)| panic!("{e}"))
}

fn dam(extra: &[&str]) -> Case {
    let s: Vec<&str> = DAM.iter().chain(extra).copied().collect();
    case("dam_break_2d.toml", &s)
}

// ---------------------------------------------------------------------------------------------
// Bitwise restart

/// The case on the CPU backend, whatever `SURGE_TEST_BACKEND` says.
fn cpu(case: &Case, threads: usize) -> surge_runtime::Simulation {
    surge_runtime::cpu_simulation(case, threads).unwrap_or_else(|e| panic!("{e}"))
}

/// A stepped to t1 through t0; B stepped to t0, its state exported and loaded into a fresh
/// simulation on `threads_after` threads, stepped to t1. Returns the state at t0.
fn restart_in_memory(
    name: &str,
    overrides: &[&str],
    t0: f64,
    t1: f64,
    threads_after: usize,
) -> surge_runtime::StepState {
    let case = case(name, overrides);
    let mut a = cpu(&case, 2);
    a.advance_to(t0).unwrap();
    a.advance_to(t1).unwrap();
    let mut b = cpu(&case, 2);
    b.advance_to(t0).unwrap();
    let at_t0 = b.step_state();
    let mut particles = ParticleState::default();
    b.export_particles(&mut particles).unwrap();
    drop(b);
    let mut c = cpu(&case, threads_after);
    c.restore(at_t0.clone(), particles).unwrap();
    c.advance_to(t1).unwrap();
    assert_eq!(
        (a.steps(), a.time().to_bits(), a.rebuilds(), a.dt().to_bits()),
        (c.steps(), c.time().to_bits(), c.rebuilds(), c.dt().to_bits()),
        "{name}: clock or rebuilds differ after the restart"
    );
    let (mut pa, mut pc) = (ParticleState::default(), ParticleState::default());
    a.export_particles(&mut pa).unwrap();
    c.export_particles(&mut pc).unwrap();
    assert_same_particles(&pa, &pc);
    at_t0
}

#[test]
fn restart_in_memory_is_bitwise_for_each_scheme_and_buffer_set() {
    // Symplectic, artificial viscosity, gauges; the restart on another thread count.
    let s = restart_in_memory("dam_break_2d.toml", &["dp=0.04"], 0.03, 0.06, 1);
    // The checkpoint falls between rebuilds: the stored cells are not those a re-key would
    // give, which is what a restart must keep.
    assert!(s.drift > 0.0 && s.rebuilds > 1, "{s:?}");
    // Verlet: the plan depends on the step number's phase in the Euler period.
    let s = restart_in_memory(
        "dam_break_2d.toml",
        &["dp=0.04", r#"time.scheme="verlet""#, "time.verlet_euler_every=7"],
        0.03,
        0.05,
        2,
    );
    assert!(s.step % 7 != 0 && s.drift > 0.0, "{s:?}");
    // Laminar viscosity: the wall normals are conserved and must travel.
    restart_in_memory("couette_2d.toml", &[], 0.05, 0.1, 1);
    // Shifting on a doubly periodic domain.
    restart_in_memory("taylor_green_2d.toml", &[], 0.05, 0.1, 1);
    // mDBC: boundary densities come from the ghost nodes before each force pass, and the wall
    // normals travel.
    restart_in_memory("dam_break_2d.toml", &["dp=0.04", r#"physics.boundary={kind="mdbc"}"#], 0.03, 0.06, 1);
    // The wall function at free-slip mDBC walls: its sums read the walls' normals, distances
    // and velocities.
    restart_in_memory(
        "dam_break_2d.toml",
        &["dp=0.04", r#"physics.boundary={kind="mdbc",slip=true}"#, r#"physics.wall_function={kind="log_law"}"#],
        0.03,
        0.06,
        1,
    );
}

/// A backend with another cell size (the CUDA backend's skin is thinner) re-locates the
/// particles of a state it imports: positions agree to float32 rounding, velocities and
/// densities bit for bit, and the run goes on.
#[test]
fn a_state_keyed_on_another_grid_is_relocated() {
    let case = dam(&[]);
    let mut a = cpu(&case, 2);
    a.advance_to(0.03).unwrap();
    let mut p = ParticleState::default();
    a.export_particles(&mut p).unwrap();
    assert_eq!(p.grid(), Some(&Grid::new(&case, case.split_axis()).unwrap()), "the CPU backend says its grid");
    let thin = Grid::with_skin(&case, case.split_axis(), 0.05, 1).unwrap();
    let cells_before = p.arrays().cell.clone();
    p.relocate(&thin).unwrap();
    assert_ne!(p.arrays().cell, cells_before, "smaller cells, other cell numbers");
    let mut b = cpu(&case, 1);
    b.restore(a.step_state(), p).unwrap();
    let (sa, sb) = (a.snapshot().unwrap(), b.snapshot().unwrap());
    let (oa, ob) = (sa.order_by_id(), sb.order_by_id());
    for (&i, &j) in oa.iter().zip(&ob) {
        assert_eq!(sa.id[i], sb.id[j]);
        assert!((0..2).all(|k| (sa.pos[i][k] - sb.pos[j][k]).abs() < 1e-7), "particle {}", sa.id[i]);
        assert_eq!((sa.vel[i], sa.rho[i].to_bits()), (sb.vel[j], sb.rho[j].to_bits()), "particle {}", sa.id[i]);
    }
    b.advance_to(0.04).unwrap();
}

/// A particle past the last cell of the importing backend's grid (one that left the domain
/// in the step the state was taken at, on a grid whose cells reach farther) is kept at its
/// position for the first re-key, which removes it; the run goes on.
#[test]
fn a_particle_past_the_new_grid_is_removed_at_the_first_re_key() {
    let case = dam(&[]);
    let mut a = cpu(&case, 2);
    a.advance_to(0.03).unwrap();
    let mut p = ParticleState::default();
    a.export_particles(&mut p).unwrap();
    let mine = Grid::new(&case, case.split_axis()).unwrap();
    let top = |g: &Grid| g.origin[1] + g.n[1] as f64 * g.cell[1];
    // A grid of other cells whose last row reaches above this backend's.
    let other = (1..60)
        .map(|k| Grid::with_skin(&case, case.split_axis(), 0.005 * k as f64, 1).unwrap())
        .find(|g| top(g) > top(&mine) + 1e-3)
        .expect("a grid reaching higher");
    let y = 0.5 * (top(&mine) + top(&other));
    let i = (0..p.len()).find(|&i| p.arrays().info[i][1] == 0).expect("a fluid particle");
    let id = p.arrays().info[i][0];
    let x = mine.absolute(p.arrays().cell[i], p.arrays().pos[i]);
    let (c, o) = mine.locate_clamped([x[0], y, 0.0]).unwrap();
    p.arrays_mut().cell[i] = c;
    p.arrays_mut().pos[i] = [o[0], o[1], o[2], p.arrays().pos[i][3]];
    p.relocate(&other).unwrap();
    let mut b = cpu(&case, 1);
    b.restore(a.step_state(), p).unwrap();
    b.advance_to(0.04).unwrap();
    assert_eq!(b.removed(), 1, "the particle past the grid left at the first re-key");
    assert!(!b.snapshot().unwrap().id.contains(&id), "particle {id} removed");
}

#[test]
fn library_run_restarted_from_its_checkpoint_is_bitwise() {
    let tmp = TempDir::new("restart-library");
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    // A: straight to t1, one checkpoint at its end.
    let sa = library_run(&a, &["time.end=0.08", "checkpoint.interval=1"], 2, None);
    // B: to t0 with a checkpoint there, then to t1 from it, on 1 thread instead of 2.
    let sb0 = library_run(&b, &["time.end=0.04", "checkpoint.interval=0.04"], 2, None);
    assert_eq!(sb0.status, "completed");
    let sb = library_run(&b, &["time.end=0.08", "checkpoint.interval=1"], 1, Some(RestartFrom::Latest));
    assert_same_particles(&newest_checkpoint(&a).particles, &newest_checkpoint(&b).particles);
    assert_same_output(&a, &b, "dam_break_2d");
    assert_eq!((sa.steps, sa.frames, sa.sim_time.to_bits()), (sb.steps, sb.frames, sb.sim_time.to_bits()));
    assert_eq!(sb.restarted_from.as_deref(), Some(checkpoints(&b)[0].display().to_string().as_str()));
    assert!(sb.wall_seconds > sb0.wall_seconds, "the wall time sums over the chain");
}

#[test]
fn cli_restart_latest_is_bitwise_and_keeps_the_newest_checkpoints() {
    let tmp = TempDir::new("restart-cli");
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    surge_run(&a, &["time.end=0.08", "checkpoint.interval=1"], &[]).assert_code(0);
    // Checkpoints at 0.01, 0.02, 0.03, 0.04 (the end): `keep = 2` leaves the last two.
    surge_run(&b, &["time.end=0.04", "checkpoint.interval=0.01", "checkpoint.keep=2"], &["--threads", "1"])
        .assert_code(0);
    let kept = checkpoints(&b);
    assert_eq!(kept.len(), 2, "{kept:?}");
    // The end checkpoint is at the first step end at or after 0.04 s (no step is shortened).
    let t_end = checkpoint::read_header(&kept[1]).unwrap().time;
    assert!((0.04..0.041).contains(&t_end), "{t_end}");
    let out = surge_run(&b, &["time.end=0.08", "checkpoint.interval=1"], &["--restart", "latest"]);
    out.assert_code(0);
    assert_same_particles(&newest_checkpoint(&a).particles, &newest_checkpoint(&b).particles);
    assert_same_output(&a, &b, "dam_break_2d");
    let s: surge_io::Summary = serde_json::from_slice(&fs::read(b.join("summary.json")).unwrap()).unwrap();
    assert_eq!((s.status.as_str(), s.restarted_from.as_deref()), ("completed", Some(kept[1].to_str().unwrap())));
}

// ---------------------------------------------------------------------------------------------
// Signals

#[test]
fn sigusr1_writes_a_checkpoint_exits_3_and_the_restart_is_bitwise() {
    let tmp = TempDir::new("restart-signal");
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    let long = ["time.end=0.25", "output.interval=0.01", "checkpoint.interval=10"];
    surge_run(&a, &long, &[]).assert_code(0);

    let mut args = run_args(&b);
    for s in sets(&long) {
        args.extend(["--set".to_string(), s]);
    }
    let mut child = Command::new(BIN).args(&args).stderr(Stdio::piped()).spawn().unwrap();
    // Let it run a little: until its second frame (t = 0.01, about 40 steps) is there.
    let frame1 = b.join("frames/dam_break_2d_00001.vtu");
    let t = Instant::now();
    while !frame1.exists() {
        assert!(t.elapsed() < Duration::from_secs(60), "no second frame after 60 s");
        std::thread::sleep(Duration::from_millis(5));
    }
    // SAFETY: kill(2) on the pid of the child this test spawned and has not waited for.
    assert_eq!(unsafe { libc::kill(child.id() as libc::pid_t, libc::SIGUSR1) }, 0);
    let status = child.wait().unwrap();
    let mut stderr = String::new();
    std::io::Read::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr).unwrap();
    let out = Out { code: status.code(), stderr, args };
    out.assert_code(EXIT_INTERRUPTED);

    let s: surge_io::Summary = serde_json::from_slice(&fs::read(b.join("summary.json")).unwrap()).unwrap();
    assert_eq!(s.status, "interrupted", "{s:?}");
    let kept = checkpoints(&b);
    assert_eq!(kept.len(), 1, "{kept:?}");
    assert_eq!(s.checkpoint.as_deref(), Some(kept[0].to_str().unwrap()));
    let h = checkpoint::read_header(&kept[0]).unwrap();
    assert!(h.time > 0.0 && h.time < 0.25 && h.step == s.steps, "{h:?}\n{s:?}");
    assert!(out.stderr.trim_end().ends_with("`--restart latest`"), "{}", out.describe());

    // The stop falls at an arbitrary step, which checkpoints never shorten: bitwise too.
    surge_run(&b, &long, &["--restart", "latest"]).assert_code(0);
    assert_same_particles(&newest_checkpoint(&a).particles, &newest_checkpoint(&b).particles);
    assert_same_output(&a, &b, "dam_break_2d");
}

// ---------------------------------------------------------------------------------------------
// Refused checkpoints

/// `surge run --restart FROM` must fail with exit code 2, one line naming `names` and saying
/// each of `want`, and leave the output directory as it was.
fn assert_refused(out_dir: &Path, extra: &[&str], from: &str, names: &Path, want: &[&str]) {
    let before = snapshot_dir(out_dir);
    let out = surge_run(out_dir, &[&["time.end=0.08"], extra].concat(), &["--restart", from]);
    out.assert_code(EXIT_BAD_INPUT);
    let line = out.stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
    assert!(line.starts_with("error: cannot restart: "), "{}", out.describe());
    assert!(
        line.contains(&names.display().to_string()),
        "the error does not name {}\n{}",
        names.display(),
        out.describe()
    );
    for w in want {
        assert!(line.contains(w), "`{w}` missing\n{}", out.describe());
    }
    assert!(snapshot_dir(out_dir) == before, "a refused restart changed {}\n{}", out_dir.display(), out.describe());
}

/// Every file under `dir` with its content.
fn snapshot_dir(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    for e in fs::read_dir(dir).into_iter().flatten().flatten() {
        let p = e.path();
        if p.is_dir() {
            out.extend(snapshot_dir(&p));
        } else {
            out.push((p.clone(), fs::read(&p).unwrap()));
        }
    }
    out.sort();
    out
}

#[test]
fn damaged_foreign_and_newer_checkpoints_are_refused_with_exit_2() {
    let tmp = TempDir::new("restart-refused");
    let run = tmp.join("run");
    surge_run(&run, &["time.end=0.02", "checkpoint.interval=0.02"], &[]).assert_code(0);
    let good_path = checkpoints(&run).pop().unwrap();
    let good = fs::read(&good_path).unwrap();
    let name = good_path.file_name().unwrap();
    // Each bad checkpoint alone in the checkpoints/ of an output directory of its own.
    let place = |label: &str, bytes: &[u8]| -> (PathBuf, PathBuf) {
        let out = tmp.join(label);
        fs::create_dir_all(out.join("checkpoints")).unwrap();
        let p = out.join("checkpoints").join(name);
        fs::write(&p, bytes).unwrap();
        (out, p)
    };

    let mut corrupted = good.clone();
    let k = good.len() - 100;
    corrupted[k] ^= 0x04;
    let (out, p) = place("corrupted", &corrupted);
    for from in ["latest", p.to_str().unwrap()] {
        assert_refused(&out, &[], from, &p, &["corrupted", "checksum"]);
    }

    let (out, p) = place("truncated", &good[..good.len() * 2 / 3]);
    assert_refused(&out, &[], "latest", &p, &["truncated", &format!("should be {} bytes", good.len())]);

    let mut newer = good.clone();
    newer[8..12].copy_from_slice(&(checkpoint::FORMAT_VERSION + 1).to_le_bytes());
    let (out, p) = place("newer", &newer);
    assert_refused(
        &out,
        &[],
        "latest",
        &p,
        &["newer surge", &format!("format version {}", checkpoint::FORMAT_VERSION + 1)],
    );

    let (out, p) = place("foreign", &good);
    for other in ["dp=0.05", "fluid.0.max=[1.0, 1.9]", r#"physics.viscosity={kind="artificial", alpha=0.03}"#] {
        assert_refused(&out, &[other], "latest", &p, &["written for another case"]);
    }
    // What may change on a restart does not make it another case.
    surge_run(&out, &["time.end=0.03", "time.cfl=0.15", "output.interval=0.03"], &["--restart", p.to_str().unwrap()])
        .assert_code(0);

    // A checkpoint of two ranks whose rank 1 file is missing.
    let mut c = checkpoint::load(&good_path, None).unwrap();
    c.header.ranks = 2;
    let out = tmp.join("missing_rank");
    let p0 = out.join("checkpoints").join(name);
    fs::create_dir_all(p0.parent().unwrap()).unwrap();
    checkpoint::write(&p0, &c.header, &c.particles).unwrap();
    let p1 = out.join("checkpoints").join(checkpoint::file_name(c.header.step, 1));
    assert_refused(&out, &[], "latest", &p1, &["missing", "2 ranks"]);

    let empty = tmp.join("empty");
    fs::create_dir_all(&empty).unwrap();
    assert_refused(&empty, &[], "latest", &empty.join("checkpoints"), &["no checkpoint to restart from"]);
    assert_refused(&empty, &[], "nope.surge", Path::new("nope.surge"), &["no such file"]);
}

#[test]
fn latest_falls_back_past_a_damaged_checkpoint() {
    let tmp = TempDir::new("restart-fallback");
    let (a, b) = (tmp.join("a"), tmp.join("b"));
    surge_run(&a, &["time.end=0.06", "checkpoint.interval=1"], &[]).assert_code(0);
    surge_run(&b, &["time.end=0.04", "checkpoint.interval=0.02"], &[]).assert_code(0);
    let kept = checkpoints(&b);
    assert_eq!(kept.len(), 2);
    let bytes = fs::read(&kept[1]).unwrap();
    fs::write(&kept[1], &bytes[..bytes.len() - 1]).unwrap();
    let out = surge_run(&b, &["time.end=0.06", "checkpoint.interval=1"], &["--restart", "latest"]);
    out.assert_code(0);
    assert!(
        out.stderr.contains("skipping a damaged checkpoint") && out.stderr.contains("truncated"),
        "{}",
        out.describe()
    );
    assert_same_particles(&newest_checkpoint(&a).particles, &newest_checkpoint(&b).particles);
    assert_same_output(&a, &b, "dam_break_2d");
}

// ---------------------------------------------------------------------------------------------
// surge dump

#[test]
fn dump_writes_the_csv_frame_of_the_checkpoint_time() {
    let tmp = TempDir::new("restart-dump");
    let out = tmp.join("out");
    surge_run(&out, &["time.end=0.04", "checkpoint.interval=0.04", r#"output.formats=["csv"]"#], &[]).assert_code(0);
    let ckpt = checkpoints(&out).pop().unwrap();
    let csv = tmp.join("dump.csv");
    let dump = surge(&["dump".into(), ckpt.display().to_string(), "--csv".into(), csv.display().to_string()]);
    dump.assert_code(0);
    // t = 0.04 is frame 2: the same bytes, ids in order, density and pressure included.
    let frame = fs::read_to_string(out.join("frames/dam_break_2d_00002.csv")).unwrap();
    let text = fs::read_to_string(&csv).unwrap();
    assert!(text == frame, "the dump differs from the frame at the same time\n{}", &text[..text.len().min(400)]);
    assert!(text.starts_with("id,kind,x,y,vx,vy,rho,p\n0,fluid,"), "{}", &text[..100]);

    let bad = tmp.join("bad.surge");
    fs::write(&bad, b"SURGECKP").unwrap();
    let out = surge(&["dump".into(), bad.display().to_string(), "--csv".into(), csv.display().to_string()]);
    out.assert_code(EXIT_BAD_INPUT);
    assert!(out.stderr.contains("bad.surge: truncated"), "{}", out.describe());
}
