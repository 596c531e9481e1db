//! Integration tests of the `surge` binary, run as a user runs it: `surge check` and short
//! `surge run`s on every shipped case in `configs/` (a new config is covered automatically),
//! output files, `--set` overrides, the broken cases of `tests/cases/broken/` (each must fail
//! with exit code 2 and one clear `error:` line naming the file and the field), an
//! unwritable output folder, and a run that diverges.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;
use common::TempDir;
use serde_json::Value;
use surge_core::Case;

const BIN: &str = env!("CARGO_BIN_EXE_surge");
const ROOT: &str = env!("CARGO_MANIFEST_DIR");

/// Exit code of a bad case file or bad arguments.
const EXIT_BAD_INPUT: i32 = 2;
/// Exit code of a run that diverged or could not write its output.
const EXIT_RUN_FAILED: i32 = 1;

/// Particles above which a config needs an entry in [`quick_overrides`] to keep this test fast.
const QUICK_MAX_PARTICLES: usize = 30_000;

/// Extra `--set`s that make a shipped config small enough for a smoke run (dp overrides are
/// how users make quick runs), and the step cap.
fn quick_overrides(stem: &str) -> (Vec<String>, u64) {
    match stem {
        "dam_break_3d" | "spheric_test2" | "spheric_test2_gate" => (vec!["dp=0.08".into()], 10),
        "dam_break_pier_3d" | "dam_break_breakwater_3d" | "channel_pier_3d" => (vec!["dp=0.04".into()], 10),
        "wave_flume_2d" | "floating_box_waves_2d" => (vec!["dp=0.02".into()], 20),
        _ => (vec![], 20),
    }
}

/// The broken cases of `tests/cases/broken/` and what their error must say (besides the file
/// name). Every file there must be listed here, and every entry must have its file.
const BROKEN: &[(&str, &[&str])] = &[
    ("unknown_key_top.toml", &["field `dpp`", "unknown field `dpp`", "`dp`"]),
    ("unknown_key_nested.toml", &["field `physics.viscosty`", "unknown field `viscosty`", "`viscosity`"]),
    ("wrong_type.toml", &["field `dp`", "invalid type", "\"small\""]),
    ("dp_larger_than_box.toml", &["field `fluid[0]`", "smaller than dp = 0.5", "no particle fits"]),
    ("fluid_overlaps_wall.toml", &["field `fluid[0]`", "overlaps the particle layers of wall[0]"]),
    ("fluid_overlaps_obstacle.toml", &["field `fluid[0]`", "overlaps obstacle[0]"]),
    ("overlapping_fluid.toml", &["field `fluid[1]`", "overlaps fluid[0]"]),
    ("no_fluid.toml", &["field `fluid`", "nothing to simulate"]),
    ("missing_time_end.toml", &["field `time`", "missing field `end`"]),
    ("missing_time_table.toml", &["missing field `time`"]),
    ("vector_wrong_len.toml", &["field `physics.body_force`", "expected 2 numbers", "found 3"]),
    ("unknown_kernel.toml", &["field `physics.kernel`", "`gauss`", "`wendland_c2`", "`cubic_spline`"]),
    ("unknown_boundary.toml", &["field `physics.boundary.kind`", "unknown variant `mbdc`", "`dbc`", "`mdbc`"]),
    ("c0_and_c0_coef.toml", &["field `physics.eos`", "either c0 or c0_coef, not both"]),
    ("wall_function_on_dbc.toml", &["field `physics.wall_function`", "log_law needs free-slip mDBC walls"]),
    ("log_law_negative_u_star.toml", &["field `initial_velocity.u_star`", "positive", "-0.1"]),
    ("negative_cfl.toml", &["field `time.cfl`", "positive", "-0.2"]),
    ("negative_dt_max.toml", &["field `time.dt_max`", "positive", "-0.0001"]),
    ("negative_end_time.toml", &["field `time.end`", "positive", "-1"]),
    ("periodic_too_short.toml", &["field `domain.periodic`", "periodic axis x", "less than 3 cells"]),
    ("periodic_axis_z_in_2d.toml", &["field `domain.periodic`", "axis z does not exist in a 2D case"]),
    ("geometry_outside_domain.toml", &["field `domain`", "along y", "outside the domain"]),
    ("unknown_face.toml", &["field `wall[0].faces`", "unknown face `bottom`", "x-, x+, y-, y+"]),
    ("unknown_gauge_kind.toml", &["field `gauge[0].kind`", "`velocity`", "`pressure`"]),
    ("duplicate_gauge_name.toml", &["field `gauge[1].name`", "already named `p`"]),
    ("gauge_outside_domain.toml", &["field `gauge[0].point`", "x = 100 lies outside the domain", "metres"]),
    ("front_below_domain.toml", &["field `gauge[0].below`", "above the domain's bottom", "found -5"]),
    ("force_gauge_unknown_solid.toml", &["field `gauge[0].on`", "`obstacle.7` names no solid", "obstacle.0"]),
    ("invalid_syntax.toml", &["not valid TOML", "unclosed table", "line 7"]),
    ("duplicate_key.toml", &["not valid TOML", "duplicate key", "line 6"]),
    ("negative_checkpoint_interval.toml", &["field `checkpoint.interval`", "positive", "-0.05"]),
    ("checkpoint_keep_zero.toml", &["field `checkpoint.keep`", "at least 1"]),
    ("missing_mesh_file.toml", &["field `wall[0].file`", "cannot read", "geometry/no_such_tank.stl"]),
    (
        "motion_unknown_kind.toml",
        &["field `obstacle[0].motion`", "unknown variant `oscillate`", "`sinusoid`", "`wave`"],
    ),
    ("wave_height_and_spectrum.toml", &["field `obstacle[0].motion`", "either height and period", "or spectrum"]),
    ("motion_table_missing.toml", &["field `obstacle[0].motion.file`", "cannot read", "no_such_motion.csv"]),
    ("velocity_and_motion.toml", &["field `wall[0].motion`", "either velocity (constant) or motion"]),
    (
        "motion_leaves_domain.toml",
        &["field `obstacle[0].motion`", "carries the solid out of the domain", "at t = 0.3301 s", "along y"],
    ),
    ("body_density_and_mass.toml", &["field `body[0]`", "density or its mass (one of them)"]),
    ("inlet_too_thin.toml", &["field `inlet[0].layers`", "thinner than the kernel support 2h = 0.03", "at least 3"]),
    ("inlet_without_velocity.toml", &["field `inlet[0].velocity`", "an inlet needs a velocity"]),
    ("body_unknown_dof.toml", &["field `body[0].fixed[1]`", "`rx` is no degree of freedom of a 2D body", "x, y, rz"]),
];

// ---------------------------------------------------------------------------------------------
// Helpers

/// What a run of the binary gave.
struct Out {
    args: Vec<String>,
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

impl Out {
    /// For assertion messages.
    fn describe(&self) -> String {
        format!(
            "surge {}\nexit code: {:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
            self.args.join(" "),
            self.code,
            self.stdout,
            self.stderr
        )
    }

    fn assert_code(&self, code: i32) {
        assert_eq!(self.code, Some(code), "unexpected exit code\n{}", self.describe());
    }

