//! The scaling harness: a strong- and a weak-scaling series over MPI ranks x devices per rank,
//! each point one `surge bench` run of the `surge` binary, written out as a CSV, a PNG plot of
//! speed-up and efficiency, and a Markdown table for `docs/PERFORMANCE.md`.
//!
//! ```text
//! cargo build --release --features mpi          # the binary it runs: target/release/surge
//! cargo bench --features mpi --bench scaling -- [options]
//! ```
//!
//! Give `cargo bench` the same `--features` as the build: it rebuilds `target/release/surge`
//! with the features it is given, so a plain `cargo bench --bench scaling` leaves a binary
//! without MPI (the harness then refuses series with more than one rank).
//!
//! Options (defaults in brackets):
//!
//! ```text
//! --backend cpu|cuda            [cpu]
//! --case dam-break3d|dam-break2d [dam-break3d]
//! --ranks 1,2                   MPI ranks, a list [1,2]
//! --devices-per-rank 1,2        devices on each rank, a list [1,2]. CPU: `--workers K` with
//!                               `--threads K x threads-per-worker`. CUDA: `--devices 0,..,K-1`
//!                               with one rank; with several, surge takes the rank's share of
//!                               its node's visible GPUs (limit them with CUDA_VISIBLE_DEVICES,
//!                               or let `{devices}` in the launcher ask the scheduler for them)
//! --threads-per-worker T        CPU threads of each CPU worker [1]
//! --strong-dp X                 particle spacing of the fixed strong-scaling problem
//!                               [0.005 in 2D, 0.02 in 3D]
//! --weak-dp1 X                  spacing for ONE device in the weak series
//!                               [0.01 in 2D, 0.04 in 3D]
//! --weak-mode widen|refine      how the weak series grows the problem with D devices in all
//!                               [widen in 3D, refine in 2D]. widen: dp = X for every run and
//!                               the tank and the water are D times as wide (y); the 3D dam
//!                               break is the same along y but for the obstacle, so every
//!                               device gets the same work and the same rebuild rate. refine:
//!                               dp = X / D^(1/dim), the same tank (the work per particle
//!                               changes with the resolution: more fluid per wall particle,
//!                               a different rebuild rate)
//! --steps N                     timed steps per run (after surge's 5 warm-up steps) [50]
//! --series strong,weak          which series [strong,weak]
//! --out DIR                     [target/scaling]
//! --surge PATH                  [the target/release/surge that cargo built]
//! --launcher TEMPLATE           ["mpirun --allow-run-as-root --oversubscribe -n {ranks}"]
//!                               split at spaces; {ranks}, {devices} (per rank) and {total}
//!                               are replaced; not used when ranks = 1
//! --set KEY=VALUE               passed to every run (repeatable), e.g.
//!                               --set decomposition.balance=false
//! ```
//!
//! For each series and each (ranks, devices per rank) pair it runs one
//! `surge bench --cases CASE --steps N --set dp=X --backend B ... --json FILE` and reads its
//! JSON line. With D the devices in all and D0 the fewest of the series:
//!
//! * strong: speed-up = t(D0) / t(D) (ms per step), efficiency = speed-up / (D / D0);
//! * weak, refine: speed-up = rate(D) / rate(D0) (particle-steps per second, the scaled
//!   speed-up), efficiency = (rate(D) / D) / (rate(D0) / D0);
//! * weak, widen: efficiency = t(D0) / t(D), speed-up = efficiency x D / D0: every device
//!   holds nearly the same work, so time per step is the measure (the end walls at y = 0
//!   and y = W do not grow, so the particles per device fall by 6 % at 2 devices and 9 % at
//!   4, but they are wall particles, a quarter of a fluid one's cost: weighted so, the work
//!   per device falls by ~1 % at 2 and ~2 % at 4, which flatters the efficiency by as much);
//!
//! so the ideal is D / D0 for both speed-ups and 1 for both efficiencies. `exposed %` is the
//! largest exposed (waited-on) exchange time of a device over the run's wall time.
//!
//! Outputs in `--out`: `scaling.csv` (one row per run, every field), `scaling.png` (speed-up
//! with the ideal line, and efficiency, against devices; one line per series and rank count),
//! `scaling.md` (the table and the exact commands that ran), and `runs/*.jsonl` (surge's own
//! lines). The table is printed at the end. A run that fails is reported and left out; the
//! harness then exits 1 after writing what it has.
//!
//! Examples:
//!
//! ```text
//! # CPU, this machine: 1 or 2 ranks x 1 or 2 workers of one thread each
//! cargo bench --features mpi --bench scaling -- --backend cpu --case dam-break2d \
//!     --ranks 1,2 --devices-per-rank 1,2 --strong-dp 0.01 --weak-dp1 0.02 --steps 20
//!
//! # One node with 4 GPUs, a single rank driving 1, 2 or 4 of them
//! cargo bench --features mpi --bench scaling -- --backend cuda --case dam-break3d \
//!     --ranks 1 --devices-per-rank 1,2,4 --strong-dp 0.01 --weak-dp1 0.02 --steps 100
//! ```
//!
//! Slurm: run the harness inside an allocation (it starts one job step per point), with srun
//! as the launcher; build first on a node with the same software as the compute nodes:
//!
//! ```text
//! salloc -N 2 --ntasks-per-node 4 --gpus-per-node 4 --time 01:00:00
//! cargo bench --features mpi --bench scaling -- --backend cuda --case dam-break3d \
//!     --ranks 1,2,4,8 --devices-per-rank 1 --strong-dp 0.008 --weak-dp1 0.016 \
//!     --launcher "srun -n {ranks} --gpus-per-task {devices}" --out target/scaling-gpu
//! ```
//!
//! (or put the same `cargo bench ...` line in an sbatch script; the binary must already be
//! built, as cargo only checks it is up to date).

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use plotters::prelude::*;

