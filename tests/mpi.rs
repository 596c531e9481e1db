//! MPI ranks (built with `--features mpi`; needs `mpirun` from Open MPI): the binary run
//! under `mpirun` as a user runs it. 2 and 3 ranks of 1-2 CPU workers give bitwise the
//! particles (by id) and gauges of one process on the 2D and 3D dam breaks (tolerance: none,
//! as for several devices in one process); a checkpoint written by 3 ranks restarts on 2
//! and ends bitwise where one process ends; moving solids cross between ranks bitwise; a
//! rank that fails stops the whole job with its message.
#![cfg(feature = "mpi")]

use std::path::{Path, PathBuf};
use std::process::{Command, Output};
use std::time::{Duration, Instant};

mod common;
use common::TempDir;

const BIN: &str = env!("CARGO_BIN_EXE_surge");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// A shipped config by name, or a case under tests/ (`cases/...`).
fn config(name: &str) -> PathBuf {
    match name.strip_prefix("cases/") {
        Some(case) => Path::new(ROOT).join("tests/cases").join(case),
        None => Path::new(ROOT).join("configs").join(name),
    }
}

/// `mpirun` for root in CI, with more ranks than cores allowed.
fn mpirun(ranks: usize) -> Command {
    let mut c = Command::new("mpirun");
    c.args(["--allow-run-as-root", "--oversubscribe", "-n", &ranks.to_string()]);
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1").env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1");
    c.env("OMPI_MCA_rmaps_base_oversubscribe", "1");
    c
}

fn check(out: Output, what: &str) {
    assert!(
        out.status.success(),
        "{what}: {}\n{}\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// The particles of the newest checkpoint in `dir/checkpoints`, as CSV lines sorted by id
/// (`surge dump` prints floats exactly: shortest round-trip form).
fn particles(dir: &Path) -> Vec<String> {
    let ckpt = dir.join("checkpoints");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&ckpt)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "surge"))
        .collect();
    files.sort();
    let csv = dir.join("particles.csv");
    check(
        Command::new(BIN).arg("dump").arg(files.last().unwrap()).arg("--csv").arg(&csv).output().unwrap(),
        "surge dump",
    );
    let text = std::fs::read_to_string(&csv).unwrap();
    let mut lines: Vec<String> = text.lines().skip(1).map(String::from).collect();
    lines.sort_by_key(|l| l.split(',').next().unwrap().parse::<u64>().unwrap());
    lines
}

fn run_args(case: &str, out: &Path, steps: u64, extra: &[&str]) -> Vec<String> {
    let mut a: Vec<String> = ["run", config(case).to_str().unwrap(), "--backend", "cpu", "-q", "--out"]
        .iter()
        .map(|s| s.to_string())
        .collect();
    a.push(out.to_str().unwrap().into());
    a.extend(["--max-steps".into(), steps.to_string(), "--set".into(), "checkpoint.interval=100".into()]);
    a.extend(extra.iter().map(|s| s.to_string()));
    a
}

/// One process, then `ranks` ranks of `workers` workers, `steps` steps: same particles and
/// gauges.
fn same_as_one_process(case: &str, extra: &[&str], steps: u64, ranks: usize, workers: usize) {
    let dir = TempDir::new(&format!("mpi-{case}-{ranks}x{workers}"));
    let (one, many) = (dir.0.join("one"), dir.0.join("many"));
    check(
        Command::new(BIN).args(run_args(case, &one, steps, extra)).args(["--threads", "1"]).output().unwrap(),
        "one process",
    );
    let w = workers.to_string();
    let out = mpirun(ranks)
        .arg(BIN)
        .args(run_args(case, &many, steps, extra))
        .args(["--workers", &w, "--threads", &w])
        .output()
        .unwrap();
    check(out, &format!("{ranks} ranks x {workers} workers"));
    let (a, b) = (particles(&one), particles(&many));
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(&b) {
        assert_eq!(x, y, "{case}: {ranks} ranks x {workers} workers differ from one process");
    }
    for table in ["gauges.csv", "bodies.csv"] {
        assert_eq!(
            std::fs::read_to_string(one.join(table)).ok(),
            std::fs::read_to_string(many.join(table)).ok(),
            "{table}"
        );
    }
    let summary: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(many.join("summary.json")).unwrap()).unwrap();
    assert_eq!(summary["ranks"], ranks as u64);
    let removed = |dir: &Path| -> serde_json::Value {
        serde_json::from_str::<serde_json::Value>(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap()
            ["removed_particles"]
            .clone()
    };
    assert_eq!(removed(&many), removed(&one), "fluid particles removed");
    let open = |dir: &Path| -> (serde_json::Value, serde_json::Value) {
        let s: serde_json::Value =
            serde_json::from_str(&std::fs::read_to_string(dir.join("summary.json")).unwrap()).unwrap();
        (s["inlet_particles"].clone(), s["outlet_particles"].clone())
    };
    assert_eq!(open(&many), open(&one), "particles made by inlets and taken by outlets");
    assert!(!case.contains("channel") || open(&one).0.as_u64() > Some(0), "the inlet should make particles");
    assert!(!case.contains("jet") || removed(&one).as_u64() > Some(0), "the jet should lose fluid");
    assert_eq!(summary["devices"].as_array().unwrap().len(), ranks * workers);
    assert!(many.join("frames/dam_break_2d_00000.pvtu").exists() || case != "dam_break_2d.toml");
}