    fn assert_no_panic(&self) {
        assert!(!self.stderr.contains("panicked"), "the binary panicked\n{}", self.describe());
        assert!(!self.stderr.contains("RUST_BACKTRACE"), "the binary panicked\n{}", self.describe());
    }

    /// stderr is exactly one line, `error: ...`; returns it.
    fn single_error_line(&self) -> &str {
        let lines: Vec<&str> = self.stderr.lines().filter(|l| !l.trim().is_empty()).collect();
        assert_eq!(lines.len(), 1, "expected exactly one line on stderr\n{}", self.describe());
        assert!(lines[0].starts_with("error: "), "stderr must start with `error: `\n{}", self.describe());
        lines[0]
    }

    /// The last `error:` line of stderr (after any log lines of a run that had started).
    fn last_error_line(&self) -> &str {
        let last = self.stderr.lines().rfind(|l| !l.trim().is_empty()).unwrap_or("");
        assert!(last.starts_with("error: "), "the last line of stderr must start with `error: `\n{}", self.describe());
        let errors = self.stderr.lines().filter(|l| l.starts_with("error:")).count();
        assert_eq!(errors, 1, "expected one error line\n{}", self.describe());
        last
    }
}

fn surge<S: AsRef<str>>(args: &[S]) -> Out {
    surge_with(args, &[])
}

/// [`surge`] with extra environment variables.
fn surge_with<S: AsRef<str>>(args: &[S], env: &[(&str, &str)]) -> Out {
    let args: Vec<String> = args.iter().map(|a| a.as_ref().to_string()).collect();
    let out = Command::new(BIN)
        .args(&args)
        .current_dir(ROOT)
        .env_remove("SURGE_LOG")
        .env_remove("RUST_BACKTRACE")
        .env_remove("SURGE_DEVICE_LINKS")
        .envs(env.iter().copied())
        .output()
        .expect("the surge binary starts");
    Out {
        args,
        code: out.status.code(),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

fn root() -> &'static Path {
    Path::new(ROOT)
}

fn stem(path: &Path) -> String {
    path.file_stem().unwrap().to_string_lossy().into_owned()
}

/// Every `.toml` file of a folder, sorted.
fn toml_files(dir: &Path) -> Vec<PathBuf> {
    let mut v: Vec<PathBuf> = fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("cannot list {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    v.sort();
    v
}

fn configs() -> Vec<PathBuf> {
    let v = toml_files(&root().join("configs"));
    assert!(!v.is_empty(), "no configs/*.toml found");
    v
}

fn read_json(path: &Path) -> Value {
    let text = fs::read_to_string(path).unwrap_or_else(|e| panic!("cannot read {}: {e}", path.display()));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{} is not JSON: {e}\n{text}", path.display()))
}

/// Every file under `dir`, recursively.
fn files_under(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    if let Ok(entries) = fs::read_dir(dir) {
        for e in entries {
            let p = e.unwrap().path();
            if p.is_dir() {
                out.extend(files_under(&p));
            } else {
                out.push(p);
            }
        }
    }
    out.sort();
    out
}

/// No `.tmp` file of an atomic write is left behind.
fn assert_no_tmp(dir: &Path) {
    let tmp: Vec<_> = files_under(dir).into_iter().filter(|p| p.to_string_lossy().ends_with(".tmp")).collect();
    assert!(tmp.is_empty(), "temporary files left in {}: {tmp:?}", dir.display());
}

/// Short-run arguments for a config: frames at 0, end/2 and end, gauge rows every end/4,
/// where end is a few of the case's first time steps; capped at `max_steps` steps.
fn quick_args(config: &Path, out: &Path, extra: &[&str]) -> (Vec<String>, Case) {
    let (mut sets, max_steps) = quick_overrides(&stem(config));
    sets.extend(extra.iter().map(|s| s.to_string()));
    let case = Case::from_file(config, &sets).unwrap_or_else(|e| panic!("{e}"));
    let n = surge_core::geometry::fill(&case).len();
    assert!(
        n <= QUICK_MAX_PARTICLES,
        "{}: {n} particles is too many for a smoke run; add a dp override in quick_overrides()",
        config.display()
    );
    let end = 6.0 * case.initial_dt();
    sets.extend([
        format!("time.end={end:e}"),
        format!("output.interval={:e}", end / 2.0),
        format!("output.gauge_interval={:e}", end / 4.0),
    ]);
    // The run's overrides change the case: read it again as the binary will.
    let case = Case::from_file(config, &sets).unwrap_or_else(|e| panic!("{e}"));
    let mut args = vec!["run".to_string(), config.display().to_string(), "--quiet".into()];
    args.extend(["--out".to_string(), out.display().to_string()]);
    args.extend(["--max-steps".to_string(), max_steps.to_string()]);
    for s in sets {
        args.extend(["--set".to_string(), s]);
    }
    (args, case)
}

// ---------------------------------------------------------------------------------------------
// Shipped configs

#[test]
fn check_every_config() {
    for config in configs() {
        let out = surge(&["check", &config.display().to_string()]);
        out.assert_code(0);
        out.assert_no_panic();
        for want in ["particles", "first dt", "density range [0.7, 1.3] rho0", "m on cpu", "m on a GPU (a skin of"] {
            assert!(out.stdout.contains(want), "`{want}` missing from the output\n{}", out.describe());
        }
    }
    // The GPU's skin (surge_cuda's defaults): 0.5 % of the support in 3D with either wall,
    // 2 % in 2D, 4 % with mDBC walls in 2D.
    for (config, skin) in
        [("dam_break_3d", "0.5"), ("spheric_test2", "0.5"), ("dam_break_2d", "2.0"), ("dam_break_obstacle_2d", "4.0")]
    {
        let out = surge(&["check", &format!("configs/{config}.toml")]);
        out.assert_code(0);
        let want = format!("on a GPU (a skin of {skin} % of the support, a stencil 5 cells wide)");
        assert!(out.stdout.contains(&want), "`{want}` missing from the output\n{}", out.describe());
    }
}

#[test]
fn run_every_config_briefly() {
    let tmp = TempDir::new("cli-run_every_config");
    for config in configs() {
        let dir = tmp.join(stem(&config));
        let (args, case) = quick_args(&config, &dir, &[]);
        let (_, max_steps) = quick_overrides(&stem(&config));
        let out = surge(&args);
        out.assert_code(0);
        out.assert_no_panic();
        let name = &case.name;
        let ctx = out.describe();

        let pvd = dir.join(format!("{name}.pvd"));
        let frame0 = dir.join("frames").join(format!("{name}_00000.vtu"));
        assert!(pvd.is_file(), "{} missing\n{ctx}", pvd.display());
        assert!(frame0.is_file(), "{} missing\n{ctx}", frame0.display());
        let pvd_text = fs::read_to_string(&pvd).unwrap();
        assert!(pvd_text.contains(&format!("frames/{name}_00000.vtu")), "{pvd_text}");

        let s = read_json(&dir.join("summary.json"));
        for key in [
            "particles",
            "fluid_particles",
            "steps",
            "sim_time",
            "wall_seconds",
            "particle_steps_per_second",
            "bytes_per_particle",
            "backend",
            "workers",
        ] {
            assert!(s.get(key).is_some(), "summary.json has no `{key}`: {s:#}\n{ctx}");
        }
        assert_eq!(s["status"], "completed", "{s:#}\n{ctx}");
        let particles = s["particles"].as_u64().unwrap();
        let fluid = s["fluid_particles"].as_u64().unwrap();
        let steps = s["steps"].as_u64().unwrap();
        assert!(fluid > 0 && fluid <= particles, "{s:#}");
        assert!(steps > 0 && steps <= max_steps, "{s:#}");
        assert!(s["sim_time"].as_f64().unwrap() > 0.0, "{s:#}");
        // No step is shortened to land on the end: the last one may pass it by less than a step.
        let dt_bound = 10.0 * case.initial_dt();
        assert!(s["sim_time"].as_f64().unwrap() <= case.end_time + dt_bound, "{s:#}");
        assert!(s["workers"].as_u64().unwrap() >= 1, "{s:#}");
        assert!(!s["backend"].as_str().unwrap().is_empty(), "{s:#}");
        // The run's own speed: its wall time over its steps, and the share of it the device
        // that rebuilt longest spent in rebuilds.
        let (wall, ms) = (s["wall_seconds"].as_f64().unwrap(), s["ms_per_step"].as_f64().unwrap());
        assert!((ms * steps as f64 - 1e3 * wall).abs() <= 1e-9 * 1e3 * wall, "ms_per_step: {s:#}");
        let share = s["rebuild_share"].as_f64().unwrap();
        let rebuilds = s["devices"].as_array().unwrap().iter().map(|d| d["rebuild_seconds"].as_f64().unwrap());
        let most = rebuilds.fold(0.0, f64::max);
        assert!((0.0..1.0).contains(&share) && (share * wall - most).abs() <= 1e-9 * wall, "rebuild_share: {s:#}");
        // Of the fluid removed, what the devices took out for its density.
        let dense: u64 =
            s["devices"].as_array().unwrap().iter().map(|d| d["removed_for_density"].as_u64().unwrap()).sum();
        assert!(dense <= s["removed_particles"].as_u64().unwrap(), "removed_for_density: {s:#}");

        let vtu = surge_io::read_vtu(&frame0).unwrap();
        assert_eq!(vtu.points.len() as u64, particles, "{}", frame0.display());

        if !case.gauges.is_empty() {
            let text = fs::read_to_string(dir.join("gauges.csv")).expect("gauges.csv");
            let mut lines = text.lines();
            let names = surge_core::gauge::columns(&case);
            // The gauges' columns, then the count of fluid particles removed so far, and with
            // open boundaries the particles in and out.
            let open = if case.open.is_empty() { "" } else { ",inflow,outflow" };
            let header = format!("time,{},removed{open}", names.join(","));
            assert_eq!(lines.next(), Some(header.as_str()), "{name}: {text}");
            let rows: Vec<&str> = lines.collect();
            assert!(rows.len() >= 2, "{name}: expected at least 2 gauge rows\n{text}\n{ctx}");
            for row in rows {
                let fields: Vec<&str> = row.split(',').collect();
                assert_eq!(fields.len(), header.split(',').count(), "{name}: row {row:?}");
                assert!(fields.iter().all(|f| f.parse::<f64>().is_ok()), "{name}: row {row:?}");
            }
        }
        assert_no_tmp(&dir);
    }
}

#[test]
fn csv_frames_2d_and_3d() {
    let tmp = TempDir::new("cli-csv_frames");
    for (config, header) in [
        ("configs/dam_break_2d.toml", "id,kind,x,y,vx,vy,rho,p"),
        ("configs/dam_break_3d.toml", "id,kind,x,y,z,vx,vy,vz,rho,p"),
    ] {
        let config = root().join(config);
        let dir = tmp.join(stem(&config));
        let (args, case) = quick_args(&config, &dir, &[r#"output.formats=["vtu","csv"]"#]);
        let out = surge(&args);
        out.assert_code(0);
        let frames = dir.join("frames");
        assert!(frames.join(format!("{}_00000.vtu", case.name)).is_file(), "{}", out.describe());
        let csv = frames.join(format!("{}_00000.csv", case.name));
        let text = fs::read_to_string(&csv).unwrap_or_else(|e| panic!("{}: {e}\n{}", csv.display(), out.describe()));
        let mut lines = text.lines();
        assert_eq!(lines.next(), Some(header), "{}", csv.display());
        let columns = header.split(',').count();
        let (mut fluid, mut boundary) = (0u64, 0u64);
        for line in lines {
            let f: Vec<&str> = line.split(',').collect();
            assert_eq!(f.len(), columns, "{}: {line:?}", csv.display());
            match f[1] {
                "fluid" => fluid += 1,
                "boundary" => boundary += 1,
                k => panic!("{}: unknown kind {k:?} in {line:?}", csv.display()),
            }
        }
        let s = read_json(&dir.join("summary.json"));
        assert_eq!(fluid, s["fluid_particles"].as_u64().unwrap(), "{s:#}");
        assert_eq!(fluid + boundary, s["particles"].as_u64().unwrap(), "{s:#}");
        assert!(boundary > 0, "the dam breaks have walls");
    }
}

// ---------------------------------------------------------------------------------------------
// Overrides

#[test]
fn set_overrides_change_the_run() {
    let tmp = TempDir::new("cli-set_overrides");
    let config = root().join("configs/dam_break_2d.toml");
    let c = config.display().to_string();
    let out = surge(&["run", &c, "--quiet", "--out", &tmp.display().to_string(), "--set", "time.end=0.001"]);
    out.assert_code(0);
    let s = read_json(&tmp.join("summary.json"));
    assert_eq!(s["status"], "completed", "{s:#}");
    // The run ends at the first step end at or after time.end (no step is shortened).
    let t = s["sim_time"].as_f64().unwrap();
    assert!((0.001..0.0015).contains(&t), "{s:#}");
    assert!((s["end_time"].as_f64().unwrap() - 0.001).abs() < 1e-12, "{s:#}");

    // dp changes the particle count that `check` reports.
    let particles = |out: &Out| -> u64 {
        let line = out.stdout.lines().find(|l| l.starts_with("particles")).expect("a particles line");
        line.split_whitespace().nth(1).unwrap().parse().unwrap()
    };
    let fine = surge(&["check", &c]);
    let coarse = surge(&["check", &c, "--set", "dp=0.04"]);
    fine.assert_code(0);
    coarse.assert_code(0);
    assert!(particles(&coarse) < particles(&fine) / 3, "{}\n{}", fine.describe(), coarse.describe());

    // Shifting, off unless set, is named on the physics line with its parameters (3D
    // threshold 2.75 by default).
    let physics =
        |out: &Out| out.stdout.lines().find(|l| l.starts_with("physics")).expect("a physics line").to_string();
    assert!(!physics(&fine).contains("shifting"), "{}", fine.describe());
    let t2 = root().join("configs/spheric_test2.toml").display().to_string();
    let shifted = surge(&["check", &t2, "--set", r#"physics.shifting={kind="lind"}"#]);
    shifted.assert_code(0);
    assert!(physics(&shifted).ends_with(", Lind shifting (A 2, off where div r < 2.75)"), "{}", shifted.describe());
}

/// `surge bench --from` times a run's checkpoint (the developed flow) and refuses one of
/// another case in one line.
#[test]
fn bench_from_a_checkpoint() {
    let tmp = TempDir::new("cli-bench_from");
    let c = root().join("configs/dam_break_2d.toml").display().to_string();
    let sets = ["--set", "dp=0.04", "--set", "time.end=0.02", "--set", "checkpoint.interval=0.02"];
    let out =
        surge(&[&["run", &c, "--quiet", "--backend", "cpu", "--out", &tmp.display().to_string()], &sets[..]].concat());
    out.assert_code(0);
    let dir = tmp.join("checkpoints");
    let ckpt = fs::read_dir(&dir).unwrap().map(|e| e.unwrap().path()).max().expect("a checkpoint");
    let k = ckpt.display().to_string();
    let bench = |extra: &[&str]| {
        let args =
            [&["bench", "--backend", "cpu", "--case", &c, "--from", &k, "--steps", "3", "--set", "dp=0.04"], extra]
                .concat();
        surge(&args)
    };
    let ok = bench(&[]);
    ok.assert_code(0);
    ok.assert_no_panic();
    assert!(ok.stderr.contains("timing from") && ok.stderr.contains("step "), "{}", ok.describe());
    let row = ok.stdout.lines().find(|l| l.starts_with("dam_break_2d")).unwrap_or_else(|| panic!("{}", ok.describe()));
    assert_eq!(row.split_whitespace().nth(5), Some("3"), "3 timed steps: {row}");
    // Another dp: another case, refused before anything is timed.
    let other = bench(&["--set", "dp=0.05"]);
    other.assert_code(2);
    assert!(other.last_error_line().contains("another case"), "{}", other.describe());
}

/// `surge bench --develop-to T` steps the flow to T once and caches its checkpoint; the next
/// bench of the same case starts from it and times the same steps. Bad values are refused in
/// one line.
#[test]
fn bench_develops_the_flow_once_and_caches_it() {
    let tmp = TempDir::new("cli-bench_develop");
    let cache = tmp.join("cache").display().to_string();
    let c = root().join("configs/dam_break_2d.toml").display().to_string();
    let bench = |extra: &[&str]| {
        let args = [&["bench", "--backend", "cpu", "--case", &c, "--steps", "3", "--set", "dp=0.04"], extra].concat();
        surge_with(&args, &[("SURGE_CACHE_DIR", &cache)])
    };
    let first = bench(&["--develop-to", "0.02"]);
    first.assert_code(0);
    assert!(
        first.stderr.contains("stepped to t = 0.02 s") && first.stderr.contains("cached in"),
        "{}",
        first.describe()
    );
    let second = bench(&["--develop-to", "0.02"]);
    second.assert_code(0);
    assert!(second.stderr.contains("from the cached flow at t = 0.02 s"), "{}", second.describe());
    // A built-in case times the middle of its run by default (half its end time).
    let builtin = surge_with(
        &["bench", "--backend", "cpu", "--cases", "dam-break2d", "--steps", "3", "--set", "time.end=0.04"],
        &[("SURGE_CACHE_DIR", &cache)],
    );
    builtin.assert_code(0);
    assert!(builtin.stderr.contains("stepped to t = 0.02 s"), "{}", builtin.describe());
    let timed_steps = |o: &Out| {
        let row =
            o.stdout.lines().find(|l| l.starts_with("dam_break_2d")).unwrap_or_else(|| panic!("{}", o.describe()));
        row.split_whitespace().nth(5).map(str::to_string)
    };
    assert_eq!(timed_steps(&first), Some("3".to_string()));
    assert_eq!(timed_steps(&second), Some("3".to_string()));
    for (extra, want) in [
        (&["--develop-to", "-1"][..], "expected a time >= 0"),
        (&["--develop-to", "99"], "ends at t ="),
        (&["--develop-to", "0.02", "--from", "x.surge"], "one or the other"),
    ] {
        let out = bench(extra);
        out.assert_code(2);
        assert!(out.last_error_line().contains(want), "{extra:?}: {}", out.describe());
    }
}

#[test]
fn bad_overrides_fail_clearly() {
    let tmp = TempDir::new("cli-bad_overrides");
    let c = root().join("configs/dam_break_2d.toml").display().to_string();
    for (set, want) in [
        ("time.nope=1", &["time.nope", "unknown field `nope`"][..]),
        ("physics.eos.c00=1", &["physics.eos.c00", "unknown field `c00`"]),
        ("dp", &["KEY.PATH=VALUE"]),
        ("dp=small", &["field `dp`", "invalid type"]),
        ("fluid.5.min=[0, 0]", &["fluid.5.min", "index 5"]),
        ("domain.density_range=[1.1, 1.3]", &["domain.density_range", "min < 1 < max", "[1.1, 1.3]"]),
        ("domain.density_range=[0.7]", &["domain.density_range", "[min, max]"]),
    ] {
        let out_dir = tmp.join("out");
        for out in [
            surge(&["check", &c, "--set", set]),
            surge(&["run", &c, "--quiet", "--out", &out_dir.display().to_string(), "--set", set]),
        ] {
            out.assert_code(EXIT_BAD_INPUT);
            out.assert_no_panic();
            let line = out.single_error_line();
            for w in want {
                assert!(line.contains(w), "`{w}` missing from the error\n{}", out.describe());
            }
        }
        assert!(files_under(&out_dir).is_empty(), "a failed --set left files: {:?}", files_under(&out_dir));
    }
}

// ---------------------------------------------------------------------------------------------
// Bad input

#[test]
fn broken_cases_table_matches_the_folder() {
    let dir = root().join("tests/cases/broken");
    let on_disk: Vec<String> =
        toml_files(&dir).iter().map(|p| p.file_name().unwrap().to_string_lossy().into_owned()).collect();
    let mut listed: Vec<String> = BROKEN.iter().map(|(f, _)| f.to_string()).collect();
    listed.sort();
    assert_eq!(on_disk, listed, "every file of tests/cases/broken/ needs its expected error in BROKEN, and back");
}

#[test]
fn broken_cases_fail_with_one_clear_line() {
    let tmp = TempDir::new("cli-broken");
    let mut failures = Vec::new();
    for (file, want) in BROKEN {
        let path = root().join("tests/cases/broken").join(file);
        let p = path.display().to_string();
        let out_dir = tmp.join(file.trim_end_matches(".toml"));
        for out in [surge(&["check", &p]), surge(&["run", &p, "--quiet", "--out", &out_dir.display().to_string()])] {
            let r = std::panic::catch_unwind(|| {
                out.assert_code(EXIT_BAD_INPUT);
                out.assert_no_panic();
                let line = out.single_error_line();
                assert!(line.contains(file), "the error does not name the file `{file}`\n{}", out.describe());
                for w in *want {
                    assert!(line.contains(w), "`{w}` missing from the error\n{}", out.describe());
                }
            });
            if let Err(e) = r {
                let msg = e
                    .downcast_ref::<String>()
                    .cloned()
                    .or_else(|| e.downcast_ref::<&str>().map(|s| s.to_string()))
                    .unwrap_or_default();
                failures.push(format!("{file}: {msg}"));
            }
        }
        // A case that does not validate must not leave a frame, whole or half-written.
        let frames: Vec<_> = files_under(&out_dir)
            .into_iter()
            .filter(|p| {
                let s = p.to_string_lossy();
                s.ends_with(".vtu") || s.ends_with(".csv") || s.ends_with(".tmp") || s.ends_with(".pvd")
            })
            .collect();
        if !frames.is_empty() {
            failures.push(format!("{file}: `surge run` left frame files {frames:?}"));
        }
    }
    assert!(failures.is_empty(), "{} broken case(s) misbehaved:\n\n{}", failures.len(), failures.join("\n\n"));
}

#[test]
fn missing_case_file() {
    let tmp = TempDir::new("cli-missing_case");
    let path = tmp.join("no_such_case.toml");
    let p = path.display().to_string();
    for out in [surge(&["check", &p]), surge(&["run", &p, "--quiet", "--out", &tmp.join("out").display().to_string()])]
    {
        out.assert_code(EXIT_BAD_INPUT);
        out.assert_no_panic();
        let line = out.single_error_line();
        assert!(line.contains(&p), "the error does not name the file\n{}", out.describe());
        assert!(line.contains("cannot read"), "{}", out.describe());
    }
    assert!(!tmp.join("out").exists());
}

#[test]
fn a_bad_device_links_setting_is_one_clear_error() {
    let tmp = TempDir::new("cli-device_links");
    let out_dir = tmp.join("out").display().to_string();
    let args = ["run", "configs/dam_break_2d.toml", "--backend", "cpu", "--workers", "2", "--quiet", "--out", &out_dir];
    let out = surge_with(&args, &[("SURGE_DEVICE_LINKS", "ipc-please")]);
    out.assert_code(EXIT_BAD_INPUT);
    out.assert_no_panic();
    let line = out.single_error_line();
    assert!(line.contains("SURGE_DEVICE_LINKS=ipc-please") && line.contains("expected host"), "{}", out.describe());
    assert!(!tmp.join("out").exists(), "nothing may be written");
    // The accepted values run.
    for mode in ["host", "process", "auto"] {
        let mut a = args.to_vec();
        a.extend(["--max-steps", "3"]);
        surge_with(&a, &[("SURGE_DEVICE_LINKS", mode)]).assert_code(0);
    }
}

#[test]
fn unwritable_output_directory() {
    let tmp = TempDir::new("cli-unwritable_out");
    let file = tmp.join("regular_file");
    fs::write(&file, b"not a folder").unwrap();
    let c = root().join("configs/couette_2d.toml").display().to_string();
    for out_dir in [file.join("sub"), file.clone()] {
        let out = surge(&["run", &c, "--quiet", "--max-steps", "5", "--out", &out_dir.display().to_string()]);
        assert!(out.code.is_some_and(|c| c != 0), "expected a failure\n{}", out.describe());
        out.assert_no_panic();
        let line = out.last_error_line();
        assert!(line.contains(&file.display().to_string()), "the error does not name the path\n{}", out.describe());
    }
    assert_eq!(fs::read(&file).unwrap(), b"not a folder", "the file in the way was changed");
}

// ---------------------------------------------------------------------------------------------
// Divergence

/// A run whose time step collapses (density diffusion of 0.5 with Verlet, unstable within
/// 42 steps: tests/removal.rs) stops with the reason and where it went wrong: the fastest
/// fluid particle, which the instability accelerates step after step, its density and its
/// nearest particle, on the error line and in summary.json.
#[test]
fn a_collapsed_time_step_names_the_fastest_fluid_particle() {
    let tmp = TempDir::new("cli-collapse");
    let config = root().join("configs/dam_break_2d.toml").display().to_string();
    let out_dir = tmp.display().to_string();
    let out = surge(&[
        "run",
        &config,
        "--quiet",
        "--out",
        &out_dir,
        "--set",
        "physics.density_diffusion.delta=0.5",
        "--set",
        r#"time.scheme="verlet""#,
        "--set",
        "time.end=0.1",
        // Off, or the particles running away would be removed for their density first
        // (`domain.density_range`) until more than max_removed had gone.
        "--set",
        "domain.density_range=[-inf, inf]",
    ]);
    out.assert_code(EXIT_RUN_FAILED);
    out.assert_no_panic();
    let line = out.last_error_line();
    for w in [
        "time step fell",
        "the fastest fluid particle is",
        " m/s, density ",
        " kg/m^3, the particle nearest to it",
        " dp",
    ] {
        assert!(line.contains(w), "`{w}` missing from the error\n{}", out.describe());
    }
    let s = read_json(&tmp.join("summary.json"));
    assert_eq!(s["status"], "diverged", "{s:#}");
    assert!(s["message"].as_str().unwrap().contains("the fastest fluid particle is"), "{s:#}");
}

/// `surge run tests/cases/CASE` into `tmp`, which must fail (exit 1, no panic) with each of
/// `want` in its one error line.
fn failed_run(tmp: &TempDir, case: &str, want: &[&str]) -> Out {
    let config = root().join("tests/cases").join(case);
    let out = surge(&["run", &config.display().to_string(), "--quiet", "--out", &tmp.display().to_string()]);
    out.assert_code(EXIT_RUN_FAILED);
    out.assert_no_panic();
    let line = out.last_error_line();
    for w in want {
        assert!(line.contains(w), "`{w}` missing from the error\n{}", out.describe());
    }
    out
}

/// A turning solid carried out of the domain stops the run (a solid's particle is never
/// removed), and the error names the solid, not a divergence of the flow.
#[test]
fn a_solid_swung_out_of_the_domain_stops_the_run_and_is_named() {
    let tmp = TempDir::new("cli-swing-out");
    let want = ["the run stopped at step", "left the domain: a particle of obstacle[0]", "make [domain] hold"];
    failed_run(&tmp, "swing_out_2d.toml", &want);
    let s = read_json(&tmp.join("summary.json"));
    assert!(s["message"].as_str().unwrap().contains("a particle of obstacle[0]"), "{s:#}");
}

#[test]
fn diverging_run_keeps_frames_and_writes_a_diagnosis_frame() {
    let tmp = TempDir::new("cli-diverge");
    let out = failed_run(&tmp, "diverge_2d.toml", &["step", "particle", "diverged"]);
    let line = out.last_error_line();

    let s = read_json(&tmp.join("summary.json"));
    assert_eq!(s["status"], "diverged", "{s:#}");
    let message = s["message"].as_str().expect("a message in summary.json");
    assert!(message.contains("step") && message.contains("particle"), "{s:#}");

    // The regular frames (counted in the summary) and one diagnosis frame after them.
    let regular = s["frames"].as_u64().unwrap() as usize;
    assert!(regular >= 2, "expected some frames before the divergence: {s:#}\n{}", out.describe());
    let vtus: Vec<PathBuf> =
        files_under(&tmp.join("frames")).into_iter().filter(|p| p.extension().is_some_and(|x| x == "vtu")).collect();
    let expected: Vec<PathBuf> =
        (0..=regular).map(|i| tmp.join("frames").join(format!("diverge_2d_{i:05}.vtu"))).collect();
    assert_eq!(vtus, expected, "{s:#}\n{}", out.describe());
    let diagnosis = expected.last().unwrap();
    assert!(
        line.contains(&diagnosis.display().to_string()),
        "the error does not name the diagnosis frame\n{}",
        out.describe()
    );
    let pvd = fs::read_to_string(tmp.join("diverge_2d.pvd")).unwrap();
    for i in 0..=regular {
        assert!(pvd.contains(&format!("frames/diverge_2d_{i:05}.vtu")), "{pvd}");
    }
    for f in &vtus {
        surge_io::read_vtu(f).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
    }
    assert_no_tmp(&tmp);
}

/// True when this machine has a usable GPU (then the no-GPU test below has nothing to test).
fn gpu_here() -> bool {
    surge_runtime::cuda_unavailable(0).is_none()
}

#[test]
fn cuda_without_a_gpu_is_one_clear_error() {
    if gpu_here() {
        eprintln!("skipped: this machine has a usable GPU");
        return;
    }
    let config = Path::new(ROOT).join("configs/dam_break_2d.toml");
    let tmp = TempDir::new("cli-cuda_without_gpu");
    let out = surge(&[
        "run",
        &config.display().to_string(),
        "--backend",
        "cuda",
        "--quiet",
        "--out",
        &tmp.0.display().to_string(),
    ]);
    out.assert_code(EXIT_BAD_INPUT);
    out.assert_no_panic();
    assert!(out.stderr.contains("--backend cuda:"), "{}", out.describe());
    assert!(out.stderr.contains("not found") || out.stderr.contains("no GPU"), "{}", out.describe());
    // auto falls back to the CPU and says why.
    let out = surge(&["run", &config.display().to_string(), "--max-steps", "2", "--out", &tmp.0.display().to_string()]);
    out.assert_code(0);
    assert!(out.stderr.contains("backend auto: no usable GPU"), "{}", out.describe());
}

/// `surge check --backend cuda` compiles the case's kernels with NVRTC, which needs no GPU
/// (a login node can check a case). NVRTC is required where CI or SURGE_REQUIRE_NVRTC is set.
#[test]
fn check_compiles_the_kernels_with_nvrtc() {
    let required = std::env::var_os("CI").is_some() || std::env::var_os("SURGE_REQUIRE_NVRTC").is_some();
    if surge_cuda::nvrtc_version().is_err() && !required {
        eprintln!("skipped: no NVRTC here");
        return;
    }
    let config = Path::new(ROOT).join("configs/dam_break_3d.toml");
    let out = surge(&["check", &config.display().to_string(), "--backend", "cuda"]);
    out.assert_code(0);
    assert!(
        out.stdout.contains("kernels     compiled with NVRTC")
            || out.stdout.contains("kernels     loaded from the cache"),
        "{}",
        out.describe()
    );
}

/// `check --backend cuda --devices 0,0` prints each device's share of the first cut and what
/// it allocates for it (no GPU needed: the lines come before the kernels are compiled); the
/// shares add up to the case.
#[test]
fn check_prints_each_gpu_of_a_team() {
    let config = Path::new(ROOT).join("configs/dam_break_3d.toml");
    let out = surge(&["check", &config.display().to_string(), "--backend", "cuda", "--devices", "0,0"]);
    let total: u64 = out
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("particles   ")?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no particle count\n{}", out.describe()));
    let shares: Vec<u64> = (0..2)
        .map(|d| {
            let line = out
                .stdout
                .lines()
                .find(|l| l.starts_with(&format!("device {d} ")))
                .unwrap_or_else(|| panic!("no line for device {d}\n{}", out.describe()));
            assert!(line.contains("bytes/particle"), "{line}");
            line[8..].trim_start().split(' ').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(shares.iter().sum::<u64>(), total, "{}", out.describe());
    assert!(shares.iter().all(|&n| n > total / 4), "{shares:?} of {total}");
}

#[test]
fn info_reports_cuda_nvrtc_and_mpi() {
    let out = surge(&["info"]);
    out.assert_code(0);
    for want in ["cpu ", "nvrtc", "mpi"] {
        assert!(out.stdout.contains(want), "`{want}` missing\n{}", out.describe());
    }
    assert!(out.stdout.contains("gpu 0") || out.stdout.contains("cuda        not usable:"), "{}", out.describe());
}

// ---------------------------------------------------------------------------------------------
// Host memory

/// A case far too large for any host (the 3D dam break at dp 0.1 mm: 7e11 particles, about
/// 170 TB) is refused by `check` and by `run` before any particle is built: one line with
/// what it needs, what is available and the largest dp that fits, exit 2, nothing written.
#[test]
fn a_case_too_large_for_the_host_is_refused_before_it_is_built() {
    let tmp = TempDir::new("cli-too-large");
    let config = root().join("configs/dam_break_3d.toml");
    let c = config.display().to_string();
    let out_dir = tmp.join("out");
    let o = out_dir.display().to_string();
    for args in [
        vec!["check", &c, "--backend", "cpu", "--set", "dp=0.0001"],
        vec!["run", &c, "--backend", "cpu", "--set", "dp=0.0001", "--quiet", "--out", &o],
    ] {
        let t0 = std::time::Instant::now();
        let out = surge(&args);
        out.assert_code(EXIT_BAD_INPUT);
        out.assert_no_panic();
        let line = out.last_error_line();
        for w in ["does not fit in this host's memory", "GB on the host", "GB are available", "largest dp that fits"] {
            assert!(line.contains(w), "`{w}` missing\n{}", out.describe());
        }
        assert!(t0.elapsed().as_secs_f64() < 10.0, "refused only after {:?}", t0.elapsed());
    }
    assert!(!out_dir.exists(), "a refused run must not write anything");
}

/// summary.json's memory per particle counts what the CPU backend builds after the start (its
/// Verlet list, most of its memory at h = 2 dp in 3D), on one worker and on two, and stays
/// within `surge check`'s estimate, which the refusal of cases too large relies on.
#[test]
fn the_summary_counts_the_cpu_verlet_list_within_the_estimate() {
    let tmp = TempDir::new("cli-summary-memory");
    let config = root().join("configs/dam_break_3d.toml");
    let c = config.display().to_string();
    let check = surge(&["check", &c, "--backend", "cpu"]);
    check.assert_code(0);
    // "memory      62.1 MB on cpu (1407 bytes/particle), ..."
    let estimate: u64 = check
        .stdout
        .lines()
        .find_map(|l| l.strip_prefix("memory")?.split("on cpu (").nth(1)?.split(' ').next()?.parse().ok())
        .unwrap_or_else(|| panic!("no CPU memory estimate\n{}", check.describe()));
    for workers in ["1", "2"] {
        let dir = tmp.join(workers);
        let d = dir.display().to_string();
        let args = ["run", &c, "--backend", "cpu", "--workers", workers, "--quiet", "--out", &d, "--max-steps", "20"];
        let out = surge(&args);
        out.assert_code(0);
        let measured = read_json(&dir.join("summary.json"))["bytes_per_particle"].as_u64().unwrap();
        // The buffers and the cell table alone are about 180 bytes a particle here, an eighth of
        // the estimate; the list makes up most of the rest.
        assert!(
            measured * 3 >= estimate && measured <= estimate,
            "{workers} worker(s): {measured} bytes/particle in summary.json against the estimate {estimate}"
        );
    }
}

// surge plot

/// The eight bytes every PNG file starts with.
const PNG_SIGNATURE: &[u8] = b"\x89PNG\r\n\x1a\n";

/// `path` is a PNG (signature, then the IHDR chunk) of more than a blank canvas's size.
fn assert_png(path: &Path) {
    let bytes = fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    assert!(bytes.starts_with(PNG_SIGNATURE), "{} is not a PNG", path.display());
    assert_eq!(&bytes[12..16], b"IHDR", "{}: no IHDR chunk first", path.display());
    // A white 1000 x 600 canvas compresses to about 3 kB; axes, labels and a curve add more.
    assert!(bytes.len() > 10_000, "{}: only {} bytes, nothing drawn?", path.display(), bytes.len());
}

/// The fields of `surge plot`'s peak table row for gauge `name` (none when it has no row).
fn peak_row(stdout: &str, name: &str) -> Vec<String> {
    let line = stdout.lines().find(|l| l.starts_with(&format!("{name} "))).unwrap_or("");
    line.split_whitespace().map(str::to_string).collect()
}

/// A CSV at `path`: the lines of `head`, then a row for each time t = k dt, k = 0..=n, the
/// time and then `row(t)`.
fn write_series(path: &Path, head: &str, n: usize, dt: f64, row: impl Fn(f64) -> String) {
    let mut csv = String::from(head);
    for k in 0..=n {
        let t = k as f64 * dt;
        csv.push_str(&format!("{t},{}\n", row(t)));
    }
    fs::create_dir_all(path.parent().unwrap()).unwrap();
    fs::write(path, csv).unwrap();
}

/// A pulse of height `peak` at time `at`, `width` seconds wide.
fn pulse(t: f64, peak: f64, at: f64, width: f64) -> f64 {
    peak * (-((t - at) / width).powi(2)).exp()
}

/// A small run's gauges: a pressure pulse, a falling height, and a force gauge's components.
fn write_gauges(dir: &Path) {
    write_series(&dir.join("gauges.csv"), "time,P1,H1,F1.fx,F1.fy,F1.fz\n", 200, 0.005, |t| {
        format!("{},{},{},{},{}", pulse(t, 5000.0, 0.5, 0.02), 0.55 - 0.3 * t, 10.0 * t, -t, 0.5)
    });
}

#[test]
fn plot_draws_a_png_per_gauge_with_a_reference_and_an_average() {
    let tmp = TempDir::new("cli-plot");
    let run = tmp.join("run");
    write_gauges(&run);
    // A reference at 1 kHz for P1 (longer than the run), and a column no gauge has.
    let ref_path = tmp.join("reference.csv");
    write_series(&ref_path, "# measured\n# label: test experiment\nTime (s),P1,X9\n", 2000, 0.001, |t| {
        format!("{},{t}", pulse(t, 4000.0, 0.51, 0.03))
    });

    let out = surge(&["plot", &run.display().to_string()]);
    out.assert_code(0);
    let plots: Vec<String> =
        files_under(&run.join("plots")).iter().map(|p| p.file_name().unwrap().to_string_lossy().into()).collect();
    assert_eq!(plots, ["F1.png", "H1.png", "P1.png"], "{}", out.describe());
    for p in files_under(&run.join("plots")) {
        assert_png(&p);
    }
    // The peak table: P1 peaks at t = 0.5.
    let p1 = out.stdout.lines().find(|l| l.starts_with("P1 ")).unwrap_or_else(|| panic!("{}", out.describe()));
    assert!(p1.contains("5000") && p1.contains("0.5000"), "{}", out.describe());

    // The CSV path itself, another folder, the reference, a 10 ms average, one gauge.
    let other = tmp.join("avg");
    let out = surge(&[
        "plot",
        &run.join("gauges.csv").display().to_string(),
        "--out",
        &other.display().to_string(),
        "--reference",
        &ref_path.display().to_string(),
        "--average",
        "0.01",
        "--only",
        "P*",
    ]);
    out.assert_code(0);
    assert_eq!(files_under(&other), [other.join("P1.png")], "{}", out.describe());
    assert_png(&other.join("P1.png"));
    assert_no_tmp(&other);
    let p1 = out.stdout.lines().find(|l| l.starts_with("P1 ")).unwrap_or_else(|| panic!("{}", out.describe()));
    // Averaged over 10 ms (three samples of the run) the peak is lower; the reference's
    // peak, within the run's time span, is at 0.51 s.
    let fields: Vec<&str> = p1.split_whitespace().collect();
    let peak: f64 = fields[1].parse().unwrap();
    assert!(peak < 5000.0 && peak > 4500.0, "{}", out.describe());
    assert_eq!(fields[4], "0.5100", "{}", out.describe());
    assert!(out.stdout.contains("no gauge for its columns X9"), "{}", out.describe());
}

/// `--reference` given twice (an experiment and another code's run): both drawn, each with its
/// own peak column, a gauge one reference lacks shown as `-`.
#[test]
fn plot_takes_several_references() {
    let tmp = TempDir::new("cli-plot-refs");
    let run = tmp.join("run");
    write_gauges(&run);
    let experiment = tmp.join("experiment.csv");
    write_series(&experiment, "# label: test experiment\ntime,P1,H1\n", 100, 0.01, |t| {
        format!("{},{}", pulse(t, 3000.0, 0.52, 0.03), 0.6 - 0.3 * t)
    });
    let other = tmp.join("other_code.csv");
    write_series(&other, "# label: other code\ntime,P1\n", 100, 0.01, |t| pulse(t, 7000.0, 0.45, 0.03).to_string());
    let (e, o) = (experiment.display().to_string(), other.display().to_string());
    let out = surge(&["plot", &run.display().to_string(), "--only", "P1,H1", "--reference", &e, "--reference", &o]);
    out.assert_code(0);
    assert!(out.stdout.contains("reference 1: test experiment"), "{}", out.describe());
    assert!(out.stdout.contains("reference 2: other code"), "{}", out.describe());
    let row = |name: &str| peak_row(&out.stdout, name);
    assert_eq!(row("P1")[1..], ["5000.0", "0.5000", "3000.0", "0.5200", "7000.0", "0.4500"], "{}", out.describe());
    assert_eq!(row("H1")[1..], ["0.55000", "0.0000", "0.60000", "0.0000", "-", "-"], "{}", out.describe());
    for g in ["P1", "H1"] {
        assert_png(&run.join(format!("plots/{g}.png")));
    }
}

#[test]
fn plot_of_a_missing_or_malformed_csv_is_one_clear_error() {
    let tmp = TempDir::new("cli-plot-bad");
    let run = tmp.join("run");
    write_gauges(&run);
    let bad_header = tmp.join("no_time.csv");
    fs::write(&bad_header, "t,P1\n0,1\n").unwrap();
    let bad_number = tmp.join("bad_number.csv");
    fs::write(&bad_number, "time,P1\n0,1\n0.1,oops\n").unwrap();
    let missing = tmp.join("nowhere");
    let cases: Vec<(Vec<String>, String, &str)> = vec![
        (vec![missing.display().to_string()], missing.display().to_string(), "no such file or directory"),
        (vec![tmp.display().to_string()], tmp.join("gauges.csv").display().to_string(), "cannot read"),
        (vec![bad_header.display().to_string()], bad_header.display().to_string(), "expected `time`"),
        (vec![bad_number.display().to_string()], bad_number.display().to_string(), "`oops` is not a number"),
        (
            vec![run.display().to_string(), "--reference".into(), bad_header.display().to_string()],
            bad_header.display().to_string(),
            "expected `time`",
        ),
        (vec![run.display().to_string(), "--average".into(), "0".into()], "--average 0".into(), "positive"),
        (vec![run.display().to_string(), "--only".into(), "Q*".into()], "--only Q*".into(), "no gauge"),
    ];
    for (args, names, says) in cases {
        let mut a = vec!["plot".to_string()];
        a.extend(args);
        let out = surge(&a);
        out.assert_code(EXIT_BAD_INPUT);
        out.assert_no_panic();
        let line = out.single_error_line();
        assert!(line.contains(&names) && line.contains(says), "expected `{names}` and `{says}`\n{}", out.describe());
    }
    assert!(!run.join("plots").exists(), "no plot may be written after a bad input");
}

#[test]
fn plot_reads_the_spheric_test2_experiment() {
    // The shipped measurements stay readable as a reference, with their label and the
    // height columns named by gauge position: P1's impact peak and H4 (the reservoir) at rest.
    let tmp = TempDir::new("cli-plot-spheric");
    let mut csv = String::from("time,P1,H4\n");
    for i in 0..=100 {
        csv.push_str(&format!("{},0,0.5\n", i as f64 * 0.01));
    }
    fs::write(tmp.join("gauges.csv"), csv).unwrap();
    let reference = root().join("tests/data/spheric_test2_kleefsman2005.csv").display().to_string();
    let out = surge(&["plot", &tmp.display().to_string(), "--reference", &reference]);
    out.assert_code(0);
    let row = |name: &str| peak_row(&out.stdout, name);
    assert_eq!(row("P1")[3..], ["11239", "0.4150"], "{}", out.describe());
    assert_eq!(row("H4")[3..], ["0.55110", "0.0070"], "{}", out.describe());
    assert!(out.stdout.contains("no gauge for its columns P2, P3"), "{}", out.describe());
    assert_png(&tmp.join("plots/P1.png"));
}

/// `surge check --write-particles` fills a case of shapes (a mesh tank, a cylinder of fluid, a
/// sphere obstacle) and writes every particle with its kind, object and wall normal, running
/// nothing; a mesh that is not closed is refused in one line, exit 2, nothing written.
#[test]
fn check_writes_the_particles_of_shapes_and_refuses_an_open_mesh() {
    use surge_core::mesh::{box_triangles, write_binary_stl};
    let tmp = TempDir::new("shapes-check");
    let geo = tmp.0.join("geometry");
    fs::create_dir_all(&geo).unwrap();
    let tank = box_triangles([-0.5, -0.5, 0.0], [0.5, 0.5, 0.75]);
    fs::write(geo.join("tank.stl"), write_binary_stl(&tank)).unwrap();
    fs::write(geo.join("open.stl"), write_binary_stl(&tank[..10])).unwrap();
    let text = |mesh: &str| {
        format!(
            "dp = 0.05\ntime = {{ end = 0.1 }}\nphysics = {{ body_force = [0.0, 0.0, -9.81], boundary = {{ kind = \"mdbc\" }} }}\n\
             fluid = [{{ shape = \"cylinder\", centre = [0.0, 0.0, 0.2], axis = [0.0, 0.0, 1.0], radius = 0.4, length = 0.4 }}]\n\
             wall = [{{ shape = \"mesh\", file = \"geometry/{mesh}\", layers = 2 }}]\n\
             obstacle = [{{ shape = \"sphere\", centre = [0.0, 0.0, 0.15], radius = 0.1 }}]\n"
        )
    };
    let case = tmp.0.join("tank.toml");
    fs::write(&case, text("tank.stl")).unwrap();
    let out_dir = tmp.0.join("particles");
    let args = ["check", case.to_str().unwrap(), "--backend", "cpu", "--write-particles", out_dir.to_str().unwrap()];
    let out = surge(&args);
    out.assert_no_panic();
    out.assert_code(0);
    let parsed = Case::from_file(&case, &[]).unwrap();
    let counts = surge_core::geometry::counts(&parsed);
    for line in ["fluid[0]     cylinder", "wall[0]      mesh", "obstacle[0]  sphere"] {
        assert!(out.stdout.contains(line), "`{line}` missing\n{}", out.describe());
    }
    assert!(out.stdout.contains(&format!("wall[0]      mesh      {}", counts.walls[0])), "{}", out.describe());
    let vtu = surge_io::read_vtu(&out_dir.join("tank_particles.vtu")).unwrap();
    assert_eq!(vtu.points.len() as u64, counts.total());
    let object = &vtu.arrays["object"];
    let kind = &vtu.arrays["kind"];
    let normal = &vtu.arrays["wall_normal"];
    for i in 0..vtu.points.len() {
        let n = [normal[3 * i], normal[3 * i + 1], normal[3 * i + 2]];
        let len = (n[0] * n[0] + n[1] * n[1] + n[2] * n[2]).sqrt();
        if kind[i] == 0.0 {
            assert_eq!((object[i], len), (0.0, 0.0));
        } else {
            assert!(object[i] >= 1.0 && (len - 1.0).abs() < 1e-5, "particle {i}: object {} normal {n:?}", object[i]);
        }
    }
    // The wall's particles lie outside the tank and their normals point into it.
    for i in (0..vtu.points.len()).filter(|&i| object[i] == 1.0) {
        let p = vtu.points[i];
        let outside = p[0].abs() > 0.5 || p[1].abs() > 0.5 || p[2] < 0.0 || p[2] > 0.75;
        let inward = normal[3 * i] * p[0] <= 1e-9 && normal[3 * i + 1] * p[1] <= 1e-9;
        assert!(outside && inward, "wall particle {i} at {p:?}: normal {:?}", &normal[3 * i..3 * i + 3]);
    }

    fs::write(&case, text("open.stl")).unwrap();
    let out_dir = tmp.0.join("not_written");
    let args = ["check", case.to_str().unwrap(), "--backend", "cpu", "--write-particles", out_dir.to_str().unwrap()];
    let out = surge(&args);
    out.assert_no_panic();
    out.assert_code(EXIT_BAD_INPUT);
    let line = out.single_error_line();
    for want in ["tank.toml", "field `wall[0].file`", "geometry/open.stl", "not closed: 4 open edges", "the first at ("]
    {
        assert!(line.contains(want), "`{want}` not in: {line}");
    }
    assert!(!out_dir.exists(), "nothing may be written for a refused case");
}