/// DejaVu Sans (Bitstream Vera licence, see `fonts/LICENSE-DejaVu.txt`) for the plot's text.
const FONT: &[u8] = include_bytes!("fonts/DejaVuSans.ttf");

const USAGE: &str = "usage: cargo bench [--features mpi] --bench scaling -- [--backend cpu|cuda] \
[--case dam-break3d|dam-break2d] [--ranks 1,2] [--devices-per-rank 1,2] [--threads-per-worker T] \
[--strong-dp X] [--weak-dp1 X] [--weak-mode widen|refine] [--steps N] [--series strong,weak] [--out DIR] [--surge PATH] \
[--launcher \"mpirun --allow-run-as-root --oversubscribe -n {ranks}\"] [--set KEY=VALUE ...]
(see the top of benches/scaling.rs)";

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Series {
    Strong,
    Weak,
}

impl Series {
    fn name(self) -> &'static str {
        match self {
            Series::Strong => "strong",
            Series::Weak => "weak",
        }
    }
}

struct Options {
    backend: String,
    case: String,
    ranks: Vec<usize>,
    devices_per_rank: Vec<usize>,
    threads_per_worker: usize,
    strong_dp: f64,
    weak_dp1: f64,
    weak_widen: bool,
    steps: u64,
    series: Vec<Series>,
    out: PathBuf,
    surge: PathBuf,
    launcher: String,
    /// `--set` overrides for every run.
    sets: Vec<String>,
}

impl Options {
    fn dim(&self) -> u32 {
        if self.case.ends_with("2d") {
            2
        } else {
            3
        }
    }
}

fn parse_list(flag: &str, v: &str) -> Result<Vec<usize>, String> {
    let list = v
        .split(',')
        .map(|x| x.trim().parse::<usize>().ok().filter(|&n| n > 0))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| format!("{flag} {v}: expected positive whole numbers separated by commas"))?;
    if list.is_empty() {
        return Err(format!("{flag}: empty list"));
    }
    Ok(list)
}