#[test]
fn dam_break_2d_on_2_and_3_ranks_matches_one_process() {
    same_as_one_process("dam_break_2d.toml", &[], 300, 2, 1);
    same_as_one_process("dam_break_2d.toml", &[], 300, 2, 2);
    same_as_one_process("dam_break_2d.toml", &["--set", "decomposition.split_axis=\"x\""], 300, 3, 1);
}

#[test]
fn dam_break_3d_on_2_ranks_of_2_workers_matches_one_process() {
    same_as_one_process("dam_break_3d.toml", &["--set", "dp=0.06"], 60, 2, 2);
}

/// A jet thrown out of an open box (tests/removal.rs): the fluid that leaves is removed on
/// every rank alike, so particles, gauges and the count of removed particles are those of
/// one process.
#[test]
fn removal_on_2_ranks_matches_one_process() {
    for (workers, split) in [(1, "y"), (2, "x")] {
        let split = format!("decomposition.split_axis=\"{split}\"");
        same_as_one_process("cases/jet_2d.toml", &["--set", &split], 2000, 2, workers);
    }
}

/// Moving solids (tests/cases/moving_2d.toml: a piston, and a square that swings while it
/// travels across the cut between the ranks): the particles of one process, bitwise.
#[test]
fn moving_solids_on_2_ranks_match_one_process() {
    same_as_one_process(
        "cases/moving_2d.toml",
        &["--set", "decomposition.split_axis=\"x\"", "--set", "dp=0.01"],
        400,
        2,
        1,
    );
}

/// A floating body (tests/cases/floating_2d.toml) sinking in across the cut between the
/// ranks: its load is an integer sum over the ranks, so the particles and bodies.csv are
/// those of one process, bitwise.
#[test]
fn a_floating_body_on_2_ranks_matches_one_process() {
    same_as_one_process(
        "cases/floating_2d.toml",
        &["--set", "decomposition.split_axis=\"x\"", "--set", "dp=0.01", "--set", "output.gauge_interval=0.002"],
        300,
        2,
        1,
    );
}

/// An inlet and an outlet (tests/cases/channel_2d.toml) on 3 ranks cut across the channel:
/// particles made, converted and removed at the planes are those of one process, and so are
/// the counts in gauges.csv and the summary.
#[test]
fn open_boundaries_on_3_ranks_match_one_process() {
    same_as_one_process("cases/channel_2d.toml", &["--set", "output.gauge_interval=0.002"], 600, 3, 1);
}

/// The shipped SPHERIC Test 2 with its gate and wall function (configs/spheric_test2_gate.toml:
/// mDBC free slip, a solid moved by a table, the wall function) on 2 ranks cut along x, 80
/// steps (0.06 s): the particles and gauges of one process.
#[test]
fn spheric_test2_gate_on_2_ranks_matches_one_process() {
    same_as_one_process(
        "spheric_test2_gate.toml",
        &["--set", "dp=0.045", "--set", "physics.eos.c0_coef=10", "--set", "decomposition.split_axis=\"x\""],
        80,
        2,
        1,
    );
}

#[test]
fn a_checkpoint_of_3_ranks_restarts_on_2() {
    let dir = TempDir::new("mpi-restart");
    let (one, many) = (dir.0.join("one"), dir.0.join("many"));
    check(Command::new(BIN).args(run_args("dam_break_2d.toml", &one, 300, &[])).output().unwrap(), "one process");
    // 3 ranks to step 150 (a checkpoint at the end), then 2 ranks x 2 workers on to 300.
    check(mpirun(3).arg(BIN).args(run_args("dam_break_2d.toml", &many, 150, &[])).output().unwrap(), "3 ranks");
    let files = std::fs::read_dir(many.join("checkpoints")).unwrap().count();
    assert_eq!(files, 3, "one checkpoint file per rank");
    let restart = run_args("dam_break_2d.toml", &many, 300, &["--restart", "latest", "--workers", "2"]);
    check(mpirun(2).arg(BIN).args(restart).output().unwrap(), "restart on 2 ranks");
    assert_eq!(particles(&one), particles(&many), "restarted on other ranks: not where one process ends");
    assert_eq!(
        std::fs::read_to_string(one.join("gauges.csv")).unwrap(),
        std::fs::read_to_string(many.join("gauges.csv")).unwrap(),
        "gauges of the chain"
    );
}

#[test]
fn a_failing_rank_stops_the_job_with_its_message() {
    let dir = TempDir::new("mpi-fail");
    let good = run_args("dam_break_2d.toml", &dir.0.join("out"), 1000, &[]);
    let mut bad = good.clone();
    bad[1] = dir.0.join("missing.toml").to_str().unwrap().into();
    // Rank 0 gets a good case and waits for rank 1, whose case file is missing.
    let t0 = Instant::now();
    let mut c = mpirun(1);
    c.arg(BIN).args(&good).args([":", "-n", "1", BIN]).args(&bad);
    let out = c.output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!out.status.success(), "the job must fail");
    assert!(t0.elapsed() < Duration::from_secs(60), "the job must stop within seconds, took {:?}", t0.elapsed());
    assert!(err.contains("rank 1 of 2") && err.contains("missing.toml"), "{err}");
}