fn parse_num<T: std::str::FromStr>(flag: &str, v: &str) -> Result<T, String> {
    v.trim().parse().map_err(|_| format!("{flag} {v}: not a number"))
}

fn parse_args() -> Result<Options, String> {
    let mut backend = "cpu".to_string();
    let mut case = "dam-break3d".to_string();
    let mut ranks = vec![1, 2];
    let mut devices_per_rank = vec![1, 2];
    let mut threads_per_worker = 1;
    let mut strong_dp = None;
    let mut weak_dp1 = None;
    let mut weak_widen = None;
    let mut steps = 50;
    let mut series = vec![Series::Strong, Series::Weak];
    let mut out = PathBuf::from("target/scaling");
    let mut surge = PathBuf::from(env!("CARGO_BIN_EXE_surge"));
    let mut launcher = "mpirun --allow-run-as-root --oversubscribe -n {ranks}".to_string();
    let mut sets = Vec::new();

    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        // `cargo bench` passes `--bench` to every bench target.
        if flag == "--bench" {
            continue;
        }
        if flag == "-h" || flag == "--help" {
            println!("{USAGE}");
            std::process::exit(0);
        }
        let (flag, inline) = match flag.split_once('=') {
            Some((f, v)) if f.starts_with("--") => (f.to_string(), Some(v.to_string())),
            _ => (flag, None),
        };
        let value = match inline.or_else(|| args.next()) {
            Some(v) => v,
            None => return Err(format!("{flag} needs a value\n{USAGE}")),
        };
        match flag.as_str() {
            "--backend" => match value.as_str() {
                "cpu" | "cuda" => backend = value,
                _ => return Err(format!("--backend {value}: expected cpu or cuda")),
            },
            "--case" => match value.as_str() {
                "dam-break3d" | "dam-break2d" => case = value,
                _ => return Err(format!("--case {value}: expected dam-break3d or dam-break2d")),
            },
            "--ranks" => ranks = parse_list(&flag, &value)?,
            "--devices-per-rank" => devices_per_rank = parse_list(&flag, &value)?,
            "--threads-per-worker" => threads_per_worker = parse_num(&flag, &value)?,
            "--strong-dp" => strong_dp = Some(parse_num::<f64>(&flag, &value)?),
            "--weak-dp1" => weak_dp1 = Some(parse_num::<f64>(&flag, &value)?),
            "--weak-mode" => match value.as_str() {
                "widen" => weak_widen = Some(true),
                "refine" => weak_widen = Some(false),
                _ => return Err(format!("--weak-mode {value}: expected widen or refine")),
            },
            "--steps" => steps = parse_num(&flag, &value)?,
            "--series" => {
                series = value
                    .split(',')
                    .map(|s| match s.trim() {
                        "strong" => Ok(Series::Strong),
                        "weak" => Ok(Series::Weak),
                        other => Err(format!("--series: `{other}` is neither strong nor weak")),
                    })
                    .collect::<Result<_, _>>()?;
                series.dedup();
            }
            "--out" => out = PathBuf::from(value),
            "--surge" => surge = PathBuf::from(value),
            "--launcher" => launcher = value,
            "--set" if value.contains('=') => sets.push(value),
            "--set" => return Err(format!("--set {value}: expected KEY=VALUE")),
            _ => return Err(format!("unknown option {flag}\n{USAGE}")),
        }
    }
    let two_d = case.ends_with("2d");
    let strong_dp = strong_dp.unwrap_or(if two_d { 0.005 } else { 0.02 });
    let weak_dp1 = weak_dp1.unwrap_or(if two_d { 0.01 } else { 0.04 });
    let weak_widen = weak_widen.unwrap_or(!two_d);
    if weak_widen && two_d {
        return Err("--weak-mode widen: only the 3D dam break (widened along y); use refine in 2D".into());
    }
    if !(strong_dp > 0.0 && weak_dp1 > 0.0) {
        return Err("--strong-dp and --weak-dp1 must be positive".into());
    }
    if steps == 0 || threads_per_worker == 0 {
        return Err("--steps and --threads-per-worker must be at least 1".into());
    }
    if series.is_empty() {
        return Err("--series: empty".into());
    }
    Ok(Options {
        backend,
        case,
        ranks,
        devices_per_rank,
        threads_per_worker,
        strong_dp,
        weak_dp1,
        weak_widen,
        steps,
        series,
        out,
        surge,
        launcher,
        sets,
    })
}

/// `x` with 6 significant digits, in plain decimals (a TOML float for `--set dp=`).
fn fmt_dp(x: f64) -> String {
    let decimals = (5 - x.log10().floor() as i32).max(0) as usize;
    let s = format!("{x:.decimals$}");
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.').to_string()
    } else {
        s
    }
}

/// The `--set`s that make the 3D dam break (configs/dam_break_3d.toml: tank 1 m wide, water
/// across it) `width` times as wide along y: the water and the tank (the config's default
/// domain follows the tank).
fn widen_sets(width: usize) -> Vec<String> {
    let w = width as f64;
    vec![format!("fluid.0.max=[3.22, {w}, 0.55]"), format!("wall.0.max=[3.22, {w}, 1.0]")]
}

/// One `surge bench` run and what it measured.
struct Run {
    series: Series,
    ranks: usize,
    per_rank: usize,
    dp: f64,
    command: String,
    case: String,
    backend: String,
    particles: u64,
    steps: u64,
    seconds: f64,
    ms_per_step: f64,
    rate: f64,
    bytes_per_particle: u64,
    devices: usize,
    json_ranks: usize,
    exchange: f64,
    exposed: f64,
    rebuilds: u64,
    stage_rebuild: f64,
    stage_forces: f64,
    stage_update: f64,
    speedup: f64,
    efficiency: f64,
}

impl Run {
    fn exposed_share(&self) -> f64 {
        if self.seconds > 0.0 {
            self.exposed / self.seconds
        } else {
            0.0
        }
    }
}

/// The words of one run's command line.
fn command_for(o: &Options, ranks: usize, per_rank: usize, dp: f64, sets: &[String], json: &Path) -> Vec<String> {
    let mut cmd: Vec<String> = Vec::new();
    if ranks > 1 {
        let launcher = o
            .launcher
            .replace("{ranks}", &ranks.to_string())
            .replace("{devices}", &per_rank.to_string())
            .replace("{total}", &(ranks * per_rank).to_string());
        cmd.extend(launcher.split_whitespace().map(str::to_string));
    }
    cmd.push(o.surge.display().to_string());
    // From rest: the series compare device counts on the same steps, and developing 34 M
    // particles to the built-in default's t = 0.3 s on one device would take minutes a point.
    let steps = o.steps.to_string();
    let dp = format!("dp={}", fmt_dp(dp));
    for a in ["bench", "--cases", &o.case, "--steps", &steps, "--develop-to", "0", "--set", &dp] {
        cmd.push(a.to_string());
    }
    for set in sets.iter().chain(&o.sets) {
        cmd.push("--set".into());
        cmd.push(set.clone());
    }
    cmd.push("--backend".into());
    cmd.push(o.backend.clone());
    if o.backend == "cpu" {
        cmd.push("--workers".into());
        cmd.push(per_rank.to_string());
        cmd.push("--threads".into());
        cmd.push((per_rank * o.threads_per_worker).to_string());
    } else if ranks == 1 {
        cmd.push("--devices".into());
        cmd.push((0..per_rank).map(|d| d.to_string()).collect::<Vec<_>>().join(","));
    }
    cmd.push("--json".into());
    cmd.push(json.display().to_string());
    cmd
}

fn shell_join(words: &[String]) -> String {
    words
        .iter()
        .map(|w| {
            if !w.is_empty() && w.chars().all(|c| c.is_ascii_alphanumeric() || "-_./=,:@+{}".contains(c)) {
                w.clone()
            } else {
                format!("'{}'", w.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
}

/// Runs one point and reads the JSON line it appended.
fn run_point(o: &Options, series: Series, ranks: usize, per_rank: usize) -> Result<Run, String> {
    let total = ranks * per_rank;
    let (dp, sets) = match series {
        Series::Strong => (o.strong_dp, Vec::new()),
        Series::Weak if o.weak_widen => (o.weak_dp1, widen_sets(total)),
        Series::Weak => (o.weak_dp1 / (total as f64).powf(1.0 / o.dim() as f64), Vec::new()),
    };
    let runs_dir = o.out.join("runs");
    let json = runs_dir.join(format!("{}-r{ranks}-d{per_rank}.jsonl", series.name()));
    let _ = std::fs::remove_file(&json);
    let words = command_for(o, ranks, per_rank, dp, &sets, &json);
    let command = shell_join(&words);
    println!("\n==> [{} scaling, {ranks} rank(s) x {per_rank} device(s)] {command}", series.name());
    let status =
        Command::new(&words[0]).args(&words[1..]).status().map_err(|e| format!("cannot start {}: {e}", words[0]))?;
    if !status.success() {
        return Err(format!("`{command}` failed ({status})"));
    }
    let text =
        std::fs::read_to_string(&json).map_err(|e| format!("{}: {e} (surge wrote no result)", json.display()))?;
    let line = text.lines().rfind(|l| !l.trim().is_empty()).ok_or_else(|| format!("{}: empty", json.display()))?;
    let v: serde_json::Value = serde_json::from_str(line).map_err(|e| format!("{}: {e}", json.display()))?;
    let f = |k: &str| v.get(k).and_then(serde_json::Value::as_f64).ok_or_else(|| format!("result has no number `{k}`"));
    let u = |k: &str| v.get(k).and_then(serde_json::Value::as_u64).ok_or_else(|| format!("result has no count `{k}`"));
    let s = |k: &str| v.get(k).and_then(serde_json::Value::as_str).unwrap_or("").to_string();
    let stage = |k: &str| v.get("stages").and_then(|st| st.get(k)).and_then(serde_json::Value::as_f64).unwrap_or(0.0);
    let run = Run {
        series,
        ranks,
        per_rank,
        dp,
        command,
        case: s("case"),
        backend: s("backend"),
        particles: u("particles")?,
        steps: u("steps")?,
        seconds: f("seconds")?,
        ms_per_step: f("ms_per_step")?,
        rate: f("particle_steps_per_second")?,
        bytes_per_particle: u("bytes_per_particle")?,
        devices: u("devices")? as usize,
        json_ranks: u("ranks")? as usize,
        exchange: f("exchange")?,
        exposed: f("exposed")?,
        rebuilds: u("rebuilds")?,
        stage_rebuild: stage("rebuild"),
        stage_forces: stage("forces"),
        stage_update: stage("update"),
        speedup: f64::NAN,
        efficiency: f64::NAN,
    };
    if run.json_ranks != ranks {
        return Err(format!(
            "asked for {ranks} ranks but surge ran as {} (is the launcher starting one MPI job, and surge built with --features mpi?)",
            run.json_ranks
        ));
    }
    if run.devices != total {
        eprintln!(
            "warning: asked for {ranks} x {per_rank} = {total} devices, surge ran on {}: the table uses {}",
            run.devices, run.devices
        );
    }
    Ok(run)
}

/// Speed-up and efficiency of each run against the run of the series with the fewest devices.
fn derive(runs: &mut [Run], widen: bool) {
    for series in [Series::Strong, Series::Weak] {
        let Some(base) = runs.iter().filter(|r| r.series == series).min_by_key(|r| r.devices) else {
            continue;
        };
        let (d0, t0, rate0) = (base.devices as f64, base.ms_per_step, base.rate);
        for r in runs.iter_mut().filter(|r| r.series == series) {
            let ideal = r.devices as f64 / d0;
            r.speedup = match series {
                Series::Strong => t0 / r.ms_per_step,
                Series::Weak if widen => ideal * t0 / r.ms_per_step,
                Series::Weak => r.rate / rate0,
            };
            r.efficiency = r.speedup / ideal;
        }
    }
}

fn csv_field(s: &str) -> String {
    if s.contains([',', '"', '\n']) {
        format!("\"{}\"", s.replace('"', "\"\""))
    } else {
        s.to_string()
    }
}

fn write_csv(path: &Path, runs: &[Run]) -> std::io::Result<()> {
    let mut t = String::from(
        "series,ranks,devices_per_rank,devices,dp,case,backend,particles,steps,seconds,ms_per_step,\
particle_steps_per_second,bytes_per_particle,exchange_s,exposed_s,exposed_share,rebuilds,\
stage_rebuild_s,stage_forces_s,stage_update_s,speedup,efficiency,command\n",
    );
    for r in runs {
        let _ = writeln!(
            t,
            "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}",
            r.series.name(),
            r.ranks,
            r.per_rank,
            r.devices,
            fmt_dp(r.dp),
            csv_field(&r.case),
            csv_field(&r.backend),
            r.particles,
            r.steps,
            r.seconds,
            r.ms_per_step,
            r.rate,
            r.bytes_per_particle,
            r.exchange,
            r.exposed,
            r.exposed_share(),
            r.rebuilds,
            r.stage_rebuild,
            r.stage_forces,
            r.stage_update,
            r.speedup,
            r.efficiency,
            csv_field(&r.command)
        );
    }
    std::fs::write(path, t)
}

fn markdown_table(runs: &[Run]) -> String {
    let mut t = String::from(
        "| series | ranks | devices/rank | devices | particles | ms/step | particle-steps/s | speed-up | efficiency % | exposed % |\n\
         |---|--:|--:|--:|--:|--:|--:|--:|--:|--:|\n",
    );
    for r in runs {
        let _ = writeln!(
            t,
            "| {} | {} | {} | {} | {} | {:.3} | {:.3e} | {:.2} | {:.1} | {:.1} |",
            r.series.name(),
            r.ranks,
            r.per_rank,
            r.devices,
            r.particles,
            r.ms_per_step,
            r.rate,
            r.speedup,
            100.0 * r.efficiency,
            100.0 * r.exposed_share()
        );
    }
    t
}

fn write_markdown(path: &Path, o: &Options, runs: &[Run], harness: &str) -> std::io::Result<()> {
    let backend = runs.first().map_or(o.backend.as_str(), |r| r.backend.as_str());
    let mut t = format!(
        "### Scaling: {} on {} ({} timed steps)\n\n\
         Strong: dp = {} for every run; weak: {}. \
         Speed-up against the fewest devices of the series (strong: time per step; weak: {}); \
         efficiency = speed-up / (D / D0); exposed % = exposed exchange time / wall time.\n\n",
        o.case,
        o.backend,
        o.steps,
        fmt_dp(o.strong_dp),
        if o.weak_widen {
            format!("dp = {} and the tank D times as wide (y) for D devices in all", fmt_dp(o.weak_dp1))
        } else {
            format!("dp = {} / D^(1/{}) for D devices in all", fmt_dp(o.weak_dp1), o.dim())
        },
        if o.weak_widen {
            "time per step, the work per device being the same: speed-up = D / D0 x t(D0) / t(D)"
        } else {
            "particle-steps per second"
        }
    );
    let _ = writeln!(t, "First run's backend as surge names it: `{backend}`.\n");
    t.push_str(&markdown_table(runs));
    t.push_str("\nHarness:\n\n```sh\n");
    t.push_str(harness);
    t.push_str("\n```\n\nRuns:\n\n```sh\n");
    for r in runs {
        t.push_str(&r.command);
        t.push('\n');
    }
    t.push_str("```\n");
    std::fs::write(path, t)
}

type PlotResult = Result<(), Box<dyn std::error::Error>>;

fn plot(path: &Path, o: &Options, runs: &[Run]) -> PlotResult {
    plotters::style::register_font("sans-serif", FontStyle::Normal, FONT)
        .map_err(|_| "the bundled font cannot be read")?;
    let root = BitMapBackend::new(path, (1400, 600)).into_drawing_area();
    root.fill(&WHITE)?;
    let root = root
        .titled(&format!("surge scaling: {} backend, {}, {} steps", o.backend, o.case, o.steps), ("sans-serif", 26))?;
    let (left, right) = root.split_horizontally(700);

    let d_max = runs.iter().map(|r| r.devices).max().unwrap_or(1) as f64;
    let d_min = runs.iter().map(|r| r.devices).min().unwrap_or(1) as f64;
    let x_range = 0.0..d_max * 1.1 + 0.5;
    let s_max = runs.iter().map(|r| r.speedup).filter(|x| x.is_finite()).fold(d_max / d_min, f64::max);
    let e_max = runs.iter().map(|r| r.efficiency).filter(|x| x.is_finite()).fold(1.0, f64::max);

    // One line per (series, ranks): strong in blues, weak in reds; circles and triangles.
    let mut groups: Vec<(Series, usize)> = runs.iter().map(|r| (r.series, r.ranks)).collect();
    groups.sort_by_key(|&(s, r)| (s == Series::Weak, r));
    groups.dedup();
    let colour = |s: Series, i: usize| -> RGBColor {
        let strong = [RGBColor(31, 119, 180), RGBColor(23, 190, 207), RGBColor(44, 160, 44), RGBColor(148, 103, 189)];
        let weak = [RGBColor(214, 39, 40), RGBColor(255, 127, 14), RGBColor(227, 119, 194), RGBColor(140, 86, 75)];
        match s {
            Series::Strong => strong[i % strong.len()],
            Series::Weak => weak[i % weak.len()],
        }
    };

    for (panel, area) in [(0, &left), (1, &right)] {
        let (caption, y_desc, y_max) = if panel == 0 {
            ("speed-up", "speed-up", s_max * 1.15)
        } else {
            ("parallel efficiency", "efficiency", (e_max * 1.15).max(1.2))
        };
        let mut chart = ChartBuilder::on(area)
            .caption(caption, ("sans-serif", 22))
            .margin(15)
            .x_label_area_size(45)
            .y_label_area_size(60)
            .build_cartesian_2d(x_range.clone(), 0.0..y_max)?;
        chart
            .configure_mesh()
            .x_desc("devices in all")
            .y_desc(y_desc)
            .label_style(("sans-serif", 16))
            .axis_desc_style(("sans-serif", 18))
            .draw()?;
        let ideal: Vec<(f64, f64)> =
            if panel == 0 { vec![(d_min, 1.0), (d_max, d_max / d_min)] } else { vec![(d_min, 1.0), (d_max, 1.0)] };
        chart
            .draw_series(LineSeries::new(ideal, BLACK.stroke_width(1)))?
            .label("ideal")
            .legend(|(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], BLACK));
        let mut index = [0usize; 2];
        for &(series, ranks) in &groups {
            let slot = &mut index[(series == Series::Weak) as usize];
            let c = colour(series, *slot);
            *slot += 1;
            let mut pts: Vec<(f64, f64)> = runs
                .iter()
                .filter(|r| r.series == series && r.ranks == ranks)
                .map(|r| (r.devices as f64, if panel == 0 { r.speedup } else { r.efficiency }))
                .filter(|p| p.1.is_finite())
                .collect();
            pts.sort_by(|a, b| a.0.total_cmp(&b.0));
            let label = format!("{}, {ranks} rank{}", series.name(), if ranks == 1 { "" } else { "s" });
            chart
                .draw_series(LineSeries::new(pts.clone(), c.stroke_width(2)))?
                .label(label)
                .legend(move |(x, y)| PathElement::new(vec![(x, y), (x + 20, y)], c.stroke_width(2)));
            match series {
                Series::Strong => {
                    chart.draw_series(pts.iter().map(|&p| Circle::new(p, 5, c.filled())))?;
                }
                Series::Weak => {
                    chart.draw_series(pts.iter().map(|&p| TriangleMarker::new(p, 7, c.filled())))?;
                }
            }
        }
        chart
            .configure_series_labels()
            .position(if panel == 0 { SeriesLabelPosition::UpperLeft } else { SeriesLabelPosition::LowerLeft })
            .background_style(WHITE.mix(0.85))
            .border_style(BLACK)
            .label_font(("sans-serif", 16))
            .draw()?;
    }
    root.present()?;
    Ok(())
}

fn main() {
    if let Err(e) = real_main() {
        eprintln!("scaling: {e}");
        std::process::exit(1);
    }
}

fn real_main() -> Result<(), String> {
    let o = parse_args()?;
    if !o.surge.is_file() {
        return Err(format!(
            "{}: no surge binary (cargo build --release --features mpi, or --surge PATH)",
            o.surge.display()
        ));
    }
    if o.ranks.iter().any(|&r| r > 1) {
        let info = Command::new(&o.surge)
            .arg("info")
            .output()
            .map_err(|e| format!("cannot run {} info: {e}", o.surge.display()))?;
        if String::from_utf8_lossy(&info.stdout).contains("not in this build") {
            return Err(format!(
                "{} is built without MPI and --ranks asks for more than one: \
                 cargo build --release --features mpi, and run cargo bench --features mpi",
                o.surge.display()
            ));
        }
    }
    std::fs::create_dir_all(o.out.join("runs")).map_err(|e| format!("{}: {e}", o.out.display()))?;
    let harness = {
        let words: Vec<String> = std::env::args().skip(1).filter(|a| a != "--bench").collect();
        let features = if cfg!(feature = "mpi") { " --features mpi" } else { "" };
        format!("cargo bench{features} --bench scaling -- {}", shell_join(&words))
    };

    let mut runs = Vec::new();
    let mut failures = Vec::new();
    for &series in &o.series {
        for &ranks in &o.ranks {
            for &per_rank in &o.devices_per_rank {
                match run_point(&o, series, ranks, per_rank) {
                    Ok(r) => runs.push(r),
                    Err(e) => {
                        eprintln!("scaling: {e}");
                        failures.push(e);
                    }
                }
            }
        }
    }
    derive(&mut runs, o.weak_widen);

    let csv = o.out.join("scaling.csv");
    let png = o.out.join("scaling.png");
    let md = o.out.join("scaling.md");
    write_csv(&csv, &runs).map_err(|e| format!("{}: {e}", csv.display()))?;
    write_markdown(&md, &o, &runs, &harness).map_err(|e| format!("{}: {e}", md.display()))?;
    if runs.is_empty() {
        eprintln!("scaling: no run succeeded, no plot");
    } else {
        plot(&png, &o, &runs).map_err(|e| format!("{}: {e}", png.display()))?;
    }

    println!("\n{}", markdown_table(&runs));
    println!("wrote {}, {}, {}", csv.display(), png.display(), md.display());
    if !failures.is_empty() {
        return Err(format!("{} run(s) failed:\n  {}", failures.len(), failures.join("\n  ")));
    }
    Ok(())
}
